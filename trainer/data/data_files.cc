#include "trainer/data/data_files.h"

#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "trainer/data/rng.h"

namespace skrull::data {

namespace fs = std::filesystem;

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsDataFileName(const std::string& name) {
  return EndsWith(name, ".jsonl") || EndsWith(name, ".jsonl.gz");
}

bool HasGlobChars(const std::string& path) {
  return path.find_first_of("*?[") != std::string::npos;
}

std::vector<std::string> Glob(const std::string& pattern) {
  glob_t g;
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), GLOB_ERR, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  return out;
}

}  // namespace

bool IsGzip(const std::string& path) { return EndsWith(path, ".gz"); }

StatusOr<std::vector<std::string>> ExpandDataPath(const std::string& path,
                                                  const std::string& field) {
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_directory(path, ec)) {
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
      if (e.is_regular_file(ec) && IsDataFileName(e.path().filename().string())) {
        files.push_back(e.path().string());
      }
    }
    if (files.empty()) {
      return InvalidArgumentError(field + ": the directory '" + path +
                                  "' holds no .jsonl or .jsonl.gz file; point it at the folder "
                                  "with the data, or at a file");
    }
  } else if (HasGlobChars(path) && !fs::exists(path, ec)) {
    for (const std::string& match : Glob(path)) {
      if (IsDataFileName(match) && fs::is_regular_file(match, ec)) files.push_back(match);
    }
    if (files.empty()) {
      return InvalidArgumentError(field + ": the glob '" + path +
                                  "' matches no .jsonl or .jsonl.gz file; check the folder and "
                                  "the pattern (e.g. data/*.jsonl)");
    }
  } else {
    files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  return files;
}

StatusOr<std::string> DecompressedCopy(const std::string& gz_path, const std::string& cache_dir) {
  struct stat st;
  if (::stat(gz_path.c_str(), &st) != 0) {
    return NotFoundError(gz_path + ": " + std::strerror(errno) + "; check spec.data.sources");
  }
  uint64_t key = MixSeed(static_cast<uint64_t>(st.st_size), static_cast<uint64_t>(st.st_mtime));
  for (unsigned char c : fs::absolute(gz_path).string()) key = MixSeed(key, c);
  char name[32];
  std::snprintf(name, sizeof(name), "%016llx.jsonl", static_cast<unsigned long long>(key));
  const std::string dest = (fs::path(cache_dir) / name).string();
  std::error_code ec;
  if (fs::is_regular_file(dest, ec)) return dest;
  fs::create_directories(cache_dir, ec);
  if (ec) return IoError(cache_dir + ": cannot create: " + ec.message());
  const std::string tmp = dest + ".tmp" + std::to_string(::getpid());
  gzFile in = ::gzopen(gz_path.c_str(), "rb");
  if (in == nullptr) return IoError(gz_path + ": cannot open: " + std::strerror(errno));
  std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(tmp.c_str(), "wb"), &std::fclose);
  if (out == nullptr) {
    ::gzclose(in);
    return IoError(tmp + ": cannot write: " + std::strerror(errno));
  }
  std::vector<char> buffer(1 << 20);
  Status status = OkStatus();
  while (status.ok()) {
    const int n = ::gzread(in, buffer.data(), static_cast<unsigned>(buffer.size()));
    if (n < 0) {
      int err = 0;
      status = InvalidArgumentError(gz_path + ": not valid gzip (" + ::gzerror(in, &err) +
                                    "); recompress it or use the .jsonl");
    } else if (n == 0) {
      break;
    } else if (std::fwrite(buffer.data(), 1, static_cast<size_t>(n), out.get()) !=
               static_cast<size_t>(n)) {
      status = IoError(tmp + ": write failed (" + std::strerror(errno) + "; disk full?)");
    }
  }
  ::gzclose(in);
  if (status.ok() && std::fflush(out.get()) != 0) status = IoError(tmp + ": write failed");
  out.reset();
  if (status.ok()) fs::rename(tmp, dest, ec);
  if (status.ok() && ec) status = IoError(dest + ": cannot rename: " + ec.message());
  if (!status.ok()) {
    fs::remove(tmp, ec);
    return status;
  }
  return dest;
}

}  // namespace skrull::data

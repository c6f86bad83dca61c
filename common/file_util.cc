#include "common/file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace skrull {

StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return NotFoundError(path + ": no such file");
  }
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgumentError(path + ": is a directory, expected a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path + ": cannot open for reading: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return IoError(path + ": read failed");
  return ss.str();
}

Status FsyncPath(const std::string& path) {
  // O_RDONLY opens directories too; fsync needs no write access.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError(path + ": open for fsync failed: " + std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return IoError(path + ": fsync failed: " + std::strerror(err));
  return OkStatus();
}

Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(dir, ec);
  if (ec) return IoError(dir.string() + ": cannot create directory: " + ec.message());
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return IoError(tmp + ": cannot create: " + std::strerror(errno));
    const char* p = contents.data();
    size_t left = contents.size();
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return IoError(tmp + ": write failed: " + std::strerror(err));
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return IoError(tmp + ": fsync failed: " + std::strerror(err));
    }
    ::close(fd);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return IoError(path + ": rename from " + tmp + " failed: " + std::strerror(err));
  }
  return FsyncPath(dir.string());
}

}  // namespace skrull

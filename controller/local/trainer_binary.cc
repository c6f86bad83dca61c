#include "controller/local/trainer_binary.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <vector>

namespace skrull::local {
namespace {

namespace fs = std::filesystem;

constexpr char kBuildHint[] =
    "build it (cmake --build build --target skrull-trainer) or pass --trainer PATH";

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string Join(const std::string& dir, const std::string& name) {
  return (fs::path(dir.empty() ? "." : dir) / name).string();
}

}  // namespace

StatusOr<std::string> FindTrainerBinary(const std::string& trainer, const std::string& beside_dir,
                                        const std::string& path_var) {
  if (trainer.empty()) {
    return InvalidArgumentError("--trainer: must not be empty; " + std::string(kBuildHint));
  }
  if (trainer.find('/') != std::string::npos) {
    struct stat st {};
    if (::stat(trainer.c_str(), &st) != 0) {
      return NotFoundError("--trainer " + trainer + ": no such file; " + kBuildHint);
    }
    if (S_ISDIR(st.st_mode)) {
      return InvalidArgumentError("--trainer " + trainer +
                                  ": is a directory; pass the skrull-trainer binary in it, e.g. "
                                  "--trainer " +
                                  Join(trainer, "skrull-trainer"));
    }
    if (!IsExecutableFile(trainer)) {
      return InvalidArgumentError("--trainer " + trainer +
                                  ": not an executable file; pass the skrull-trainer binary");
    }
    return trainer;
  }
  if (!beside_dir.empty()) {
    const std::string candidate = Join(beside_dir, trainer);
    if (IsExecutableFile(candidate)) return candidate;
  }
  size_t start = 0;
  for (;;) {
    const size_t colon = path_var.find(':', start);
    const std::string dir = path_var.substr(start, colon - start);
    if (!path_var.empty() && IsExecutableFile(Join(dir, trainer))) return Join(dir, trainer);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  std::string looked =
      beside_dir.empty() ? "" : "beside skrull-controller (" + beside_dir + ") or ";
  return NotFoundError("--trainer " + trainer + ": not found " + looked + "on PATH; " + kBuildHint);
}

std::string SelfExecutableDir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  return fs::path(std::string(buf, static_cast<size_t>(n))).parent_path().string();
}

}  // namespace skrull::local

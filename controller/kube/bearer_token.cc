#include "controller/kube/bearer_token.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/file_util.h"

namespace skrull::kube {

BearerToken::BearerToken(std::string literal, std::string file)
    : literal_(std::move(literal)), file_(std::move(file)) {}

Status BearerToken::ReadLocked(bool force) {
  struct stat st {};
  if (::stat(file_.c_str(), &st) != 0) {
    const int err = errno;
    if (loaded_) return OkStatus();  // keep the last token; the kubelet may be mid-swap
    return NotFoundError("bearer token file " + file_ + ": " + std::strerror(err));
  }
  const bool same = loaded_ && st.st_mtim.tv_sec == key_.mtime.tv_sec &&
                    st.st_mtim.tv_nsec == key_.mtime.tv_nsec && st.st_size == key_.size &&
                    st.st_ino == key_.inode;
  if (same && !force) return OkStatus();
  StatusOr<std::string> text = ReadFileToString(file_);
  if (!text.ok()) {
    if (loaded_) return OkStatus();
    return text.status().WithContext("bearer token file");
  }
  std::string token = std::move(text).value();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  token_ = std::move(token);
  key_ = FileKey{st.st_mtim, st.st_size, st.st_ino};
  loaded_ = true;
  return OkStatus();
}

StatusOr<std::string> BearerToken::Current() {
  if (file_.empty()) return literal_;
  std::lock_guard<std::mutex> lock(mu_);
  SKRULL_RETURN_IF_ERROR(ReadLocked(/*force=*/false));
  return token_;
}

bool BearerToken::Reload() {
  if (file_.empty()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  const std::string before = token_;
  if (!ReadLocked(/*force=*/true).ok()) return false;
  return token_ != before;
}

}  // namespace skrull::kube

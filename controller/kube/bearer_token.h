// Private to controller/kube: the bearer token HttpKubeApi sends, from a
// literal or from a file that rotates (projected service-account tokens are
// rewritten by the kubelet before they expire; docs/kubernetes-api.md).
#ifndef SKRULL_CONTROLLER_KUBE_BEARER_TOKEN_H_
#define SKRULL_CONTROLLER_KUBE_BEARER_TOKEN_H_

#include <sys/types.h>

#include <ctime>
#include <mutex>
#include <string>

#include "common/status.h"

namespace skrull::kube {

// Thread-safe.
class BearerToken {
 public:
  // `file` wins over `literal` when set.
  BearerToken(std::string literal, std::string file);

  // The token for the next request ("" = send no Authorization header).
  // With a file: stats it (following links, as the kubelet swaps a symlink)
  // and re-reads it when its mtime, size or inode changed. NotFound naming
  // the file when it cannot be read and no token was read before; after
  // that a read failure keeps the last token.
  StatusOr<std::string> Current();

  // Re-reads the file now (after a 401); true when the token changed.
  bool Reload();

  bool from_file() const { return !file_.empty(); }

 private:
  struct FileKey {
    timespec mtime{};
    off_t size = -1;
    ino_t inode = 0;
  };
  Status ReadLocked(bool force);

  const std::string literal_;
  const std::string file_;
  std::mutex mu_;
  std::string token_;  // guarded by mu_
  FileKey key_;        // guarded by mu_
  bool loaded_ = false;
};

}  // namespace skrull::kube

#endif  // SKRULL_CONTROLLER_KUBE_BEARER_TOKEN_H_

// Small filesystem helpers shared by every component.
#ifndef SKRULL_COMMON_FILE_UTIL_H_
#define SKRULL_COMMON_FILE_UTIL_H_

#include <string>

#include "common/status.h"

namespace skrull {

// Reads a whole file. NotFound names the path when it is missing.
StatusOr<std::string> ReadFileToString(const std::string& path);

// Writes `contents` to `path` atomically: write `path.tmp.<pid>`, fsync it,
// rename over `path`, fsync the directory. A crash leaves either the old file
// or the new one, never a torn one. Creates missing parent directories.
Status WriteFileAtomically(const std::string& path, const std::string& contents);

// Flushes `path` (a file or a directory) to stable storage with fsync(2).
// Fsync a directory after creating, renaming or removing an entry in it to
// make that change durable. IoError names the path and errno's text.
Status FsyncPath(const std::string& path);

}  // namespace skrull

#endif  // SKRULL_COMMON_FILE_UTIL_H_

// The files a data path names (docs/job-spec.md, spec.data.sources): a file,
// a directory (its *.jsonl and *.jsonl.gz files, not recursive) or a glob
// (glob(3): `*`, `?`, `[...]`), in sorted order; and gzip-compressed JSONL
// made readable by position.
#ifndef SKRULL_TRAINER_DATA_DATA_FILES_H_
#define SKRULL_TRAINER_DATA_DATA_FILES_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace skrull::data {

// The data files `path` names, sorted. A plain file is returned as it is,
// whatever its name (it need not exist yet: Dataset::Open reports that). A
// directory gives its regular *.jsonl and *.jsonl.gz files; a glob the
// matches with those endings. `field` (e.g. "spec.data.sources[1].path")
// names the field in errors: InvalidArgument for a directory or glob that
// gives no file, naming the value and what it looked for.
StatusOr<std::vector<std::string>> ExpandDataPath(const std::string& path,
                                                  const std::string& field);

// Whether `path` ends in ".gz".
bool IsGzip(const std::string& path);

// A .jsonl.gz file decompressed into `cache_dir` (created if missing), so the
// Dataset can read lines by offset. The copy is named by a hash of the
// source's path, size and modification time, written to a temporary name and
// renamed, and reused while those are unchanged. Errors name the file:
// corrupt or truncated gzip, or a write failure (a full disk) in cache_dir.
StatusOr<std::string> DecompressedCopy(const std::string& gz_path, const std::string& cache_dir);

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_DATA_FILES_H_

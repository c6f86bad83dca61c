// Private to api/: the error list that parsing and validation fill, and the
// "did you mean" hint.
//
// Every error carries the field path (`spec.parallelism.contextParallel`), a
// message that names the bad value and what is allowed, and, when the value
// came from YAML, its position. ToStatus sorts by position and renders one
// line per error:
//   <origin>:<line>:<column>: <path>: <message>
//   <origin>: <path>: <message>          (no position: a spec built in code)
#ifndef SKRULL_API_DIAGNOSTICS_H_
#define SKRULL_API_DIAGNOSTICS_H_

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace skrull::api {

// A position in the YAML text, 0-based as yaml-cpp reports it. line < 0 means
// unknown (the value did not come from YAML).
struct SourcePos {
  int line = -1;
  int column = -1;
  bool known() const { return line >= 0; }
};

// Where each field of a parsed document sits, and which values were already
// rejected while parsing (so validation does not report them twice, or judge
// a cross-field rule with a placeholder).
//
// Paths: `spec.training.steps`, list elements `spec.model.lora.targetModules[1]`,
// map entries `metadata.labels[app.kubernetes.io/name]`.
struct FieldIndex {
  std::map<std::string, SourcePos> positions;
  std::set<std::string> invalid;
  // Mappings with unknown or duplicate keys: a misspelt field left its default
  // in place, so rules across this section's fields would report a symptom of
  // the typo rather than a second problem.
  std::set<std::string> incomplete;

  // The position of `path`, else of its nearest ancestor present in the
  // document, else unknown.
  SourcePos PositionOf(const std::string& path) const;
  bool IsInvalid(const std::string& path) const { return invalid.count(path) > 0; }
};

// The most errors one Status lists: a hostile file with a hundred thousand
// bad fields gets a readable answer, not a message the size of the file.
inline constexpr size_t kMaxReportedErrors = 100;

class Diagnostics {
 public:
  void Add(SourcePos pos, std::string path, std::string message);
  bool empty() const { return errors_.empty(); }
  size_t size() const { return errors_.size(); }

  // OK when empty; otherwise InvalidArgument with one line per error, sorted
  // by position (errors without one keep the order they were added, after
  // those with one). Past kMaxReportedErrors, one last line counts the rest:
  //   <origin>: ... and N more errors (fix these first)
  Status ToStatus(const std::string& origin) const;

 private:
  struct Error {
    SourcePos pos;
    std::string path;
    std::string message;
  };
  std::vector<Error> errors_;
};

// The path one level up: "spec.model.lora" -> "spec.model",
// "metadata.labels[a.b/c]" -> "metadata.labels", "spec" -> "".
std::string ParentPath(const std::string& path);

// Joins a path and a key: JoinPath("spec", "model") == "spec.model",
// JoinPath("", "spec") == "spec".
std::string JoinPath(const std::string& parent, std::string_view key);

// Longest string, in bytes, that ClosestMatch compares and that messages echo
// whole. Longer values are no typo of a field or enum name, and comparing
// them costs time and memory quadratic in their length.
inline constexpr size_t kMaxEchoBytes = 64;

// The candidate closest to `got`, or "" when none is close enough to be a
// plausible typo. Case, '_' and '-' are ignored first (context_parallel ->
// contextParallel); otherwise the smallest edit distance (insert, delete,
// substitute, swap adjacent) wins if it is at most max(1, |got| / 3); ties go
// to the earlier candidate. "" when `got` or a candidate is longer than
// kMaxEchoBytes (that candidate is skipped).
std::string ClosestMatch(std::string_view got, const std::vector<std::string>& candidates);

// "; did you mean 'x'?" or "" (see ClosestMatch).
std::string DidYouMean(std::string_view got, const std::vector<std::string>& candidates);

// "a, b, c".
std::string JoinNames(const std::vector<std::string>& names);

// The shortest decimal text that reads back as exactly `value` (0.003, 1e-08, 32).
std::string FormatDouble(double value);

// A user value as messages echo it: whole up to kMaxEchoBytes, else its first
// kMaxEchoBytes bytes and "... (N bytes)".
std::string Abbreviate(std::string_view value);

// Quotes a user value for a message: 'ten'; a long one as
// 'first 64 bytes...' (N bytes) (see Abbreviate).
std::string Quote(std::string_view value);

}  // namespace skrull::api

#endif  // SKRULL_API_DIAGNOSTICS_H_

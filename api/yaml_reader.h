// Private to api/: typed, error-collecting reads from one YAML mapping.
//
//   MapReader training = spec.Child("training");
//   training.Read("steps", &out->steps);         // int64
//   training.ReadEnum("schedule", kLrScheduleNames, &out->schedule);
//   training.Finish();                           // unknown keys -> errors
//
// Every Read* registers its key as allowed at this level. A key that is
// absent or null leaves `*out` untouched (the default applies). A value of
// the wrong type is reported as "<path>: expected <type>, got <value>", added
// to FieldIndex::invalid and leaves `*out` untouched. Finish() reports every
// key nobody read as "unknown field", with a "did you mean" hint against the
// registered keys. Duplicate keys are reported when the reader is built.
//
// Numbers are read from the scalar's text, strictly: integers are decimal
// digits with an optional sign (no 1e3, 0x10 or 1_000); numbers are anything
// std::from_chars reads as a finite double; booleans are true or false.
// Quoting does not matter ("10" reads as 10), as in most YAML readers.
#ifndef SKRULL_API_YAML_READER_H_
#define SKRULL_API_YAML_READER_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/diagnostics.h"
#include "api/enum_names.h"
#include "common/status.h"

namespace skrull::api {

// Largest job document LoadYamlDocument reads: 512 KiB, far above any real
// job (a long chat template is a few KiB). It bounds the time and memory a
// hostile file costs: yaml-cpp alone needs about half a second for a
// mebibyte of tiny nodes, and the contract is under a second for any file.
inline constexpr size_t kMaxDocumentBytes = size_t{512} << 10;

// yaml-cpp stops at this nesting depth (its DepthGuard<500>).
inline constexpr int kMaxYamlDepth = 500;

// What a document of `text_bytes` may expand to with its aliases expanded
// (scalar bytes plus one per node): twice its size plus 64 KiB. Aliases
// repeating one value many times ("billion laughs") are refused before any
// reader copies the value once per alias.
inline int64_t ExpansionBudgetBytes(size_t text_bytes) {
  return 2 * static_cast<int64_t>(text_bytes) + (int64_t{64} << 10);
}

// Parses `text` as exactly one YAML document. Errors, all one-line
// InvalidArgument:
//   "<origin>:<line>:<column>: invalid YAML: <what>"       a syntax error
//   "<origin>:<line>:<column>: invalid YAML: nested deeper than 500 levels ..."
//   "<origin>: the document is N bytes; ... at most 524288 bytes ..."
//   "<origin>: YAML aliases expand the document to more than N bytes ..."
StatusOr<YAML::Node> LoadYamlDocument(const std::string& text, const std::string& origin);

// The documents in `text`, counted from the parser's events without building
// them, up to `max_documents` + 1 (it stops there). InvalidArgument
// "<origin>:<line>:<column>: invalid YAML: unexpected ','..." where the parser
// makes no progress: yaml-cpp 0.7's LoadAll loops forever, allocating, on a
// stray flow entry such as the text "," (jbeder/yaml-cpp issue 1040).
// Throws what yaml-cpp throws for syntax errors (YAML::Exception).
StatusOr<int> CountYamlDocuments(const std::string& text, const std::string& origin,
                                 int max_documents);

// "a mapping", "a list" or the quoted scalar: for "expected X, got <this>".
std::string DescribeValue(const YAML::Node& node);

// Token counts as written in a job file: 2048, 26K (x 1024), 1M (x 1048576),
// optionally signed (so validation can say "must be > 0 (got -5)").
// std::nullopt for anything else or on overflow.
std::optional<int64_t> ParseTokenCount(std::string_view text);

class MapReader {
 public:
  // `node` must be a mapping; a null node reads as an empty one. Anything else
  // should be reported by the caller before; it too reads as empty.
  // `index` and `diag` must outlive the reader.
  MapReader(const YAML::Node& node, std::string path, FieldIndex* index, Diagnostics* diag);
  MapReader(const MapReader&) = delete;
  MapReader& operator=(const MapReader&) = delete;
  ~MapReader();  // REQUIRES: Finish() was called.

  const std::string& path() const { return path_; }
  // True when `key` is present with a non-null value. Does not register it.
  bool Has(std::string_view key) const;
  // True when `key` is present, null or not. Does not register it.
  bool HasKey(std::string_view key) const;
  // Reports `message` against `key` (registering it) and marks it invalid.
  void Reject(std::string_view key, const std::string& message);

  void Read(std::string_view key, std::string* out);
  void Read(std::string_view key, int* out);
  void Read(std::string_view key, int64_t* out);
  void Read(std::string_view key, uint64_t* out);
  void Read(std::string_view key, double* out);
  void Read(std::string_view key, bool* out);
  // A token count (see ParseTokenCount).
  void ReadTokens(std::string_view key, int64_t* out);
  // "auto" -> *is_auto = true, tokens = 0; a positive token count ->
  // *is_auto = false. 0 is rejected here: in the struct it means "unset".
  void ReadBucketSize(std::string_view key, bool* is_auto, int64_t* tokens);
  // One of the names in `table`; otherwise "must be one of ..." with a hint.
  template <typename E, size_t N>
  void ReadEnum(std::string_view key, const EnumName<E> (&table)[N], E* out) {
    size_t index = 0;
    if (ReadChoice(key, NamesOf(table), &index)) *out = table[index].value;
  }
  // A list of scalars. Element paths are `<key>[i]`.
  void ReadStringList(std::string_view key, std::vector<std::string>* out);
  // A list of mappings: `each(item, i)` reads item i (path `key[i]`), which
  // is finished after it. A value that is not a list, or an item that is not
  // a mapping, is reported and skipped.
  void ReadMapList(std::string_view key, const std::function<void(MapReader&, size_t)>& each);
  // A mapping of scalar keys to scalar values. Entry paths are `<key>[<k>]`.
  void ReadStringMap(std::string_view key, std::map<std::string, std::string>* out);

  // A Kubernetes object kept as written (spec.pod's affinity, tolerations,
  // env, volumes, ...), as JSON text: a mapping, or with `list` a list of
  // mappings. Plain scalars true/false, null (~, empty) and numbers become
  // JSON's; every other scalar, and every quoted one, a string. With
  // `required_key`, each list element must have it as a string
  // ("<key>[i].<required_key>: required"); `names` (optional) receives
  // those values in order. Absent or null leaves `*out` untouched.
  void ReadObject(std::string_view key, bool list, const char* required_key, std::string* out,
                  std::vector<std::string>* names = nullptr);
  // A nested mapping. Absent or null reads as empty; another type is reported
  // and reads as empty.
  MapReader Child(std::string_view key);
  // Allows `key` with any value and ignores it.
  void Ignore(std::string_view key);

  // Reports every key that no call above registered.
  void Finish();

 private:
  struct Entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
  };

  // Registers `key` and records its position. Returns the entry when it is
  // present with a non-null value.
  const Entry* Claim(std::string_view key);
  // The scalar text of `e`, or reports "expected <what>, got ..." and returns
  // nullptr.
  const std::string* ScalarOf(const Entry& e, const char* what);
  // The integer value of `e`, or reports why it is not one.
  std::optional<int64_t> IntegerOf(const Entry& e);
  void Reject(const Entry& e, const std::string& message);
  bool ReadChoice(std::string_view key, const std::vector<std::string>& names, size_t* index);
  std::string PathOf(std::string_view key) const { return JoinPath(path_, key); }

  std::string path_;
  FieldIndex* index_;
  Diagnostics* diag_;
  std::vector<Entry> entries_;
  std::vector<std::string> allowed_;
  bool finished_ = false;
};

SourcePos PositionOf(const YAML::Node& node);

// `node` as JSON text, by the scalar rules of MapReader::ReadObject. Map keys
// keep the document's order.
std::string YamlToJson(const YAML::Node& node);

}  // namespace skrull::api

#endif  // SKRULL_API_YAML_READER_H_

// Typed reads of the fields of one JSON object (nlohmann::json), with one
// error wording for every JSON file Skrull reads (model configs, hardware
// profiles, plans, metrics.jsonl, run summaries, trainer state):
//
//   <origin>: <field path>: <what is wrong> (got <value>)
//
// e.g. `config.json: rope_scaling.factor: must be > 0 (got -1)` or
// `run/metrics.jsonl:3: ranks[1].rank: required field missing`.
// `origin` names the file (and line); the field path is the object's own
// path inside the document followed by the key. An empty origin leaves the
// "<origin>: " out (for readers whose caller adds the file as context).
//
// Absent fields and fields whose value is null read the same: a required
// field reports "required field missing", an optional one returns its
// fallback. Echoed values are cut to 60 characters.
//
// Readers that report every problem at once (the style the project asks
// for) collect statuses in a FieldErrors.
#ifndef SKRULL_COMMON_JSON_FIELDS_H_
#define SKRULL_COMMON_JSON_FIELDS_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace skrull {

class JsonFields {
 public:
  static constexpr int64_t kIntMin = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kIntMax = std::numeric_limits<int64_t>::max();
  static constexpr uint64_t kUintMax = std::numeric_limits<uint64_t>::max();
  static constexpr double kInf = std::numeric_limits<double>::infinity();

  // `object` must outlive this reader (it is not copied). `path` is the
  // object's path in the document, without a trailing dot ("" at the top).
  // A non-object `object` reads as having no fields.
  JsonFields(const nlohmann::json& object, std::string origin, std::string path = "");

  // Integers: a JSON integer within [min, max]. Floats such as 1.0 are not
  // integers.
  StatusOr<int64_t> RequiredInt(const std::string& key, int64_t min = kIntMin,
                                int64_t max = kIntMax) const;
  StatusOr<int64_t> OptionalInt(const std::string& key, int64_t fallback, int64_t min = kIntMin,
                                int64_t max = kIntMax) const;
  // Non-negative integers up to 2^64 - 1, within [min, max].
  StatusOr<uint64_t> RequiredUint(const std::string& key, uint64_t min = 0,
                                  uint64_t max = kUintMax) const;
  StatusOr<uint64_t> OptionalUint(const std::string& key, uint64_t fallback, uint64_t min = 0,
                                  uint64_t max = kUintMax) const;
  // Numbers (integer or float) within [min, max].
  StatusOr<double> RequiredDouble(const std::string& key, double min = -kInf,
                                  double max = kInf) const;
  StatusOr<double> OptionalDouble(const std::string& key, double fallback, double min = -kInf,
                                  double max = kInf) const;
  StatusOr<std::string> RequiredString(const std::string& key) const;
  StatusOr<std::string> OptionalString(const std::string& key, std::string fallback = "") const;
  StatusOr<bool> RequiredBool(const std::string& key) const;
  StatusOr<bool> OptionalBool(const std::string& key, bool fallback) const;
  // The array or object at `key`; the optional forms return nullptr when the
  // field is absent or null. The pointer is into `object`.
  StatusOr<const nlohmann::json*> RequiredArray(const std::string& key) const;
  StatusOr<const nlohmann::json*> OptionalArray(const std::string& key) const;
  StatusOr<const nlohmann::json*> RequiredObject(const std::string& key) const;
  StatusOr<const nlohmann::json*> OptionalObject(const std::string& key) const;

  // True when `key` is present with the value null (for formats that write
  // NaN as null).
  bool IsNull(const std::string& key) const;

  // A reader for `child` (an element of this object's field `key`, or the
  // field itself) whose path is `Path(key)`, e.g. Nested("ranks[2]", e).
  JsonFields Nested(const std::string& key, const nlohmann::json& child) const;

  // "<path>.<key>", `key` at the top level, the object's own path for "".
  std::string Path(const std::string& key) const;
  const std::string& origin() const { return origin_; }

  // InvalidArgument "<origin>: <Path(key)>: <what>", plus " (got <value>)"
  // when `got` is given. For checks a reader makes beyond type and range.
  Status Error(const std::string& key, const std::string& what,
               const nlohmann::json* got = nullptr) const;

 private:
  const nlohmann::json* Find(const std::string& key) const;
  Status Missing(const std::string& key) const;

  const nlohmann::json& object_;
  std::string origin_;
  std::string path_;
};

// `value` as JSON text cut to 60 characters, for echoing in errors. Bounded
// work and stack whatever `value` holds (deep or huge arrays print "[...").
std::string JsonExcerpt(const nlohmann::json& value);

// Where JSON text first opens more than `max_depth` nested arrays/objects.
struct JsonNesting {
  size_t offset;  // byte offset of the bracket that goes one level too deep
  int64_t line;   // its line, from 1
};
// The first place `text` nests deeper than `max_depth`, or nullopt. Brackets
// inside strings (escapes honoured) do not count. One linear pass, no
// allocation; it does not validate the JSON (the parser does). Run it before
// parsing a document whose values are later walked recursively.
std::optional<JsonNesting> FindJsonNestingBeyond(std::string_view text, int max_depth);

// Collects the problems of one document so a reader reports them all at
// once: "<origin>: <problem>; <problem>; ...", each problem worded as above
// without the repeated origin.
class FieldErrors {
 public:
  explicit FieldErrors(std::string origin) : origin_(std::move(origin)) {}

  // The value of `v`, or `fallback` after recording v's problem.
  template <typename T>
  T Take(StatusOr<T> v, T fallback = T{}) {
    if (v.ok()) return *std::move(v);
    Add(v.status());
    return fallback;
  }
  // Records a problem; a message that starts with "<origin>: " is stored
  // without it.
  void Add(const Status& status);
  // Records "<field>: <what>".
  void Add(const std::string& field, const std::string& what);

  bool empty() const { return problems_.empty(); }
  size_t size() const { return problems_.size(); }
  // OK when empty, else InvalidArgument listing every problem.
  Status ToStatus() const;

 private:
  std::string origin_;
  std::vector<std::string> problems_;
};

}  // namespace skrull

#endif  // SKRULL_COMMON_JSON_FIELDS_H_

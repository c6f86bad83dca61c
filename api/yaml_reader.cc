#include "api/yaml_reader.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace skrull::api {

namespace {

std::string Where(const std::string& origin, const YAML::Mark& mark) {
  if (mark.is_null()) return origin;
  return origin + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// Where flow nesting ('[' and '{' outside quotes and comments) first reaches
// its deepest level, and that depth: yaml-cpp reports a too-deep flow
// collection at the document's start or end, which helps nobody find it.
YAML::Mark DeepestFlowPoint(const std::string& text, int* max_depth_out) {
  YAML::Mark mark, deepest;
  int depth = 0, max_depth = 0;
  char quote = 0;
  bool comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++mark.line;
      mark.column = 0;
      comment = false;
      continue;
    }
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (!comment) {
      if (c == '"' || c == '\'') quote = c;
      if (c == '#') comment = true;
      if (c == '[' || c == '{') {
        if (++depth > max_depth) {
          max_depth = depth;
          deepest = mark;
          deepest.pos = static_cast<int>(i);
        }
      }
      if ((c == ']' || c == '}') && depth > 0) --depth;
    }
    ++mark.column;
  }
  *max_depth_out = max_depth;
  return deepest;
}

// Counts `node` with every alias expanded (scalar bytes, plus one per node)
// against `*budget`. False as soon as the budget is spent: the walk costs at
// most `*budget` steps however the aliases nest.
bool FitsExpansionBudget(const YAML::Node& node, int64_t* budget) {
  *budget -= 1;
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      *budget -= static_cast<int64_t>(node.Scalar().size());
      break;
    case YAML::NodeType::Sequence:
      for (const YAML::Node& item : node) {
        if (!FitsExpansionBudget(item, budget)) return false;
      }
      break;
    case YAML::NodeType::Map:
      for (const auto& pair : node) {
        if (!FitsExpansionBudget(pair.first, budget) || !FitsExpansionBudget(pair.second, budget)) {
          return false;
        }
      }
      break;
    default:
      break;
  }
  return *budget >= 0;
}

// Records where each document starts: one that starts where the previous
// one did means the parser made no progress.
class DocumentStarts : public YAML::EventHandler {
 public:
  bool stuck() const { return stuck_; }
  int documents() const { return documents_; }
  const YAML::Mark& last() const { return last_; }
  void OnDocumentStart(const YAML::Mark& mark) override {
    stuck_ |= documents_ > 0 && mark.pos == last_.pos;
    last_ = mark;
    ++documents_;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  YAML::Mark last_;
  int documents_ = 0;
  bool stuck_ = false;
};

}  // namespace

StatusOr<int> CountYamlDocuments(const std::string& text, const std::string& origin,
                                 int max_documents) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  while (starts.documents() <= max_documents && parser.HandleNextDocument(starts)) {
    if (starts.stuck()) {
      const char c = starts.last().pos >= 0 && static_cast<size_t>(starts.last().pos) < text.size()
                         ? text[static_cast<size_t>(starts.last().pos)]
                         : '?';
      return InvalidArgumentError(Where(origin, starts.last()) + ": invalid YAML: unexpected '" +
                                  std::string(1, c) + "' outside a flow collection");
    }
  }
  return starts.documents();
}

StatusOr<YAML::Node> LoadYamlDocument(const std::string& text, const std::string& origin) {
  if (text.size() > kMaxDocumentBytes) {
    return InvalidArgumentError(origin + ": the document is " + std::to_string(text.size()) +
                                " bytes; a SkrullJob may be at most " +
                                std::to_string(kMaxDocumentBytes) + " bytes (512 KiB)");
  }
  YAML::Node doc;
  try {
    // Counted first: YAML::LoadAll can loop forever (CountYamlDocuments).
    constexpr int kMaxCounted = 64;
    SKRULL_ASSIGN_OR_RETURN(const int documents, CountYamlDocuments(text, origin, kMaxCounted));
    if (documents == 0) return YAML::Node();
    if (documents > 1) {
      const std::string found = documents > kMaxCounted ? "more than " + std::to_string(kMaxCounted)
                                                        : std::to_string(documents);
      return InvalidArgumentError(origin + ": expected one YAML document, found " + found +
                                  " (separated by ---)");
    }
    doc = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    // Mostly flow nesting: point at its deepest bracket; else (block
    // nesting) yaml-cpp's position is right.
    int flow_depth = 0;
    const YAML::Mark flow_mark = DeepestFlowPoint(text, &flow_depth);
    const YAML::Mark mark = flow_depth > kMaxYamlDepth / 2 ? flow_mark : e.mark;
    return InvalidArgumentError(Where(origin, mark) + ": invalid YAML: nested deeper than " +
                                std::to_string(kMaxYamlDepth) +
                                " levels (the YAML reader's limit)");
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(Where(origin, e.mark) + ": invalid YAML: " + e.msg);
  }
  int64_t budget = ExpansionBudgetBytes(text.size());
  if (!FitsExpansionBudget(doc, &budget)) {
    return InvalidArgumentError(origin + ": YAML aliases expand the document to more than " +
                                std::to_string(ExpansionBudgetBytes(text.size())) +
                                " bytes (twice its size plus 64 KiB); write repeated values out "
                                "instead of aliasing them");
  }
  return doc;
}

SourcePos PositionOf(const YAML::Node& node) {
  YAML::Mark mark = node.Mark();
  if (mark.is_null()) return SourcePos{};
  return SourcePos{mark.line, mark.column};
}

std::string DescribeValue(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return Quote(node.Scalar());
    default:
      return "nothing";
  }
}

namespace {

// Strict decimal: optional sign, digits, nothing else.
bool ParseInt64(std::string_view text, int64_t* out, bool* out_of_range) {
  *out_of_range = false;
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  if (ptr != end) return false;
  if (ec == std::errc::result_out_of_range) *out_of_range = true;
  return ec == std::errc();
}

bool ParseDouble(std::string_view text, double* out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ptr == end && ec == std::errc() && std::isfinite(*out);
}

}  // namespace

std::optional<int64_t> ParseTokenCount(std::string_view text) {
  int64_t multiplier = 1;
  if (!text.empty()) {
    char last = text.back();
    if (last == 'k' || last == 'K') multiplier = int64_t{1} << 10;
    if (last == 'm' || last == 'M') multiplier = int64_t{1} << 20;
    if (multiplier != 1) text.remove_suffix(1);
  }
  int64_t value = 0;
  bool out_of_range = false;
  if (!ParseInt64(text, &value, &out_of_range)) return std::nullopt;
  if (value > std::numeric_limits<int64_t>::max() / multiplier ||
      value < std::numeric_limits<int64_t>::min() / multiplier) {
    return std::nullopt;
  }
  return value * multiplier;
}

MapReader::MapReader(const YAML::Node& node, std::string path, FieldIndex* index, Diagnostics* diag)
    : path_(std::move(path)), index_(index), diag_(diag) {
  if (!node.IsMap()) return;
  std::map<std::string, int> first_line;
  // yaml-cpp iterators yield (key, value) pairs by value: copy the nodes, never
  // keep references into `*it`.
  for (const auto& pair : node) {
    const YAML::Node key = pair.first;
    if (!key.IsScalar()) {
      diag_->Add(PositionOf(key), path_, "field names must be strings, got " + DescribeValue(key));
      index_->incomplete.insert(path_);
      continue;
    }
    auto [pos, inserted] = first_line.emplace(key.Scalar(), key.Mark().line + 1);
    if (!inserted) {
      diag_->Add(PositionOf(key), PathOf(Abbreviate(key.Scalar())),
                 "duplicate field (first set at line " + std::to_string(pos->second) + ")");
      index_->incomplete.insert(path_);
      continue;
    }
    entries_.push_back(Entry{key.Scalar(), key, pair.second});
  }
}

MapReader::~MapReader() { SKRULL_CHECK(finished_) << "MapReader(" << path_ << ") not finished"; }

bool MapReader::Has(std::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return !e.value.IsNull();
  }
  return false;
}

bool MapReader::HasKey(std::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return true;
  }
  return false;
}

void MapReader::Reject(std::string_view key, const std::string& message) {
  Claim(key);
  std::string path = PathOf(key);
  diag_->Add(index_->PositionOf(path), path, message);
  index_->invalid.insert(path);
}

const MapReader::Entry* MapReader::Claim(std::string_view key) {
  if (std::find(allowed_.begin(), allowed_.end(), key) == allowed_.end()) {
    allowed_.emplace_back(key);
  }
  for (const Entry& e : entries_) {
    if (e.key != key) continue;
    const YAML::Node& anchor = e.value.IsScalar() ? e.value : e.key_node;
    index_->positions[PathOf(key)] = PositionOf(anchor);
    return e.value.IsNull() ? nullptr : &e;
  }
  return nullptr;
}

void MapReader::Reject(const Entry& e, const std::string& message) { Reject(e.key, message); }

const std::string* MapReader::ScalarOf(const Entry& e, const char* what) {
  if (e.value.IsScalar()) return &e.value.Scalar();
  Reject(e, std::string("expected ") + what + ", got " + DescribeValue(e.value));
  return nullptr;
}

void MapReader::Read(std::string_view key, std::string* out) {
  const Entry* e = Claim(key);
  if (e == nullptr) return;
  if (const std::string* text = ScalarOf(*e, "a string")) *out = *text;
}

std::optional<int64_t> MapReader::IntegerOf(const Entry& e) {
  const std::string* text = ScalarOf(e, "an integer");
  if (text == nullptr) return std::nullopt;
  int64_t value = 0;
  bool out_of_range = false;
  if (ParseInt64(*text, &value, &out_of_range)) return value;
  if (out_of_range) {
    Reject(e, "is out of range for a 64-bit integer (got " + Abbreviate(*text) + ")");
  } else {
    Reject(e, "expected an integer, got " + Quote(*text));
  }
  return std::nullopt;
}

void MapReader::Read(std::string_view key, int64_t* out) {
  const Entry* e = Claim(key);
  if (e == nullptr) return;
  if (std::optional<int64_t> value = IntegerOf(*e)) *out = *value;
}

void MapReader::Read(std::string_view key, int* out) {
  const Entry* e = Claim(key);
  if (e == nullptr) return;
  std::optional<int64_t> value = IntegerOf(*e);
  if (!value) return;
  constexpr int64_t kMin = std::numeric_limits<int>::min();
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (*value < kMin || *value > kMax) {
    Reject(*e, "must be between " + std::to_string(kMin) + " and " + std::to_string(kMax) +
                   " (got " + std::to_string(*value) + ")");
    return;
  }
  *out = static_cast<int>(*value);
}

void MapReader::Read(std::string_view key, uint64_t* out) {
  const Entry* e = Claim(key);
  if (e == nullptr) return;
  const std::string* text = ScalarOf(*e, "a non-negative integer");
  if (text == nullptr) return;
  std::string_view digits = *text;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  uint64_t value = 0;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, value);
  if (!digits.empty() && ptr == end && ec == std::errc()) {
    *out = value;
  } else if (!digits.empty() && ptr == end && ec == std::errc::result_out_of_range) {
    Reject(*e, "is out of range for a 64-bit unsigned integer (got " + Abbreviate(*text) + ")");
  } else {
    int64_t negative = 0;
    bool out_of_range = false;
    if (ParseInt64(*text, &negative, &out_of_range) && negative < 0) {
      Reject(*e, "must be >= 0 (got " + Abbreviate(*text) + ")");
    } else {
      Reject(*e, "expected a non-negative integer, got " + Quote(*text));
    }
  }
}

void MapReader::Read(std::string_view key, double* out) {
  const Entry* e = Claim(key);
  if (e == nullptr) return;
  const std::string* text = ScalarOf(*e, "a number");
  if (text == nullptr) return;
  double value = 0;
  if (ParseDouble(*text, &value)) {
    *out = value;
  } else {
    Reject(*e, "expected a finite number, got " + Quote(*text));
  }
}

void MapReader::Read(std::string_view key, bool* out) {
  const Entry* e = Claim(key);
  if (e == nullptr) return;
  const std::string* text = ScalarOf(*e, "true or false");
  if (text == nullptr) return;
  if (*text == "true") {
    *out = true;
  } else if (*text == "false") {
    *out = false;
  } else {
    Reject(*e, "expected true or false, got " + Quote(*text));
  }
}

void MapReader::ReadTokens(std::string_view key, int64_t* out) {
  const Entry* e = Claim(key);
  if (e == nullptr) return;
  const char* kWhat = "a token count such as 2048 or 26K (K = 1024, M = 1048576)";
  const std::string* text = ScalarOf(*e, kWhat);
  if (text == nullptr) return;
  if (std::optional<int64_t> tokens = ParseTokenCount(*text)) {
    *out = *tokens;
  } else {
    Reject(*e, std::string("expected ") + kWhat + ", got " + Quote(*text));
  }
}

void MapReader::ReadBucketSize(std::string_view key, bool* is_auto, int64_t* tokens) {
  const Entry* e = Claim(key);
  if (e == nullptr) return;
  const char* kWhat = "'auto' or a token count such as 2048 or 26K (K = 1024, M = 1048576)";
  const std::string* text = ScalarOf(*e, kWhat);
  if (text == nullptr) return;
  if (*text == "auto") {
    *is_auto = true;
    *tokens = 0;
  } else if (std::optional<int64_t> value = ParseTokenCount(*text)) {
    if (*value <= 0) {
      Reject(*e, "must be > 0 tokens or 'auto' (got " + Abbreviate(*text) + ")");
      return;
    }
    *is_auto = false;
    *tokens = *value;
  } else {
    Reject(*e, std::string("expected ") + kWhat + ", got " + Quote(*text));
  }
}

bool MapReader::ReadChoice(std::string_view key, const std::vector<std::string>& names,
                           size_t* index) {
  const Entry* e = Claim(key);
  if (e == nullptr) return false;
  const std::string* text = ScalarOf(*e, "a string");
  if (text == nullptr) return false;
  auto it = std::find(names.begin(), names.end(), *text);
  if (it != names.end()) {
    *index = static_cast<size_t>(it - names.begin());
    return true;
  }
  Reject(*e, "must be one of " + JoinNames(names) + " (got " + Quote(*text) + ")" +
                 DidYouMean(*text, names));
  return false;
}

void MapReader::ReadStringList(std::string_view key, std::vector<std::string>* out) {
  const Entry* e = Claim(key);
  if (e == nullptr) return;
  if (!e->value.IsSequence()) {
    Reject(*e, "expected a list of strings, got " + DescribeValue(e->value));
    return;
  }
  std::vector<std::string> items;
  bool ok = true;
  const std::string path = PathOf(key);
  for (size_t i = 0; i < e->value.size(); ++i) {
    const YAML::Node item = e->value[i];
    std::string item_path = path + "[" + std::to_string(i) + "]";
    index_->positions[item_path] = PositionOf(item);
    if (!item.IsScalar()) {
      diag_->Add(PositionOf(item), item_path, "expected a string, got " + DescribeValue(item));
      index_->invalid.insert(item_path);
      ok = false;
      continue;
    }
    items.push_back(item.Scalar());
  }
  if (ok) {
    *out = std::move(items);
  } else {
    index_->invalid.insert(path);
  }
}

void MapReader::ReadStringMap(std::string_view key, std::map<std::string, std::string>* out) {
  const Entry* e = Claim(key);
  if (e == nullptr) return;
  if (!e->value.IsMap()) {
    Reject(*e, "expected a mapping of strings to strings, got " + DescribeValue(e->value));
    return;
  }
  std::map<std::string, std::string> items;
  const std::string path = PathOf(key);
  for (const auto& pair : e->value) {
    const YAML::Node k = pair.first;
    const YAML::Node v = pair.second;
    if (!k.IsScalar()) {
      diag_->Add(PositionOf(k), path, "keys must be strings, got " + DescribeValue(k));
      continue;
    }
    std::string item_path = path + "[" + Abbreviate(k.Scalar()) + "]";
    index_->positions[item_path] = PositionOf(k);
    if (items.count(k.Scalar()) > 0) {
      diag_->Add(PositionOf(k), item_path, "duplicate key");
      continue;
    }
    if (v.IsNull()) {
      items[k.Scalar()] = "";
    } else if (v.IsScalar()) {
      items[k.Scalar()] = v.Scalar();
    } else {
      diag_->Add(PositionOf(v), item_path, "expected a string, got " + DescribeValue(v));
      index_->invalid.insert(item_path);
    }
  }
  *out = std::move(items);
}

namespace {

// `s` as a JSON string; bytes that are not UTF-8 become U+FFFD.
void AppendJsonString(const std::string& s, std::string* out) {
  *out += nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A plain scalar JSON would write without quotes: a JSON number, true,
// false or null.
std::optional<std::string> PlainJsonScalar(const std::string& s) {
  if (s == "true" || s == "false") return s;
  if (s.empty() || s == "~" || s == "null") return std::string("null");
  int64_t i = 0;
  bool out_of_range = false;
  if (ParseInt64(s, &i, &out_of_range)) return std::to_string(i);
  const bool numeric = std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' ||
           c == '-' || c == '+';
  });
  double d = 0;
  if (numeric && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-') &&
      ParseDouble(s, &d)) {
    return FormatDouble(d);
  }
  return std::nullopt;
}

void AppendJson(const YAML::Node& node, std::string* out) {
  if (node.IsMap()) {
    *out += '{';
    bool first = true;
    for (const auto& pair : node) {
      if (!first) *out += ',';
      first = false;
      AppendJsonString(pair.first.IsScalar() ? pair.first.Scalar() : "", out);
      *out += ':';
      AppendJson(pair.second, out);
    }
    *out += '}';
  } else if (node.IsSequence()) {
    *out += '[';
    for (size_t i = 0; i < node.size(); ++i) {
      if (i > 0) *out += ',';
      AppendJson(node[i], out);
    }
    *out += ']';
  } else if (node.IsScalar()) {
    std::optional<std::string> plain;
    if (node.Tag() != "!") plain = PlainJsonScalar(node.Scalar());  // "!": quoted in the YAML
    if (plain) {
      *out += *plain;
    } else {
      AppendJsonString(node.Scalar(), out);
    }
  } else {
    *out += "null";
  }
}

}  // namespace

std::string YamlToJson(const YAML::Node& node) {
  std::string out;
  AppendJson(node, &out);
  return out;
}

void MapReader::ReadObject(std::string_view key, bool list, const char* required_key,
                           std::string* out, std::vector<std::string>* names) {
  const Entry* e = Claim(key);
  if (e == nullptr) return;
  if (list ? !e->value.IsSequence() : !e->value.IsMap()) {
    Reject(*e, std::string("expected ") + (list ? "a list of mappings" : "a mapping") + ", got " +
                   DescribeValue(e->value));
    return;
  }
  bool ok = true;
  std::vector<std::string> found;
  const std::string path = PathOf(key);
  for (size_t i = 0; list && i < e->value.size(); ++i) {
    const YAML::Node item = e->value[i];
    const std::string item_path = path + "[" + std::to_string(i) + "]";
    if (!item.IsMap()) {
      diag_->Add(PositionOf(item), item_path, "expected a mapping, got " + DescribeValue(item));
      ok = false;
      continue;
    }
    if (required_key == nullptr) continue;
    const YAML::Node value = item[required_key];
    if (!value.IsDefined() || !value.IsScalar() || value.Scalar().empty()) {
      diag_->Add(PositionOf(item), item_path + "." + required_key, "required: a non-empty string");
      ok = false;
      continue;
    }
    found.push_back(value.Scalar());
  }
  if (!ok) {
    index_->invalid.insert(path);
    return;
  }
  *out = YamlToJson(e->value);
  if (names != nullptr) *names = std::move(found);
}

void MapReader::ReadMapList(std::string_view key,
                            const std::function<void(MapReader&, size_t)>& each) {
  const Entry* e = Claim(key);
  if (e == nullptr) return;
  if (!e->value.IsSequence()) {
    Reject(*e, "expected a list of mappings, got " + DescribeValue(e->value));
    return;
  }
  const std::string path = PathOf(key);
  for (size_t i = 0; i < e->value.size(); ++i) {
    const YAML::Node item = e->value[i];
    const std::string item_path = path + "[" + std::to_string(i) + "]";
    index_->positions[item_path] = PositionOf(item);
    if (!item.IsMap()) {
      diag_->Add(PositionOf(item), item_path, "expected a mapping, got " + DescribeValue(item));
      index_->invalid.insert(item_path);
      continue;
    }
    MapReader reader(item, item_path, index_, diag_);
    each(reader, i);
    reader.Finish();
  }
}

MapReader MapReader::Child(std::string_view key) {
  const Entry* e = Claim(key);
  YAML::Node node;
  if (e != nullptr) {
    if (e->value.IsMap()) {
      node = e->value;
    } else {
      Reject(*e, "expected a mapping, got " + DescribeValue(e->value));
    }
  }
  return MapReader(node, PathOf(key), index_, diag_);
}

void MapReader::Ignore(std::string_view key) { Claim(key); }

void MapReader::Finish() {
  finished_ = true;
  size_t unknown = 0;
  for (const Entry& e : entries_) {
    if (std::find(allowed_.begin(), allowed_.end(), e.key) != allowed_.end()) continue;
    // Past kMaxReportedErrors unknown keys here, no message of this mapping
    // is shown (earlier ones come first), so the hint is not worth its cost.
    std::string hint;
    if (++unknown <= kMaxReportedErrors) {
      hint = DidYouMean(e.key, allowed_);
      if (e.key == "<<") hint = "; YAML merge keys are not supported, write the fields out";
      if (hint.empty()) hint = "; allowed fields: " + JoinNames(allowed_);
    }
    diag_->Add(PositionOf(e.key_node), PathOf(Abbreviate(e.key)), "unknown field" + hint);
    index_->incomplete.insert(path_);
  }
}

}  // namespace skrull::api

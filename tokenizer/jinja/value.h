// Values of the chat-template interpreter: Python's types as Jinja2 sees them
// (None, bool, int, float, str, list, tuple, dict, namespace, callables and
// Undefined), with Python's str(), repr(), truthiness, equality and ordering.
//
// Strings carry provenance: `TaggedString::spans` marks byte ranges that came
// from a tagged input string (an assistant message's content). Slicing,
// stripping, splitting and concatenation keep the marks, so the rendered chat
// knows which bytes are assistant content (chat.h turns that into labels).
//
// Values that contain values (lists, dicts, namespaces) record how deeply they
// nest. Inside a rendering the factories charge what they build to the
// rendering's budget (budget.h), and printing, comparing and serializing
// charge it too and stop at kMaxValueDepth, so a value that contains itself
// (a namespace) or shares sub-lists cannot make them loop or blow up.
//
// Private to tokenizer/. Thread safety: values are not shared across threads.
#ifndef SKRULL_TOKENIZER_JINJA_VALUE_H_
#define SKRULL_TOKENIZER_JINJA_VALUE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace skrull::jinja {

// Bytes [begin, end) of a string that came from the input tagged `tag`.
struct Span {
  uint32_t begin;
  uint32_t end;
  int32_t tag;
};

struct TaggedString {
  std::string text;
  std::vector<Span> spans;  // sorted, non-overlapping, non-empty

  void Append(const TaggedString& other);
  void Append(std::string_view plain) { text.append(plain); }
  // Bytes [begin, end) with the spans inside them.
  TaggedString Sub(size_t begin, size_t end) const;
};

class Value;
using ValueList = std::vector<Value>;
using ValueDict = std::vector<std::pair<std::string, Value>>;  // insertion order

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};
using NativeFunction = std::function<StatusOr<Value>(CallArgs&)>;

class Value {
 public:
  enum class Type { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };

  Value() = default;  // Undefined
  static Value Undefined(std::string hint = "");
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double f);
  static Value String(std::string s);
  static Value String(TaggedString s);
  static Value List(ValueList items, bool tuple = false);
  static Value Dict(ValueDict items, bool is_namespace = false);
  static Value Function(std::string name, NativeFunction fn);
  // JSON -> Value (object key order kept, strings untagged). Arrays and
  // objects nested deeper than kMaxValueDepth read as None (callers check
  // the depth of untrusted JSON first: JsonDepthExceeds).
  static Value FromJson(const nlohmann::ordered_json& j);

  Type type() const { return type_; }
  bool IsUndefined() const { return type_ == Type::kUndefined; }
  bool IsNone() const { return type_ == Type::kNone; }
  bool IsString() const { return type_ == Type::kString; }
  bool IsList() const { return type_ == Type::kList; }
  bool IsDict() const { return type_ == Type::kDict; }
  bool IsNumber() const { return type_ == Type::kInt || type_ == Type::kFloat; }
  bool IsTuple() const { return type_ == Type::kList && tuple_; }
  bool IsNamespace() const { return type_ == Type::kDict && namespace_; }

  bool AsBool() const { return b_; }
  int64_t AsInt() const { return i_; }
  double AsNumber() const { return type_ == Type::kInt ? static_cast<double>(i_) : f_; }
  const TaggedString& Str() const { return *str_; }
  const std::string& Text() const { return str_->text; }
  const ValueList& Items() const { return *list_; }
  ValueDict& Entries() const { return *dict_; }  // namespaces are mutable
  const NativeFunction& Fn() const { return *fn_; }
  const std::string& name() const { return hint_; }  // callable name / undefined hint

  // Levels of lists and dicts in this value when it was built (0 for
  // scalars); a namespace's entries may have changed since.
  int depth() const { return depth_; }

  // Dict lookup by key; nullptr when absent.
  const Value* Find(std::string_view key) const;

  // Python truthiness; Undefined is false.
  bool Truthy() const;
  // Python str() (Undefined -> ""), keeping string spans. Printing a
  // container charges the budget; when it runs out the text is cut short
  // and the budget holds the error.
  TaggedString ToStr() const;
  // Python repr() (same budget rule).
  std::string Repr() const;
  // Jinja2/Python == (same budget rule; false once the budget ran out).
  bool Equals(const Value& other) const;
  // Python len() for strings (code points), lists, dicts; error otherwise.
  StatusOr<int64_t> Length() const;
  // Python type name for messages ("str", "dict", "NoneType", ...).
  std::string TypeName() const;

 private:
  Type type_ = Type::kUndefined;
  bool b_ = false;
  bool tuple_ = false;
  bool namespace_ = false;
  uint16_t depth_ = 0;
  int64_t i_ = 0;
  double f_ = 0;
  std::string hint_;
  std::shared_ptr<TaggedString> str_;
  std::shared_ptr<ValueList> list_;
  std::shared_ptr<ValueDict> dict_;
  std::shared_ptr<NativeFunction> fn_;
};

// Python float repr (shortest round-trip: 1.0, 0.1, 1e+16).
std::string FloatRepr(double f);
// Python json.dumps(v, ensure_ascii=False, indent, separators, sort_keys) as
// transformers' tojson filter calls it. indent < 0 = None.
StatusOr<std::string> ToJson(const Value& v, int indent, const std::string& item_separator,
                             const std::string& key_separator, bool sort_keys);
// Python's str.isspace() for one code point.
bool IsPySpace(char32_t c);
// Whether JSON `j` nests arrays and objects deeper than `max_depth` levels
// (an iterative walk: safe on any depth).
bool JsonDepthExceeds(const nlohmann::ordered_json& j, int max_depth);

}  // namespace skrull::jinja

#endif  // SKRULL_TOKENIZER_JINJA_VALUE_H_

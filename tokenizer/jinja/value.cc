#include "tokenizer/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tokenizer/jinja/budget.h"
#include "tokenizer/utf8.h"

namespace skrull::jinja {

using tokenizer::CodePointCount;
using tokenizer::NextCodePoint;

void TaggedString::Append(const TaggedString& other) {
  const auto shift = static_cast<uint32_t>(text.size());
  for (Span s : other.spans) {
    s.begin += shift;
    s.end += shift;
    if (!spans.empty() && spans.back().end == s.begin && spans.back().tag == s.tag) {
      spans.back().end = s.end;
    } else {
      spans.push_back(s);
    }
  }
  text.append(other.text);
}

TaggedString TaggedString::Sub(size_t begin, size_t end) const {
  TaggedString out;
  out.text = text.substr(begin, end - begin);
  for (const Span& s : spans) {
    const size_t b = std::max<size_t>(s.begin, begin);
    const size_t e = std::min<size_t>(s.end, end);
    if (b < e) {
      out.spans.push_back(
          {static_cast<uint32_t>(b - begin), static_cast<uint32_t>(e - begin), s.tag});
    }
  }
  return out;
}

Value Value::Undefined(std::string hint) {
  Value v;
  v.hint_ = std::move(hint);
  return v;
}
Value Value::None() {
  Value v;
  v.type_ = Type::kNone;
  return v;
}
Value Value::Bool(bool b) {
  Value v;
  v.type_ = Type::kBool;
  v.b_ = b;
  return v;
}
Value Value::Int(int64_t i) {
  Value v;
  v.type_ = Type::kInt;
  v.i_ = i;
  return v;
}
Value Value::Float(double f) {
  Value v;
  v.type_ = Type::kFloat;
  v.f_ = f;
  return v;
}
Value Value::String(std::string s) {
  TaggedString t;
  t.text = std::move(s);
  return String(std::move(t));
}
Value Value::String(TaggedString s) {
  if (Budget* b = Budget::Active()) b->BuiltString(s.text.size());
  Value v;
  v.type_ = Type::kString;
  v.str_ = std::make_shared<TaggedString>(std::move(s));
  return v;
}
namespace {

// 1 + the deepest of `values`, saturating (a deeper value is refused by the
// budget before it can grow further).
template <typename Range, typename Get>
uint16_t DepthOver(const Range& values, Get get) {
  int depth = 0;
  for (const auto& x : values) depth = std::max(depth, get(x).depth());
  return static_cast<uint16_t>(std::min(depth + 1, kMaxValueDepth + 1));
}

void ChargeContainer(size_t items, uint16_t depth) {
  Budget* b = Budget::Active();
  if (b == nullptr) return;
  b->BuiltList(items);
  b->FitsDepth(depth);
}

}  // namespace

Value Value::List(ValueList items, bool tuple) {
  Value v;
  v.depth_ = DepthOver(items, [](const Value& x) -> const Value& { return x; });
  ChargeContainer(items.size(), v.depth_);
  v.type_ = Type::kList;
  v.tuple_ = tuple;
  v.list_ = std::make_shared<ValueList>(std::move(items));
  return v;
}
Value Value::Dict(ValueDict items, bool is_namespace) {
  Value v;
  v.depth_ = DepthOver(items, [](const auto& e) -> const Value& { return e.second; });
  ChargeContainer(items.size(), v.depth_);
  v.type_ = Type::kDict;
  v.namespace_ = is_namespace;
  v.dict_ = std::make_shared<ValueDict>(std::move(items));
  return v;
}
Value Value::Function(std::string name, NativeFunction fn) {
  Value v;
  v.type_ = Type::kCallable;
  v.hint_ = std::move(name);
  v.fn_ = std::make_shared<NativeFunction>(std::move(fn));
  return v;
}

namespace {

Value FromJsonAt(const nlohmann::ordered_json& j, int depth) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::boolean:
      return Value::Bool(j.get<bool>());
    case T::number_integer:
      return Value::Int(j.get<int64_t>());
    case T::number_unsigned:
      return Value::Int(static_cast<int64_t>(j.get<uint64_t>()));
    case T::number_float:
      return Value::Float(j.get<double>());
    case T::string:
      return Value::String(j.get<std::string>());
    case T::array: {
      if (depth >= kMaxValueDepth) return Value::None();
      ValueList items;
      for (const auto& e : j) items.push_back(FromJsonAt(e, depth + 1));
      return Value::List(std::move(items));
    }
    case T::object: {
      if (depth >= kMaxValueDepth) return Value::None();
      ValueDict items;
      for (const auto& [k, e] : j.items()) items.emplace_back(k, FromJsonAt(e, depth + 1));
      return Value::Dict(std::move(items));
    }
    default:
      return Value::None();
  }
}

}  // namespace

Value Value::FromJson(const nlohmann::ordered_json& j) { return FromJsonAt(j, 0); }

bool JsonDepthExceeds(const nlohmann::ordered_json& j, int max_depth) {
  std::vector<std::pair<const nlohmann::ordered_json*, int>> stack = {{&j, 0}};
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    if (depth >= max_depth) return true;
    for (const auto& child : *node) stack.emplace_back(&child, depth + 1);
  }
  return false;
}

const Value* Value::Find(std::string_view key) const {
  if (type_ != Type::kDict) return nullptr;
  for (const auto& [k, v] : *dict_) {
    if (k == key) return &v;
  }
  return nullptr;
}

bool Value::Truthy() const {
  switch (type_) {
    case Type::kUndefined:
    case Type::kNone:
      return false;
    case Type::kBool:
      return b_;
    case Type::kInt:
      return i_ != 0;
    case Type::kFloat:
      return f_ != 0;
    case Type::kString:
      return !str_->text.empty();
    case Type::kList:
      return !list_->empty();
    case Type::kDict:
      return namespace_ || !dict_->empty();
    case Type::kCallable:
      return true;
  }
  return false;
}

std::string FloatRepr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*e", precision - 1, f);
    if (std::strtod(buf, nullptr) == f) break;
  }
  // buf = [-]d[.ddd]e[+-]XX: digits and decimal exponent.
  std::string s = buf;
  const bool negative = s[0] == '-';
  if (negative) s = s.substr(1);
  const size_t e = s.find('e');
  const int exponent = std::atoi(s.c_str() + e + 1);
  std::string digits = s.substr(0, 1) + (e > 2 ? s.substr(2, e - 2) : "");
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent >= 0) {
      const auto int_len = static_cast<size_t>(exponent) + 1;
      if (digits.size() <= int_len) {
        out = digits + std::string(int_len - digits.size(), '0') + ".0";
      } else {
        out = digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    } else {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof(exp), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp;
  }
  return negative ? "-" + out : out;
}

namespace {

std::string StringRepr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

}  // namespace

namespace {

// Appends repr(v) to *out; false once the budget ran out (*out is then cut
// short and the budget holds the error).
bool AppendRepr(const Value& v, Budget& b, std::string* out) {
  if (!b.Step()) return false;
  switch (v.type()) {
    case Value::Type::kString:
      if (!b.Scan(v.Text().size())) return false;
      *out += StringRepr(v.Text());
      break;
    case Value::Type::kList:
    case Value::Type::kDict: {
      const bool list = v.IsList();
      const bool entered = b.EnterValue();
      bool ok = entered;
      if (list) {
        *out += v.IsTuple() ? "(" : "[";
        for (size_t i = 0; ok && i < v.Items().size(); ++i) {
          if (i > 0) *out += ", ";
          ok = AppendRepr(v.Items()[i], b, out) && b.FitsString(out->size(), "a printed value");
        }
        if (v.IsTuple() && v.Items().size() == 1) *out += ",";
        *out += v.IsTuple() ? ")" : "]";
      } else {
        *out += v.IsNamespace() ? "<Namespace {" : "{";
        const ValueDict& entries = v.Entries();
        for (size_t i = 0; ok && i < entries.size(); ++i) {
          if (i > 0) *out += ", ";
          *out += StringRepr(entries[i].first) + ": ";
          ok =
              AppendRepr(entries[i].second, b, out) && b.FitsString(out->size(), "a printed value");
        }
        *out += v.IsNamespace() ? "}>" : "}";
      }
      b.LeaveValue();
      return ok;
    }
    case Value::Type::kCallable:
      *out += "<function " + v.name() + ">";
      break;
    default:
      out->append(v.ToStr().text);
  }
  return true;
}

bool EqualsIn(const Value& a, const Value& o, Budget& b) {
  if (!b.Step()) return false;
  if (a.IsNumber() && o.IsNumber()) {
    if (a.type() == Value::Type::kInt && o.type() == Value::Type::kInt) {
      return a.AsInt() == o.AsInt();
    }
    return a.AsNumber() == o.AsNumber();
  }
  const auto as_number = [](const Value& v) {
    return v.type() == Value::Type::kBool ? (v.AsBool() ? 1.0 : 0.0) : v.AsNumber();
  };
  // Python: True == 1.
  if ((a.type() == Value::Type::kBool && o.IsNumber()) ||
      (a.IsNumber() && o.type() == Value::Type::kBool)) {
    return as_number(a) == as_number(o);
  }
  if (a.type() != o.type()) return false;
  switch (a.type()) {
    case Value::Type::kUndefined:
    case Value::Type::kNone:
      return true;
    case Value::Type::kBool:
      return a.AsBool() == o.AsBool();
    case Value::Type::kString:
      return b.Scan(std::min(a.Text().size(), o.Text().size())) && a.Text() == o.Text();
    case Value::Type::kList: {
      if (a.Items().size() != o.Items().size()) return false;
      if (!b.EnterValue()) {
        b.LeaveValue();
        return false;
      }
      bool equal = true;
      for (size_t i = 0; equal && i < a.Items().size(); ++i) {
        equal = EqualsIn(a.Items()[i], o.Items()[i], b);
      }
      b.LeaveValue();
      return equal && b.ok();
    }
    case Value::Type::kDict: {
      if (&a.Entries() == &o.Entries()) return true;
      if (a.IsNamespace() || o.IsNamespace() || a.Entries().size() != o.Entries().size()) {
        return false;
      }
      if (!b.EnterValue()) {
        b.LeaveValue();
        return false;
      }
      bool equal = true;
      for (const auto& [k, v] : a.Entries()) {
        if (!b.Step(static_cast<int64_t>(o.Entries().size()))) {
          equal = false;
          break;
        }
        const Value* w = o.Find(k);
        if (w == nullptr || !EqualsIn(v, *w, b)) {
          equal = false;
          break;
        }
      }
      b.LeaveValue();
      return equal && b.ok();
    }
    case Value::Type::kCallable:
      return &a.Fn() == &o.Fn();
    default:  // numbers are compared above
      return false;
  }
}

}  // namespace

TaggedString Value::ToStr() const {
  if (type_ == Type::kString) return *str_;
  TaggedString t;
  switch (type_) {
    case Type::kUndefined:
      break;
    case Type::kNone:
      t.text = "None";
      break;
    case Type::kBool:
      t.text = b_ ? "True" : "False";
      break;
    case Type::kInt:
      t.text = std::to_string(i_);
      break;
    case Type::kFloat:
      t.text = FloatRepr(f_);
      break;
    default:
      t.text = Repr();
  }
  return t;
}

std::string Value::Repr() const {
  std::string out;
  AppendRepr(*this, Budget::ForWalk(), &out);
  return out;
}

bool Value::Equals(const Value& o) const { return EqualsIn(*this, o, Budget::ForWalk()); }

StatusOr<int64_t> Value::Length() const {
  switch (type_) {
    case Type::kUndefined:
      return 0;
    case Type::kString:
      return static_cast<int64_t>(CodePointCount(str_->text));
    case Type::kList:
      return static_cast<int64_t>(list_->size());
    case Type::kDict:
      return static_cast<int64_t>(dict_->size());
    default:
      return InvalidArgumentError("object of type '" + TypeName() + "' has no len()");
  }
}

std::string Value::TypeName() const {
  switch (type_) {
    case Type::kUndefined:
      return "Undefined";
    case Type::kNone:
      return "NoneType";
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "int";
    case Type::kFloat:
      return "float";
    case Type::kString:
      return "str";
    case Type::kList:
      return tuple_ ? "tuple" : "list";
    case Type::kDict:
      return namespace_ ? "Namespace" : "dict";
    case Type::kCallable:
      return "function";
  }
  return "object";
}

bool IsPySpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

namespace {

void JsonString(const std::string& s, std::string* out) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          *out += static_cast<char>(c);
        }
    }
  }
  *out += '"';
}

Status JsonContainer(const Value& v, int indent, int depth, const std::string& item_sep,
                     const std::string& key_sep, bool sort_keys, Budget& b, std::string* out);

// Appends json.dumps(v) to *out. Charges the budget `b` for each value and
// the bytes written; an error once it ran out.
Status JsonValue(const Value& v, int indent, int depth, const std::string& item_sep,
                 const std::string& key_sep, bool sort_keys, Budget& b, std::string* out) {
  auto spent = [&]() { return InvalidArgumentError("tojson: " + b.status().message()); };
  if (!b.Step() || !b.FitsString(out->size(), "tojson's output")) return spent();
  switch (v.type()) {
    case Value::Type::kNone:
      *out += "null";
      return OkStatus();
    case Value::Type::kBool:
      *out += v.AsBool() ? "true" : "false";
      return OkStatus();
    case Value::Type::kInt:
      *out += std::to_string(v.AsInt());
      return OkStatus();
    case Value::Type::kFloat:
      *out += std::isnan(v.AsNumber())   ? "NaN"
              : std::isinf(v.AsNumber()) ? (v.AsNumber() > 0 ? "Infinity" : "-Infinity")
                                         : FloatRepr(v.AsNumber());
      return OkStatus();
    case Value::Type::kString:
      if (!b.Scan(v.Text().size())) return spent();
      JsonString(v.Text(), out);
      return OkStatus();
    case Value::Type::kList:
    case Value::Type::kDict: {
      if (!b.EnterValue()) {
        b.LeaveValue();
        return spent();
      }
      Status status = JsonContainer(v, indent, depth, item_sep, key_sep, sort_keys, b, out);
      b.LeaveValue();
      return status;
    }
    default:
      return InvalidArgumentError("tojson: Object of type " + v.TypeName() +
                                  " is not JSON serializable");
  }
}

Status JsonContainer(const Value& v, int indent, int depth, const std::string& item_sep,
                     const std::string& key_sep, bool sort_keys, Budget& b, std::string* out) {
  auto spent = [&]() { return InvalidArgumentError("tojson: " + b.status().message()); };
  auto newline = [&](int level) {
    if (indent < 0) return true;
    const size_t pad = static_cast<size_t>(indent) * static_cast<size_t>(level);
    if (!b.FitsString(out->size() + pad + 1, "tojson's output") || !b.Scan(pad)) return false;
    *out += '\n';
    out->append(pad, ' ');
    return true;
  };
  switch (v.type()) {
    case Value::Type::kList: {
      if (v.Items().empty()) {
        *out += "[]";
        return OkStatus();
      }
      *out += '[';
      for (size_t i = 0; i < v.Items().size(); ++i) {
        if (i > 0) *out += item_sep;
        if (!newline(depth + 1)) return spent();
        SKRULL_RETURN_IF_ERROR(
            JsonValue(v.Items()[i], indent, depth + 1, item_sep, key_sep, sort_keys, b, out));
      }
      if (!newline(depth)) return spent();
      *out += ']';
      return OkStatus();
    }
    case Value::Type::kDict: {
      if (v.Entries().empty()) {
        *out += "{}";
        return OkStatus();
      }
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : v.Entries()) entries.push_back(&e);
      if (sort_keys) {
        if (!b.Step(static_cast<int64_t>(entries.size()) * 20)) return spent();
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      *out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) *out += item_sep;
        if (!newline(depth + 1)) return spent();
        JsonString(entries[i]->first, out);
        *out += key_sep;
        SKRULL_RETURN_IF_ERROR(
            JsonValue(entries[i]->second, indent, depth + 1, item_sep, key_sep, sort_keys, b, out));
      }
      if (!newline(depth)) return spent();
      *out += '}';
      return OkStatus();
    }
    default:
      return OkStatus();
  }
}

}  // namespace

StatusOr<std::string> ToJson(const Value& v, int indent, const std::string& item_separator,
                             const std::string& key_separator, bool sort_keys) {
  std::string out;
  SKRULL_RETURN_IF_ERROR(
      JsonValue(v, indent, 0, item_separator, key_separator, sort_keys, Budget::ForWalk(), &out));
  return out;
}

}  // namespace skrull::jinja

#include "tokenizer/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

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
  Value v;
  v.type_ = Type::kString;
  v.str_ = std::make_shared<TaggedString>(std::move(s));
  return v;
}
Value Value::List(ValueList items, bool tuple) {
  Value v;
  v.type_ = Type::kList;
  v.tuple_ = tuple;
  v.list_ = std::make_shared<ValueList>(std::move(items));
  return v;
}
Value Value::Dict(ValueDict items, bool is_namespace) {
  Value v;
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

Value Value::FromJson(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return None();
    case nlohmann::ordered_json::value_t::boolean:
      return Bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Int(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float:
      return Float(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return String(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      for (const auto& e : j) items.push_back(FromJson(e));
      return List(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict items;
      for (const auto& [k, e] : j.items()) items.emplace_back(k, FromJson(e));
      return Dict(std::move(items));
    }
    default:
      return None();
  }
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
  switch (type_) {
    case Type::kString:
      return StringRepr(str_->text);
    case Type::kList: {
      std::string out = tuple_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i > 0) out += ", ";
        out += (*list_)[i].Repr();
      }
      if (tuple_ && list_->size() == 1) out += ",";
      return out + (tuple_ ? ")" : "]");
    }
    case Type::kDict: {
      std::string out = namespace_ ? "<Namespace {" : "{";
      for (size_t i = 0; i < dict_->size(); ++i) {
        if (i > 0) out += ", ";
        out += StringRepr((*dict_)[i].first) + ": " + (*dict_)[i].second.Repr();
      }
      return out + (namespace_ ? "}>" : "}");
    }
    case Type::kCallable:
      return "<function " + hint_ + ">";
    default:
      return ToStr().text;
  }
}

bool Value::Equals(const Value& o) const {
  if (IsNumber() && o.IsNumber()) {
    if (type_ == Type::kInt && o.type_ == Type::kInt) return i_ == o.i_;
    return AsNumber() == o.AsNumber();
  }
  // Python: True == 1.
  if ((type_ == Type::kBool && o.IsNumber()) || (IsNumber() && o.type_ == Type::kBool)) {
    const double a = type_ == Type::kBool ? (b_ ? 1 : 0) : AsNumber();
    const double b = o.type_ == Type::kBool ? (o.b_ ? 1 : 0) : o.AsNumber();
    return a == b;
  }
  if (type_ != o.type_) return false;
  switch (type_) {
    case Type::kUndefined:
    case Type::kNone:
      return true;
    case Type::kBool:
      return b_ == o.b_;
    case Type::kString:
      return str_->text == o.str_->text;
    case Type::kList:
      if (list_->size() != o.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].Equals((*o.list_)[i])) return false;
      }
      return true;
    case Type::kDict:
      if (dict_ == o.dict_) return true;
      if (namespace_ || o.namespace_ || dict_->size() != o.dict_->size()) return false;
      for (const auto& [k, v] : *dict_) {
        const Value* w = o.Find(k);
        if (w == nullptr || !v.Equals(*w)) return false;
      }
      return true;
    case Type::kCallable:
      return fn_ == o.fn_;
    default:
      return false;
  }
}

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

Status JsonValue(const Value& v, int indent, int depth, const std::string& item_sep,
                 const std::string& key_sep, bool sort_keys, std::string* out) {
  if (depth > 256) return InvalidArgumentError("tojson: value nested too deeply");
  auto newline = [&](int level) {
    if (indent < 0) return;
    *out += '\n';
    out->append(static_cast<size_t>(indent * level), ' ');
  };
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
      JsonString(v.Text(), out);
      return OkStatus();
    case Value::Type::kList: {
      if (v.Items().empty()) {
        *out += "[]";
        return OkStatus();
      }
      *out += '[';
      for (size_t i = 0; i < v.Items().size(); ++i) {
        if (i > 0) *out += item_sep;
        newline(depth + 1);
        SKRULL_RETURN_IF_ERROR(
            JsonValue(v.Items()[i], indent, depth + 1, item_sep, key_sep, sort_keys, out));
      }
      newline(depth);
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
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      *out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) *out += item_sep;
        newline(depth + 1);
        JsonString(entries[i]->first, out);
        *out += key_sep;
        SKRULL_RETURN_IF_ERROR(
            JsonValue(entries[i]->second, indent, depth + 1, item_sep, key_sep, sort_keys, out));
      }
      newline(depth);
      *out += '}';
      return OkStatus();
    }
    default:
      return InvalidArgumentError("tojson: Object of type " + v.TypeName() +
                                  " is not JSON serializable");
  }
}

}  // namespace

StatusOr<std::string> ToJson(const Value& v, int indent, const std::string& item_separator,
                             const std::string& key_separator, bool sort_keys) {
  std::string out;
  SKRULL_RETURN_IF_ERROR(JsonValue(v, indent, 0, item_separator, key_separator, sort_keys, &out));
  return out;
}

}  // namespace skrull::jinja

#include "tokenizer/jinja/builtins.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include <utf8proc.h>

#include "tokenizer/jinja/budget.h"
#include "tokenizer/utf8.h"

namespace skrull::jinja {
namespace {

using tokenizer::AppendUtf8;
using tokenizer::NextCodePoint;

Status TypeError(const std::string& what) { return InvalidArgumentError(what); }

// The budget of the rendering that calls the builtin (budget.h).
Budget& B() { return Budget::ForWalk(); }
Status Spent() { return B().status(); }

// Argument `index` (positional) or `name` (keyword), else `fallback`.
Value Arg(const CallArgs& args, size_t index, const char* name, Value fallback = Value()) {
  if (index < args.positional.size()) return args.positional[index];
  for (const auto& [k, v] : args.keyword) {
    if (k == name) return v;
  }
  return fallback;
}

// Byte offsets of each code point of `s`, plus s.size() at the end.
std::vector<size_t> CodePointStarts(const std::string& s) {
  std::vector<size_t> starts;
  size_t pos = 0;
  while (pos < s.size()) {
    starts.push_back(pos);
    NextCodePoint(s, &pos);
  }
  starts.push_back(s.size());
  return starts;
}

std::vector<char32_t> Decode(std::string_view s) {
  std::vector<char32_t> out;
  size_t pos = 0;
  while (pos < s.size()) out.push_back(NextCodePoint(s, &pos));
  return out;
}

// Python str.strip / lstrip / rstrip with optional `chars` (None = whitespace).
TaggedString Strip(const TaggedString& s, const Value& chars, bool left, bool right) {
  std::vector<char32_t> set;
  const bool whitespace = !chars.IsString();
  if (!whitespace) set = Decode(chars.Text());
  auto strip_it = [&](char32_t c) {
    return whitespace ? IsPySpace(c) : std::find(set.begin(), set.end(), c) != set.end();
  };
  const std::vector<size_t> starts = CodePointStarts(s.text);
  size_t b = 0, e = starts.size() - 1;
  auto cp_at = [&](size_t i) {
    size_t pos = starts[i];
    return NextCodePoint(s.text, &pos);
  };
  if (left) {
    while (b < e && strip_it(cp_at(b))) ++b;
  }
  if (right) {
    while (e > b && strip_it(cp_at(e - 1))) --e;
  }
  return s.Sub(starts[b], starts[e]);
}

// Python str.split(sep=None, maxsplit=-1).
Value Split(const TaggedString& s, const Value& sep, int64_t maxsplit) {
  ValueList parts;
  if (!sep.IsString()) {
    size_t pos = 0;
    const size_t n = s.text.size();
    while (pos < n) {
      size_t at = pos;
      while (at < n) {  // skip whitespace
        size_t next = at;
        if (!IsPySpace(NextCodePoint(s.text, &next))) break;
        at = next;
      }
      if (at >= n) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        // The rest, with trailing whitespace stripped.
        TaggedString rest = Strip(s.Sub(at, n), Value(), false, true);
        parts.push_back(Value::String(std::move(rest)));
        pos = n;
        break;
      }
      size_t end = at;
      while (end < n) {
        size_t next = end;
        if (IsPySpace(NextCodePoint(s.text, &next))) break;
        end = next;
      }
      parts.push_back(Value::String(s.Sub(at, end)));
      pos = end;
    }
    return Value::List(std::move(parts));
  }
  const std::string& d = sep.Text();
  size_t pos = 0;
  while (true) {
    size_t at = d.empty() ? std::string::npos : s.text.find(d, pos);
    if (at == std::string::npos ||
        (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit)) {
      parts.push_back(Value::String(s.Sub(pos, s.text.size())));
      break;
    }
    parts.push_back(Value::String(s.Sub(pos, at)));
    pos = at + d.size();
  }
  return Value::List(std::move(parts));
}

// Per-code-point case mapping; spans survive when the byte length does.
TaggedString MapCase(const TaggedString& s, int mode /*0 lower, 1 upper, 2 title, 3 capitalize*/) {
  std::string out;
  size_t pos = 0;
  bool previous_cased = false;
  bool first = true;
  while (pos < s.text.size()) {
    char32_t c = NextCodePoint(s.text, &pos);
    auto cp = static_cast<utf8proc_int32_t>(c);
    utf8proc_int32_t mapped = cp;
    if (mode == 0) {
      mapped = utf8proc_tolower(cp);
    } else if (mode == 1) {
      mapped = utf8proc_toupper(cp);
    } else if (mode == 2) {
      mapped = previous_cased ? utf8proc_tolower(cp) : utf8proc_totitle(cp);
    } else {
      mapped = first ? utf8proc_totitle(cp) : utf8proc_tolower(cp);
    }
    const utf8proc_category_t cat = utf8proc_category(cp);
    previous_cased =
        cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
    first = false;
    AppendUtf8(static_cast<char32_t>(mapped), &out);
  }
  TaggedString t;
  if (out.size() == s.text.size()) t.spans = s.spans;
  t.text = std::move(out);
  return t;
}

StatusOr<TaggedString> Replace(const TaggedString& s, const std::string& old,
                               const std::string& with, int64_t count) {
  // The result's size first: a replacement may grow the string a lot.
  if (!B().Scan(s.text.size())) return Spent();
  uint64_t matches = 0;
  if (old.empty()) {
    matches = tokenizer::CodePointCount(s.text) + 1;
  } else {
    for (size_t at = s.text.find(old); at != std::string::npos;
         at = s.text.find(old, at + old.size()))
      ++matches;
  }
  if (count >= 0) matches = std::min<uint64_t>(matches, static_cast<uint64_t>(count));
  uint64_t added = 0, size = 0;
  if (__builtin_mul_overflow(matches, with.size(), &added) ||
      __builtin_add_overflow(s.text.size(), added, &size)) {
    size = std::numeric_limits<uint64_t>::max();
  }
  if (!B().FitsString(size - std::min<uint64_t>(size, matches * old.size()),
                      "replace()'s result")) {
    return Spent();
  }
  TaggedString out;
  size_t pos = 0;
  int64_t done = 0;
  if (old.empty()) {
    // Python inserts `with` between every code point.
    const std::vector<size_t> starts = CodePointStarts(s.text);
    for (size_t i = 0; i + 1 < starts.size(); ++i) {
      if (count < 0 || done < count) {
        out.Append(with);
        ++done;
      }
      out.Append(s.Sub(starts[i], starts[i + 1]));
    }
    if (count < 0 || done < count) out.Append(with);
    return out;
  }
  while (count < 0 || done < count) {
    size_t at = s.text.find(old, pos);
    if (at == std::string::npos) break;
    out.Append(s.Sub(pos, at));
    out.Append(with);
    pos = at + old.size();
    ++done;
  }
  out.Append(s.Sub(pos, s.text.size()));
  return out;
}

StatusOr<Value> StartsEnds(const TaggedString& s, const Value& arg, bool starts) {
  auto test = [&](const std::string& p) {
    if (p.size() > s.text.size()) return false;
    return starts ? s.text.compare(0, p.size(), p) == 0
                  : s.text.compare(s.text.size() - p.size(), p.size(), p) == 0;
  };
  if (arg.IsString()) return Value::Bool(test(arg.Text()));
  if (arg.IsList()) {
    for (const Value& v : arg.Items()) {
      if (!v.IsString()) return TypeError("startswith/endswith: tuple items must be str");
      if (test(v.Text())) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  return TypeError(std::string(starts ? "startswith" : "endswith") +
                   " first arg must be str or a tuple of str, not " + arg.TypeName());
}

// A filter's argument as a list of items (list items, dict keys, the
// characters of a string); Undefined is empty.
StatusOr<ValueList> Iterate(const Value& v, const char* filter);

StatusOr<Value> Join(const Value& sep, const Value& iterable, const Value& attribute) {
  SKRULL_ASSIGN_OR_RETURN(const ValueList items, Iterate(iterable, "join"));
  TaggedString out;
  const TaggedString separator = sep.ToStr();
  for (size_t i = 0; i < items.size(); ++i) {
    Value item = items[i];
    if (attribute.IsString()) {
      const Value* f = item.Find(attribute.Text());
      item = f ? *f : Value();
    }
    const TaggedString text = item.ToStr();
    const size_t sep_bytes = i > 0 ? separator.text.size() : 0;
    if (!B().Step() ||
        !B().FitsString(out.text.size() + sep_bytes + text.text.size(), "join()'s result") ||
        !B().Scan(sep_bytes + text.text.size())) {
      return Spent();
    }
    if (i > 0) out.Append(separator);
    out.Append(text);
  }
  return Value::String(std::move(out));
}

bool IsCategory(char32_t c, std::initializer_list<utf8proc_category_t> cats) {
  const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return std::find(cats.begin(), cats.end(), cat) != cats.end();
}

StatusOr<Value> StringMethod(const Value& self, const std::string& name, CallArgs& args) {
  const TaggedString& s = self.Str();
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    return Value::String(Strip(s, Arg(args, 0, "chars"), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    Value maxsplit = Arg(args, 1, "maxsplit", Value::Int(-1));
    if (name == "rsplit" && maxsplit.AsInt() >= 0) {
      return TypeError("rsplit with maxsplit is not supported");
    }
    return Split(s, Arg(args, 0, "sep"), maxsplit.AsInt());
  }
  if (name == "splitlines") {
    ValueList lines;
    size_t pos = 0;
    while (pos < s.text.size()) {
      size_t end = s.text.find('\n', pos);
      if (end == std::string::npos) end = s.text.size();
      size_t stop = end > pos && s.text[end - 1] == '\r' ? end - 1 : end;
      lines.push_back(Value::String(s.Sub(pos, stop)));
      pos = end + 1;
    }
    return Value::List(std::move(lines));
  }
  if (name == "startswith" || name == "endswith") {
    return StartsEnds(s, Arg(args, 0, "prefix"), name == "startswith");
  }
  if (name == "upper") return Value::String(MapCase(s, 1));
  if (name == "lower") return Value::String(MapCase(s, 0));
  if (name == "title") return Value::String(MapCase(s, 2));
  if (name == "capitalize") return Value::String(MapCase(s, 3));
  if (name == "replace") {
    Value old = Arg(args, 0, "old"), with = Arg(args, 1, "new");
    if (!old.IsString() || !with.IsString()) return TypeError("replace() arguments must be str");
    SKRULL_ASSIGN_OR_RETURN(
        TaggedString out,
        Replace(s, old.Text(), with.Text(), Arg(args, 2, "count", Value::Int(-1)).AsInt()));
    return Value::String(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    Value sub = Arg(args, 0, "sub");
    if (!sub.IsString()) return TypeError(name + "() argument must be str");
    const std::string& t = sub.Text();
    if (!B().Scan(s.text.size())) return Spent();
    if (name == "count") {
      int64_t n = 0;
      if (t.empty()) return Value::Int(static_cast<int64_t>(tokenizer::CodePointCount(s.text)) + 1);
      for (size_t at = s.text.find(t); at != std::string::npos; at = s.text.find(t, at + t.size()))
        ++n;
      return Value::Int(n);
    }
    size_t at = name == "find" ? s.text.find(t) : s.text.rfind(t);
    if (at == std::string::npos) return Value::Int(-1);
    return Value::Int(static_cast<int64_t>(tokenizer::CodePointCount(s.text.substr(0, at))));
  }
  if (name == "join") return Join(self, Arg(args, 0, "iterable"), Value());
  if (name == "format") {
    // "{}" and "{0}"-style fields only.
    std::string out;
    size_t next = 0;
    for (size_t i = 0; i < s.text.size(); ++i) {
      if (s.text[i] == '{' && i + 1 < s.text.size() && s.text[i + 1] == '{') {
        out += '{';
        ++i;
      } else if (s.text[i] == '}' && i + 1 < s.text.size() && s.text[i + 1] == '}') {
        out += '}';
        ++i;
      } else if (s.text[i] == '{') {
        size_t close = s.text.find('}', i);
        if (close == std::string::npos) return TypeError("format: single '{' in format string");
        std::string field = s.text.substr(i + 1, close - i - 1);
        size_t index = field.empty() ? next++ : std::strtoul(field.c_str(), nullptr, 10);
        Value v = Arg(args, index, field.c_str());
        if (v.IsUndefined()) return TypeError("format: no argument for {" + field + "}");
        const std::string text = v.ToStr().text;
        if (!B().Step() || !B().FitsString(out.size() + text.size(), "format()'s result") ||
            !B().Scan(text.size())) {
          return Spent();
        }
        out += text;
        i = close;
      } else {
        out += s.text[i];
      }
    }
    return Value::String(out);
  }
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
      name == "islower" || name == "isupper") {
    if (!B().Scan(s.text.size() * 4)) return Spent();
    std::vector<char32_t> cps = Decode(s.text);
    if (cps.empty()) return Value::Bool(false);
    bool all = true, cased = false;
    for (char32_t c : cps) {
      bool ok = true;
      if (name == "isdigit") ok = IsCategory(c, {UTF8PROC_CATEGORY_ND});
      if (name == "isalpha") {
        ok = IsCategory(c, {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT,
                            UTF8PROC_CATEGORY_LM, UTF8PROC_CATEGORY_LO});
      }
      if (name == "isalnum") {
        ok = IsCategory(c, {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT,
                            UTF8PROC_CATEGORY_LM, UTF8PROC_CATEGORY_LO, UTF8PROC_CATEGORY_ND,
                            UTF8PROC_CATEGORY_NL, UTF8PROC_CATEGORY_NO});
      }
      if (name == "isspace") ok = IsPySpace(c);
      if (name == "islower") {
        ok = !IsCategory(c, {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LT});
        cased |= IsCategory(c, {UTF8PROC_CATEGORY_LL});
      }
      if (name == "isupper") {
        ok = !IsCategory(c, {UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT});
        cased |= IsCategory(c, {UTF8PROC_CATEGORY_LU});
      }
      all = all && ok;
    }
    if (name == "islower" || name == "isupper") all = all && cased;
    return Value::Bool(all);
  }
  return TypeError("'str' object has no attribute '" + name + "'");
}

StatusOr<Value> DictMethod(const Value& self, const std::string& name, CallArgs& args) {
  if (name == "items") {
    ValueList out;
    for (const auto& [k, v] : self.Entries()) {
      out.push_back(Value::List({Value::String(k), v}, /*tuple=*/true));
    }
    return Value::List(std::move(out));
  }
  if (name == "keys" || name == "values") {
    ValueList out;
    for (const auto& [k, v] : self.Entries()) out.push_back(name == "keys" ? Value::String(k) : v);
    return Value::List(std::move(out));
  }
  if (name == "get") {
    Value key = Arg(args, 0, "key");
    const Value* found = key.IsString() ? self.Find(key.Text()) : nullptr;
    return found ? *found : Arg(args, 1, "default", Value::None());
  }
  return TypeError("'dict' object has no attribute '" + name + "'");
}

constexpr const char* kStringMethods[] = {
    "strip", "lstrip", "rstrip",  "split",      "rsplit",  "splitlines", "startswith", "endswith",
    "upper", "lower",  "title",   "capitalize", "replace", "find",       "rfind",      "count",
    "join",  "format", "isdigit", "isalpha",    "isalnum", "isspace",    "islower",    "isupper"};
constexpr const char* kDictMethods[] = {"items", "keys", "values", "get"};

template <size_t N>
bool Contains(const char* const (&names)[N], const std::string& name) {
  for (const char* n : names) {
    if (name == n) return true;
  }
  return false;
}

}  // namespace

Value BoundMethod(const Value& object, const std::string& name) {
  if (object.IsString() && Contains(kStringMethods, name)) {
    return Value::Function(
        "str." + name, [object, name](CallArgs& args) { return StringMethod(object, name, args); });
  }
  if (object.IsDict() && !object.IsNamespace() && Contains(kDictMethods, name)) {
    return Value::Function(
        "dict." + name, [object, name](CallArgs& args) { return DictMethod(object, name, args); });
  }
  return Value::Undefined();
}

namespace {

StatusOr<bool> LessThanIn(const Value& a, const Value& b, Budget& budget) {
  if (!budget.Step()) return budget.status();
  if (a.IsNumber() && b.IsNumber()) {
    if (a.type() == Value::Type::kInt && b.type() == Value::Type::kInt)
      return a.AsInt() < b.AsInt();
    return a.AsNumber() < b.AsNumber();
  }
  if (a.IsString() && b.IsString()) {  // UTF-8 order = code point order
    if (!budget.Scan(std::min(a.Text().size(), b.Text().size()))) return budget.status();
    return a.Text() < b.Text();
  }
  if (a.IsList() && b.IsList()) {
    if (!budget.EnterValue()) {
      budget.LeaveValue();
      return budget.status();
    }
    const ValueList &x = a.Items(), &y = b.Items();
    StatusOr<bool> less = x.size() < y.size();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].Equals(y[i])) continue;
      less = budget.ok() ? LessThanIn(x[i], y[i], budget) : StatusOr<bool>(budget.status());
      break;
    }
    budget.LeaveValue();
    if (!budget.ok()) return budget.status();
    return less;
  }
  return TypeError("'<' not supported between instances of '" + a.TypeName() + "' and '" +
                   b.TypeName() + "'");
}

}  // namespace

StatusOr<bool> LessThan(const Value& a, const Value& b) {
  return LessThanIn(a, b, Budget::ForWalk());
}

StatusOr<bool> ApplyTest(const std::string& name, CallArgs& args) {
  const Value v = Arg(args, 0, "value");
  const Value other = Arg(args, 1, "other");
  const auto type = v.type();
  if (name == "defined") return !v.IsUndefined();
  if (name == "undefined") return v.IsUndefined();
  if (name == "none") return v.IsNone();
  if (name == "boolean") return type == Value::Type::kBool;
  if (name == "true") return type == Value::Type::kBool && v.AsBool();
  if (name == "false") return type == Value::Type::kBool && !v.AsBool();
  if (name == "integer") return type == Value::Type::kInt;
  if (name == "float") return type == Value::Type::kFloat;
  if (name == "number") return v.IsNumber() || type == Value::Type::kBool;
  if (name == "string") return v.IsString();
  if (name == "mapping") return v.IsDict() && !v.IsNamespace();
  if (name == "iterable") return v.IsString() || v.IsList() || v.IsDict() || v.IsUndefined();
  if (name == "sequence") return v.IsString() || v.IsList() || (v.IsDict() && !v.IsNamespace());
  if (name == "callable") return type == Value::Type::kCallable;
  if (name == "sameas") {
    if (v.type() != other.type()) return false;
    return v.IsNone() || (type == Value::Type::kBool && v.AsBool() == other.AsBool()) ||
           (v.IsNumber() && v.Equals(other));
  }
  if (name == "eq" || name == "equalto" || name == "==") return v.Equals(other);
  if (name == "ne" || name == "!=") return !v.Equals(other);
  if (name == "lt" || name == "lessthan" || name == "<") return LessThan(v, other);
  if (name == "gt" || name == "greaterthan" || name == ">") return LessThan(other, v);
  if (name == "le" || name == "<=") {
    SKRULL_ASSIGN_OR_RETURN(bool gt, LessThan(other, v));
    return !gt;
  }
  if (name == "ge" || name == ">=") {
    SKRULL_ASSIGN_OR_RETURN(bool lt, LessThan(v, other));
    return !lt;
  }
  if (name == "in") {
    if (other.IsString() && v.IsString()) {
      if (!B().Scan(other.Text().size())) return Spent();
      return other.Text().find(v.Text()) != std::string::npos;
    }
    if (other.IsList()) {
      for (const Value& x : other.Items()) {
        if (x.Equals(v)) return true;
      }
      return false;
    }
    if (other.IsDict()) return v.IsString() && other.Find(v.Text()) != nullptr;
    return TypeError("'in <" + other.TypeName() + ">' requires a container");
  }
  if (name == "even" || name == "odd" || name == "divisibleby") {
    if (type != Value::Type::kInt) return TypeError("test '" + name + "' needs an integer");
    int64_t d = name == "divisibleby" ? Arg(args, 1, "num").AsInt() : 2;
    if (d == 0) return TypeError("divisibleby: division by zero");
    const bool divisible = d == -1 || v.AsInt() % d == 0;  // INT64_MIN % -1 traps
    return name == "odd" ? !divisible : divisible;
  }
  if (name == "lower" || name == "upper") {
    if (!v.IsString()) return false;
    CallArgs none;
    SKRULL_ASSIGN_OR_RETURN(Value r,
                            StringMethod(v, name == "lower" ? "islower" : "isupper", none));
    return r.AsBool();
  }
  if (name == "escaped") return false;
  return NotFoundError("no test named '" + name + "'");
}

namespace {

StatusOr<ValueList> Iterate(const Value& v, const char* filter) {
  if (v.IsList()) {
    if (!B().Step(static_cast<int64_t>(v.Items().size()))) return Spent();
    return v.Items();
  }
  ValueList out;
  if (v.IsUndefined()) return out;
  if (v.IsDict()) {
    if (!B().FitsList(v.Entries().size(), filter)) return Spent();
    for (const auto& [k, x] : v.Entries()) out.push_back(Value::String(k));
    return out;
  }
  if (v.IsString()) {
    if (!B().Scan(v.Text().size()) || !B().FitsList(tokenizer::CodePointCount(v.Text()), filter)) {
      return Spent();
    }
    const std::vector<size_t> starts = CodePointStarts(v.Text());
    for (size_t i = 0; i + 1 < starts.size(); ++i) {
      out.push_back(Value::String(v.Str().Sub(starts[i], starts[i + 1])));
    }
    return out;
  }
  return TypeError(std::string(filter) + ": '" + v.TypeName() + "' object is not iterable");
}

Value Attribute(const Value& item, const Value& attribute) {
  if (!attribute.IsString()) return item;
  Value current = item;
  size_t pos = 0;
  const std::string& path = attribute.Text();
  while (true) {  // dotted paths: "a.b"
    size_t dot = path.find('.', pos);
    const std::string key =
        path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    const Value* f = current.Find(key);
    current = f ? *f : Value();
    if (dot == std::string::npos) return current;
    pos = dot + 1;
  }
}

StatusOr<Value> SortFilter(CallArgs& args) {
  SKRULL_ASSIGN_OR_RETURN(ValueList items, Iterate(Arg(args, 0, "value"), "sort"));
  const bool reverse = Arg(args, 1, "reverse", Value::Bool(false)).Truthy();
  const bool case_sensitive = Arg(args, 2, "case_sensitive", Value::Bool(false)).Truthy();
  const Value attribute = Arg(args, 3, "attribute");
  // Each item's key once, then the order of the keys.
  std::vector<Value> keys;
  keys.reserve(items.size());
  for (const Value& v : items) {
    Value k = Attribute(v, attribute);
    if (!case_sensitive && k.IsString()) k = Value::String(MapCase(k.Str(), 0));
    keys.push_back(std::move(k));
  }
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  Status error = OkStatus();
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (!error.ok()) return false;
    auto lt = reverse ? LessThan(keys[b], keys[a]) : LessThan(keys[a], keys[b]);
    if (!lt.ok()) {
      error = lt.status();
      return false;
    }
    return *lt;
  });
  SKRULL_RETURN_IF_ERROR(error);
  ValueList sorted;
  sorted.reserve(items.size());
  for (size_t i : order) sorted.push_back(std::move(items[i]));
  return Value::List(std::move(sorted));
}

StatusOr<Value> Indent(CallArgs& args) {
  const TaggedString s = Arg(args, 0, "s").ToStr();
  Value width = Arg(args, 1, "width", Value::Int(4));
  const bool first = Arg(args, 2, "first", Value::Bool(false)).Truthy();
  const bool blank = Arg(args, 3, "blank", Value::Bool(false)).Truthy();
  const uint64_t pad_bytes = width.IsString()
                                 ? width.Text().size()
                                 : static_cast<uint64_t>(std::max<int64_t>(0, width.AsInt()));
  // Every line may get the pad: the result's size before it is built.
  if (!B().Scan(s.text.size())) return Spent();
  const uint64_t lines = static_cast<uint64_t>(std::count(s.text.begin(), s.text.end(), '\n')) + 1;
  uint64_t size = 0;
  if (__builtin_mul_overflow(lines, pad_bytes, &size) ||
      __builtin_add_overflow(size, s.text.size(), &size)) {
    size = std::numeric_limits<uint64_t>::max();
  }
  if (!B().FitsString(size, "indent()'s result")) return Spent();
  const std::string pad = width.IsString() ? width.Text() : std::string(pad_bytes, ' ');
  TaggedString out;
  size_t pos = 0;
  bool is_first = true;
  while (pos <= s.text.size()) {
    size_t end = s.text.find('\n', pos);
    const bool last = end == std::string::npos;
    if (last) end = s.text.size();
    const bool empty_line = end == pos;
    if ((!is_first || first) && (blank || !empty_line)) out.Append(pad);
    out.Append(s.Sub(pos, end));
    if (last) break;
    out.Append("\n");
    pos = end + 1;
    is_first = false;
  }
  return Value::String(std::move(out));
}

StatusOr<Value> ToJsonFilter(CallArgs& args) {
  const Value v = Arg(args, 0, "x");
  const Value indent = Arg(args, 1, "indent", Value::None());
  const Value separators = Arg(args, 2, "separators", Value::None());
  const bool sort_keys = Arg(args, 3, "sort_keys", Value::Bool(false)).Truthy();
  // json.dumps: a negative indent is 0 (newlines only); the output's budget
  // bounds a large one.
  const int ind = indent.IsNone() ? -1
                  : indent.type() == Value::Type::kInt
                      ? static_cast<int>(std::clamp<int64_t>(indent.AsInt(), 0, 1 << 30))
                      : 0;
  std::string item_sep = ind < 0 ? ", " : ",";
  std::string key_sep = ": ";
  if (separators.IsList() && separators.Items().size() == 2) {
    if (!separators.Items()[0].IsString() || !separators.Items()[1].IsString()) {
      return TypeError("tojson: separators must be two strings");
    }
    item_sep = separators.Items()[0].Text();
    key_sep = separators.Items()[1].Text();
  }
  SKRULL_ASSIGN_OR_RETURN(std::string json, ToJson(v, ind, item_sep, key_sep, sort_keys));
  return Value::String(std::move(json));
}

StatusOr<Value> SelectFilter(const std::string& name, CallArgs& args, const TestFn& test) {
  SKRULL_ASSIGN_OR_RETURN(ValueList items, Iterate(Arg(args, 0, "value"), name.c_str()));
  const bool by_attr = name == "selectattr" || name == "rejectattr";
  const bool keep = name == "select" || name == "selectattr";
  const size_t test_at = by_attr ? 2 : 1;
  ValueList out;
  for (const Value& item : items) {
    Value subject =
        by_attr ? Attribute(item, args.positional.size() > 1 ? args.positional[1] : Value()) : item;
    bool pass;
    if (args.positional.size() <= test_at) {
      pass = subject.Truthy();
    } else {
      CallArgs test_args;
      test_args.positional.push_back(subject);
      for (size_t k = test_at + 1; k < args.positional.size(); ++k) {
        test_args.positional.push_back(args.positional[k]);
      }
      if (!args.positional[test_at].IsString()) {
        return TypeError(name + ": the test name must be a string");
      }
      SKRULL_ASSIGN_OR_RETURN(pass, test(args.positional[test_at].Text(), test_args));
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::List(std::move(out));
}

StatusOr<Value> MapFilter(CallArgs& args, const FilterFn& filter) {
  SKRULL_ASSIGN_OR_RETURN(ValueList items, Iterate(Arg(args, 0, "value"), "map"));
  ValueList out;
  for (const auto& [k, v] : args.keyword) {
    if (k != "attribute") continue;
    for (const Value& item : items) out.push_back(Attribute(item, v));
    return Value::List(std::move(out));
  }
  if (args.positional.size() < 2 || !args.positional[1].IsString()) {
    return TypeError("map: give a filter name or attribute=");
  }
  for (const Value& item : items) {
    CallArgs filter_args;
    filter_args.positional.push_back(item);
    for (size_t k = 2; k < args.positional.size(); ++k) {
      filter_args.positional.push_back(args.positional[k]);
    }
    SKRULL_ASSIGN_OR_RETURN(Value mapped, filter(args.positional[1].Text(), filter_args));
    out.push_back(mapped);
  }
  return Value::List(std::move(out));
}

}  // namespace

StatusOr<Value> ApplyFilter(const std::string& name, CallArgs& args, const TestFn& apply_test,
                            const FilterFn& apply_filter) {
  const Value v = Arg(args, 0, "value");
  if (name == "length" || name == "count") {
    SKRULL_ASSIGN_OR_RETURN(int64_t n, v.Length());
    return Value::Int(n);
  }
  if (name == "trim") return Value::String(Strip(v.ToStr(), Arg(args, 1, "chars"), true, true));
  if (name == "string") return Value::String(v.ToStr());
  if (name == "safe") return v;
  if (name == "upper") return Value::String(MapCase(v.ToStr(), 1));
  if (name == "lower") return Value::String(MapCase(v.ToStr(), 0));
  if (name == "title") return Value::String(MapCase(v.ToStr(), 2));
  if (name == "capitalize") return Value::String(MapCase(v.ToStr(), 3));
  if (name == "tojson") return ToJsonFilter(args);
  if (name == "default" || name == "d") {
    const bool boolean = Arg(args, 2, "boolean", Value::Bool(false)).Truthy();
    if (v.IsUndefined() || (boolean && !v.Truthy()))
      return Arg(args, 1, "default_value", Value::String(""));
    return v;
  }
  if (name == "first" || name == "last") {
    SKRULL_ASSIGN_OR_RETURN(ValueList items, Iterate(v, name.c_str()));
    if (items.empty()) return Value::Undefined("no " + name + " item, sequence was empty");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join")
    return Join(Arg(args, 1, "d", Value::String("")), v, Arg(args, 2, "attribute"));
  if (name == "list") {
    SKRULL_ASSIGN_OR_RETURN(ValueList items, Iterate(v, "list"));
    return Value::List(std::move(items));
  }
  if (name == "reverse") {
    if (v.IsString()) {
      if (!B().Scan(v.Text().size() * 4)) return Spent();
      std::vector<char32_t> cps = Decode(v.Text());
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) AppendUtf8(*it, &out);
      return Value::String(out);
    }
    SKRULL_ASSIGN_OR_RETURN(ValueList items, Iterate(v, "reverse"));
    std::reverse(items.begin(), items.end());
    return Value::List(std::move(items));
  }
  if (name == "items") {
    if (v.IsUndefined()) return Value::List({});
    if (!v.IsDict()) return TypeError("items: expected a mapping, got " + v.TypeName());
    CallArgs none;
    return DictMethod(v, "items", none);
  }
  if (name == "dictsort") {
    if (!v.IsDict()) return TypeError("dictsort: expected a mapping, got " + v.TypeName());
    CallArgs none;
    SKRULL_ASSIGN_OR_RETURN(Value items, DictMethod(v, "items", none));
    CallArgs sort_args;
    sort_args.positional = {items};
    return SortFilter(sort_args);
  }
  if (name == "replace") {
    Value old = Arg(args, 1, "old"), with = Arg(args, 2, "new");
    SKRULL_ASSIGN_OR_RETURN(TaggedString out,
                            Replace(v.ToStr(), old.ToStr().text, with.ToStr().text,
                                    Arg(args, 3, "count", Value::Int(-1)).AsInt()));
    return Value::String(std::move(out));
  }
  if (name == "sort") return SortFilter(args);
  if (name == "unique") {
    SKRULL_ASSIGN_OR_RETURN(ValueList items, Iterate(v, "unique"));
    ValueList out;
    for (const Value& x : items) {
      if (!B().Step(static_cast<int64_t>(out.size()))) return Spent();
      bool seen = false;
      for (size_t k = 0; !seen && k < out.size(); ++k) seen = out[k].Equals(x);
      if (!B().ok()) return Spent();
      if (!seen) out.push_back(x);
    }
    return Value::List(std::move(out));
  }
  if (name == "indent") return Indent(args);
  if (name == "int") {
    if (v.type() == Value::Type::kInt) return v;
    if (v.type() == Value::Type::kFloat) {
      // int(x) truncates; 2^63 and beyond (and inf, nan) do not fit in 64 bits.
      const double x = v.AsNumber();
      if (!(x > -9223372036854775808.0 - 1024 && x < 9223372036854775808.0)) {
        return TypeError("int: " + FloatRepr(x) + " does not fit in a 64-bit integer");
      }
      return Value::Int(static_cast<int64_t>(x));
    }
    if (v.type() == Value::Type::kBool) return Value::Int(v.AsBool() ? 1 : 0);
    if (v.IsString()) {
      char* end = nullptr;
      errno = 0;
      long long x = std::strtoll(v.Text().c_str(), &end, 10);
      if (end != v.Text().c_str() && *end == '\0') {
        if (errno == ERANGE) return TypeError("int: " + v.Text() + " does not fit in 64 bits");
        return Value::Int(x);
      }
    }
    return Arg(args, 1, "default", Value::Int(0));
  }
  if (name == "float") {
    if (v.IsNumber()) return Value::Float(v.AsNumber());
    if (v.IsString()) {
      char* end = nullptr;
      double x = std::strtod(v.Text().c_str(), &end);
      if (end != v.Text().c_str() && *end == '\0') return Value::Float(x);
    }
    return Arg(args, 1, "default", Value::Float(0));
  }
  if (name == "abs") {
    if (v.type() == Value::Type::kInt) {
      if (v.AsInt() == std::numeric_limits<int64_t>::min()) {
        return TypeError("integer overflow: abs(" + std::to_string(v.AsInt()) +
                         ") does not fit in 64 bits");
      }
      return Value::Int(std::llabs(v.AsInt()));
    }
    if (v.IsNumber()) return Value::Float(std::fabs(v.AsNumber()));
    return TypeError("abs: bad operand type " + v.TypeName());
  }
  if (name == "round") {
    const int64_t precision = Arg(args, 1, "precision", Value::Int(0)).AsInt();
    const double scale = std::pow(10.0, static_cast<double>(precision));
    return Value::Float(std::round(v.AsNumber() * scale) / scale);
  }
  if (name == "sum" || name == "max" || name == "min") {
    SKRULL_ASSIGN_OR_RETURN(ValueList items, Iterate(v, name.c_str()));
    if (name == "sum") {
      bool is_float = false;
      double f = 0;
      int64_t i = 0;
      for (const Value& x : items) {
        if (!x.IsNumber()) return TypeError("sum: unsupported operand " + x.TypeName());
        is_float |= x.type() == Value::Type::kFloat;
        f += x.AsNumber();
        if (x.type() == Value::Type::kInt && __builtin_add_overflow(i, x.AsInt(), &i)) {
          return TypeError("integer overflow in sum");
        }
      }
      return is_float ? Value::Float(f) : Value::Int(i);
    }
    if (items.empty()) return Value::Undefined("no " + name + " item, sequence was empty");
    Value best = items[0];
    for (const Value& x : items) {
      SKRULL_ASSIGN_OR_RETURN(bool lt, name == "max" ? LessThan(best, x) : LessThan(x, best));
      if (lt) best = x;
    }
    return best;
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    return SelectFilter(name, args, apply_test);
  }
  if (name == "map") return MapFilter(args, apply_filter);
  if (name == "attr") {
    const Value* f = v.Find(Arg(args, 1, "name").ToStr().text);
    return f ? *f : Value();
  }
  if (name == "wordcount") {
    Value words = Split(v.ToStr(), Value(), -1);
    return Value::Int(static_cast<int64_t>(words.Items().size()));
  }
  if (name == "e" || name == "escape") {
    const std::string text = v.ToStr().text;
    size_t size = text.size();
    for (char c : text)
      size += c == '&' || c == '<' || c == '>' ? 4 : c == '"' || c == '\'' ? 4 : 0;
    if (!B().Scan(text.size()) || !B().FitsString(size, "escape()'s result")) return Spent();
    std::string out;
    out.reserve(size);
    for (char c : text) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&#34;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          out += c;
      }
    }
    return Value::String(out);
  }
  return NotFoundError("no filter named '" + name + "'");
}

}  // namespace skrull::jinja

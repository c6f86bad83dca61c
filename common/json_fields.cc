#include "common/json_fields.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace skrull {
namespace {

using nlohmann::json;

std::string Num(int64_t v) { return std::to_string(v); }
std::string Num(uint64_t v) { return std::to_string(v); }
std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  // Prefer the short form when it reads back the same.
  char shorter[32];
  std::snprintf(shorter, sizeof(shorter), "%g", v);
  return std::strtod(shorter, nullptr) == v ? shorter : buf;
}

// "must be >= min", "must be <= max" or "must be in [min, max]": a bound at
// the type's limit is left out unless the value is past it.
template <typename T>
std::string RangeText(T min, T max, T lowest, T highest, bool below) {
  const bool has_min = min != lowest || below;
  const bool has_max = max != highest || !below;
  if (has_min && has_max) return "must be in [" + Num(min) + ", " + Num(max) + "]";
  if (has_min) return "must be >= " + Num(min);
  return "must be <= " + Num(max);
}

}  // namespace

namespace {

// Appends `value` as compact JSON, stopping once `out` is longer than `limit`
// and printing containers nested deeper than kMaxExcerptDepth as [...] / {...}.
void AppendExcerpt(const json& value, int depth, size_t limit, std::string* out) {
  constexpr int kMaxExcerptDepth = 8;
  if (out->size() > limit) return;
  if (!value.is_structured()) {
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    out->append(text, 0, limit + 1 - std::min(limit + 1, out->size()));
    return;
  }
  const bool array = value.is_array();
  if (depth >= kMaxExcerptDepth) {
    *out += array ? "[...]" : "{...}";
    return;
  }
  *out += array ? '[' : '{';
  bool first = true;
  for (auto it = value.begin(); it != value.end() && out->size() <= limit; ++it) {
    if (!first) *out += ',';
    first = false;
    if (!array) {
      AppendExcerpt(json(it.key()), depth + 1, limit, out);
      *out += ':';
    }
    AppendExcerpt(*it, depth + 1, limit, out);
  }
  *out += array ? ']' : '}';
}

}  // namespace

std::string JsonExcerpt(const json& value) {
  std::string text;
  AppendExcerpt(value, 0, 60, &text);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::optional<JsonNesting> FindJsonNestingBeyond(std::string_view text, int max_depth) {
  int depth = 0;
  int64_t line = 1;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return JsonNesting{i, line};
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

JsonFields::JsonFields(const json& object, std::string origin, std::string path)
    : object_(object), origin_(std::move(origin)), path_(std::move(path)) {}

std::string JsonFields::Path(const std::string& key) const {
  if (key.empty()) return path_;
  return path_.empty() ? key : path_ + "." + key;
}

JsonFields JsonFields::Nested(const std::string& key, const json& child) const {
  return JsonFields(child, origin_, Path(key));
}

Status JsonFields::Error(const std::string& key, const std::string& what, const json* got) const {
  std::string message = (origin_.empty() ? "" : origin_ + ": ") + Path(key) + ": " + what;
  if (got != nullptr) message += " (got " + JsonExcerpt(*got) + ")";
  return InvalidArgumentError(message);
}

const json* JsonFields::Find(const std::string& key) const {
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(key);
  return it == object_.end() || it->is_null() ? nullptr : &*it;
}

bool JsonFields::IsNull(const std::string& key) const {
  if (!object_.is_object()) return false;
  auto it = object_.find(key);
  return it != object_.end() && it->is_null();
}

Status JsonFields::Missing(const std::string& key) const {
  return Error(key, "required field missing");
}

StatusOr<int64_t> JsonFields::OptionalInt(const std::string& key, int64_t fallback, int64_t min,
                                          int64_t max) const {
  const json* v = Find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number_integer()) return Error(key, "must be an integer", v);
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(kIntMax)) {
    return Error(key, RangeText(min, max, kIntMin, kIntMax, /*below=*/false), v);
  }
  const int64_t x = v->get<int64_t>();
  if (x < min || x > max) return Error(key, RangeText(min, max, kIntMin, kIntMax, x < min), v);
  return x;
}

StatusOr<int64_t> JsonFields::RequiredInt(const std::string& key, int64_t min, int64_t max) const {
  if (Find(key) == nullptr) return Missing(key);
  return OptionalInt(key, 0, min, max);
}

StatusOr<uint64_t> JsonFields::OptionalUint(const std::string& key, uint64_t fallback, uint64_t min,
                                            uint64_t max) const {
  const json* v = Find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number_integer()) return Error(key, "must be an integer", v);
  if (!v->is_number_unsigned() && v->get<int64_t>() < 0) {
    return Error(key, RangeText<uint64_t>(min, max, 0, kUintMax, /*below=*/true), v);
  }
  const uint64_t x = v->get<uint64_t>();
  if (x < min || x > max) {
    return Error(key, RangeText<uint64_t>(min, max, 0, kUintMax, x < min), v);
  }
  return x;
}

StatusOr<uint64_t> JsonFields::RequiredUint(const std::string& key, uint64_t min,
                                            uint64_t max) const {
  if (Find(key) == nullptr) return Missing(key);
  return OptionalUint(key, 0, min, max);
}

StatusOr<double> JsonFields::OptionalDouble(const std::string& key, double fallback, double min,
                                            double max) const {
  const json* v = Find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number()) return Error(key, "must be a number", v);
  const double x = v->get<double>();
  if (!(x >= min && x <= max)) return Error(key, RangeText(min, max, -kInf, kInf, !(x >= min)), v);
  return x;
}

StatusOr<double> JsonFields::RequiredDouble(const std::string& key, double min, double max) const {
  if (Find(key) == nullptr) return Missing(key);
  return OptionalDouble(key, 0, min, max);
}

StatusOr<std::string> JsonFields::OptionalString(const std::string& key,
                                                 std::string fallback) const {
  const json* v = Find(key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) return Error(key, "must be a string", v);
  return v->get<std::string>();
}

StatusOr<std::string> JsonFields::RequiredString(const std::string& key) const {
  if (Find(key) == nullptr) return Missing(key);
  return OptionalString(key);
}

StatusOr<bool> JsonFields::OptionalBool(const std::string& key, bool fallback) const {
  const json* v = Find(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) return Error(key, "must be true or false", v);
  return v->get<bool>();
}

StatusOr<bool> JsonFields::RequiredBool(const std::string& key) const {
  if (Find(key) == nullptr) return Missing(key);
  return OptionalBool(key, false);
}

StatusOr<const json*> JsonFields::OptionalArray(const std::string& key) const {
  const json* v = Find(key);
  if (v == nullptr) return static_cast<const json*>(nullptr);
  if (!v->is_array()) return Error(key, "must be an array", v);
  return v;
}

StatusOr<const json*> JsonFields::RequiredArray(const std::string& key) const {
  if (Find(key) == nullptr) return Missing(key);
  return OptionalArray(key);
}

StatusOr<const json*> JsonFields::OptionalObject(const std::string& key) const {
  const json* v = Find(key);
  if (v == nullptr) return static_cast<const json*>(nullptr);
  if (!v->is_object()) return Error(key, "must be an object", v);
  return v;
}

StatusOr<const json*> JsonFields::RequiredObject(const std::string& key) const {
  if (Find(key) == nullptr) return Missing(key);
  return OptionalObject(key);
}

void FieldErrors::Add(const Status& status) {
  const std::string& m = status.message();
  const std::string prefix = origin_ + ": ";
  const bool has_prefix = !origin_.empty() && m.compare(0, prefix.size(), prefix) == 0;
  problems_.push_back(has_prefix ? m.substr(prefix.size()) : m);
}

void FieldErrors::Add(const std::string& field, const std::string& what) {
  problems_.push_back(field + ": " + what);
}

Status FieldErrors::ToStatus() const {
  if (problems_.empty()) return OkStatus();
  std::string message = origin_.empty() ? "" : origin_ + ": ";
  for (size_t i = 0; i < problems_.size(); ++i) message += (i ? "; " : "") + problems_[i];
  return InvalidArgumentError(message);
}

}  // namespace skrull

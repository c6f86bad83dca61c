// Private to controller/reconcile/: lenient reads of Kubernetes objects as
// the API server returns them, where a missing field or one of the wrong
// type reads as unset (the object is someone else's input, not ours to
// reject).
#ifndef SKRULL_CONTROLLER_RECONCILE_JSON_FIELDS_H_
#define SKRULL_CONTROLLER_RECONCILE_JSON_FIELDS_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace skrull::controller::fields {

// j[key], or null when `j` is not an object or has no `key`.
inline const nlohmann::json& At(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// j[key] when it is a string, else "".
inline std::string Str(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = At(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

// j[key] when it is an integer, else `fallback`.
inline int64_t Int(const nlohmann::json& j, const char* key, int64_t fallback = 0) {
  const nlohmann::json& v = At(j, key);
  return v.is_number_integer() ? v.get<int64_t>() : fallback;
}

}  // namespace skrull::controller::fields

#endif  // SKRULL_CONTROLLER_RECONCILE_JSON_FIELDS_H_

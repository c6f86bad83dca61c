#include "controller/kube/object_rules.h"

#include <exception>

namespace skrull::kube {

StatusOr<json> ApplyPatch(const json& target, PatchType type, const json& patch) {
  if (type == PatchType::kMerge) {
    if (!patch.is_object()) {
      return InvalidArgumentError("a merge patch must be a JSON object (got " +
                                  std::string(patch.type_name()) + ")");
    }
    json out = target;
    out.merge_patch(patch);
    return out;
  }
  if (!patch.is_array()) {
    return InvalidArgumentError("a JSON patch must be an array of operations (got " +
                                std::string(patch.type_name()) + ")");
  }
  try {
    return target.patch(patch);
  } catch (const std::exception& e) {
    // nlohmann names the failing operation, e.g. `unsuccessful: {"op":"test",...}`.
    return InvalidArgumentError(std::string("the JSON patch does not apply: ") + e.what());
  }
}

json SpecPart(const json& object) {
  json out = object;
  if (out.is_object()) {
    for (const char* key : {"metadata", "status", "kind", "apiVersion"}) out.erase(key);
  }
  return out;
}

std::string StringField(const json& object, const std::string& key) {
  if (!object.is_object()) return "";
  auto value = object.find(key);
  if (value == object.end() || !value->is_string()) return "";
  return value->get<std::string>();
}

std::string MetaString(const json& object, const std::string& field) {
  if (!object.is_object()) return "";
  auto meta = object.find("metadata");
  if (meta == object.end()) return "";
  return StringField(*meta, field);
}

void SetMeta(json& object, const std::string& field, json value) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) {
    object["metadata"] = json::object();
  }
  object["metadata"][field] = std::move(value);
}

namespace {
const json* OwnerRefs(const json& object) {
  if (!object.is_object() || !object.contains("metadata")) return nullptr;
  const json& meta = object["metadata"];
  if (!meta.is_object() || !meta.contains("ownerReferences")) return nullptr;
  const json& refs = meta["ownerReferences"];
  return refs.is_array() ? &refs : nullptr;
}
}  // namespace

bool HasOwnerUid(const json& object, const std::string& uid) {
  const json* refs = OwnerRefs(object);
  if (refs == nullptr) return false;
  for (const json& ref : *refs) {
    if (StringField(ref, "uid") == uid) return true;
  }
  return false;
}

bool RemoveOwnerUid(json& object, const std::string& uid) {
  if (!HasOwnerUid(object, uid)) return false;
  json kept = json::array();
  for (const json& ref : object["metadata"]["ownerReferences"]) {
    if (!(StringField(ref, "uid") == uid)) kept.push_back(ref);
  }
  if (kept.empty()) {
    object["metadata"].erase("ownerReferences");
  } else {
    object["metadata"]["ownerReferences"] = std::move(kept);
  }
  return true;
}

bool HasFinalizers(const json& object) {
  if (!object.is_object() || !object.contains("metadata")) return false;
  const json& meta = object["metadata"];
  return meta.is_object() && meta.contains("finalizers") && meta["finalizers"].is_array() &&
         !meta["finalizers"].empty();
}

}  // namespace skrull::kube

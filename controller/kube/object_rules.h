// Private to controller/kube: how the API server treats an object on write
// (docs/kubernetes-api.md, "Status subresource"): patches, the spec/status split, generation.
#ifndef SKRULL_CONTROLLER_KUBE_OBJECT_RULES_H_
#define SKRULL_CONTROLLER_KUBE_OBJECT_RULES_H_

#include <string>

#include "common/status.h"
#include "controller/kube/kube_api.h"

namespace skrull::kube {

// Applies an RFC 7386 merge patch (kMerge; `patch` must be an object) or an
// RFC 6902 JSON patch (kJson; an array of operations: add, remove, replace,
// move, copy, test). InvalidArgument says what failed, e.g. a failed
// "test" or a path that does not exist.
StatusOr<json> ApplyPatch(const json& target, PatchType type, const json& patch);

// Everything but metadata, status, kind and apiVersion: what bumps
// metadata.generation when it changes.
json SpecPart(const json& object);

// object.<key> as a string, "" when absent or not a string.
std::string StringField(const json& object, const std::string& key);

// object.metadata.<field> as a string, "" when absent or not a string.
std::string MetaString(const json& object, const std::string& field);

// Sets object.metadata.<field> (creating metadata when missing).
void SetMeta(json& object, const std::string& field, json value);

// True when object.metadata.ownerReferences has an entry with `uid`.
bool HasOwnerUid(const json& object, const std::string& uid);

// Removes the owner references with `uid`; true when any was removed.
bool RemoveOwnerUid(json& object, const std::string& uid);

// True when metadata.finalizers is a non-empty array.
bool HasFinalizers(const json& object);

}  // namespace skrull::kube

#endif  // SKRULL_CONTROLLER_KUBE_OBJECT_RULES_H_

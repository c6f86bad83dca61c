// Private to controller/kube: REST paths (docs/kubernetes-api.md) and query strings.
#ifndef SKRULL_CONTROLLER_KUBE_REST_PATH_H_
#define SKRULL_CONTROLLER_KUBE_REST_PATH_H_

#include <map>
#include <optional>
#include <string>

#include "controller/kube/kube_api.h"

namespace skrull::kube {

// "<prefix>/namespaces/<ns>/<plural>", or "<prefix>/<plural>" for ns "".
std::string CollectionPath(const Resource& r, const std::string& ns);
// CollectionPath + "/<name>" [+ "/status"].
std::string ObjectPath(const Resource& r, const std::string& ns, const std::string& name,
                       bool status_subresource = false);

// A query value, percent-encoded (http::PercentEncode).
std::string QueryEscape(const std::string& value);
// "a=1&b=x%3Dy" -> {a: 1, b: x=y}, '+' decoding to a space as in Go's
// url.ParseQuery; a repeated key keeps the last value.
std::map<std::string, std::string> ParseQuery(const std::string& query);

// A request path split into its parts; nullopt when it is not one of
// /api/v1[/namespaces/<ns>]/<plural>[/<name>[/status]] or
// /apis/<group>/<version>[/namespaces/<ns>]/<plural>[/<name>[/status]].
struct ResourcePath {
  std::string prefix;  // "/api/v1", "/apis/skrull.io/v1alpha1"
  std::string ns;      // "" = all namespaces (collection paths only)
  std::string plural;
  std::string name;  // "" for a collection
  bool status = false;
};
std::optional<ResourcePath> ParseResourcePath(const std::string& path);

}  // namespace skrull::kube

#endif  // SKRULL_CONTROLLER_KUBE_REST_PATH_H_

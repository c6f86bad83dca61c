#include "controller/kube/kube_api.h"

#include "controller/kube/kube_errors.h"
#include "controller/kube/object_rules.h"

namespace skrull::kube {

Resource PodsResource() { return {"/api/v1", "pods", "Pod", "v1"}; }
Resource ServicesResource() { return {"/api/v1", "services", "Service", "v1"}; }
Resource ConfigMapsResource() { return {"/api/v1", "configmaps", "ConfigMap", "v1"}; }
Resource EventsResource() { return {"/api/v1", "events", "Event", "v1"}; }
Resource LeasesResource() {
  return {"/apis/coordination.k8s.io/v1", "leases", "Lease", "coordination.k8s.io/v1"};
}
Resource SkrullJobsResource() {
  return {"/apis/skrull.io/v1alpha1", "skrulljobs", "SkrullJob", "skrull.io/v1alpha1"};
}

const char* WatchEventTypeName(WatchEvent::Type type) {
  switch (type) {
    case WatchEvent::Type::kAdded:
      return "ADDED";
    case WatchEvent::Type::kModified:
      return "MODIFIED";
    case WatchEvent::Type::kDeleted:
      return "DELETED";
    case WatchEvent::Type::kBookmark:
      break;
  }
  return "BOOKMARK";
}

StatusOr<ListResult> KubeApi::ListProjected(const Resource& r, const std::string& ns,
                                            const std::string& label_selector,
                                            const std::function<json(const json&)>& project) {
  StatusOr<ListResult> list = List(r, ns, label_selector);
  if (!list.ok()) return list;
  for (json& item : list->items) item = project(item);
  return list;
}

namespace {

bool HasHttpPart(const Status& s, const std::string& part) {
  return s.message().find(": HTTP " + part) != std::string::npos;
}

}  // namespace

bool IsConflict(const Status& s) {
  return s.code() == StatusCode::kFailedPrecondition && HasHttpPart(s, "409 Conflict");
}

bool IsAlreadyExists(const Status& s) {
  return s.code() == StatusCode::kFailedPrecondition && HasHttpPart(s, "409 AlreadyExists");
}

bool IsExpired(const Status& s) {
  return s.code() == StatusCode::kUnavailable && HasHttpPart(s, "410 ");
}

Status HttpStatusToStatus(const std::string& verb, const std::string& path, int code,
                          const std::string& body) {
  if (code >= 200 && code < 300) return OkStatus();
  std::string reason;
  std::string server_message;
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (StringField(parsed, "kind") == "Status") {
    reason = StringField(parsed, "reason");
    server_message = StringField(parsed, "message");
  } else {
    // Not the API server's JSON (a proxy's HTML page, a load balancer's text).
    constexpr size_t kMaxBody = 300;
    server_message = body.size() > kMaxBody ? body.substr(0, kMaxBody) + "..." : body;
    while (!server_message.empty() &&
           (server_message.back() == '\n' || server_message.back() == '\r')) {
      server_message.pop_back();
    }
  }
  if (reason.empty()) reason = ReasonForHttpCode(code);
  std::string message = verb + " " + path + ": HTTP " + std::to_string(code) + " " + reason;
  if (!server_message.empty()) message += ": " + server_message;
  StatusCode status_code = StatusCode::kInternal;
  if (code == 404) {
    status_code = StatusCode::kNotFound;
  } else if (code == 409) {
    status_code = StatusCode::kFailedPrecondition;
  } else if (code == 401 || code == 403) {
    status_code = StatusCode::kFailedPrecondition;
    if (code == 401) message += " (the bearer token was rejected: check the token or its file)";
  } else if (code == 410 || code == 429 || code >= 500) {
    status_code = StatusCode::kUnavailable;
  } else if (code >= 400) {
    status_code = StatusCode::kInvalidArgument;
  } else {
    message += " (unexpected HTTP status)";
  }
  return Status(status_code, message);
}

}  // namespace skrull::kube

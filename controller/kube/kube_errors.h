// Private to controller/kube: Kubernetes Status objects and the errors
// MemoryKubeApi and FakeApiServer raise, so that every implementation's
// errors read the same as HttpKubeApi's (they all go through
// HttpStatusToStatus).
#ifndef SKRULL_CONTROLLER_KUBE_KUBE_ERRORS_H_
#define SKRULL_CONTROLLER_KUBE_KUBE_ERRORS_H_

#include <string>

#include "common/status.h"
#include "controller/kube/kube_api.h"

namespace skrull::kube {

// The Kubernetes StatusReason for an HTTP code: 404 "NotFound", 409
// "Conflict", 410 "Expired", 422 "Invalid", 500 "InternalError", ...
std::string ReasonForHttpCode(int code);

// A failure Status object, as the API server sends in bodies and in watch
// ERROR events: {"kind":"Status","apiVersion":"v1","status":"Failure",...}.
json StatusObject(int code, const std::string& reason, const std::string& message);

// HttpStatusToStatus(method, path, code, StatusObject(code, reason, message)).
Status KubeError(const std::string& method, const std::string& path, int code,
                 const std::string& reason, const std::string& message);
// The same with ReasonForHttpCode(code).
Status KubeError(const std::string& method, const std::string& path, int code,
                 const std::string& message);

// True when `s` came from HttpStatusToStatus (it carries an HTTP code).
bool HasHttpCode(const Status& s);

// The parts of an error made by HttpStatusToStatus. For other errors: a
// code derived from the StatusCode (NotFound 404, InvalidArgument 400,
// Unavailable 503, else 500) and the whole message.
struct KubeErrorParts {
  int code = 500;
  std::string reason;
  std::string message;
};
KubeErrorParts ParseKubeError(const Status& s);

}  // namespace skrull::kube

#endif  // SKRULL_CONTROLLER_KUBE_KUBE_ERRORS_H_

#include "controller/kube/kube_errors.h"

#include <cstdlib>
#include <utility>

namespace skrull::kube {

std::string ReasonForHttpCode(int code) {
  // metav1.StatusReason values.
  static const std::pair<int, const char*> kReasons[] = {
      {400, "BadRequest"},
      {401, "Unauthorized"},
      {403, "Forbidden"},
      {404, "NotFound"},
      {405, "MethodNotAllowed"},
      {406, "NotAcceptable"},
      {409, "Conflict"},
      {410, "Expired"},
      {413, "RequestEntityTooLarge"},
      {415, "UnsupportedMediaType"},
      {422, "Invalid"},
      {429, "TooManyRequests"},
      {500, "InternalError"},
      {503, "ServiceUnavailable"},
      {504, "Timeout"},
  };
  for (const auto& [c, reason] : kReasons) {
    if (c == code) return reason;
  }
  return code >= 500 ? "InternalError" : "Unknown";
}

json StatusObject(int code, const std::string& reason, const std::string& message) {
  return json{{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
              {"status", "Failure"}, {"message", message}, {"reason", reason},
              {"code", code}};
}

Status KubeError(const std::string& method, const std::string& path, int code,
                 const std::string& reason, const std::string& message) {
  return HttpStatusToStatus(method, path, code, StatusObject(code, reason, message).dump());
}

Status KubeError(const std::string& method, const std::string& path, int code,
                 const std::string& message) {
  return KubeError(method, path, code, ReasonForHttpCode(code), message);
}

bool HasHttpCode(const Status& s) { return s.message().find(": HTTP ") != std::string::npos; }

KubeErrorParts ParseKubeError(const Status& s) {
  KubeErrorParts parts;
  const std::string& m = s.message();
  const size_t at = m.find(": HTTP ");
  if (at != std::string::npos) {
    const size_t code_start = at + 7;
    char* end = nullptr;
    const long code = std::strtol(m.c_str() + code_start, &end, 10);
    const size_t reason_start = static_cast<size_t>(end - m.c_str());
    if (code >= 100 && code < 600 && reason_start < m.size() && m[reason_start] == ' ') {
      parts.code = static_cast<int>(code);
      const size_t colon = m.find(": ", reason_start);
      parts.reason =
          m.substr(reason_start + 1,
                   colon == std::string::npos ? std::string::npos : colon - reason_start - 1);
      parts.message = colon == std::string::npos ? "" : m.substr(colon + 2);
      return parts;
    }
  }
  switch (s.code()) {
    case StatusCode::kNotFound:
      parts.code = 404;
      break;
    case StatusCode::kInvalidArgument:
      parts.code = 400;
      break;
    case StatusCode::kUnavailable:
      parts.code = 503;
      break;
    default:
      parts.code = 500;
  }
  parts.reason = ReasonForHttpCode(parts.code);
  parts.message = m;
  return parts;
}

}  // namespace skrull::kube

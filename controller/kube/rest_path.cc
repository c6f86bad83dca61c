#include "controller/kube/rest_path.h"

#include <vector>

#include "common/http_server.h"

namespace skrull::kube {

std::string CollectionPath(const Resource& r, const std::string& ns) {
  if (ns.empty()) return r.prefix + "/" + r.plural;
  return r.prefix + "/namespaces/" + ns + "/" + r.plural;
}

std::string ObjectPath(const Resource& r, const std::string& ns, const std::string& name,
                       bool status_subresource) {
  return CollectionPath(r, ns) + "/" + name + (status_subresource ? "/status" : "");
}

std::string QueryEscape(const std::string& value) { return http::PercentEncode(value); }

std::map<std::string, std::string> ParseQuery(const std::string& query) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start <= query.size()) {
    size_t amp = query.find('&', start);
    const std::string part =
        query.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
    if (!part.empty()) {
      const size_t eq = part.find('=');
      out[http::PercentDecode(part.substr(0, eq), true)] =
          eq == std::string::npos ? "" : http::PercentDecode(part.substr(eq + 1), true);
    }
    if (amp == std::string::npos) break;
    start = amp + 1;
  }
  return out;
}

std::optional<ResourcePath> ParseResourcePath(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 1;
  if (path.empty() || path[0] != '/') return std::nullopt;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    parts.push_back(
        path.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  for (const std::string& p : parts) {
    if (p.empty()) return std::nullopt;
  }
  ResourcePath out;
  size_t i = 0;
  if (parts.size() >= 2 && parts[0] == "api") {
    out.prefix = "/api/" + parts[1];
    i = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    out.prefix = "/apis/" + parts[1] + "/" + parts[2];
    i = 3;
  } else {
    return std::nullopt;
  }
  if (parts.size() >= i + 3 && parts[i] == "namespaces") {
    out.ns = parts[i + 1];
    i += 2;
  }
  if (i >= parts.size()) return std::nullopt;
  out.plural = parts[i++];
  if (i < parts.size()) out.name = parts[i++];
  if (i < parts.size() && parts[i] == "status") {
    out.status = true;
    ++i;
  }
  if (i != parts.size()) return std::nullopt;
  if (out.ns.empty() && !out.name.empty()) return std::nullopt;  // objects are namespaced
  return out;
}

}  // namespace skrull::kube

// Private to api/: the string syntaxes a job spec borrows from Kubernetes,
// container registries and URLs.
//
// Each Check* returns "" when `value` is well-formed, else a phrase starting
// with "must" that says what is allowed; the caller appends the bad value.
#ifndef SKRULL_API_SYNTAX_H_
#define SKRULL_API_SYNTAX_H_

#include <string>
#include <string_view>

namespace skrull::api {

// DNS-1123 label (Kubernetes object names, namespaces): at most 63 of
// [a-z0-9-], starting and ending alphanumeric.
std::string CheckDns1123Label(std::string_view value);

// Label and annotation keys: [prefix/]name, prefix a DNS-1123 subdomain of at
// most 253 characters, name at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends.
std::string CheckLabelKey(std::string_view key);

// Label values: empty, or at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends.
std::string CheckLabelValue(std::string_view value);

// Kubernetes resource quantity, non-negative, at most 64 characters: 8, 0.5,
// 500m, 64Gi, 1e3, 128M.
std::string CheckQuantity(std::string_view value);

// http://host:port or https://host:port (optional trailing '/'); host a DNS
// name, IPv4 address or [IPv6] address; port 1..65535; at most 2048 characters.
std::string CheckHttpHostPort(std::string_view url);

// An IPv4 (127.0.0.1) or IPv6 (::1, no brackets) address, as a server binds
// it; no host names (binding one would need DNS).
std::string CheckIpAddress(std::string_view value);

// Container image repository without tag or digest: [registry[:port]/]path,
// path components lowercase [a-z0-9] joined by '.', '_', '__' or '-'; at most
// 255 characters.
std::string CheckImageRepository(std::string_view value);

// Container image tag: at most 128 of [A-Za-z0-9_.-], not starting with '.' or '-'.
std::string CheckImageTag(std::string_view value);

}  // namespace skrull::api

#endif  // SKRULL_API_SYNTAX_H_

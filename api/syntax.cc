#include "api/syntax.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <map>
#include <mutex>
#include <regex>

namespace skrull::api {
namespace {

// Longest values the regexes below see: std::regex recurses once per
// character, so a long value would overflow the stack. Every pattern is
// matched only after a length check.
constexpr size_t kMaxQuantityBytes = 64;
constexpr size_t kMaxUrlBytes = 2048;
constexpr size_t kMaxImageRepositoryBytes = 255;  // Docker's limit on repository names

// `pattern` compiled, once per process: compiling costs far more than
// matching, and a job may hold many labels. Patterns are constants, so their
// addresses are the keys. Thread-safe.
const std::regex& Compiled(const char* pattern) {
  static std::mutex mu;
  static auto* cache = new std::map<const char*, std::regex>();  // never destroyed
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(pattern);
  if (it == cache->end()) it = cache->emplace(pattern, std::regex(pattern)).first;
  return it->second;
}

bool Matches(std::string_view value, const char* pattern) {
  return std::regex_match(value.begin(), value.end(), Compiled(pattern));
}

constexpr char kDns1123Label[] = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr char kDns1123Subdomain[] =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr char kLabelName[] = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

}  // namespace

std::string CheckDns1123Label(std::string_view value) {
  if (value.size() <= 63 && Matches(value, kDns1123Label)) return "";
  return "must be a DNS-1123 label: at most 63 lowercase letters, digits and '-', starting and "
         "ending with a letter or digit";
}

std::string CheckLabelKey(std::string_view key) {
  std::string_view name = key;
  size_t slash = key.find('/');
  if (slash != std::string_view::npos) {
    std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty() || prefix.size() > 253 || !Matches(prefix, kDns1123Subdomain)) {
      return "must have a prefix that is a DNS subdomain (lowercase letters, digits, '-' and '.', "
             "at most 253 characters) before the '/'";
    }
  }
  if (name.empty() || name.size() > 63 || !Matches(name, kLabelName)) {
    return "must be a key name of at most 63 letters, digits, '-', '_' and '.', starting and "
           "ending with a letter or digit, with an optional 'prefix/'";
  }
  return "";
}

std::string CheckLabelValue(std::string_view value) {
  if (value.empty() || (value.size() <= 63 && Matches(value, kLabelName))) return "";
  return "must be empty or at most 63 letters, digits, '-', '_' and '.', starting and ending "
         "with a letter or digit";
}

std::string CheckQuantity(std::string_view value) {
  if (!value.empty() && value.front() == '-') return "must not be negative";
  if (value.size() > kMaxQuantityBytes) {
    return "must be a Kubernetes quantity of at most " + std::to_string(kMaxQuantityBytes) +
           " characters, such as 8, 0.5, 500m or 64Gi";
  }
  if (Matches(value,
              "\\+?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)"
              "(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][-+]?[0-9]+)?")) {
    return "";
  }
  return "must be a Kubernetes quantity such as 8, 0.5, 500m or 64Gi (binary suffixes Ki Mi Gi "
         "Ti Pi Ei, decimal k M G T P E)";
}

std::string CheckHttpHostPort(std::string_view url) {
  std::match_results<std::string_view::const_iterator> m;
  static const char kPattern[] =
      "https?://([A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*"
      "|\\[[0-9A-Fa-f:.]+\\]):([0-9]{1,5})/?";
  if (url.size() <= kMaxUrlBytes &&
      std::regex_match(url.begin(), url.end(), m, Compiled(kPattern))) {
    int port = std::stoi(m[5].str());
    if (port >= 1 && port <= 65535) return "";
  }
  return "must be http://host:port or https://host:port with a port in 1..65535, e.g. "
         "http://pushgateway:9091";
}

std::string CheckIpAddress(std::string_view value) {
  const std::string text(value.substr(0, INET6_ADDRSTRLEN + 1));
  unsigned char buf[sizeof(in6_addr)];
  if (text.size() == value.size() && text.find('\0') == std::string::npos &&
      (inet_pton(AF_INET, text.c_str(), buf) == 1 || inet_pton(AF_INET6, text.c_str(), buf) == 1)) {
    return "";
  }
  return "must be an IPv4 or IPv6 address such as 127.0.0.1, 0.0.0.0 or ::";
}

std::string CheckImageRepository(std::string_view value) {
  static const char kPattern[] =
      "(([a-zA-Z0-9]|[a-zA-Z0-9][-a-zA-Z0-9]*[a-zA-Z0-9])"
      "(\\.([a-zA-Z0-9]|[a-zA-Z0-9][-a-zA-Z0-9]*[a-zA-Z0-9]))*(:[0-9]+)?/)?"
      "[a-z0-9]+((\\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\\.|_|__|-+)[a-z0-9]+)*)*";
  if (value.size() > kMaxImageRepositoryBytes) {
    return "must be an image repository of at most " + std::to_string(kMaxImageRepositoryBytes) +
           " characters";
  }
  if (Matches(value, kPattern)) return "";
  size_t last_slash = value.rfind('/');
  size_t colon = value.find(':', last_slash == std::string_view::npos ? 0 : last_slash);
  if (value.find('@') != std::string_view::npos || colon != std::string_view::npos) {
    return "must be a repository without a tag or digest; put the tag in spec.image.tag";
  }
  return "must be an image repository such as ghcr.io/skrull/trainer: lowercase letters, "
         "digits and '.', '_', '-' in '/'-separated parts, optionally after a registry "
         "host[:port]/";
}

std::string CheckImageTag(std::string_view value) {
  if (value.size() <= 128 && Matches(value, "[A-Za-z0-9_][A-Za-z0-9_.-]*")) return "";
  return "must be at most 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'";
}

}  // namespace skrull::api

#include "api/syntax.h"

#include <regex>

namespace skrull::api {
namespace {

bool Matches(std::string_view value, const char* pattern) {
  // Patterns are constants; compiling each use keeps this file free of
  // static objects and costs microseconds for a job file's few strings.
  return std::regex_match(value.begin(), value.end(), std::regex(pattern));
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
  if (std::regex_match(url.begin(), url.end(), m, std::regex(kPattern))) {
    int port = std::stoi(m[5].str());
    if (port >= 1 && port <= 65535) return "";
  }
  return "must be http://host:port or https://host:port with a port in 1..65535, e.g. "
         "http://pushgateway:9091";
}

std::string CheckImageRepository(std::string_view value) {
  static const char kPattern[] =
      "(([a-zA-Z0-9]|[a-zA-Z0-9][-a-zA-Z0-9]*[a-zA-Z0-9])"
      "(\\.([a-zA-Z0-9]|[a-zA-Z0-9][-a-zA-Z0-9]*[a-zA-Z0-9]))*(:[0-9]+)?/)?"
      "[a-z0-9]+((\\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\\.|_|__|-+)[a-z0-9]+)*)*";
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

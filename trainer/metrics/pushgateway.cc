#include "trainer/metrics/pushgateway.h"

#include <prometheus/gateway.h>

#include <cctype>
#include <chrono>
#include <exception>
#include <future>
#include <sstream>
#include <thread>
#include <utility>

#include "common/http_server.h"

namespace skrull::metrics {

namespace {

// prometheus::Gateway returns -CURLcode when curl fails; name the usual ones
// without linking curl ourselves.
std::string DescribeGatewayResult(int code) {
  if (code >= 100) return "HTTP " + std::to_string(code);
  switch (-code) {
    case 6:
      return "cannot resolve the host (curl error 6)";
    case 7:
      return "cannot connect (curl error 7)";
    case 28:
      return "timed out (curl error 28)";
    case 35:
    case 60:
      return "TLS handshake failed (curl error " + std::to_string(-code) + ")";
    default:
      return "curl error " + std::to_string(-code);
  }
}

constexpr int kGatewayThrew = -100000;

}  // namespace

StatusOr<PushgatewayAddress> ParsePushgatewayUrl(const std::string& url) {
  auto bad = [&url](const std::string& why) {
    return InvalidArgumentError("metrics.pushgatewayUrl \"" + url + "\": " + why +
                                " (expected http[s]://host[:port][/prefix])");
  };
  std::string scheme;
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    scheme = "http";
    rest = url.substr(7);
  } else if (url.rfind("https://", 0) == 0) {
    scheme = "https";
    rest = url.substr(8);
  } else {
    return bad("scheme must be http or https");
  }
  if (rest.find_first_of("?#") != std::string::npos) return bad("query or fragment not allowed");
  std::string authority = rest.substr(0, rest.find('/'));
  std::string path = rest.size() > authority.size() ? rest.substr(authority.size()) : "";
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (authority.find('@') != std::string::npos)
    return bad("credentials in the URL are not supported");

  std::string host;
  std::string port;
  if (!authority.empty() && authority[0] == '[') {  // [IPv6]:port
    size_t close = authority.find(']');
    if (close == std::string::npos) return bad("unterminated IPv6 literal");
    host = authority.substr(0, close + 1);
    std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad("unexpected text after the IPv6 literal");
      port = after.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (host.empty() || host == "[]") return bad("empty host");
  if (port.empty()) port = scheme == "https" ? "443" : "80";
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return bad("port must be a number");
  }
  if (port.size() > 5 || std::stoi(port) < 1 || std::stoi(port) > 65535) {
    return bad("port must be in 1..65535");
  }
  return PushgatewayAddress{scheme + "://" + host, port + path};
}

std::string EncodePushgatewayPathValue(const std::string& value) {
  return http::PercentEncode(value);
}

Status PushReplacingGroup(const PushgatewayAddress& address, const std::string& job,
                          const std::map<std::string, std::string>& grouping_labels,
                          const std::shared_ptr<prometheus::Collectable>& collectable,
                          double timeout_seconds) {
  std::string group_path = "/metrics/job/" + EncodePushgatewayPathValue(job);
  prometheus::Labels encoded;
  for (const auto& [name, value] : grouping_labels) {
    encoded[name] = EncodePushgatewayPathValue(value);
    group_path += "/" + name + "/" + encoded[name];
  }
  const std::string where = "pushgateway PUT " + address.url() + group_path;

  std::shared_ptr<prometheus::Gateway> gateway;
  try {
    gateway = std::make_shared<prometheus::Gateway>(address.host, address.port,
                                                    EncodePushgatewayPathValue(job), encoded);
  } catch (const std::exception& e) {
    return UnavailableError(where + ": cannot set up the HTTP client: " + e.what());
  }
  gateway->RegisterCollectable(collectable);

  // The detached thread owns everything it touches, so giving up on it after
  // the deadline is safe.
  auto result = std::make_shared<std::promise<int>>();
  std::future<int> done = result->get_future();
  std::thread([gateway, collectable, result] {
    int code = kGatewayThrew;
    try {
      code = gateway->PushAdd();  // PUT in prometheus-cpp 1.0.x (see header)
    } catch (...) {
    }
    result->set_value(code);
  }).detach();

  auto timeout = std::chrono::duration<double>(timeout_seconds);
  if (done.wait_for(timeout) != std::future_status::ready) {
    std::ostringstream seconds;
    seconds << timeout_seconds;
    return UnavailableError(where + ": no answer within " + seconds.str() +
                            " s; is the gateway up and reachable?");
  }
  int code = done.get();
  if (code == kGatewayThrew) return UnavailableError(where + ": the push threw");
  if (code >= 200 && code < 300) return OkStatus();
  return UnavailableError(where + ": " + DescribeGatewayResult(code));
}

}  // namespace skrull::metrics

// HttpPrometheusApi over cpprestsdk. Its own file because cpprest's headers
// (Boost.Asio) are slow to compile; nothing else includes them.
#include <cpprest/http_client.h>
#include <cpprest/uri_builder.h>

#include <cstdio>

#include "controller/tuner/prometheus_source.h"

namespace skrull::tuner {

struct HttpPrometheusApi::Impl {
  explicit Impl(const web::uri& base, const web::http::client::http_client_config& config)
      : client(base, config) {}
  web::http::client::http_client client;   // thread-safe for concurrent requests
  pplx::cancellation_token_source cancel;  // CancelAll
};

HttpPrometheusApi::HttpPrometheusApi(std::string base_url, std::unique_ptr<Impl> impl)
    : base_url_(std::move(base_url)), impl_(std::move(impl)) {}

HttpPrometheusApi::~HttpPrometheusApi() = default;

void HttpPrometheusApi::CancelAll() { impl_->cancel.cancel(); }

StatusOr<std::unique_ptr<HttpPrometheusApi>> HttpPrometheusApi::Create(
    const std::string& base_url, std::chrono::milliseconds timeout, const std::string& what) {
  const auto bad = [&](const std::string& why) {
    return InvalidArgumentError(what + ": " + why +
                                "; expected http(s)://host[:port][/prefix], e.g. "
                                "http://prometheus:9090 (got '" +
                                base_url + "')");
  };
  if (base_url.rfind("http://", 0) != 0 && base_url.rfind("https://", 0) != 0) {
    return bad("not an http or https URL");
  }
  if (!web::uri::validate(base_url)) return bad("not a valid URL");
  web::uri uri(base_url);
  if (uri.host().empty()) return bad("no host");
  if (!uri.query().empty() || !uri.fragment().empty()) return bad("no query or fragment allowed");
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  web::http::client::http_client_config config;
  config.set_timeout(timeout);
  try {
    auto impl = std::make_unique<Impl>(web::uri(base), config);
    return std::unique_ptr<HttpPrometheusApi>(new HttpPrometheusApi(base, std::move(impl)));
  } catch (const std::exception& e) {
    return bad(e.what());
  }
}

StatusOr<nlohmann::json> HttpPrometheusApi::Query(const std::string& promql,
                                                  double time_unix_seconds) {
  web::uri_builder path("api/v1/query");
  path.append_query("query", promql);
  if (time_unix_seconds > 0) {
    char t[32];
    std::snprintf(t, sizeof(t), "%.3f", time_unix_seconds);
    path.append_query("time", t);
  }
  const std::string request = "GET " + base_url_ + "/api/v1/query";
  const pplx::cancellation_token cancel = impl_->cancel.get_token();
  if (cancel.is_canceled()) return UnavailableError(request + ": cancelled: shutting down");
  try {
    web::http::http_response response =
        impl_->client.request(web::http::methods::GET, path.to_string(), cancel).get();
    const std::string body = response.extract_utf8string(/*ignore_content_type=*/true).get();
    return ParseQueryResponse(response.status_code(), body, request);
  } catch (const std::exception& e) {
    if (cancel.is_canceled()) return UnavailableError(request + ": cancelled: shutting down");
    return UnavailableError(request + ": " + e.what());
  }
}

}  // namespace skrull::tuner

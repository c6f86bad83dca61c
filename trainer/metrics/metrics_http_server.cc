#include "trainer/metrics/metrics_http_server.h"

#include <exception>

namespace skrull::metrics {

StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& bind_address, int port, int threads, Render render) {
  http::HttpServerOptions options;
  options.bind_address = bind_address;
  options.port = port;
  options.threads = threads;
  auto handler = [render = std::move(render)](const http::HttpRequest& req,
                                              http::HttpResponseWriter& w) {
    const std::string text = "text/plain; charset=utf-8";
    if (req.method != "GET" && req.method != "HEAD") {
      w.Send(405, text, "use GET\n", "Allow: GET, HEAD\r\n");
    } else if (req.path != "/metrics") {
      w.Send(404, text, "not found; metrics are at /metrics\n");
    } else {
      std::string body;
      try {
        body = render();
      } catch (const std::exception& e) {
        w.Send(500, text, std::string(e.what()) + "\n");
        return;
      }
      w.Send(200, "text/plain; version=0.0.4; charset=utf-8", body);
    }
  };
  StatusOr<std::unique_ptr<http::HttpServer>> server =
      http::HttpServer::Start(std::move(options), std::move(handler));
  if (!server.ok()) {
    Status s = server.status().WithContext("metrics: cannot serve /metrics");
    if (s.code() != StatusCode::kUnavailable) return s;
    return Status(
        s.code(),
        s.message() + " (is the port taken? the trainer uses spec.metrics.port + local rank)");
  }
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(std::move(server).value()));
}

}  // namespace skrull::metrics

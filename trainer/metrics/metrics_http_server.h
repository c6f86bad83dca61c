// MetricsHttpServer: the small HTTP/1.x server behind GET /metrics.
//
// It replaces prometheus-cpp's Exposer (civetweb). Debian's civetweb starts
// its threads with a fixed 100 KiB stack; in a process that links libtorch
// the static TLS alone is larger, pthread_create fails with EINVAL and the
// Exposer throws "null context when constructing CivetServer", so the
// trainer never served /metrics. This server uses default-sized threads.
//
// What it serves: GET (or HEAD) /metrics[?...] -> 200 with `render()` as
// `text/plain; version=0.0.4; charset=utf-8`; any other path 404; any other
// method 405. The sockets are common/http_server.h's HttpServer: one request
// per connection (Connection: close); an event thread reads requests (each
// connection must send its request within 5 s) and `threads` workers render
// answers (each write within 10 s), so idle or slow clients hold no thread.
//
// Thread safety: `render` is called on the server's threads, possibly
// concurrently; it must be thread-safe. Start/port/destructor from one thread.
#ifndef SKRULL_TRAINER_METRICS_METRICS_HTTP_SERVER_H_
#define SKRULL_TRAINER_METRICS_METRICS_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "common/http_server.h"
#include "common/status.h"

namespace skrull::metrics {

class MetricsHttpServer {
 public:
  using Render = std::function<std::string()>;

  // Listens on bind_address:port (an IPv4 or IPv6 literal; port 0 = an
  // ephemeral port) and starts `threads` (>= 1) workers that render answers.
  // Unavailable when the address cannot be bound (the message names it and
  // the errno text); InvalidArgument when bind_address is not a literal.
  static StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& bind_address,
                                                            int port, int threads, Render render);

  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;
  // Stops accepting, lets a request in progress finish (bounded by its
  // timeouts), joins the threads and closes the socket.
  ~MetricsHttpServer() = default;

  // The bound port.
  int port() const { return server_->port(); }

 private:
  explicit MetricsHttpServer(std::unique_ptr<http::HttpServer> server)
      : server_(std::move(server)) {}

  std::unique_ptr<http::HttpServer> server_;
};

}  // namespace skrull::metrics

#endif  // SKRULL_TRAINER_METRICS_METRICS_HTTP_SERVER_H_

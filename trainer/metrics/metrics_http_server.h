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
// method 405. One request per connection (Connection: close). Each
// connection must send its request within 5 s and take the answer within
// 10 s, so a stuck client cannot hold a thread for long.
//
// Thread safety: `render` is called on the server's threads, possibly
// concurrently; it must be thread-safe. Start/port/destructor from one thread.
#ifndef SKRULL_TRAINER_METRICS_METRICS_HTTP_SERVER_H_
#define SKRULL_TRAINER_METRICS_METRICS_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace skrull::metrics {

class MetricsHttpServer {
 public:
  using Render = std::function<std::string()>;

  // Listens on bind_address:port (an IPv4 or IPv6 literal; port 0 = an
  // ephemeral port) and starts `threads` (>= 1) serving threads.
  // Unavailable when the address cannot be bound (the message names it and
  // the errno text); InvalidArgument when bind_address is not a literal.
  static StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& bind_address,
                                                            int port, int threads, Render render);

  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;
  // Stops accepting, lets a request in progress finish (bounded by its
  // timeouts), joins the threads and closes the socket.
  ~MetricsHttpServer();

  // The bound port.
  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;
  void Serve();
  void Handle(int fd);

  Render render_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // a byte on [1] wakes every thread to stop
  int port_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace skrull::metrics

#endif  // SKRULL_TRAINER_METRICS_METRICS_HTTP_SERVER_H_

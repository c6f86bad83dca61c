// HttpServer: a small HTTP/1.1 server on blocking-style sockets, shared by
// the trainer's /metrics endpoint and the controller's test API server.
//
// It has no dependencies beyond POSIX: a fixed pool of threads each accepts
// a connection, reads one request (Content-Length bodies only), calls the
// handler, and closes the connection (every answer says Connection: close).
// A handler answers once (Send) or streams a chunked body (StartChunked,
// WriteChunk..., FinishChunked); returning without FinishChunked cuts the
// stream, which a client sees as a truncated body.
//
// Limits: each request must arrive within `read_timeout`, each write must
// finish within `write_timeout`, so a stuck client cannot hold a thread for
// long. A streaming handler holds its thread until it returns: size
// `threads` for the number of concurrent streams plus one.
//
// Thread safety: the handler runs on the server's threads, possibly
// concurrently; it must be thread-safe. Start/port/destructor from one thread.
#ifndef SKRULL_COMMON_HTTP_SERVER_H_
#define SKRULL_COMMON_HTTP_SERVER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"

namespace skrull::http {

using Deadline = std::chrono::steady_clock::time_point;

struct HttpRequest {
  std::string method;  // "GET", "PUT", ...
  std::string target;  // as sent: "/api/v1/pods?watch=1"
  std::string path;    // `target` up to '?', not percent-decoded
  std::string query;   // after '?', not decoded; "" when none
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, values trimmed
  std::string body;

  // The first header named `lower_case_name`, or nullptr.
  const std::string* Header(const std::string& lower_case_name) const;
};

// A byte stream to one client: the plain socket, or what
// HttpServerOptions::wrap_connection made of it (e.g. TLS).
class HttpConnection {
 public:
  virtual ~HttpConnection() = default;
  // Reads up to `size` bytes before `deadline`: > 0 bytes read, 0 when the
  // peer closed, < 0 on an error or when the deadline passed.
  virtual long Read(char* buf, size_t size, Deadline deadline) = 0;
  // Writes all of `data` before `deadline`; false on an error or timeout.
  virtual bool Write(const std::string& data, Deadline deadline) = 0;
};

// Waits until the non-blocking `fd` has `events` (POLLIN / POLLOUT) or the
// deadline passes (false). For HttpConnection wrappers.
bool WaitForFd(int fd, short events, Deadline deadline);

// How a handler answers one request. Not thread-safe: one handler call.
class HttpResponseWriter {
 public:
  // One complete answer with Content-Length. `extra_headers` are whole
  // "Name: value\r\n" lines. For HEAD requests the body is left out.
  // False when the client is gone (the handler may just return).
  bool Send(int status, const std::string& content_type, const std::string& body,
            const std::string& extra_headers = "");
  // Headers of a Transfer-Encoding: chunked answer; then WriteChunk any
  // number of times and FinishChunked. False when the client is gone.
  bool StartChunked(int status, const std::string& content_type);
  bool WriteChunk(const std::string& data);  // empty data writes nothing
  bool FinishChunked();

  // True once the server is shutting down: a streaming handler should return.
  bool stopping() const { return stopping_->load(); }
  // True once Send or StartChunked was called.
  bool started() const { return started_; }

 private:
  friend class HttpServer;
  HttpResponseWriter(HttpConnection* conn, bool head, std::chrono::milliseconds write_timeout,
                     const std::atomic<bool>* stopping)
      : conn_(conn), head_(head), write_timeout_(write_timeout), stopping_(stopping) {}
  bool Write(const std::string& data);

  HttpConnection* conn_;
  bool head_;
  std::chrono::milliseconds write_timeout_;
  const std::atomic<bool>* stopping_;
  bool started_ = false;
};

// "Not Found" for 404, ...; "Unknown" for codes it does not know.
const char* HttpReasonPhrase(int status);

// Percent-encodes every byte but RFC 3986's unreserved characters
// (A-Z a-z 0-9 - . _ ~): for query values and path segments.
std::string PercentEncode(const std::string& value);
// Decodes %XX, and '+' as a space when `plus_is_space` (form encoding, as
// in query strings). A malformed escape is kept as it is.
std::string PercentDecode(const std::string& value, bool plus_is_space);

struct HttpServerOptions {
  std::string bind_address = "127.0.0.1";          // an IPv4 or IPv6 literal ("[::]" ok)
  int port = 0;                                    // 0 = an ephemeral port
  int threads = 1;                                 // >= 1; each serves one connection at a time
  std::chrono::milliseconds read_timeout{5000};    // to receive a whole request
  std::chrono::milliseconds write_timeout{10000};  // for each Send / chunk
  size_t max_request_bytes = 16 * 1024;            // headers + body; more -> 413
  // Wraps each accepted non-blocking socket, e.g. in a TLS session, within
  // `deadline`; null = plain TCP. Returns null to drop the connection. The
  // server keeps ownership of the fd (it closes it after the wrapper).
  std::function<std::unique_ptr<HttpConnection>(int fd, Deadline deadline)> wrap_connection;
};

class HttpServer {
 public:
  using Handler = std::function<void(const HttpRequest&, HttpResponseWriter&)>;

  // Binds, listens and starts the threads. Unavailable when the address
  // cannot be bound ("bind <addr>:<port>: <errno text>"); InvalidArgument
  // when bind_address is not a literal or threads < 1. A handler that sends
  // nothing (or throws) answers 500.
  static StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options, Handler handler);

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  // Stops accepting, sets stopping() for streaming handlers, waits for the
  // requests in progress (bounded by their timeouts and handlers), joins.
  ~HttpServer();

  int port() const { return port_; }
  // "127.0.0.1:PORT" or "[::1]:PORT": the bound address, for messages.
  const std::string& address() const { return address_; }

 private:
  HttpServer() = default;
  void Serve();
  void Handle(int fd);

  HttpServerOptions options_;
  Handler handler_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // a byte on [1] wakes every thread to stop
  int port_ = 0;
  std::string address_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

}  // namespace skrull::http

#endif  // SKRULL_COMMON_HTTP_SERVER_H_

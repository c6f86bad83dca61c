// HttpServer: a small HTTP/1.1 server, shared by the trainer's /metrics
// endpoint, the controller's /healthz and /metrics, and the controller
// tests' API server (FakeApiServer: TLS, chunked watch streams).
//
// Hand-written (POSIX only): civetweb's 100 KiB thread stacks fail beside
// libtorch's static TLS; cpp-httplib 0.11 ties a pool thread to each open
// connection; cpprestsdk's listener has no header deadline or connection cap.
//
// How it serves: one event thread polls the listening socket and every
// connection still sending its request (non-blocking sockets). It accepts,
// reads request heads and Content-Length bodies, parses them strictly
// (common/http_request.h; a bad head is answered 400/413/501 from that
// thread; "Expect: 100-continue" gets its 100), and hands only complete
// requests to `threads` handler workers.
// Each connection serves one request (every answer says Connection: close).
// A handler answers once (Send) or streams a chunked body (StartChunked,
// WriteChunk..., FinishChunked); returning without FinishChunked cuts the
// stream, which a client sees as a truncated body.
//
// Limits: a connection must deliver its whole request within `read_timeout`
// of being accepted (else it is closed, with 408 when it sent something);
// each write must finish within `write_timeout`. At most `max_connections`
// are open; beyond that the oldest connection still sending its request is
// dropped (or, when every connection is being answered, the new one gets
// 503). So idle or slow clients cost a socket and a few bytes each, never a
// thread: a well-behaved client is answered at once while hundreds of them
// are open. A streaming handler holds a worker until it returns: size
// `threads` for the number of concurrent streams plus one. With
// `wrap_connection` (TLS, tests only) a connection goes to a worker once its
// first bytes arrive, and the handshake and request are read there.
//
// Thread safety: the handler runs on the worker threads, possibly
// concurrently; it must be thread-safe. Start/port/destructor from one thread.
#ifndef SKRULL_COMMON_HTTP_SERVER_H_
#define SKRULL_COMMON_HTTP_SERVER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/http_request.h"
#include "common/status.h"

namespace skrull::http {

using Deadline = std::chrono::steady_clock::time_point;

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
  std::string bind_address = "127.0.0.1";  // an IPv4 or IPv6 literal ("[::]" ok)
  int port = 0;                            // 0 = an ephemeral port
  int threads = 1;                         // >= 1 handler workers; each runs one handler at a time
  std::chrono::milliseconds read_timeout{5000};    // from accept to the whole request
  std::chrono::milliseconds write_timeout{10000};  // for each Send / chunk
  size_t max_request_bytes = 16 * 1024;            // headers + body; more -> 413
  // Connections open at once (reading, queued or being answered), >= 1.
  // Beyond it the oldest one still sending its request is closed.
  int max_connections = 1024;
  // Wraps each accepted non-blocking socket, e.g. in a TLS session, within
  // `deadline`; null = plain TCP. Runs on a worker once the client has sent
  // its first bytes. Returns null to drop the connection. The
  // server keeps ownership of the fd (it closes it after the wrapper).
  std::function<std::unique_ptr<HttpConnection>(int fd, Deadline deadline)> wrap_connection;
};

class HttpServer {
 public:
  using Handler = std::function<void(const HttpRequest&, HttpResponseWriter&)>;

  // Binds, listens and starts the event thread and the workers. Unavailable
  // when the address cannot be bound ("bind <addr>:<port>: <errno text>");
  // InvalidArgument when bind_address is not a literal, threads < 1 or
  // max_connections < 1. A handler that sends
  // nothing (or throws) answers 500.
  static StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options, Handler handler);

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  // Stops accepting, closes connections still sending their requests,
  // answers queued requests 503, sets stopping() for streaming handlers,
  // waits for the handlers in progress (bounded by their timeouts), joins.
  ~HttpServer();

  int port() const { return port_; }
  // "127.0.0.1:PORT" or "[::1]:PORT": the bound address, for messages.
  const std::string& address() const { return address_; }

 private:
  // A connection handed to a worker: a complete request, or (with
  // wrap_connection) a connection whose request the worker reads itself.
  struct Job {
    int fd = -1;
    Deadline read_deadline;
    bool read_on_worker = false;
    HttpRequest request;
  };

  HttpServer() = default;
  void EventLoop();
  void HandOff(Job job);
  void Worker();
  void Serve(const Job& job);

  HttpServerOptions options_;
  Handler handler_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // a byte on [1] stops the event thread
  int port_ = 0;
  std::string address_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> with_workers_{0};  // connections queued for or held by workers

  std::mutex mu_;
  std::condition_variable work_ready_;
  std::deque<Job> jobs_;       // guarded by mu_
  bool no_more_jobs_ = false;  // guarded by mu_

  std::thread event_thread_;
  std::vector<std::thread> workers_;
};

}  // namespace skrull::http

#endif  // SKRULL_COMMON_HTTP_SERVER_H_

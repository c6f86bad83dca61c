#include "common/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <string_view>

namespace skrull::http {

namespace {

using Clock = std::chrono::steady_clock;

int MillisLeft(Deadline deadline) {
  // Rounded up, so a poll does not wake just before its deadline and spin.
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(0, ms));
}

class PlainConnection : public HttpConnection {
 public:
  explicit PlainConnection(int fd) : fd_(fd) {}

  long Read(char* buf, size_t size, Deadline deadline) override {
    while (true) {
      if (!WaitForFd(fd_, POLLIN, deadline)) return -1;
      ssize_t n = ::recv(fd_, buf, size, 0);
      if (n >= 0) return static_cast<long>(n);
      if (errno != EAGAIN && errno != EINTR) return -1;
    }
  }

  bool Write(const std::string& data, Deadline deadline) override {
    size_t sent = 0;
    while (sent < data.size()) {
      if (!WaitForFd(fd_, POLLOUT, deadline)) return false;
      ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        return false;
      }
      sent += static_cast<size_t>(n);
    }
    return true;
  }

 private:
  int fd_;
};

constexpr char kText[] = "text/plain; charset=utf-8";

std::string StatusLine(int status) {
  return "HTTP/1.1 " + std::to_string(status) + " " + HttpReasonPhrase(status) + "\r\n";
}

// A whole answer with Content-Length (the body left out for HEAD).
std::string Answer(int status, const std::string& content_type, const std::string& body,
                   const std::string& extra_headers, bool head) {
  std::string r = StatusLine(status) + "Content-Type: " + content_type +
                  "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers +
                  "Connection: close\r\n\r\n";
  if (!head) r += body;
  return r;
}

// Short answers from the event thread: best effort, never blocks. A fresh
// socket's send buffer holds them whole.
void SendNow(int fd, const std::string& data) {
  ssize_t ignored = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)ignored;
}

// A connection still sending its request. Event thread only.
struct Pending {
  int fd = -1;
  Deadline deadline;
  std::string raw;                      // bytes received
  size_t head_end = std::string::npos;  // past the head's blank line, once seen
  std::optional<ParsedHead> head;       // once parsed
  bool continue_sent = false;
};

enum class Progress { kWaiting, kDone, kComplete };

// Reads what `p` has sent and advances it: kWaiting for more bytes, kDone
// when the connection is finished with (closed by the peer, or answered with
// an error), kComplete when p->head holds a whole request, body included.
Progress ReadSome(Pending* p, size_t max_request_bytes) {
  char buf[4096];
  const size_t searched = p->raw.size();
  bool eof = false;  // a client may half-close after sending its request
  while (p->raw.size() <= max_request_bytes) {
    const ssize_t n = ::recv(p->fd, buf, sizeof(buf), 0);
    if (n == 0) {
      eof = true;
      break;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return Progress::kDone;
    }
    p->raw.append(buf, static_cast<size_t>(n));
  }
  if (p->head_end == std::string::npos) {
    p->head_end = FindHeadEnd(p->raw, searched);
    if (p->head_end == std::string::npos || p->head_end > max_request_bytes) {
      if (p->raw.size() <= max_request_bytes) return eof ? Progress::kDone : Progress::kWaiting;
      SendNow(p->fd, Answer(413, kText, "request headers too large\n", "", false));
      return Progress::kDone;
    }
  }
  if (!p->head) {
    StatusOr<ParsedHead> parsed = ParseRequestHead(std::string_view(p->raw).substr(0, p->head_end),
                                                   max_request_bytes - p->head_end);
    if (!parsed.ok()) {
      const Status& error = parsed.status();
      SendNow(p->fd,
              Answer(HttpStatusForParseError(error), kText, error.message() + "\n", "", false));
      return Progress::kDone;
    }
    p->head = std::move(parsed).value();
  }
  if (p->raw.size() - p->head_end >= p->head->content_length) {
    p->head->request.body = p->raw.substr(p->head_end, p->head->content_length);
    return Progress::kComplete;
  }
  if (p->head->expect_continue && !p->continue_sent) {
    SendNow(p->fd, "HTTP/1.1 100 Continue\r\n\r\n");
    p->continue_sent = true;
  }
  return eof ? Progress::kDone : Progress::kWaiting;
}

// Reads one request from a wrapped connection (TLS) on a worker. Nullopt
// when the client went away, timed out, or was answered with an error.
std::optional<HttpRequest> ReadRequest(HttpConnection* conn, Deadline deadline,
                                       size_t max_request_bytes, HttpResponseWriter& w) {
  std::string raw;
  char buf[4096];
  size_t head_end = std::string::npos;
  size_t searched = 0;
  while ((head_end = FindHeadEnd(raw, searched)) == std::string::npos) {
    if (raw.size() > max_request_bytes) {
      w.Send(413, kText, "request headers too large\n");
      return std::nullopt;
    }
    searched = raw.size();
    const long n = conn->Read(buf, sizeof(buf), deadline);
    if (n <= 0) return std::nullopt;
    raw.append(buf, static_cast<size_t>(n));
  }
  if (head_end > max_request_bytes) {
    w.Send(413, kText, "request headers too large\n");
    return std::nullopt;
  }
  StatusOr<ParsedHead> parsed =
      ParseRequestHead(std::string_view(raw).substr(0, head_end), max_request_bytes - head_end);
  if (!parsed.ok()) {
    w.Send(HttpStatusForParseError(parsed.status()), kText, parsed.status().message() + "\n");
    return std::nullopt;
  }
  if (parsed->expect_continue && raw.size() - head_end < parsed->content_length &&
      !conn->Write("HTTP/1.1 100 Continue\r\n\r\n", deadline)) {
    return std::nullopt;
  }
  while (raw.size() - head_end < parsed->content_length) {
    const long n = conn->Read(buf, sizeof(buf), deadline);
    if (n <= 0) return std::nullopt;
    raw.append(buf, static_cast<size_t>(n));
  }
  parsed->request.body = raw.substr(head_end, parsed->content_length);
  return std::move(parsed->request);
}

}  // namespace

bool WaitForFd(int fd, short events, Deadline deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, MillisLeft(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

const char* HttpReasonPhrase(int status) {
  static constexpr std::pair<int, const char*> kPhrases[] = {
      {200, "OK"},
      {201, "Created"},
      {202, "Accepted"},
      {204, "No Content"},
      {400, "Bad Request"},
      {401, "Unauthorized"},
      {403, "Forbidden"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {408, "Request Timeout"},
      {409, "Conflict"},
      {410, "Gone"},
      {413, "Payload Too Large"},
      {415, "Unsupported Media Type"},
      {422, "Unprocessable Entity"},
      {429, "Too Many Requests"},
      {500, "Internal Server Error"},
      {501, "Not Implemented"},
      {503, "Service Unavailable"},
      {504, "Gateway Timeout"},
  };
  for (const auto& [code, phrase] : kPhrases) {
    if (code == status) return phrase;
  }
  return "Unknown";
}

std::string PercentEncode(const std::string& value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string PercentDecode(const std::string& value, bool plus_is_space) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '+' && plus_is_space) {
      out += ' ';
    } else if (value[i] == '%' && i + 2 < value.size() && hex(value[i + 1]) >= 0 &&
               hex(value[i + 2]) >= 0) {
      out += static_cast<char>(hex(value[i + 1]) * 16 + hex(value[i + 2]));
      i += 2;
    } else {
      out += value[i];
    }
  }
  return out;
}

bool HttpResponseWriter::Write(const std::string& data) {
  return conn_->Write(data, Clock::now() + write_timeout_);
}

bool HttpResponseWriter::Send(int status, const std::string& content_type, const std::string& body,
                              const std::string& extra_headers) {
  started_ = true;
  return Write(Answer(status, content_type, body, extra_headers, head_));
}

bool HttpResponseWriter::StartChunked(int status, const std::string& content_type) {
  started_ = true;
  return Write(StatusLine(status) + "Content-Type: " + content_type +
               "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
}

bool HttpResponseWriter::WriteChunk(const std::string& data) {
  if (data.empty()) return true;  // an empty chunk would end the body
  char size[24];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return Write(size + data + "\r\n");
}

bool HttpResponseWriter::FinishChunked() { return Write("0\r\n\r\n"); }

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                        Handler handler) {
  std::string host = options.bind_address;  // "[::]" -> "::"
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const bool v6 = host.find(':') != std::string::npos;
  const std::string shown_host = v6 ? "[" + host + "]" : host;
  const std::string where = shown_host + ":" + std::to_string(options.port);
  if (options.threads < 1) {
    return InvalidArgumentError("serve " + where + ": threads must be >= 1 (got " +
                                std::to_string(options.threads) + ")");
  }
  if (options.max_connections < 1) {
    return InvalidArgumentError("serve " + where + ": max_connections must be >= 1 (got " +
                                std::to_string(options.max_connections) + ")");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(options.port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return InvalidArgumentError("serve " + where +
                                ": the bind address must be an IPv4 or IPv6 literal (" +
                                ::gai_strerror(rc) + ")");
  }
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->options_ = std::move(options);
  s->handler_ = std::move(handler);
  s->listen_fd_ =
      ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_TCP);
  if (s->listen_fd_ < 0) {
    ::freeaddrinfo(found);
    return UnavailableError("socket for " + where + ": " + std::strerror(errno));
  }
  const int one = 1;
  ::setsockopt(s->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const bool bound = ::bind(s->listen_fd_, found->ai_addr, found->ai_addrlen) == 0;
  const int bind_errno = errno;
  ::freeaddrinfo(found);
  if (!bound) return UnavailableError("bind " + where + ": " + std::strerror(bind_errno));
  // A long backlog: a burst of connections waits for the event thread
  // instead of having its SYNs dropped (clients retry only after 1 s).
  if (::listen(s->listen_fd_, SOMAXCONN) != 0) {
    return UnavailableError("listen " + where + ": " + std::strerror(errno));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  s->port_ = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                        : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  s->address_ = shown_host + ":" + std::to_string(s->port_);
  if (::pipe2(s->wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return UnavailableError("pipe for " + where + ": " + std::strerror(errno));
  }
  for (int i = 0; i < s->options_.threads; ++i) {
    s->workers_.emplace_back([raw = s.get()] { raw->Worker(); });
  }
  s->event_thread_ = std::thread([raw = s.get()] { raw->EventLoop(); });
  return s;
}

HttpServer::~HttpServer() {
  stopping_ = true;
  if (wake_fds_[1] >= 0) {
    const char byte = 1;
    ssize_t ignored = ::write(wake_fds_[1], &byte, 1);
    (void)ignored;
  }
  if (event_thread_.joinable()) event_thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    no_more_jobs_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
  for (int fd : {listen_fd_, wake_fds_[0], wake_fds_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void HttpServer::EventLoop() {
  // By accept order, so begin() is the oldest connection still sending.
  std::map<uint64_t, Pending> pending;
  uint64_t next_id = 0;
  Deadline accept_paused_until{};
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  const bool tls = static_cast<bool>(options_.wrap_connection);
  auto drop = [&pending](std::map<uint64_t, Pending>::iterator it) {
    ::close(it->second.fd);
    return pending.erase(it);
  };
  auto accept_all = [&] {
    const auto cap = static_cast<size_t>(options_.max_connections);
    for (int i = 0; i < 64; ++i) {  // then serve the readable ones too
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: make room from the oldest idle connection,
          // or stop polling the listener for a while instead of spinning.
          if (!pending.empty()) {
            drop(pending.begin());
            continue;
          }
          accept_paused_until = Clock::now() + std::chrono::milliseconds(100);
        }
        return;  // EAGAIN: nothing more to accept
      }
      if (pending.size() + static_cast<size_t>(with_workers_.load()) >= cap) {
        if (pending.empty()) {
          SendNow(fd, Answer(503, kText, "too many connections; try again\n", "", false));
          ::close(fd);
          continue;
        }
        drop(pending.begin());
      }
      Pending p;
      p.fd = fd;
      p.deadline = Clock::now() + options_.read_timeout;
      pending.emplace(next_id++, std::move(p));
    }
  };

  while (true) {
    const auto now = Clock::now();
    Deadline wake = now + std::chrono::hours(1);
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->second.deadline <= now) {
        if (!it->second.raw.empty()) {
          SendNow(it->second.fd, Answer(408, kText, "the request took too long\n", "", false));
        }
        it = drop(it);
      } else {
        wake = std::min(wake, it->second.deadline);
        ++it;
      }
    }
    fds.clear();
    ids.clear();
    fds.push_back({wake_fds_[0], POLLIN, 0});
    const bool accepting = now >= accept_paused_until;
    if (accepting) {
      fds.push_back({listen_fd_, POLLIN, 0});
    } else {
      wake = std::min(wake, accept_paused_until);
    }
    const size_t first = fds.size();
    for (const auto& [id, p] : pending) {
      fds.push_back({p.fd, POLLIN, 0});
      ids.push_back(id);
    }
    if (::poll(fds.data(), fds.size(), MillisLeft(wake)) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) break;  // stopping
    for (size_t i = first; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto it = pending.find(ids[i - first]);
      Progress progress =
          tls ? Progress::kComplete : ReadSome(&it->second, options_.max_request_bytes);
      if (progress == Progress::kDone) {
        drop(it);
      } else if (progress == Progress::kComplete) {
        Job job;
        job.fd = it->second.fd;
        job.read_deadline = it->second.deadline;
        job.read_on_worker = tls;
        if (!tls) job.request = std::move(it->second.head->request);
        pending.erase(it);
        HandOff(std::move(job));
      }
    }
    if (accepting && (fds[1].revents & POLLIN) != 0) accept_all();
  }
  for (auto& [id, p] : pending) ::close(p.fd);
}

void HttpServer::HandOff(Job job) {
  ++with_workers_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  work_ready_.notify_one();
}

void HttpServer::Worker() {
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_ready_.wait(lock, [this] { return !jobs_.empty() || no_more_jobs_; });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Serve(job);
    ::close(job.fd);
    --with_workers_;
  }
}

void HttpServer::Serve(const Job& job) {
  std::unique_ptr<HttpConnection> conn;
  if (job.read_on_worker) {
    conn = options_.wrap_connection(job.fd, job.read_deadline);
    if (!conn) return;
  } else {
    conn = std::make_unique<PlainConnection>(job.fd);
  }
  HttpResponseWriter writer(conn.get(), false, options_.write_timeout, &stopping_);
  std::optional<HttpRequest> read;
  if (job.read_on_worker) {
    read = ReadRequest(conn.get(), job.read_deadline, options_.max_request_bytes, writer);
    if (!read) return;
  }
  const HttpRequest& req = job.read_on_worker ? *read : job.request;
  writer.head_ = req.method == "HEAD";
  if (stopping_) {
    writer.Send(503, kText, "the server is shutting down\n");
    return;
  }
  std::string error;
  try {
    handler_(req, writer);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!writer.started()) {
    writer.Send(500, kText, (error.empty() ? "the handler sent no answer" : error) + "\n");
  }
}

}  // namespace skrull::http

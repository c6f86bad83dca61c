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

namespace skrull::http {

namespace {

using Clock = std::chrono::steady_clock;

int MillisLeft(Deadline deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
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

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string StatusLine(int status) {
  return "HTTP/1.1 " + std::to_string(status) + " " + HttpReasonPhrase(status) + "\r\n";
}

// Parses the request line and headers in `head` (without the blank line).
// False when the request line is malformed.
bool ParseHead(const std::string& head, HttpRequest* req) {
  size_t line_end = head.find('\n');
  const std::string line = Trim(head.substr(0, line_end));
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? std::string::npos : line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) return false;
  req->method = line.substr(0, sp1);
  req->target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const size_t q = req->target.find('?');
  req->path = req->target.substr(0, q);
  req->query = q == std::string::npos ? "" : req->target.substr(q + 1);
  while (line_end != std::string::npos) {
    const size_t start = line_end + 1;
    line_end = head.find('\n', start);
    const std::string h =
        head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
    const size_t colon = h.find(':');
    if (colon == std::string::npos) continue;
    req->headers.emplace_back(Lower(Trim(h.substr(0, colon))), Trim(h.substr(colon + 1)));
  }
  return true;
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

const std::string* HttpRequest::Header(const std::string& lower_case_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_case_name) return &value;
  }
  return nullptr;
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
  std::string r = StatusLine(status) + "Content-Type: " + content_type +
                  "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers +
                  "Connection: close\r\n\r\n";
  if (!head_) r += body;
  return Write(r);
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
  if (::listen(s->listen_fd_, 64) != 0) {
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
    s->threads_.emplace_back([raw = s.get()] { raw->Serve(); });
  }
  return s;
}

HttpServer::~HttpServer() {
  stopping_ = true;
  if (wake_fds_[1] >= 0) {
    const char byte = 1;
    ssize_t ignored = ::write(wake_fds_[1], &byte, 1);  // level-triggered: wakes every thread
    (void)ignored;
  }
  for (std::thread& t : threads_) t.join();
  for (int fd : {listen_fd_, wake_fds_[0], wake_fds_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void HttpServer::Serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;  // another thread took it, or the client gave up
    Handle(fd);
    ::close(fd);
  }
}

void HttpServer::Handle(int fd) {
  const Deadline read_deadline = Clock::now() + options_.read_timeout;
  std::unique_ptr<HttpConnection> conn;
  if (options_.wrap_connection) {
    conn = options_.wrap_connection(fd, read_deadline);
    if (!conn) return;
  } else {
    conn = std::make_unique<PlainConnection>(fd);
  }
  const std::string text = "text/plain; charset=utf-8";
  std::string raw;
  char buf[4096];
  size_t head_end = std::string::npos;
  size_t body_start = 0;
  // Headers, then the Content-Length body.
  while (true) {
    if (head_end == std::string::npos) {
      if ((head_end = raw.find("\r\n\r\n")) != std::string::npos) {
        body_start = head_end + 4;
      } else if ((head_end = raw.find("\n\n")) != std::string::npos) {
        body_start = head_end + 2;
      }
    }
    if (head_end != std::string::npos) break;
    if (raw.size() > options_.max_request_bytes) break;
    long n = conn->Read(buf, sizeof(buf), read_deadline);
    if (n <= 0) return;
    raw.append(buf, static_cast<size_t>(n));
  }
  HttpRequest req;
  HttpResponseWriter writer(conn.get(), false, options_.write_timeout, &stopping_);
  if (head_end == std::string::npos) {
    writer.Send(413, text, "request headers too large\n");
    return;
  }
  if (!ParseHead(raw.substr(0, head_end), &req)) {
    writer.Send(400, text, "bad request line\n");
    return;
  }
  writer.head_ = req.method == "HEAD";
  if (const std::string* te = req.Header("transfer-encoding"); te != nullptr) {
    writer.Send(501, text, "chunked request bodies are not supported; send Content-Length\n");
    return;
  }
  size_t content_length = 0;
  if (const std::string* cl = req.Header("content-length"); cl != nullptr) {
    content_length = std::strtoull(cl->c_str(), nullptr, 10);
  }
  if (body_start + content_length > options_.max_request_bytes) {
    writer.Send(413, text, "request body too large\n");
    return;
  }
  while (raw.size() < body_start + content_length) {
    long n = conn->Read(buf, sizeof(buf), read_deadline);
    if (n <= 0) return;
    raw.append(buf, static_cast<size_t>(n));
  }
  req.body = raw.substr(body_start, content_length);
  std::string error;
  try {
    handler_(req, writer);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!writer.started()) {
    writer.Send(500, text, (error.empty() ? "the handler sent no answer" : error) + "\n");
  }
}

}  // namespace skrull::http

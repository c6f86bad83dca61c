#include "trainer/metrics/metrics_http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>

namespace skrull::metrics {

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kReadTimeout = std::chrono::seconds(5);
constexpr auto kWriteTimeout = std::chrono::seconds(10);
constexpr size_t kMaxRequestBytes = 16 * 1024;

int MillisLeft(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(0, ms));
}

// Sends all of `data` before `deadline`; false on error or timeout.
bool SendAll(int fd, const std::string& data, Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < data.size()) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, MillisLeft(deadline)) <= 0) return false;
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  return true;
}

std::string Response(int status, const char* reason, const std::string& content_type,
                     const std::string& body, bool head, const std::string& extra = "") {
  std::string r = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                  "\r\nContent-Type: " + content_type +
                  "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra +
                  "Connection: close\r\n\r\n";
  if (!head) r += body;
  return r;
}

}  // namespace

StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& bind_address, int port, int threads, Render render) {
  const std::string where =
      "metrics: cannot serve /metrics on " +
      (bind_address.find(':') != std::string::npos && bind_address.front() != '['
           ? "[" + bind_address + "]"
           : bind_address) +
      ":" + std::to_string(port);
  if (threads < 1) return InvalidArgumentError(where + ": threads must be >= 1");
  std::string host = bind_address;  // "[::]" -> "::"
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return InvalidArgumentError(where + ": the bind address must be an IPv4 or IPv6 literal (" +
                                ::gai_strerror(rc) + ")");
  }
  std::unique_ptr<MetricsHttpServer> s(new MetricsHttpServer());
  s->render_ = std::move(render);
  s->listen_fd_ =
      ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_TCP);
  if (s->listen_fd_ < 0) {
    ::freeaddrinfo(found);
    return UnavailableError(where + ": socket: " + std::strerror(errno));
  }
  const int one = 1;
  ::setsockopt(s->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const bool bound = ::bind(s->listen_fd_, found->ai_addr, found->ai_addrlen) == 0;
  const int bind_errno = errno;
  ::freeaddrinfo(found);
  if (!bound) {
    return UnavailableError(
        where + ": bind: " + std::strerror(bind_errno) +
        " (is the port taken? the trainer uses spec.metrics.port + local rank)");
  }
  if (::listen(s->listen_fd_, 64) != 0) {
    return UnavailableError(where + ": listen: " + std::strerror(errno));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  s->port_ = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                        : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (::pipe2(s->wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return UnavailableError(where + ": pipe: " + std::strerror(errno));
  }
  for (int i = 0; i < threads; ++i) s->threads_.emplace_back([raw = s.get()] { raw->Serve(); });
  return s;
}

MetricsHttpServer::~MetricsHttpServer() {
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

void MetricsHttpServer::Serve() {
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

void MetricsHttpServer::Handle(int fd) {
  const auto read_deadline = Clock::now() + kReadTimeout;
  std::string request;
  char buf[4096];
  while (request.find("\r\n\r\n") == std::string::npos &&
         request.find("\n\n") == std::string::npos) {
    if (request.size() > kMaxRequestBytes) return;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, MillisLeft(read_deadline)) <= 0) return;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0) return;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return;
    }
    request.append(buf, static_cast<size_t>(n));
  }
  // Request line: METHOD SP TARGET SP VERSION.
  const std::string line = request.substr(0, request.find_first_of("\r\n"));
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? std::string::npos : line.find(' ', sp1 + 1);
  const auto write_deadline = Clock::now() + kWriteTimeout;
  const std::string text = "text/plain; charset=utf-8";
  if (sp1 == std::string::npos || sp2 == std::string::npos) {
    SendAll(fd, Response(400, "Bad Request", text, "bad request line\n", false), write_deadline);
    return;
  }
  const std::string method = line.substr(0, sp1);
  std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    SendAll(fd,
            Response(405, "Method Not Allowed", text, "use GET\n", false, "Allow: GET, HEAD\r\n"),
            write_deadline);
    return;
  }
  if (path != "/metrics") {
    SendAll(fd, Response(404, "Not Found", text, "not found; metrics are at /metrics\n", head),
            write_deadline);
    return;
  }
  std::string body;
  try {
    body = render_();
  } catch (const std::exception& e) {
    SendAll(fd, Response(500, "Internal Server Error", text, std::string(e.what()) + "\n", head),
            write_deadline);
    return;
  }
  SendAll(fd, Response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", body, head),
          write_deadline);
}

}  // namespace skrull::metrics

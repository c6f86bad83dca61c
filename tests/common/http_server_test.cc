// HttpServer under idle, slow and malformed clients: none of them may keep a
// probe from an answer. Timings are measured on a loaded machine: each latency check takes
// the median of several requests against the 100 ms contract.
#include "common/http_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace skrull::http {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kContract{100};  // the contract: answered within 100 ms

int CountEntries(const char* dir) {
  DIR* d = ::opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n - (std::string(dir) == "/proc/self/fd" ? 1 : 0);  // opendir's own fd
}
int OpenFds() { return CountEntries("/proc/self/fd"); }
int Threads() { return CountEntries("/proc/self/task"); }

// Polls `f` until it returns `want` or `limit` passes; the last value.
template <typename F>
int WaitFor(F f, int want, milliseconds limit = milliseconds(10000)) {
  const auto end = Clock::now() + limit;
  int got = f();
  while (got != want && Clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(5));
    got = f();
  }
  return got;
}

// A blocking client socket connected to 127.0.0.1:port, reads time out
// after 5 s; -1 on failure.
int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  return ::send(fd, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
}

// Everything the server sends until it closes (or 5 s pass).
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// One request on a fresh connection; the whole answer ("" when none).
std::string Exchange(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  std::string answer = SendAll(fd, request) ? ReadAll(fd) : "";
  ::close(fd);
  return answer;
}

const char kGet[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

// The median time of `n` GETs, each checked to answer 200.
milliseconds MedianGet(int port, int n) {
  std::vector<milliseconds> times;
  for (int i = 0; i < n; ++i) {
    const auto start = Clock::now();
    const std::string answer = Exchange(port, kGet);
    times.push_back(std::chrono::duration_cast<milliseconds>(Clock::now() - start));
    EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << "request " << i << ": " << answer;
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

HttpServer::Handler Echo() {
  return [](const HttpRequest& req, HttpResponseWriter& w) {
    w.Send(200, "text/plain", req.method + " " + req.target + " " + req.body);
  };
}

std::unique_ptr<HttpServer> StartServer(HttpServerOptions o, HttpServer::Handler handler = Echo()) {
  StatusOr<std::unique_ptr<HttpServer>> s = HttpServer::Start(std::move(o), std::move(handler));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(s).value() : nullptr;
}

// The controller's /healthz server has 2 workers; this guards against idle
// connections holding both (8 once made every probe fail).
HttpServerOptions ControllerLike() {
  HttpServerOptions o;
  o.threads = 2;
  o.read_timeout = milliseconds(30000);  // so only the server's design can free a slot
  return o;
}

TEST(HttpServer, AnswersWithin100MsWhile256IdleAndSlowHeaderConnectionsAreOpen) {
  std::unique_ptr<HttpServer> server = StartServer(ControllerLike());
  ASSERT_NE(server, nullptr);
  const int fds_before = OpenFds();
  std::vector<int> idle;
  std::vector<int> slow;
  for (int i = 0; i < 128; ++i) {
    idle.push_back(Connect(server->port()));
    slow.push_back(Connect(server->port()));
    ASSERT_GE(idle.back(), 0);
    ASSERT_GE(slow.back(), 0);
    ASSERT_TRUE(SendAll(slow.back(), "GET /slow HTTP/1.1\r\nHost: x\r\nX-Slow: "));
  }
  // Both ends of all 256 connections are open: the server accepted them.
  ASSERT_EQ(WaitFor(OpenFds, fds_before + 512), fds_before + 512);
  for (int round = 0; round < 3; ++round) {
    for (int fd : slow) ASSERT_TRUE(SendAll(fd, "a"));  // one more header byte each
    const milliseconds median = MedianGet(server->port(), 5);
    EXPECT_LT(median, kContract) << "round " << round;
  }
  for (int fd : idle) ::close(fd);
  for (int fd : slow) ::close(fd);
}

TEST(HttpServer, ReleasesEveryFdAndThreadWhenConnectionsClose) {
  const int fds_at_start = OpenFds();
  const int threads_at_start = Threads();
  {
    std::unique_ptr<HttpServer> server = StartServer(ControllerLike());
    ASSERT_NE(server, nullptr);
    const int fds_serving = OpenFds();
    const int threads_serving = Threads();
    EXPECT_EQ(threads_serving, threads_at_start + 3);  // the event thread and 2 workers
    std::vector<int> clients;
    for (int i = 0; i < 256; ++i) {
      clients.push_back(Connect(server->port()));
      ASSERT_GE(clients.back(), 0);
      if (i % 2 == 1) {
        ASSERT_TRUE(SendAll(clients.back(), "GET / HTTP/1.1\r\n"));
      }
    }
    ASSERT_EQ(WaitFor(OpenFds, fds_serving + 512), fds_serving + 512);
    EXPECT_EQ(Threads(), threads_serving) << "a thread per connection";
    EXPECT_EQ(Exchange(server->port(), kGet).rfind("HTTP/1.1 200", 0), 0u);
    for (int fd : clients) ::close(fd);
    // The server sees each close and closes its end, long before its 30 s deadline.
    EXPECT_EQ(WaitFor(OpenFds, fds_serving), fds_serving);
    EXPECT_EQ(Threads(), threads_serving);
  }
  EXPECT_EQ(WaitFor(OpenFds, fds_at_start), fds_at_start);
  EXPECT_EQ(WaitFor(Threads, threads_at_start), threads_at_start);
}

TEST(HttpServer, StaysFastWhileIdleConnectionsAreReopenedInALoop) {
  HttpServerOptions o = ControllerLike();
  o.read_timeout = milliseconds(200);  // the server drops them often; they come back
  std::unique_ptr<HttpServer> server = StartServer(o);
  ASSERT_NE(server, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int> reopened{0};
  std::thread attacker([&] {
    std::vector<int> conns(64, -1);
    while (!stop) {
      for (int& fd : conns) {
        if (fd >= 0) {
          pollfd p{fd, POLLIN, 0};
          if (::poll(&p, 1, 0) == 0) continue;  // still held open by the server
          ::close(fd);
          ++reopened;
        }
        fd = Connect(server->port());
      }
      std::this_thread::sleep_for(milliseconds(2));
    }
    for (int fd : conns) {
      if (fd >= 0) ::close(fd);
    }
  });
  // Scrape while the attack cycles its connections at least three times.
  std::vector<milliseconds> times;
  const auto give_up = Clock::now() + milliseconds(20000);
  while ((times.size() < 9 || reopened < 3 * 64) && Clock::now() < give_up) {
    const auto start = Clock::now();
    const std::string answer = Exchange(server->port(), kGet);
    times.push_back(std::chrono::duration_cast<milliseconds>(Clock::now() - start));
    EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
    std::this_thread::sleep_for(milliseconds(10));  // a scrape interval, not a wait
  }
  stop = true;
  attacker.join();
  EXPECT_GE(reopened.load(), 3 * 64) << "the attack never cycled its connections";
  std::sort(times.begin(), times.end());
  const milliseconds median = times[times.size() / 2];
  EXPECT_LT(median, kContract);
}

TEST(HttpServer, Answers408AndClosesWhenTheHeadIsNotInByTheReadTimeout) {
  HttpServerOptions o;
  o.read_timeout = milliseconds(300);
  std::unique_ptr<HttpServer> server = StartServer(o);
  ASSERT_NE(server, nullptr);
  const int fd = Connect(server->port());
  ASSERT_GE(fd, 0);
  const auto start = Clock::now();
  ASSERT_TRUE(SendAll(fd, "GET / HTTP/1.1\r\nHost: x\r\n"));
  const std::string answer = ReadAll(fd);
  const auto took = Clock::now() - start;
  ::close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 408 Request Timeout\r\n", 0), 0u) << answer;
  EXPECT_GE(took, milliseconds(250));
  EXPECT_LT(took, milliseconds(3000));
}

TEST(HttpServer, ClosesTheOldestIdleConnectionBeyondMaxConnections) {
  HttpServerOptions o = ControllerLike();
  o.max_connections = 4;
  std::unique_ptr<HttpServer> server = StartServer(o);
  ASSERT_NE(server, nullptr);
  const int fds_before = OpenFds();
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(Connect(server->port()));
    ASSERT_GE(idle.back(), 0);
    ASSERT_EQ(WaitFor(OpenFds, fds_before + 2 * (i + 1)), fds_before + 2 * (i + 1));
  }
  EXPECT_EQ(Exchange(server->port(), kGet).rfind("HTTP/1.1 200", 0), 0u);
  char byte;
  EXPECT_EQ(::recv(idle[0], &byte, 1, 0), 0) << "the oldest idle connection is closed";
  pollfd p{idle[3], POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "the newest idle connection stays open";
  for (int fd : idle) ::close(fd);
}

TEST(HttpServer, Answers400ToContentLengthThatIsNotAPlainNumber) {
  std::atomic<int> handled{0};
  std::unique_ptr<HttpServer> server =
      StartServer(HttpServerOptions{}, [&](const HttpRequest&, HttpResponseWriter& w) {
        ++handled;
        w.Send(200, "text/plain", "ok");
      });
  ASSERT_NE(server, nullptr);
  for (const std::string cl :
       {"Content-Length: -1\r\n", "Content-Length: abc\r\n",
        "Content-Length: 18446744073709551617\r\n", "Content-Length: 1\r\nContent-Length: 2\r\n",
        "Content-Length: 1, 1\r\n"}) {
    const std::string answer = Exchange(server->port(), "POST / HTTP/1.1\r\n" + cl + "\r\nx");
    EXPECT_EQ(answer.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << cl << answer;
    EXPECT_NE(answer.find("Content-Length"), std::string::npos) << answer;
  }
  EXPECT_EQ(handled.load(), 0);
}

TEST(HttpServer, Answers413ToContentLengthOverTheRequestCap) {
  HttpServerOptions o;
  o.max_request_bytes = 1024;
  std::unique_ptr<HttpServer> server = StartServer(o);
  ASSERT_NE(server, nullptr);
  const std::string answer =
      Exchange(server->port(), "POST / HTTP/1.1\r\nContent-Length: 4096\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  EXPECT_EQ(Exchange(server->port(), "GET /" + std::string(2000, 'a') + " HTTP/1.1\r\n\r\n")
                .rfind("HTTP/1.1 413", 0),
            0u);
}

TEST(HttpServer, ReadsBodySentAfterExpectContinue) {
  std::unique_ptr<HttpServer> server = StartServer(HttpServerOptions{});
  ASSERT_NE(server, nullptr);
  const int fd = Connect(server->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  char buf[64];
  const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(SendAll(fd, "he"));
  ASSERT_TRUE(SendAll(fd, "llo"));
  const std::string answer = ReadAll(fd);
  ::close(fd);
  EXPECT_NE(answer.find("\r\n\r\nPUT /x hello"), std::string::npos) << answer;
}

TEST(HttpServer, AnswersAClientThatHalfClosesAfterItsRequest) {
  std::unique_ptr<HttpServer> server = StartServer(HttpServerOptions{});
  ASSERT_NE(server, nullptr);
  const int fd = Connect(server->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, kGet));
  ::shutdown(fd, SHUT_WR);
  const std::string answer = ReadAll(fd);
  ::close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
}

TEST(HttpServer, ServesOtherClientsWhileAStreamHoldsAWorker) {
  std::atomic<bool> release{false};
  HttpServerOptions o;
  o.threads = 2;
  std::unique_ptr<HttpServer> server =
      StartServer(o, [&](const HttpRequest& req, HttpResponseWriter& w) {
        if (req.path != "/stream") {
          w.Send(200, "text/plain", "ok");
          return;
        }
        w.StartChunked(200, "text/plain");
        w.WriteChunk("first");
        while (!release && !w.stopping()) std::this_thread::sleep_for(milliseconds(1));
        w.WriteChunk("second");
        w.FinishChunked();
      });
  ASSERT_NE(server, nullptr);
  const int stream = Connect(server->port());
  ASSERT_GE(stream, 0);
  ASSERT_TRUE(SendAll(stream, "GET /stream HTTP/1.1\r\n\r\n"));
  EXPECT_LT(MedianGet(server->port(), 5), kContract);
  release = true;
  const std::string answer = ReadAll(stream);
  ::close(stream);
  EXPECT_NE(answer.find("Transfer-Encoding: chunked"), std::string::npos) << answer;
  EXPECT_NE(answer.find("5\r\nfirst\r\n6\r\nsecond\r\n0\r\n\r\n"), std::string::npos) << answer;
}

TEST(HttpServer, RejectsMaxConnectionsBelowOne) {
  HttpServerOptions o;
  o.max_connections = 0;
  StatusOr<std::unique_ptr<HttpServer>> s = HttpServer::Start(o, Echo());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("max_connections must be >= 1"), std::string::npos)
      << s.status();
}

}  // namespace
}  // namespace skrull::http

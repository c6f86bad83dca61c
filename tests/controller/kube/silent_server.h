// SilentServer: a loopback TCP listener that accepts every connection and
// never answers (an API server hung behind a working load balancer), for
// tests of how fast a client gives up when told to stop.
#ifndef SKRULL_TESTS_CONTROLLER_KUBE_SILENT_SERVER_H_
#define SKRULL_TESTS_CONTROLLER_KUBE_SILENT_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace skrull::kube::testing {

class SilentServer {
 public:
  // Listens on 127.0.0.1 at an ephemeral port; port() is 0 if that failed.
  SilentServer() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(listen_fd_, 64) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0) continue;
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        held_.push_back(fd);  // read nothing, answer nothing, keep it open
        accepted_.fetch_add(1);
      }
    });
  }
  ~SilentServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (int fd : held_) close(fd);
    if (listen_fd_ >= 0) close(listen_fd_);
  }
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Connections accepted so far.
  int accepted() const { return accepted_.load(); }

 private:
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::vector<int> held_;  // touched by thread_ only, then by the destructor
  std::thread thread_;
};

}  // namespace skrull::kube::testing

#endif  // SKRULL_TESTS_CONTROLLER_KUBE_SILENT_SERVER_H_

#include "tests/trainer/prometheus_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "common/file_util.h"
#include "common/http_server.h"

extern char** environ;

namespace skrull::testing {

namespace {

using Clock = std::chrono::steady_clock;

double SecondsLeft(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

// Decodes a chunked transfer-encoded body; returns false if malformed.
bool Dechunk(const std::string& in, std::string* out) {
  size_t pos = 0;
  out->clear();
  while (pos < in.size()) {
    size_t eol = in.find("\r\n", pos);
    if (eol == std::string::npos) return false;
    size_t size = std::strtoul(in.substr(pos, eol - pos).c_str(), nullptr, 16);
    pos = eol + 2;
    if (size == 0) return true;
    if (pos + size > in.size()) return false;
    out->append(in, pos, size);
    pos += size + 2;  // chunk data and its CRLF
  }
  return false;
}

bool HeaderHas(const std::string& headers, const std::string& name, const std::string& value) {
  std::string lower = headers;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string needle = name + ":";
  size_t at = lower.find(needle);
  if (at == std::string::npos) return false;
  size_t end = lower.find("\r\n", at);
  return lower.substr(at, end - at).find(value) != std::string::npos;
}

}  // namespace

StatusOr<HttpResponse> HttpGet(const std::string& host, int port, const std::string& target,
                               double timeout_seconds) {
  const std::string where = "GET http://" + host + ":" + std::to_string(port) + target;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_seconds));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgumentError(where + ": host must be an IPv4 literal");
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return UnavailableError(where + ": socket: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 &&
      errno != EINPROGRESS) {
    return UnavailableError(where + ": connect: " + std::strerror(errno));
  }
  pollfd pfd{fd, POLLOUT, 0};
  if (::poll(&pfd, 1, static_cast<int>(SecondsLeft(deadline) * 1000)) != 1) {
    return UnavailableError(where + ": connect timed out");
  }
  int err = 0;
  socklen_t len = sizeof(err);
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return UnavailableError(where + ": connect: " + std::strerror(err));

  const std::string request = "GET " + target + " HTTP/1.0\r\nHost: " + host + ":" +
                              std::to_string(port) +
                              "\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n";
  size_t sent = 0;
  while (sent < request.size()) {
    pfd = {fd, POLLOUT, 0};
    if (::poll(&pfd, 1, std::max(0, static_cast<int>(SecondsLeft(deadline) * 1000))) != 1) {
      return UnavailableError(where + ": send timed out");
    }
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return UnavailableError(where + ": send: " + std::strerror(errno));
    }
    if (n > 0) sent += static_cast<size_t>(n);
  }

  std::string raw;
  char buf[16384];
  while (true) {
    pfd = {fd, POLLIN, 0};
    int ready = ::poll(&pfd, 1, std::max(0, static_cast<int>(SecondsLeft(deadline) * 1000)));
    if (ready == 0) return UnavailableError(where + ": no complete answer within the timeout");
    if (ready < 0 && errno != EINTR)
      return UnavailableError(where + ": poll: " + std::strerror(errno));
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return UnavailableError(where + ": recv: " + std::strerror(errno));
    }
    raw.append(buf, static_cast<size_t>(n));
  }

  size_t header_end = raw.find("\r\n\r\n");
  if (header_end == std::string::npos || raw.compare(0, 5, "HTTP/") != 0) {
    return UnavailableError(where + ": malformed response");
  }
  HttpResponse response;
  response.headers = raw.substr(0, header_end);
  size_t space = raw.find(' ');
  response.status = std::atoi(raw.c_str() + space + 1);
  std::string body = raw.substr(header_end + 4);
  if (HeaderHas(response.headers, "transfer-encoding", "chunked")) {
    if (!Dechunk(body, &response.body)) return UnavailableError(where + ": malformed chunked body");
  } else {
    response.body = std::move(body);
  }
  return response;
}

std::string UrlEncode(std::string_view s) { return http::PercentEncode(std::string(s)); }

namespace {

// The first port of the kernel's ephemeral range (bind to port 0 and outgoing
// connections take ports from it); 32768, the Linux default, if unreadable.
int EphemeralPortLow() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  int high = 0;
  if (in >> low >> high && low > 2048 && low <= 65535) return low;
  return 32768;
}

// True when `port` can be bound on the wildcard address, as servers bind.
bool PortBindable(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

StatusOr<int> PickFreePortRun(int count) {
  if (count < 1 || count > 64) return InvalidArgumentError("PickFreePortRun: count must be 1..64");
  // Below the ephemeral range no outgoing connection (a Gloo pair, a scrape)
  // and no bind-to-0 of a test running beside this one can take the port
  // between this check and the server's bind.
  const int high = EphemeralPortLow() - count;
  const int low = 10000;
  if (high <= low) return UnavailableError("ephemeral port range starts too low to pick under it");
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(low, high);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int first = pick(rng);
    bool all = true;
    for (int i = 0; i < count && all; ++i) all = PortBindable(first + i);
    if (all) return first;
  }
  return UnavailableError("no run of " + std::to_string(count) + " free ports in " +
                          std::to_string(low) + ".." + std::to_string(high) + " after 200 tries");
}

StatusOr<int> PickFreeLoopbackPort() { return PickFreePortRun(1); }

StatusOr<pid_t> SpawnProcess(const std::vector<std::string>& argv, const std::string& stdin_path,
                             const std::string& output_path, bool append) {
  if (argv.empty()) return InvalidArgumentError("SpawnProcess: empty argv");
  std::vector<std::string> args = argv;
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(
      &actions, STDIN_FILENO, stdin_path.empty() ? "/dev/null" : stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output_path.c_str(),
                                   O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0].c_str(), &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return UnavailableError(args[0] + ": spawn: " + std::strerror(rc));
  return pid;
}

std::string FindOnPath(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

StatusOr<std::unique_ptr<PrometheusHarness>> PrometheusHarness::Start(Options options) {
  const std::string binary = FindOnPath(options.binary);
  if (binary.empty()) {
    return FailedPreconditionError(
        "prometheus: binary \"" + options.binary +
        "\" not found on PATH; install the Debian package `prometheus` (apt-get install "
        "prometheus; scripts/test.sh installs it)");
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "skrull-prometheus-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return IoError(tmpl + ": mkdtemp: " + std::strerror(errno));
  }
  std::unique_ptr<PrometheusHarness> h(new PrometheusHarness());
  h->dir_ = tmpl;
  h->log_path_ = h->dir_ + "/prometheus.log";

  std::ostringstream config;
  // Prometheus durations are integers with a unit: "500ms", not "0.5s".
  const long interval_ms = std::max(1L, std::lround(options.scrape_interval_seconds * 1000));
  config << "# Written by tests/trainer/prometheus_harness.cc\n"
         << "global:\n"
         << "  scrape_interval: " << interval_ms << "ms\n"
         << "  scrape_timeout: " << interval_ms << "ms\n"
         << "  evaluation_interval: " << interval_ms << "ms\n";
  if (!options.rule_files.empty()) {
    config << "rule_files:\n";
    for (const auto& f : options.rule_files) config << "  - " << nlohmann::json(f).dump() << "\n";
  }
  config << "scrape_configs:\n"
         << "  - job_name: skrull-trainers\n"
         << "    honor_labels: true\n"
         << "    static_configs:\n"
         << "      - targets: [";
  for (size_t i = 0; i < options.targets.size(); ++i) {
    config << (i ? ", " : "") << nlohmann::json(options.targets[i]).dump();
  }
  config << "]\n";
  const std::string config_path = h->dir_ + "/prometheus.yml";
  SKRULL_RETURN_IF_ERROR(WriteFileAtomically(config_path, config.str()));

  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options.start_timeout_seconds));
  // The port is picked before Prometheus binds it; retry if someone took it.
  for (int attempt = 0; attempt < 3; ++attempt) {
    SKRULL_ASSIGN_OR_RETURN(h->port_, PickFreeLoopbackPort());
    std::vector<std::string> args = {
        binary,
        "--config.file=" + config_path,
        "--storage.tsdb.path=" + h->dir_ + "/data",
        "--web.listen-address=127.0.0.1:" + std::to_string(h->port_),
        "--log.level=info",
    };
    StatusOr<pid_t> pid = SpawnProcess(args, "", h->log_path_, /*append=*/true);
    if (!pid.ok()) return UnavailableError("prometheus: " + pid.status().message());
    h->pid_ = *pid;

    bool exited = false;
    while (SecondsLeft(deadline) > 0) {
      int wstatus = 0;
      if (::waitpid(h->pid_, &wstatus, WNOHANG) == h->pid_) {
        h->pid_ = -1;
        exited = true;
        break;
      }
      StatusOr<HttpResponse> r = HttpGet("127.0.0.1", h->port_, "/-/ready", 2);
      if (r.ok() && r->status == 200) return h;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!exited) {
      h->Stop();
      return UnavailableError("prometheus: not ready on 127.0.0.1:" + std::to_string(h->port_) +
                              " within " + std::to_string(options.start_timeout_seconds) +
                              " s; log tail:\n" + h->LogTail());
    }
    if (h->LogTail().find("address already in use") == std::string::npos) break;
  }
  return UnavailableError("prometheus: exited during start-up; log tail:\n" + h->LogTail());
}

PrometheusHarness::~PrometheusHarness() {
  Stop();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

void PrometheusHarness::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    int wstatus = 0;
    if (::waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  int wstatus = 0;
  ::waitpid(pid_, &wstatus, 0);
  pid_ = -1;
}

StatusOr<nlohmann::json> PrometheusHarness::Query(const std::string& promql,
                                                  double time_unix_seconds) {
  std::ostringstream target;
  target.precision(17);
  target << "/api/v1/query?query=" << UrlEncode(promql);
  if (time_unix_seconds > 0) target << "&time=" << time_unix_seconds;
  SKRULL_ASSIGN_OR_RETURN(HttpResponse r, HttpGet("127.0.0.1", port_, target.str(), 10));
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return UnavailableError("prometheus query " + promql + ": HTTP " + std::to_string(r.status) +
                            " with a body that is not JSON: " + r.body.substr(0, 300));
  }
  if (j.value("status", "") != "success") {
    return InvalidArgumentError("prometheus query " + promql + ": " + j.value("errorType", "?") +
                                ": " + j.value("error", "?"));
  }
  return j["data"];
}

StatusOr<nlohmann::json> PrometheusHarness::QueryRange(const std::string& promql,
                                                       double start_unix_seconds,
                                                       double end_unix_seconds,
                                                       double step_seconds) {
  std::ostringstream target;
  target.precision(17);
  target << "/api/v1/query_range?query=" << UrlEncode(promql) << "&start=" << start_unix_seconds
         << "&end=" << end_unix_seconds << "&step=" << step_seconds;
  SKRULL_ASSIGN_OR_RETURN(HttpResponse r, HttpGet("127.0.0.1", port_, target.str(), 30));
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return UnavailableError("prometheus range query " + promql + ": HTTP " +
                            std::to_string(r.status) +
                            " with a body that is not JSON: " + r.body.substr(0, 300));
  }
  if (j.value("status", "") != "success") {
    return InvalidArgumentError("prometheus range query " + promql + ": " +
                                j.value("errorType", "?") + ": " + j.value("error", "?"));
  }
  return j["data"];
}

StatusOr<nlohmann::json> PrometheusHarness::QueryUntilNonEmpty(const std::string& promql,
                                                               double timeout_seconds) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_seconds));
  while (true) {
    SKRULL_ASSIGN_OR_RETURN(nlohmann::json data, Query(promql));
    const nlohmann::json& result = data["result"];
    bool non_empty = result.is_array() ? !result.empty() : !result.is_null();
    if (non_empty || SecondsLeft(deadline) <= 0) return data;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

std::string PrometheusHarness::LogTail(size_t max_bytes) const {
  StatusOr<std::string> log = ReadFileToString(log_path_);
  if (!log.ok()) return "(no log: " + log.status().ToString() + ")";
  return log->size() > max_bytes ? log->substr(log->size() - max_bytes) : *log;
}

}  // namespace skrull::testing

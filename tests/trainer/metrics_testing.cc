#include "tests/trainer/metrics_testing.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/file_util.h"
#include "tests/trainer/prometheus_harness.h"

namespace skrull::testing {

metrics::MetricsOptions TestMetricsOptions() {
  metrics::MetricsOptions o;
  o.job = "test-job";
  o.rank = 3;
  o.dp_rank = 1;
  o.cp_rank = 1;
  o.node = "node-a";
  o.policy = "skrull";
  o.dp = 2;
  o.cp = 2;
  o.now_unix_seconds = [] { return 1.7e9; };
  return o;
}

metrics::StepRecord TestStepRecord(int64_t step) {
  metrics::StepRecord r;
  r.step = step;
  r.loss = 2.5;
  r.tokens = 1000;
  r.padding_tokens = 24;
  r.model_flops = 3e12;
  r.hardware_flops = 4e12;
  r.step_seconds = 0.3;
  r.scheduler_seconds = 0.002;
  r.phase_seconds = {0.2, 0.05, 0.03, 0.02};
  r.rank_tokens_peak = 700;
  r.bucket_size_tokens = 800;
  r.memory_peak_bytes = 5ull << 30;
  r.memory_peak_allocated_bytes = 4ull << 30;
  r.memory_capacity_bytes = 80ull << 30;
  r.rollbacks = {1, 2};
  r.local_sequences = 7;
  r.distributed_sequences = 2;
  r.micro_batches = 4;
  r.peak_flops_per_second = 989e12;
  return r;
}

StatusOr<std::vector<Sample>> ParseExposition(const std::string& text) {
  std::vector<Sample> samples;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    auto bad = [&](const std::string& why) {
      return InvalidArgumentError("exposition line " + std::to_string(line_no) + ": " + why + ": " +
                                  line);
    };
    Sample s;
    size_t i = line.find_first_of("{ ");
    if (i == std::string::npos) return bad("no value");
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
          return bad("bad label");
        }
        std::string name = line.substr(i, eq - i);
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        if (j >= line.size()) return bad("unterminated label value");
        s.labels[name] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return bad("unterminated label set");
      ++i;  // '}'
    }
    std::string value = line.substr(i);
    while (!value.empty() && value[0] == ' ') value.erase(0, 1);
    value = value.substr(0, value.find(' '));  // drop a timestamp
    if (value == "Nan" || value == "NaN") {
      s.value = std::nan("");
    } else {
      char* parse_end = nullptr;
      s.value = std::strtod(value.c_str(), &parse_end);
      if (value.empty() || *parse_end != '\0') return bad("bad value");
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

StatusOr<double> SampleValue(const std::vector<Sample>& samples, const std::string& name,
                             const std::map<std::string, std::string>& labels) {
  const Sample* found = nullptr;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) match = false;
    }
    if (!match) continue;
    if (found != nullptr) return FailedPreconditionError(name + ": several samples match");
    found = &s;
  }
  if (found == nullptr) return NotFoundError(name + ": no sample with the given labels");
  return found->value;
}

std::string SourcePath(const std::string& path) {
  const char* root = std::getenv("SKRULL_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/" + path;
}

StatusOr<std::string> FindPromtool() {
  std::string path = FindOnPath("promtool");
  if (path.empty()) {
    return FailedPreconditionError(
        "promtool not found on PATH: install the Debian package `prometheus` (apt-get install "
        "prometheus; scripts/test.sh installs it)");
  }
  return path;
}

StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                   const std::string& stdin_path) {
  if (argv.empty()) return InvalidArgumentError("RunProcess: empty argv");
  std::string binary = FindOnPath(argv[0]);
  if (binary.empty()) return FailedPreconditionError(argv[0] + ": not found on PATH");
  std::string out_tmpl = (std::filesystem::temp_directory_path() / "skrull-run-XXXXXX").string();
  int out_fd = ::mkstemp(out_tmpl.data());
  if (out_fd < 0) return IoError(out_tmpl + ": mkstemp: " + std::strerror(errno));
  ::close(out_fd);

  std::vector<std::string> args = argv;
  args[0] = binary;
  StatusOr<pid_t> spawned = SpawnProcess(args, stdin_path, out_tmpl);
  if (!spawned.ok()) {
    ::unlink(out_tmpl.c_str());
    return spawned.status();
  }
  const pid_t pid = *spawned;
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  ProcessResult result;
  result.exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  StatusOr<std::string> output = ReadFileToString(out_tmpl);
  ::unlink(out_tmpl.c_str());
  if (output.ok()) result.output = *output;
  return result;
}

FakeHttpServer::FakeHttpServer(int status, int delay_ms) : status_(status), delay_ms_(delay_ms) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  SKRULL_CHECK(listen_fd_ >= 0) << std::strerror(errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  SKRULL_CHECK(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0)
      << std::strerror(errno);
  SKRULL_CHECK(::listen(listen_fd_, 16) == 0) << std::strerror(errno);
  SKRULL_CHECK(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

FakeHttpServer::~FakeHttpServer() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

std::vector<FakeHttpServer::Request> FakeHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void FakeHttpServer::Serve() {
  while (!stop_) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 50) != 1) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Handle(fd);
    ::close(fd);
  }
}

void FakeHttpServer::Handle(int fd) {
  // Bounded: a request must arrive within 5 s.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::string raw;
  auto read_more = [&]() {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 100) != 1) return std::chrono::steady_clock::now() < deadline;
    char buf[8192];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    raw.append(buf, static_cast<size_t>(n));
    return true;
  };
  while (raw.find("\r\n\r\n") == std::string::npos) {
    if (!read_more()) return;
  }
  size_t header_end = raw.find("\r\n\r\n");
  Request req;
  req.headers = raw.substr(0, header_end);
  size_t sp1 = req.headers.find(' ');
  size_t sp2 = req.headers.find(' ', sp1 + 1);
  req.method = req.headers.substr(0, sp1);
  req.target = req.headers.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string lower = req.headers;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t content_length = 0;
  size_t cl = lower.find("content-length:");
  if (cl != std::string::npos) content_length = std::strtoul(lower.c_str() + cl + 15, nullptr, 10);
  if (lower.find("expect: 100-continue") != std::string::npos) {
    const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
    ::send(fd, kContinue, sizeof(kContinue) - 1, MSG_NOSIGNAL);
  }
  while (raw.size() < header_end + 4 + content_length) {
    if (!read_more()) break;
  }
  req.body = raw.substr(header_end + 4);
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(req);
  }
  if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
  std::string response = "HTTP/1.1 " + std::to_string(status_) +
                         " Fake\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  ::send(fd, response.data(), response.size(), MSG_NOSIGNAL);
}

}  // namespace skrull::testing

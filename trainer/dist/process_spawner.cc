#include "trainer/dist/process_spawner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

namespace skrull::dist {

std::string ProcessExit::Describe() const {
  if (signal != 0) {
    const char* name = strsignal(signal);
    return "signal " + std::to_string(signal) + " (" + (name ? name : "?") + ")";
  }
  return "exit code " + std::to_string(exit_code);
}

// ---------------------------------------------------------------------------
// PosixProcessSpawner

struct PosixProcessSpawner::Child {
  pid_t pid = -1;
  bool reaped = false;
  int read_fd = -1;  // pipe from the child's stdout/stderr; -1 when inherited
  int log_fd = -1;
  std::string echo_prefix;
  std::thread reader;
  std::atomic<bool> stop{false};
  std::atomic<bool> drained{false};

  void ReadLoop() {
    std::string pending;  // echo: the unfinished last line
    char buf[8192];
    for (;;) {
      pollfd pfd{read_fd, POLLIN, 0};
      int r = poll(&pfd, 1, 50);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) {
        if (stop.load()) break;
        continue;
      }
      ssize_t n = read(read_fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // EOF: every writer closed the pipe
      if (log_fd >= 0) WriteAll(log_fd, buf, static_cast<size_t>(n));
      if (!echo_prefix.empty()) {
        pending.append(buf, static_cast<size_t>(n));
        size_t start = 0;
        for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
          std::string line = echo_prefix + pending.substr(start, nl + 1 - start);
          WriteAll(STDERR_FILENO, line.data(), line.size());
        }
        pending.erase(0, start);
      }
    }
    if (!pending.empty()) {
      std::string line = echo_prefix + pending + "\n";
      WriteAll(STDERR_FILENO, line.data(), line.size());
    }
    drained.store(true);
  }

  static void WriteAll(int fd, const char* data, size_t size) {
    while (size > 0) {
      ssize_t w = write(fd, data, size);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;
      data += w;
      size -= static_cast<size_t>(w);
    }
  }

  void StopReader(std::chrono::milliseconds grace) {
    if (!reader.joinable()) return;
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (!drained.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    stop.store(true);
    reader.join();
    if (read_fd >= 0) close(read_fd);
    if (log_fd >= 0) close(log_fd);
    read_fd = log_fd = -1;
  }
};

PosixProcessSpawner::PosixProcessSpawner() = default;

PosixProcessSpawner::~PosixProcessSpawner() {
  for (auto& c : children_) {
    if (!c->reaped) {
      kill(-c->pid, SIGKILL);
      kill(c->pid, SIGKILL);
      int status = 0;
      while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR) {
      }
      c->reaped = true;
    }
    c->StopReader(std::chrono::milliseconds(200));
  }
}

StatusOr<Pid> PosixProcessSpawner::Spawn(const SpawnRequest& request) {
  if (request.argv.empty()) return InvalidArgumentError("Spawn: empty argv");
  auto child = std::make_unique<Child>();
  child->echo_prefix = request.echo_prefix;
  const bool capture = !request.log_path.empty() || !request.echo_prefix.empty();
  if (!request.log_path.empty()) {
    std::error_code ec;
    auto parent = std::filesystem::path(request.log_path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    const int mode = request.truncate_log ? O_TRUNC : O_APPEND;
    child->log_fd = open(request.log_path.c_str(), O_WRONLY | O_CREAT | mode | O_CLOEXEC, 0644);
    if (child->log_fd < 0) {
      return IoError("cannot open worker log " + request.log_path + ": " + std::strerror(errno));
    }
  }
  int pipe_fds[2] = {-1, -1};
  if (capture && pipe2(pipe_fds, O_CLOEXEC) != 0) {
    if (child->log_fd >= 0) close(child->log_fd);
    return IoError(std::string("pipe2 failed: ") + std::strerror(errno));
  }

  // Everything the child needs is built before fork: no allocation after it.
  std::vector<std::string> env_strings;
  env_strings.reserve(request.env.size());
  for (const auto& [k, v] : request.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = request.argv;
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const bool has_slash = request.argv[0].find('/') != std::string::npos;
  const std::string exec_error = "skrull launcher: cannot exec " + request.argv[0] + "\n";
  const pid_t spawner_pid = getpid();

  pid_t pid = fork();
  if (pid < 0) {
    if (capture) {
      close(pipe_fds[0]);
      close(pipe_fds[1]);
    }
    if (child->log_fd >= 0) close(child->log_fd);
    return IoError(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Die with the spawner. The parent may have died between fork and prctl
    // (then no signal comes and the child was reparented): check after.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != spawner_pid) raise(SIGKILL);
    setpgid(0, 0);
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, nullptr);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    if (capture) {
      dup2(pipe_fds[1], STDOUT_FILENO);
      dup2(pipe_fds[1], STDERR_FILENO);
    }
    if (has_slash) {
      execve(argv[0], argv.data(), envp.data());
    } else {
      execvpe(argv[0], argv.data(), envp.data());
    }
    ssize_t ignored = write(STDERR_FILENO, exec_error.data(), exec_error.size());
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid);  // also in the parent, so Signal() never races the child's setpgid
  child->pid = pid;
  if (capture) {
    close(pipe_fds[1]);
    child->read_fd = pipe_fds[0];
    Child* raw = child.get();
    child->reader = std::thread([raw] { raw->ReadLoop(); });
  }
  children_.push_back(std::move(child));
  return static_cast<Pid>(pid);
}

std::optional<ProcessExit> PosixProcessSpawner::WaitAny(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    bool any_running = false;
    for (auto& c : children_) {
      if (c->reaped) continue;
      any_running = true;
      int status = 0;
      pid_t r = waitpid(c->pid, &status, WNOHANG);
      if (r == c->pid) {
        c->reaped = true;
        ProcessExit exit;
        exit.pid = c->pid;
        if (WIFSIGNALED(status)) {
          exit.signal = WTERMSIG(status);
        } else if (WIFEXITED(status)) {
          exit.exit_code = WEXITSTATUS(status);
        }
        // Let the reader drain what the process wrote before it ended, so
        // the log tail is complete when the launcher reads it.
        c->StopReader(std::chrono::milliseconds(1000));
        return exit;
      }
    }
    if (!any_running || std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void PosixProcessSpawner::Signal(Pid pid, int signal) {
  for (auto& c : children_) {
    if (c->pid != static_cast<pid_t>(pid) || c->reaped) continue;
    if (kill(-c->pid, signal) != 0) kill(c->pid, signal);
  }
}

// ---------------------------------------------------------------------------
// FakeProcessSpawner

FakeProcessSpawner::FakeProcessSpawner(std::map<int, Script> scripts, Script default_script)
    : scripts_(std::move(scripts)), default_script_(std::move(default_script)) {}

StatusOr<Pid> FakeProcessSpawner::Spawn(const SpawnRequest& request) {
  if (request.argv.empty()) return InvalidArgumentError("Spawn: empty argv");
  const int index = static_cast<int>(procs_.size());
  Proc p;
  auto it = scripts_.find(index);
  p.script = it != scripts_.end() ? it->second : default_script_;
  p.started = std::chrono::steady_clock::now();
  procs_.push_back(std::move(p));
  requests_.push_back(request);
  return static_cast<Pid>(1000 + index);
}

std::optional<ProcessExit> FakeProcessSpawner::WaitAny(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    bool any_running = false;
    for (size_t i = 0; i < procs_.size(); ++i) {
      Proc& p = procs_[i];
      if (p.reported) continue;
      if (!p.exit && p.script.exits_after && now - p.started >= *p.script.exits_after) {
        ProcessExit e;
        e.pid = static_cast<Pid>(1000 + i);
        e.exit_code = p.script.exit_code;
        p.exit = e;
      }
      if (p.exit) {
        p.reported = true;
        return p.exit;
      }
      any_running = true;
    }
    if (!any_running || now >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void FakeProcessSpawner::Signal(Pid pid, int signal) {
  const auto index = static_cast<size_t>(pid - 1000);
  if (index >= procs_.size()) return;
  Proc& p = procs_[index];
  if (p.exit) return;
  signals_.emplace_back(static_cast<int>(index), signal);
  for (int s : p.script.dies_on) {
    if (s == signal) {
      ProcessExit e;
      e.pid = pid;
      e.signal = signal;
      p.exit = e;
      return;
    }
  }
}

}  // namespace skrull::dist

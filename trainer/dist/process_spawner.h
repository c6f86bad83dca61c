// ProcessSpawner: the launcher's seam for starting, watching and signalling
// worker processes. PosixProcessSpawner uses fork/exec; FakeProcessSpawner
// (in-memory, scripted) ships with the library for tests.
//
// Workers die with their spawner's process: a PosixProcessSpawner child gets
// SIGKILL when the thread that spawned it ends (PR_SET_PDEATHSIG), including
// by `kill -9` of the launcher, so no rank is left training with nobody
// watching it (holding its ports, writing checkpoints, its output going
// nowhere). Spawn from a thread that lives as long as its children (the
// launcher's main loop).
//
// Thread safety: an instance is used by one thread (the launcher loop).
#ifndef SKRULL_TRAINER_DIST_PROCESS_SPAWNER_H_
#define SKRULL_TRAINER_DIST_PROCESS_SPAWNER_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace skrull::dist {

using Pid = int64_t;

struct SpawnRequest {
  std::vector<std::string> argv;           // argv[0] is the program (a path or a name on PATH)
  std::map<std::string, std::string> env;  // the child's complete environment
  std::string log_path;                    // stdout and stderr go here ("" = inherit)
  // false: output is appended to log_path; true: log_path starts empty, so it
  // holds this process's output only (a run's own log).
  bool truncate_log = false;
  // When non-empty, every output line is also written to this process's
  // stderr with this prefix ("[rank 1] ").
  std::string echo_prefix;
};

// How a process ended: exit_code when it exited, signal when a signal killed it.
struct ProcessExit {
  Pid pid = 0;
  int exit_code = 0;
  int signal = 0;
  bool success() const { return exit_code == 0 && signal == 0; }
  // "exit code 3" or "signal 9 (Killed)".
  std::string Describe() const;
  // Shell convention: exit_code, or 128 + signal.
  int ShellCode() const { return signal != 0 ? 128 + signal : exit_code; }
};

class ProcessSpawner {
 public:
  virtual ~ProcessSpawner() = default;
  // Starts a process in its own process group. Errors name argv[0].
  virtual StatusOr<Pid> Spawn(const SpawnRequest& request) = 0;
  // Waits up to `timeout` for one of the spawned, not yet reported processes
  // to end; reports each process exactly once. nullopt on timeout or when
  // nothing is running.
  virtual std::optional<ProcessExit> WaitAny(std::chrono::milliseconds timeout) = 0;
  // Sends `signal` to the process's group (the worker and its children).
  // A no-op for processes that already ended.
  virtual void Signal(Pid pid, int signal) = 0;
};

// fork/exec. Output goes through a pipe to the log file (and the echo) so a
// tail can be shown when a rank fails. Children are killed (SIGKILL) when the
// spawner is destroyed while they still run, and by the kernel when the
// spawning thread ends (PR_SET_PDEATHSIG; a child whose parent is already
// gone when it sets that kills itself before exec).
class PosixProcessSpawner : public ProcessSpawner {
 public:
  PosixProcessSpawner();
  ~PosixProcessSpawner() override;
  PosixProcessSpawner(const PosixProcessSpawner&) = delete;
  PosixProcessSpawner& operator=(const PosixProcessSpawner&) = delete;

  StatusOr<Pid> Spawn(const SpawnRequest& request) override;
  std::optional<ProcessExit> WaitAny(std::chrono::milliseconds timeout) override;
  void Signal(Pid pid, int signal) override;

 private:
  struct Child;
  std::vector<std::unique_ptr<Child>> children_;
};

// A scripted fake. Each spawned process (in spawn order, index 0, 1, ...)
// follows its FakeProcessScript: it ends by itself `exits_after` after spawning (never
// when unset), and on a signal listed in `dies_on` it ends with that signal.
struct FakeProcessScript {
  std::optional<std::chrono::milliseconds> exits_after;  // nullopt: runs until signalled
  int exit_code = 0;
  std::vector<int> dies_on = {2, 9, 15};  // SIGINT, SIGKILL, SIGTERM
};

class FakeProcessSpawner : public ProcessSpawner {
 public:
  using Script = FakeProcessScript;

  // Scripts by spawn index; processes without one use `default_script`.
  explicit FakeProcessSpawner(std::map<int, Script> scripts = {}, Script default_script = {});

  StatusOr<Pid> Spawn(const SpawnRequest& request) override;
  std::optional<ProcessExit> WaitAny(std::chrono::milliseconds timeout) override;
  void Signal(Pid pid, int signal) override;

  // What the launcher did, for assertions.
  const std::vector<SpawnRequest>& requests() const { return requests_; }
  // (index, signal) in the order they were sent.
  const std::vector<std::pair<int, int>>& signals() const { return signals_; }

 private:
  struct Proc {
    Script script;
    std::chrono::steady_clock::time_point started;
    std::optional<ProcessExit> exit;  // set when it ended
    bool reported = false;
  };
  std::map<int, Script> scripts_;
  Script default_script_;
  std::vector<Proc> procs_;
  std::vector<SpawnRequest> requests_;
  std::vector<std::pair<int, int>> signals_;
};

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_PROCESS_SPAWNER_H_

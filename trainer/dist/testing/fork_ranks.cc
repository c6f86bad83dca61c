#include "trainer/dist/testing/fork_ranks.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <thread>
#include <vector>

#include "trainer/dist/launcher.h"

namespace skrull::dist::testing {

Status RunForkedRanks(int world_size, const std::function<int(int rank, int port)>& body,
                      std::chrono::seconds timeout) {
  SKRULL_ASSIGN_OR_RETURN(int port, PickFreePort("127.0.0.1"));
  std::cout.flush();
  std::cerr.flush();
  fflush(nullptr);
  std::vector<pid_t> pids;
  for (int r = 0; r < world_size; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      for (pid_t p : pids) kill(p, SIGKILL);
      return InternalError("fork failed");
    }
    if (pid == 0) {
      int code = 1;
      try {
        code = body(r, port);
      } catch (const std::exception& e) {
        std::cerr << "rank " << r << " threw: " << e.what() << std::endl;
        code = 3;
      }
      std::cout.flush();
      std::cerr.flush();
      fflush(nullptr);
      _exit(code);
    }
    pids.push_back(pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<int> status(world_size, -1);
  std::vector<bool> done(world_size, false);
  int remaining = world_size;
  while (remaining > 0) {
    for (int r = 0; r < world_size; ++r) {
      if (done[r]) continue;
      int st = 0;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        done[r] = true;
        status[r] = st;
        --remaining;
        // A failed rank would leave the others blocked in a collective.
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
          for (int o = 0; o < world_size; ++o) {
            if (!done[o]) kill(pids[o], SIGKILL);
          }
        }
      }
    }
    if (remaining > 0 && std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < world_size; ++r) {
        if (!done[r]) kill(pids[r], SIGKILL);
      }
      for (int r = 0; r < world_size; ++r) {
        if (!done[r]) {
          waitpid(pids[r], &status[r], 0);
          done[r] = true;
          status[r] = -2;  // timed out
        }
      }
      break;
    }
    if (remaining > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string errors;
  for (int r = 0; r < world_size; ++r) {
    const int st = status[r];
    if (st == -2) {
      errors += " rank " + std::to_string(r) + ": timed out after " +
                std::to_string(timeout.count()) + " s;";
    } else if (WIFSIGNALED(st)) {
      errors += " rank " + std::to_string(r) + ": signal " + std::to_string(WTERMSIG(st)) + ";";
    } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
      errors +=
          " rank " + std::to_string(r) + ": exit code " + std::to_string(WEXITSTATUS(st)) + ";";
    }
  }
  if (!errors.empty()) return InternalError("forked ranks failed:" + errors);
  return OkStatus();
}

Status RunForkedJobRanks(
    const std::string& job_file, int world_size, const std::string& label,
    const std::function<Status(const api::JobSpec& job, const RankEnv& env)>& body,
    std::chrono::seconds timeout, int rendezvous_timeout_seconds) {
  return RunForkedRanks(
      world_size,
      [&](int rank, int port) {
        StatusOr<api::JobSpec> job = api::LoadJobSpecFile(job_file);
        if (!job.ok()) {
          std::cerr << job.status() << "\n";
          return 2;
        }
        StatusOr<RankLayout> layout = RankLayout::Make(job->parallelism, rank);
        if (!layout.ok() || layout->world_size() != world_size) {
          std::cerr << job_file << ": " << world_size << " forked ranks: "
                    << (layout.ok() ? "spec.parallelism has another world size"
                                    : layout.status().message())
                    << "\n";
          return 2;
        }
        RankEnv env;
        env.layout = *layout;
        env.master_port = port;
        env.rendezvous_timeout_seconds = rendezvous_timeout_seconds;
        Status s = body(*job, env);
        if (!s.ok()) std::cerr << label << " rank " << rank << ": " << s << "\n";
        return s.ok() ? 0 : 1;
      },
      timeout);
}

api::ParallelismSpec Parallelism(int nodes, int procs_per_node, int dp, int cp) {
  api::ParallelismSpec p;
  p.nodes = nodes;
  p.procs_per_node = procs_per_node;
  p.data_parallel = dp;
  p.context_parallel = cp;
  return p;
}

StatusOr<RankLayout> OneNodeLayout(int rank, int dp, int cp) {
  return RankLayout::Make(Parallelism(1, dp * cp, dp, cp), rank);
}

}  // namespace skrull::dist::testing

// Test support: a dist::ProcessSpawner that plays `skrull-trainer --job FILE`
// without running anything. On Spawn it loads the job file from argv, "trains"
// procsPerNode ranks whose memory follows a known line, and writes what the
// real launcher writes into SKRULL_OUTPUT_DIR: metrics.jsonl /
// metrics-rank<r>.jsonl (the trainer's own metrics::FormatStepLine), the
// ranks' summaries and summary.json (the launcher's own dist::RunSummaryJson).
// A rank whose memory would exceed its capacity is OOM-killed at that step:
// a torn last metrics line, summary.json's failure says signal 9, and the
// process exits 137, as the launcher does.
#ifndef SKRULL_TESTS_CONTROLLER_LOCAL_SIMULATED_TRAINER_H_
#define SKRULL_TESTS_CONTROLLER_LOCAL_SIMULATED_TRAINER_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "trainer/dist/process_spawner.h"

namespace skrull::local::testing {

struct SimulatedMemory {
  double static_bytes = 10.0 * (1 << 30);
  double bytes_per_token = 2.1 * (1 << 20);
  // As the trainer does today: on CPU every rank reports the host's memory,
  // which the node's procsPerNode ranks share (160 GiB / 2 ranks = 80 GiB
  // each); on CUDA it reports 0.
  bool cpu = true;
  uint64_t reported_capacity_bytes = 160ull << 30;
  int steps = 8;
};

class SimulatedTrainerSpawner : public dist::ProcessSpawner {
 public:
  explicit SimulatedTrainerSpawner(SimulatedMemory memory = {}) : memory_(memory) {}

  StatusOr<dist::Pid> Spawn(const dist::SpawnRequest& request) override;
  std::optional<dist::ProcessExit> WaitAny(std::chrono::milliseconds timeout) override;
  void Signal(dist::Pid pid, int signal) override { signals_.emplace_back(pid, signal); }

  // The next run fails on its own (not of memory): rank 0 exits with
  // `exit_code` and `log_line` ends its log.
  void FailNextRun(int exit_code, std::string log_line) {
    fail_next_ = std::make_pair(exit_code, std::move(log_line));
  }

  const std::vector<dist::SpawnRequest>& requests() const { return requests_; }
  // The bucketSize of each run's job, in spawn order.
  const std::vector<int64_t>& bucket_sizes() const { return bucket_sizes_; }
  const std::vector<std::pair<dist::Pid, int>>& signals() const { return signals_; }

  // Tokens rank `rank` holds in step `step` under `bucket` (<= bucket).
  static int64_t TokensHeld(int64_t bucket, int64_t step, int rank);

 private:
  SimulatedMemory memory_;
  std::optional<std::pair<int, std::string>> fail_next_;
  std::vector<dist::SpawnRequest> requests_;
  std::vector<int64_t> bucket_sizes_;
  std::deque<dist::ProcessExit> pending_;
  std::vector<std::pair<dist::Pid, int>> signals_;
};

}  // namespace skrull::local::testing

#endif  // SKRULL_TESTS_CONTROLLER_LOCAL_SIMULATED_TRAINER_H_

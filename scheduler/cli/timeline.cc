#include "scheduler/cli/timeline.h"

#include <algorithm>
#include <cstdio>

#include "common/text_table.h"
#include "scheduler/layout.h"
#include "scheduler/policy.h"
#include "scheduler/simulator.h"

namespace skrull::scheduler::cli {
namespace {

std::string Ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f ms", seconds * 1e3);
  return buf;
}

// Scale s for the compute boxes so that max(comm, s*local) + s*dist equals
// the simulator's per-rank time `target` (the boxes omit launch overheads).
double FitScale(double local, double dist, double comm, double target) {
  if (target <= 0 || local + dist <= 0) return 1.0;
  double s = target / (local + dist);
  if (s * local >= comm) return s;
  if (dist > 0) return std::max(0.0, (target - comm) / dist);
  return target / local;
}

}  // namespace

Timeline BuildTimeline(const Plan& plan, const CostModel& cost, const HardwareProfile& hardware,
                       const std::string& title) {
  Timeline t;
  t.topology = plan.topology;
  t.title = title;
  const int cp = plan.topology.cp;
  const double factor = cost.HardwareFlopsFactor();
  const double linear_per_token = cost.LinearFlopsPerToken() * factor;

  int64_t sequences = 0;
  int64_t tokens = 0;
  for (size_t d = 0; d < plan.ranks.size(); ++d) {
    double clock = 0;
    for (const MicroBatch& mb : plan.ranks[d].micro_batches) {
      if (mb.empty()) continue;
      const MicroBatchTime mbt = SimulateMicroBatch(mb, cp, cost, hardware);
      t.micro_batches.push_back({static_cast<int>(d), mb.index, clock, clock + mbt.seconds});
      int distributed_count = 0;
      for (const PlacedSequence& s : mb.sequences) {
        ++sequences;
        tokens += s.length;
        if (s.distributed()) ++distributed_count;
      }
      for (int j = 0; j < cp; ++j) {
        const int64_t rank_tokens =
            j < static_cast<int>(mb.cp_rank_tokens.size()) ? mb.cp_rank_tokens[j] : 0;
        struct Box {
          const PlacedSequence* seq;
          double seconds;
        };
        std::vector<Box> local, dist;
        double local_sum = 0, dist_sum = 0;
        for (const PlacedSequence& s : mb.sequences) {
          if (s.distributed()) {
            const ShardGroup g = s.Group(cp);  // all CP ranks or a sub-group
            if (!g.Contains(j)) continue;
            const int64_t shard = ShardTokens(s.length, g.size);
            double sec =
                hardware.ComputeSeconds(linear_per_token * shard,
                                        std::max<int64_t>(1, rank_tokens)) +
                hardware.AttentionSeconds(cost.AttentionFlops(s.length) * factor / g.size, shard);
            dist.push_back({&s, sec});
            dist_sum += sec;
          } else if (s.cp_rank == j) {
            double sec =
                hardware.ComputeSeconds(linear_per_token * s.length,
                                        std::max<int64_t>(1, rank_tokens)) +
                hardware.AttentionSeconds(cost.AttentionFlops(s.length) * factor, s.length);
            local.push_back({&s, sec});
            local_sum += sec;
          }
        }
        const double target =
            j < static_cast<int>(mbt.cp_rank_seconds.size()) ? mbt.cp_rank_seconds[j] : 0.0;
        const double comm = distributed_count > 0 ? mbt.comm_seconds : 0.0;
        const double scale = FitScale(local_sum, dist_sum, comm, target);
        double x = clock;
        for (const Box& b : local) {
          const double end = x + b.seconds * scale;
          t.spans.push_back({static_cast<int>(d), j, x, end, SpanKind::kLocalCompute,
                             "#" + std::to_string(b.seq->id),
                             "seq " + std::to_string(b.seq->id) + ": " + WithCommas(b.seq->length) +
                                 " tokens, local on cp" + std::to_string(j) + ", " + Ms(end - x) +
                                 " (mb " + std::to_string(mb.index) + ")"});
          x = end;
        }
        if (comm > 0) {
          t.spans.push_back(
              {static_cast<int>(d), j, clock, clock + comm, SpanKind::kCommunication, "",
               "K/V all-gather + dK/dV reduce-scatter of " + std::to_string(distributed_count) +
                   " distributed sequence(s): " + Ms(comm) + " (mb " + std::to_string(mb.index) +
                   ")"});
        }
        x = std::max(x, clock + comm);
        for (const Box& b : dist) {
          const double end = x + b.seconds * scale;
          t.spans.push_back({static_cast<int>(d), j, x, end, SpanKind::kDistributedCompute,
                             "#" + std::to_string(b.seq->id),
                             "seq " + std::to_string(b.seq->id) + ": " + WithCommas(b.seq->length) +
                                 " tokens, distributed (shard " +
                                 WithCommas(ShardTokens(b.seq->length, b.seq->Group(cp).size)) +
                                 " tokens), " + Ms(end - x) + " on this rank (mb " +
                                 std::to_string(mb.index) + ")"});
          x = end;
        }
      }
      clock += mbt.seconds;
    }
  }

  const IterationTime it = SimulatePlan(plan, cost, hardware);
  double slowest = 0;
  for (double s : it.dp_rank_seconds) slowest = std::max(slowest, s);
  t.end_seconds = it.seconds;
  if (it.seconds > slowest) {
    for (int d = 0; d < plan.topology.dp; ++d) {
      for (int j = 0; j < cp; ++j) {
        t.spans.push_back({d, j, slowest, it.seconds, SpanKind::kGradientSync,
                           j == 0 ? "gradient all-reduce " + Ms(it.seconds - slowest) : "",
                           "gradient all-reduce over " + std::to_string(plan.topology.WorldSize()) +
                               " ranks: " + Ms(it.all_reduce_seconds) + ", of which " +
                               Ms(it.seconds - slowest) +
                               " not hidden by the last micro-batch's backward"});
      }
    }
  }
  t.subtitle = "DP=" + std::to_string(plan.topology.dp) + " x CP=" + std::to_string(cp) +
               " | BucketSize " + WithCommas(plan.bucket_size_tokens) + " tokens | " +
               WithCommas(sequences) + " sequences, " + WithCommas(tokens) + " tokens | " +
               std::to_string(plan.NumMicroBatches()) +
               (plan.NumMicroBatches() == 1 ? " micro-batch" : " micro-batches") +
               "/DP rank | roll-backs dacp " + std::to_string(plan.rollbacks.dacp) + ", gds " +
               std::to_string(plan.rollbacks.gds) + "\nsimulated iteration " + Ms(it.seconds) +
               " = slowest DP rank " + Ms(slowest) + " + exposed gradient all-reduce " +
               Ms(it.seconds - slowest) + " of " + Ms(it.all_reduce_seconds) + " (hardware " +
               hardware.name + ")";
  return t;
}

}  // namespace skrull::scheduler::cli

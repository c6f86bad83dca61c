#include "trainer/dist/distributed_trainer.h"

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "trainer/model/attention.h"

namespace skrull::dist {

std::string RankCommPath(const std::string& output_dir, int rank) {
  return output_dir + "/ranks/rank-" + std::to_string(rank) + "/comm.json";
}

std::string CommTotalsJson(const CommTotals& t) {
  nlohmann::json j;
  j["cp"] = {{"attend_calls", t.cp.attend_calls},
             {"distributed_calls", t.cp.distributed_calls},
             {"allgathers", t.cp.allgathers},
             {"reduce_scatters", t.cp.reduce_scatters},
             {"bytes_allgathered", t.cp.bytes_allgathered},
             {"bytes_reduce_scattered", t.cp.bytes_reduce_scattered},
             {"padding_tokens", t.cp.padding_tokens},
             {"comm_wait_seconds", t.cp.comm_wait_seconds},
             {"local_attention_seconds", t.cp.local_attention_seconds},
             {"distributed_attention_seconds", t.cp.distributed_attention_seconds}};
  j["dp"] = {{"wait_seconds", t.dp.wait_seconds},
             {"gradient_allreduces", t.dp.gradient_allreduces},
             {"buckets", t.dp.buckets},
             {"bytes", t.dp.bytes},
             {"scalar_allreduces", t.dp.scalar_allreduces},
             {"buckets_during_backward", t.dp.buckets_during_backward}};
  return j.dump(2) + "\n";
}

StatusOr<train::TrainSummary> RunDistributedTrainer(const api::JobSpec& job, const RankEnv& env,
                                                    DistributedRunOptions options,
                                                    CommTotals* totals) {
  const RankLayout& layout = env.layout;
  const RendezvousOptions ro =
      RendezvousOptionsFor(env, TrainingBackend(job, options.trainer.device));
  SKRULL_ASSIGN_OR_RETURN(std::unique_ptr<ProcessGroups> groups, ProcessGroups::Create(layout, ro));

  options.collectives.gradient_wire_dtype = GradientWireDtype(job.training.grad_reduce_dtype);
  C10dCollectives collectives(&groups->world(), options.collectives);
  std::shared_ptr<CpAttentionStats> cp_stats;
  CpGroupSet cp_groups{&groups->cp(), {}};
  for (Group& g : groups->cp_sub_groups()) cp_groups.sub_groups.push_back(&g);
  const CpAttentionOptions cp_options = options.cp_attention;
  options.trainer.cp_attention =
      [cp_groups, cp_options, &cp_stats](
          c10::Device device) -> StatusOr<std::unique_ptr<train::ContextParallelAttention>> {
    auto backend = std::make_unique<CpAttentionBackend>(
        cp_groups, model::MakeDefaultAttention(device), cp_options);
    cp_stats = backend->SharedStats();
    return std::unique_ptr<train::ContextParallelAttention>(std::move(backend));
  };
  const std::string output_dir = env.output_dir.empty() ? api::OutputDirOf(job) : env.output_dir;
  if (options.trainer.summary_path.empty()) {
    options.trainer.summary_path = RankSummaryPath(output_dir, layout.rank());
  }
  api::JobSpec rank_job = job;
  rank_job.training.output_dir = output_dir;

  StatusOr<train::TrainSummary> summary =
      train::RunTrainer(rank_job, layout, &collectives, options.trainer);
  CommTotals t;
  if (cp_stats) t.cp = *cp_stats;
  t.dp = collectives.TakeStats();
  if (totals != nullptr) *totals = t;
  if (summary.ok()) {
    Status s = WriteFileAtomically(RankCommPath(output_dir, layout.rank()), CommTotalsJson(t));
    if (!s.ok()) return s;
    // Leave together: a rank that tears its groups down early can fail a
    // peer's last collective.
    SKRULL_RETURN_IF_ERROR(collectives.Barrier());
  }
  return summary;
}

}  // namespace skrull::dist

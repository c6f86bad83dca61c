#include "trainer/dist/distributed_trainer.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "trainer/dist/failure_record.h"
#include "trainer/model/attention.h"
#include "trainer/model/torch_compat.h"

namespace skrull::dist {
namespace {

// Writes this rank's failure record and returns `status`. Called before the
// process groups go (when RunDistributedTrainer returns), so a peer that
// fails because they went records a later time than this rank.
Status RecordFailure(const std::string& output_dir, const RankEnv& env, Status status) {
  Status written =
      WriteFailureRecord(output_dir, MakeFailureRecord(env.layout.rank(), env.run_id, status));
  if (!written.ok()) {
    std::cerr << "skrull-trainer: rank " << env.layout.rank()
              << ": cannot write the failure record: " << written.message() << std::endl;
  }
  return status;
}

}  // namespace

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
  const std::string output_dir = env.output_dir.empty() ? api::OutputDirOf(job) : env.output_dir;
  // The trainer picks the same device from the same inputs (train/trainer.cc).
  StatusOr<RankDevice> device =
      ChooseRankDevice(options.trainer.device, job.resources.gpus_per_proc, layout.local_rank(),
                       layout.procs_per_node(), model::compat::CudaDeviceCount());
  if (!device.ok()) return RecordFailure(output_dir, env, device.status());
  RendezvousOptions ro = RendezvousOptionsFor(env, TrainingBackend(*device), job);
  ro.cuda_device = device->index;
  StatusOr<std::unique_ptr<ProcessGroups>> created = ProcessGroups::Create(layout, ro);
  if (!created.ok()) return RecordFailure(output_dir, env, created.status());
  std::unique_ptr<ProcessGroups> groups = std::move(created).value();

  options.collectives.gradient_wire_dtype = GradientWireDtype(job.training.grad_reduce_dtype);
  C10dCollectives collectives(&groups->world(), options.collectives, &groups->store());
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
  if (!summary.ok()) return RecordFailure(output_dir, env, summary.status());
  Status s = WriteFileAtomically(RankCommPath(output_dir, layout.rank()), CommTotalsJson(t));
  // Leave together: a rank that tears its groups down early can fail a
  // peer's last collective.
  if (s.ok()) s = collectives.Barrier();
  if (!s.ok()) return RecordFailure(output_dir, env, s);
  return summary;
}

}  // namespace skrull::dist

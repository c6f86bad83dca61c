// One rank of a multi-process job: rendezvous, process groups,
// C10dCollectives, context-parallel attention, then the training loop
// (train::RunTrainer) with them.
//
// Besides the trainer's summary (RankSummaryPath), every rank writes
// <outputDir>/ranks/rank-<r>/comm.json with its communication accounting
// for the run: CP exchange wait, DP all-reduce wait, bytes and padding. A rank
// that fails writes its failure record (failure_record.h) before it tears its
// process groups down.
#ifndef SKRULL_TRAINER_DIST_DISTRIBUTED_TRAINER_H_
#define SKRULL_TRAINER_DIST_DISTRIBUTED_TRAINER_H_

#include <chrono>
#include <string>

#include "api/job_spec.h"
#include "common/status.h"
#include "trainer/dist/c10d_collectives.h"
#include "trainer/dist/cp_attention.h"
#include "trainer/dist/launcher.h"
#include "trainer/train/trainer.h"

namespace skrull::dist {

struct DistributedRunOptions {
  // Passed to RunTrainer; summary_path defaults to RankSummaryPath(outputDir, rank)
  // and cp_attention is supplied here.
  train::TrainerOptions trainer;
  CpAttentionOptions cp_attention;
  // gradient_wire_dtype is taken from spec.training.gradReduceDtype.
  C10dCollectivesOptions collectives;
};

// Totals of one rank's communication over a run.
struct CommTotals {
  CpAttentionStats cp;
  DpCommStats dp;
};

std::string CommTotalsJson(const CommTotals& totals);
std::string RankCommPath(const std::string& output_dir, int rank);

// Trains the rank env.layout places in `job`. REQUIRES: env comes from
// ParseRankEnv(..., job.parallelism) (or its layout from RankLayout::Make
// with job.parallelism). Errors: Unavailable when rendezvous or a collective
// fails (naming the address or the operation).
StatusOr<train::TrainSummary> RunDistributedTrainer(const api::JobSpec& job, const RankEnv& env,
                                                    DistributedRunOptions options,
                                                    CommTotals* totals = nullptr);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_DISTRIBUTED_TRAINER_H_

// The launcher's <outputDir>/summary.json: how every rank ended plus the
// ranks' own summaries (RankSummaryPath) and numeric aggregates over them.
//
//   {"job", "ok", "world_size", "nnodes", "node_rank", "procs_per_node",
//    "wall_seconds", "interrupted_by_signal",
//    "failure": null | {"rank", "exit_code", "signal", "description", "log", "log_tail"},
//    "ranks": [{"rank", "local_rank", "exit_code", "signal", "stopped_by_launcher",
//               "log", "summary": <the rank's JSON> | null}],
//    "aggregate": {"<dotted numeric field>": {"min", "max", "mean", "sum", "count"}}}
#ifndef SKRULL_TRAINER_DIST_RUN_SUMMARY_H_
#define SKRULL_TRAINER_DIST_RUN_SUMMARY_H_

#include <string>

#include "common/status.h"
#include "trainer/dist/launcher.h"

namespace skrull::dist {

// Builds the JSON text (exposed for tests).
std::string RunSummaryJson(const LaunchOptions& options, const LaunchResult& result,
                           int world_size);

// Writes RunSummaryJson atomically to `path`.
Status WriteRunSummary(const std::string& path, const LaunchOptions& options,
                       const LaunchResult& result, int world_size);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_RUN_SUMMARY_H_

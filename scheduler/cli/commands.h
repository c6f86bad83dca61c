// The `skrull-plan` commands as a library, so tests can run them in-process.
#ifndef SKRULL_SCHEDULER_CLI_COMMANDS_H_
#define SKRULL_SCHEDULER_CLI_COMMANDS_H_

#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/cli/flags.h"
#include "scheduler/cost_model.h"
#include "scheduler/hardware_profile.h"

namespace skrull::scheduler::cli {

// Exit codes of RunCli.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;  // a bug surfaced (e.g. a plan failed VerifyPlan)
inline constexpr int kExitUsage = 2;     // bad flags, bad or missing input files

// Runs `skrull-plan` on argv[1..]. Results go to `out`, errors (prefixed
// "skrull-plan: ") and warnings to `err`. Returns the process exit code.
int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// --model: a preset name, or a Hugging Face config.json path (a value ending
// in ".json" or naming an existing file).
StatusOr<ModelConfig> LoadModelConfig(const std::string& model_flag);
// LoadModelConfig's model with CostModel options ZeRO-2 over all dp x cp
// ranks (memory figures only; timing does not depend on them).
StatusOr<CostModel> LoadCostModel(const std::string& model_flag, const Topology& topology);
// --hardware: empty = H100Profile(), else a profile JSON file.
StatusOr<HardwareProfile> LoadHardwareProfile(const std::string& path);

// The commands themselves. `out` receives the json/text output; an SVG is
// written when flags.common.svg_path is set.
Status RunSchedule(const ScheduleFlags& flags, std::ostream& out);
Status RunSimulate(const SimulateFlags& flags, std::ostream& out);
// `bucket` (bucket.cc): prints the report; FailedPrecondition (exit 2) when
// the static memory alone fills the budget, naming the ZeRO stage that fits.
Status RunBucket(const BucketFlags& flags, std::ostream& out);

}  // namespace skrull::scheduler::cli

#endif  // SKRULL_SCHEDULER_CLI_COMMANDS_H_

#include "trainer/train/trainer_cli.h"

#include <filesystem>
#include <limits>

#include <CLI/CLI.hpp>

namespace skrull::train {

namespace {

constexpr char kFooter[] =
    "With procsPerNode > 1 it launches the node's ranks; each rank runs with\n"
    "SKRULL_RANK set. Exit codes: 0 ok, 2 bad input, 1 other failure.";

const CLI::Validator& AtLeastOne() {
  // No description, so messages and --help show the type as "N", not the range.
  static const CLI::Validator range =
      CLI::Range(int64_t{1}, std::numeric_limits<int64_t>::max()).description("");
  return range;
}

}  // namespace

void AddTrainerFlags(CLI::App* app, TrainerFlags* flags) {
  app->add_option("--job", flags->job_file, "SkrullJob YAML")->required()->type_name("FILE");
  app->add_option_function<int64_t>(
         "--steps", [flags](const int64_t& steps) { flags->steps = steps; },
         "override spec.training.steps (>= 1)")
      ->check(AtLeastOne())
      ->type_name("N");
  app->add_option("--output-dir", flags->output_dir, "override spec.training.outputDir")
      ->check([](const std::string& dir) { return dir.empty() ? "must not be empty" : ""; })
      ->type_name("DIR");
  app->add_option("--device", flags->device, "auto (default) | cpu | cuda | cuda:N")
      ->type_name("D");
  app->add_option("--stop-after-steps", flags->stop_after_steps,
                  "stop after N >= 1 steps of this run with a checkpoint (resume with "
                  "spec.training.resumeFrom: latest)")
      ->check(AtLeastOne())
      ->type_name("N");
  app->add_flag_callback(
      "--no-metrics-server", [flags] { flags->serve_metrics = false; },
      "do not serve Prometheus /metrics");
  app->footer(kFooter);
}

Status ParseCommandLine(CLI::App* app, const std::vector<std::string>& args, bool* help) {
  *help = false;
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 pops from the back
  try {
    app->parse(reversed);
  } catch (const CLI::Success&) {  // --help
    *help = true;
  } catch (const CLI::ParseError& e) {
    return InvalidArgumentError(e.what());
  }
  return OkStatus();
}

StatusOr<TrainerFlags> ParseTrainerFlags(const std::vector<std::string>& args) {
  TrainerFlags f;
  CLI::App app("Trains one SkrullJob.", "skrull-trainer");
  AddTrainerFlags(&app, &f);
  bool help = false;
  SKRULL_RETURN_IF_ERROR(ParseCommandLine(&app, args, &help));
  if (help) {
    TrainerFlags only_help;
    only_help.help = true;
    return only_help;
  }
  return f;
}

std::vector<std::string> TrainerFlagsToArgs(const TrainerFlags& flags) {
  std::vector<std::string> args = {"--job", flags.job_file};
  if (flags.steps) args.insert(args.end(), {"--steps", std::to_string(*flags.steps)});
  if (!flags.output_dir.empty()) args.insert(args.end(), {"--output-dir", flags.output_dir});
  args.insert(args.end(), {"--device", flags.device});
  if (flags.stop_after_steps > 0) {
    args.insert(args.end(), {"--stop-after-steps", std::to_string(flags.stop_after_steps)});
  }
  if (!flags.serve_metrics) args.push_back("--no-metrics-server");
  return args;
}

std::string TrainerUsage() {
  TrainerFlags f;
  CLI::App app("Trains one SkrullJob.", "skrull-trainer");
  AddTrainerFlags(&app, &f);
  return app.help();
}

StatusOr<api::JobSpec> LoadJobForFlags(const TrainerFlags& flags) {
  SKRULL_ASSIGN_OR_RETURN(api::JobSpec job, api::LoadJobSpecFile(flags.job_file));
  if (flags.steps.has_value()) job.training.steps = *flags.steps;
  if (!flags.output_dir.empty()) {
    job.training.output_dir = std::filesystem::absolute(flags.output_dir).lexically_normal();
  }
  return job;
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kFailedPrecondition:
      return kExitBadInput;
    case StatusCode::kOutOfMemory:
      return kExitOutOfMemory;
    default:
      return kExitFailure;
  }
}

}  // namespace skrull::train

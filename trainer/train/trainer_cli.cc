#include "trainer/train/trainer_cli.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>

namespace skrull::train {

namespace {

StatusOr<int64_t> ParsePositive(const std::string& flag, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || end == nullptr || *end != '\0' || errno != 0 || v < 1) {
    return InvalidArgumentError(flag + ": must be an integer >= 1 (got '" + value + "')");
  }
  return static_cast<int64_t>(v);
}

}  // namespace

std::string TrainerUsage() {
  return "usage: skrull-trainer --job FILE [--steps N] [--output-dir DIR] [--device D]\n"
         "                      [--stop-after-steps N] [--no-metrics-server]\n"
         "  --job FILE             SkrullJob YAML (required)\n"
         "  --steps N              override spec.training.steps\n"
         "  --output-dir DIR       override spec.training.outputDir\n"
         "  --device D             auto (default) | cpu | cuda | cuda:N\n"
         "  --stop-after-steps N   stop after N steps of this run with a checkpoint\n"
         "                         (resume with spec.training.resumeFrom: latest)\n"
         "  --no-metrics-server    do not serve Prometheus /metrics\n"
         "With procsPerNode > 1 it launches the node's ranks; each rank runs with\n"
         "SKRULL_RANK set. Exit codes: 0 ok, 2 bad input, 1 other failure.\n";
}

StatusOr<TrainerFlags> ParseTrainerFlags(const std::vector<std::string>& args) {
  TrainerFlags f;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> inline_value;
    if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    auto value = [&]() -> StatusOr<std::string> {
      if (inline_value.has_value()) return *inline_value;
      if (i + 1 >= args.size()) return InvalidArgumentError(flag + ": needs a value");
      return args[++i];
    };
    if (flag == "--help" || flag == "-h") {
      f.help = true;
    } else if (flag == "--job") {
      SKRULL_ASSIGN_OR_RETURN(f.job_file, value());
    } else if (flag == "--steps") {
      SKRULL_ASSIGN_OR_RETURN(std::string v, value());
      SKRULL_ASSIGN_OR_RETURN(f.steps, ParsePositive(flag, v));
    } else if (flag == "--output-dir") {
      SKRULL_ASSIGN_OR_RETURN(f.output_dir, value());
      if (f.output_dir.empty()) return InvalidArgumentError("--output-dir: must not be empty");
    } else if (flag == "--device") {
      SKRULL_ASSIGN_OR_RETURN(f.device, value());
    } else if (flag == "--stop-after-steps") {
      SKRULL_ASSIGN_OR_RETURN(std::string v, value());
      SKRULL_ASSIGN_OR_RETURN(f.stop_after_steps, ParsePositive(flag, v));
    } else if (flag == "--no-metrics-server") {
      f.serve_metrics = false;
    } else {
      return InvalidArgumentError("unknown argument '" + args[i] + "'; see --help");
    }
  }
  if (!f.help && f.job_file.empty()) {
    return InvalidArgumentError("--job: required (the SkrullJob YAML to train)");
  }
  return f;
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
    default:
      return kExitFailure;
  }
}

}  // namespace skrull::train

// Command-line flags of `skrull-plan`, parsed into plain structs.
//
//   skrull-plan schedule --lengths FILE --dp D --cp C --bucket-size T
//                        [--policy P] [--model NAME|config.json]
//                        [--hardware FILE] [--format text|json] [--svg OUT]
//   skrull-plan simulate --lengths FILE --dp D --cp C --bucket-size T
//                        --batch-size B [--steps N] [--seed S] [--policies a,b]
//                        [--model ...] [--hardware FILE] [--format text|json]
//                        [--svg OUT]
//   skrull-plan bucket --model NAME|config.json [--hardware FILE] --dp D
//                      --cp C --zero-stage 0|1|2 --precision bf16|fp32
//                      [--lora-rank R] [--lora-modules a,b]
//                      [--recompute none|full] [--memory-fraction F]
//                      [--format text|json]
//
// Flags are read with CLI11 and take their value as the next argument or
// after '=' (`--dp 4`, `--dp=4`). Token counts accept a K (x1024) or M
// (x1024^2) suffix: `26K` is 26624 tokens. Sizes are bounded (limits.h,
// simulator.h): --dp x --cp <= kMaxWorldSize ranks, --bucket-size <=
// kMaxBucketSizeTokens, --dp x --batch-size <= kMaxGlobalBatchSequences; a
// product over its bound is an error naming both flags. Parsing is pure (no
// I/O); files are opened by the commands.
#ifndef SKRULL_SCHEDULER_CLI_FLAGS_H_
#define SKRULL_SCHEDULER_CLI_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/memory_model.h"
#include "scheduler/plan.h"

namespace skrull::scheduler::cli {

enum class OutputFormat { kText, kJson };

inline constexpr char kDefaultModel[] = "qwen2.5-0.5b";

// Flags shared by both commands.
struct CommonFlags {
  std::string lengths_path;        // --lengths (required)
  Topology topology;               // --dp, --cp (required, >= 1)
  int64_t bucket_size_tokens = 0;  // --bucket-size (required, > 0), tokens per rank
  // --model: a preset name (qwen2.5-0.5b, qwen2.5-7b, tiny) or a path to a
  // Hugging Face config.json (anything ending in ".json" or containing '/').
  std::string model = kDefaultModel;
  std::string hardware_path;                  // --hardware; empty = the built-in H100 profile
  OutputFormat format = OutputFormat::kText;  // --format
  std::string svg_path;                       // --svg; empty = no drawing
};

struct ScheduleFlags {
  CommonFlags common;
  std::string policy = "skrull";  // --policy (a PolicyName)
};

struct SimulateFlags {
  CommonFlags common;
  int batch_size = 0;  // --batch-size: sequences per DP rank (global batch = dp x this)
  int steps = 20;      // --steps: global batches sampled
  uint64_t seed = 1;   // --seed
  std::vector<std::string> policies;  // --policies a,b,c; empty = all policies
  int zero_stage = 0;                 // --zero-stage: ZeRO stage the plans are priced at (0..2)
  int micro_batch_size = 1;           // --micro-batch-size: deepspeed's sequences per micro-batch
};

// `bucket`: the memory model's BucketSize for one model, device and layout.
struct BucketFlags {
  std::string model;                          // --model (required)
  std::string hardware_path;                  // --hardware; empty = the built-in H100 profile
  Topology topology;                          // --dp, --cp (required, >= 1)
  int zero_stage = 0;                         // --zero-stage (required, 0..kMaxTrainerZeroStage)
  Precision precision = Precision::kBf16;     // --precision (required)
  LoraShape lora;                             // --lora-rank (default 0: off), --lora-modules
  bool recompute = false;                     // --recompute full
  bool recompute_mlp = false;                 // --recompute selective
  double memory_fraction = 0.9;               // --memory-fraction, in (0, 1]
  OutputFormat format = OutputFormat::kText;  // --format
};

enum class Command { kHelp, kSchedule, kSimulate, kBucket };

struct Invocation {
  Command command = Command::kHelp;
  // For kHelp: the text to print (top-level or per-command usage).
  std::string help_text;
  ScheduleFlags schedule;  // valid when command == kSchedule
  SimulateFlags simulate;  // valid when command == kSimulate
  BucketFlags bucket;      // valid when command == kBucket
};

// Parses argv[1..] (the program name excluded). `--help`/`-h` anywhere, or
// `help [command]`, gives kHelp. CLI11 splits the arguments (a flag without
// its value or given twice is its error, alone); the values are then checked
// here so that every problem (unknown flags, bad or missing values, size
// products over their bound) is reported at once, one per line, each naming
// the flag and the fix; the message ends with a pointer to `--help`. Policy names are checked by
// the commands (they need the policy registry), everything else here.
StatusOr<Invocation> ParseCommandLine(const std::vector<std::string>& args);

std::string TopLevelUsage();
std::string ScheduleUsage();
std::string SimulateUsage();
std::string BucketUsage();

// "26624", "26K", "26k", "1M" -> tokens. Returns an error message naming
// `flag` on bad input (exposed for tests and for bench/ binaries).
StatusOr<int64_t> ParseTokenCount(const std::string& flag, const std::string& text);

}  // namespace skrull::scheduler::cli

#endif  // SKRULL_SCHEDULER_CLI_FLAGS_H_

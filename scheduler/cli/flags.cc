#include "scheduler/cli/flags.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <map>
#include <tuple>

#include <CLI/CLI.hpp>

#include "scheduler/checked_math.h"
#include "scheduler/policy.h"
#include "scheduler/simulator.h"

namespace skrull::scheduler::cli {
namespace {

constexpr char kCommonFlagsHelp[] =
    "  --lengths FILE       sequence lengths, one positive integer per line\n"
    "                       ('#' comments and blank lines allowed)\n"
    "  --dp D               data-parallel degree (>= 1)\n"
    "  --cp C               context-parallel degree, ranks per CP group (>= 1)\n"
    "  --bucket-size T      BucketSize: most tokens one rank may hold; K = x1024,\n"
    "                       so 26K = 26624 tokens\n"
    "  --model M            preset (qwen2.5-0.5b, qwen2.5-7b, tiny) or a Hugging Face\n"
    "                       config.json path (default qwen2.5-0.5b)\n"
    "  --hardware FILE      hardware profile JSON (default: built-in H100 profile)\n"
    "  --format F           text (default) or json\n"
    "  --svg OUT            also write a per-rank timeline drawing (SVG) to OUT\n"
    "  -h, --help           print this help\n";

std::string PolicyListHelp() {
  std::string names;
  for (Policy p : AllPolicies()) names += (names.empty() ? "" : ", ") + std::string(PolicyName(p));
  return "                       policies: " + names + "\n";
}

StatusOr<int64_t> ParseInt64(const std::string& flag, const std::string& text, int64_t min,
                             int64_t max) {
  std::string bad = flag + ": expected an integer in [" + std::to_string(min) + ", " +
                    std::to_string(max) + "] (got '" + text + "')";
  if (text.empty()) return InvalidArgumentError(bad);
  int64_t value = 0;
  size_t i = 0;
  bool negative = false;
  if (text[0] == '-') {
    negative = true;
    i = 1;
  }
  if (i == text.size()) return InvalidArgumentError(bad);
  for (; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return InvalidArgumentError(bad);
    if (value > (std::numeric_limits<int64_t>::max() - 9) / 10) return InvalidArgumentError(bad);
    value = value * 10 + (text[i] - '0');
  }
  if (negative) value = -value;
  if (value < min || value > max) return InvalidArgumentError(bad);
  return value;
}

std::vector<std::string> SplitCommaList(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  for (char c : text) {
    if (c == ',') {
      out.push_back(current);
      current.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      current += c;
    }
  }
  out.push_back(current);
  return out;
}

// The flags given, by name ("--dp") -> value, as CLI11 parsed them.
using FlagValues = std::map<std::string, std::string>;

// Parses args[1..] with CLI11 into `values` for the flags in `names`.
// Unknown flags and stray arguments are appended to `errors`, so they are
// reported with the value problems; CLI11's own errors (a flag without its
// value, a flag given twice) are returned.
Status CollectFlags(const std::vector<std::string>& args, const std::string& command,
                    const std::vector<std::string>& names, FlagValues* values,
                    std::vector<std::string>* errors) {
  CLI::App app{"skrull-plan " + command, "skrull-plan " + command};
  app.set_help_flag();  // --help is answered before parsing, with the usage text
  app.allow_extras();
  std::vector<std::string> raw(names.size());
  std::vector<CLI::Option*> options;
  for (size_t i = 0; i < names.size(); ++i) options.push_back(app.add_option(names[i], raw[i]));
  std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 pops from the back
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return InvalidArgumentError(e.what());
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (options[i]->count() > 0) (*values)[names[i]] = raw[i];
  }
  bool after_unknown_flag = false;
  for (const std::string& extra : app.remaining()) {
    if (extra.size() > 1 && extra[0] == '-') {
      errors->push_back("unknown flag '" + extra.substr(0, extra.find('=')) +
                        "' (see --help for the list)");
      after_unknown_flag = extra.find('=') == std::string::npos;
    } else if (!after_unknown_flag) {  // else: the unknown flag's value
      errors->push_back("unexpected argument '" + extra +
                        "'; flags look like --name VALUE (see --help)");
    } else {
      after_unknown_flag = false;
    }
  }
  return OkStatus();
}

bool Required(FlagValues& v, const std::string& name, const std::string& example,
              std::vector<std::string>* errors) {
  if (v.count(name)) return true;
  errors->push_back(name + ": required (e.g. " + name + " " + example + ")");
  return false;
}

// --dp and --cp (required) and their product's bound.
void ParseTopology(FlagValues& v, Topology* topology, std::vector<std::string>* errors) {
  struct Degree {
    const char* name;
    const char* example;
    int* field;
  };
  for (const Degree& d : {Degree{"--dp", "4", &topology->dp}, Degree{"--cp", "8", &topology->cp}}) {
    const std::string name = d.name;
    int* field = d.field;
    if (!Required(v, name, d.example, errors)) continue;
    auto n = ParseInt64(name, v[name], 1, kMaxWorldSize);
    if (n.ok()) {
      *field = static_cast<int>(*n);
    } else {
      errors->push_back(n.status().message());
    }
  }
  int64_t world = 0;
  if (!MulAtMost(topology->dp, topology->cp, kMaxWorldSize, &world)) {
    errors->push_back("--dp x --cp = " + std::to_string(int64_t{topology->dp} * topology->cp) +
                      " ranks exceeds the maximum " + std::to_string(kMaxWorldSize) +
                      "; lower --dp or --cp");
  }
}

void ParseFormat(FlagValues& v, OutputFormat* out, std::vector<std::string>* errors) {
  if (!v.count("--format")) return;
  const std::string& f = v["--format"];
  if (f == "text") {
    *out = OutputFormat::kText;
  } else if (f == "json") {
    *out = OutputFormat::kJson;
  } else {
    errors->push_back("--format: must be 'text' or 'json' (got '" + f + "')");
  }
}

void ParseCommon(FlagValues& v, CommonFlags* out, std::vector<std::string>* errors) {
  auto required = [&](const std::string& name, const std::string& example) {
    return Required(v, name, example, errors);
  };
  if (required("--lengths", "batch.txt")) {
    out->lengths_path = v["--lengths"];
    if (out->lengths_path.empty()) errors->push_back("--lengths: empty path");
  }
  ParseTopology(v, &out->topology, errors);
  if (required("--bucket-size", "26K")) {
    auto bucket = ParseTokenCount("--bucket-size", v["--bucket-size"]);
    if (bucket.ok()) {
      out->bucket_size_tokens = *bucket;
    } else {
      errors->push_back(bucket.status().message());
    }
  }
  if (v.count("--model")) {
    out->model = v["--model"];
    if (out->model.empty()) errors->push_back("--model: empty; give a preset name or a path");
  }
  if (v.count("--hardware")) {
    out->hardware_path = v["--hardware"];
    if (out->hardware_path.empty()) errors->push_back("--hardware: empty path");
  }
  ParseFormat(v, &out->format, errors);
  if (v.count("--svg")) {
    out->svg_path = v["--svg"];
    if (out->svg_path.empty()) errors->push_back("--svg: empty path");
  }
}

void ParseBucket(FlagValues& v, BucketFlags* out, std::vector<std::string>* errors) {
  if (Required(v, "--model", "qwen2.5-7b", errors)) {
    out->model = v["--model"];
    if (out->model.empty()) errors->push_back("--model: empty; give a preset name or a path");
  }
  if (v.count("--hardware")) {
    out->hardware_path = v["--hardware"];
    if (out->hardware_path.empty()) errors->push_back("--hardware: empty path");
  }
  ParseTopology(v, &out->topology, errors);
  if (Required(v, "--zero-stage", "2", errors)) {
    auto stage = ParseInt64("--zero-stage", v["--zero-stage"], 0, kMaxTrainerZeroStage);
    if (stage.ok()) {
      out->zero_stage = static_cast<int>(*stage);
    } else {
      errors->push_back(stage.status().message());
    }
  }
  if (Required(v, "--precision", "bf16", errors)) {
    auto precision = ParsePrecision(v["--precision"]);
    if (precision.ok()) {
      out->precision = *precision;
    } else {
      errors->push_back("--precision: " + precision.status().message());
    }
  }
  if (v.count("--lora-rank")) {
    auto rank = ParseInt64("--lora-rank", v["--lora-rank"], 0, 65536);
    if (rank.ok()) {
      out->lora.rank = *rank;
    } else {
      errors->push_back(rank.status().message());
    }
  }
  if (v.count("--lora-modules")) out->lora.target_modules = SplitCommaList(v["--lora-modules"]);
  const std::vector<std::string>& known = LoraProjectionNames();
  for (const std::string& m : out->lora.target_modules) {
    if (std::find(known.begin(), known.end(), m) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      errors->push_back("--lora-modules: unknown module '" + m + "' (expected one of " + list +
                        ")");
    }
  }
  if (v.count("--recompute")) {
    const std::string& r = v["--recompute"];
    out->recompute = r == "full";
    out->recompute_mlp = r == "selective";
    if (r != "full" && r != "selective" && r != "none") {
      errors->push_back("--recompute: must be 'none', 'selective' or 'full' (got '" + r + "')");
    }
  }
  if (v.count("--memory-fraction")) {
    const std::string& text = v["--memory-fraction"];
    char* end = nullptr;
    const double f = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !(f > 0 && f <= 1)) {
      errors->push_back("--memory-fraction: expected a number in (0, 1] (got '" + text + "')");
    } else {
      out->memory_fraction = f;
    }
  }
  ParseFormat(v, &out->format, errors);
}

std::vector<std::string> CommonFlagNames() {
  return {"--lengths", "--dp",       "--cp",     "--bucket-size",
          "--model",   "--hardware", "--format", "--svg"};
}

Status JoinErrors(const std::vector<std::string>& errors, const std::string& command) {
  std::string message;
  for (const std::string& e : errors) message += e + "\n";
  message += "run 'skrull-plan " + command + " --help' for usage";
  return InvalidArgumentError(message);
}

}  // namespace

StatusOr<int64_t> ParseTokenCount(const std::string& flag, const std::string& text) {
  std::string digits = text;
  int64_t multiplier = 1;
  if (!digits.empty()) {
    char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
    if (suffix == 'K') multiplier = 1024;
    if (suffix == 'M') multiplier = 1024 * 1024;
    if (multiplier != 1) digits.pop_back();
  }
  auto value = ParseInt64(flag, digits, 1, kMaxBucketSizeTokens / multiplier);
  if (!value.ok()) {
    return InvalidArgumentError(flag + ": expected a positive token count such as 26624 or 26K " +
                                "(K = 1024) (got '" + text + "')");
  }
  return *value * multiplier;
}

std::string TopLevelUsage() {
  return "skrull-plan: plan and simulate Skrull data schedules (DACP + GDS) without GPUs.\n"
         "\n"
         "usage:\n"
         "  skrull-plan schedule --lengths FILE --dp D --cp C --bucket-size T [--policy P] ...\n"
         "      schedule one global batch (FILE holds its lengths) and print the plan\n"
         "  skrull-plan simulate --lengths FILE --dp D --cp C --bucket-size T --batch-size B ...\n"
         "      sample global batches from a dataset (FILE) and compare all policies\n"
         "  skrull-plan bucket --model M --dp D --cp C --zero-stage S --precision P ...\n"
         "      derive BucketSize from the memory model and the device's memory\n"
         "  skrull-plan help [schedule|simulate|bucket]\n"
         "\n"
         "Exit codes: 0 ok, 2 bad flags or input, 1 internal error.\n"
         "Run 'skrull-plan <command> --help' for the command's flags.\n";
}

std::string ScheduleUsage() {
  return std::string(
             "usage: skrull-plan schedule --lengths FILE --dp D --cp C --bucket-size T\n"
             "                            [--policy P] [--model M] [--format text|json] [--svg "
             "OUT]\n"
             "\n"
             "Schedules one global batch: FILE's i-th length is sequence id i. JSON output:\n"
             "  "
             "{\"policy\",\"dp\",\"cp\",\"bucket_size\",\"micro_batches\":[{\"dp_rank\",\"index\","
             "\n"
             "   "
             "\"sequences\":[{\"id\",\"length\",\"cp_rank\"}]}],\"rollbacks\":{\"dacp\",\"gds\"},\n"
             "   \"schedule_seconds\"}   (cp_rank -1 = distributed over the CP group)\n"
             "\n"
             "flags:\n") +
         kCommonFlagsHelp + "  --policy P           scheduling policy (default skrull)\n" +
         PolicyListHelp() +
         "\nexample:\n"
         "  skrull-plan schedule --lengths batch.txt --dp 4 --cp 8 --bucket-size 26K \\\n"
         "      --format json --svg plan.svg\n";
}

std::string SimulateUsage() {
  return std::string(
             "usage: skrull-plan simulate --lengths FILE --dp D --cp C --bucket-size T\n"
             "                            --batch-size B [--steps N] [--seed S] [--policies "
             "a,b]\n"
             "                            [--model M] [--hardware FILE] [--format text|json] "
             "[--svg OUT]\n"
             "\n"
             "Samples --steps global batches of dp x batch-size sequences from FILE (the whole\n"
             "dataset's lengths), schedules each with every policy and simulates the iteration\n"
             "time with the cost model and hardware profile. JSON output:\n"
             "  {\"policies\":{NAME:{\"mean_iteration_seconds\",\"tokens_per_second\",\n"
             "   \"flops_imbalance\",\"rollbacks\":{\"dacp\",\"gds\"}}},\"lower_bound_seconds\",\n"
             "   \"tight_bound_seconds\"}\n"
             "--svg draws the first sampled batch as scheduled by the first policy.\n"
             "\n"
             "flags:\n") +
         kCommonFlagsHelp +
         "  --batch-size B       sequences per DP rank per step (global batch = dp x B)\n"
         "  --steps N            global batches to sample (default 20)\n"
         "  --seed S             sampler seed (default 1)\n"
         "  --policies a,b       policies to compare (default: all)\n"
         "  --zero-stage S       ZeRO stage the plans are priced at: 0 (default), 1, 2;\n"
         "                       deepspeed is always priced at 2\n"
         "  --micro-batch-size N deepspeed's sequences per micro-batch (default 1)\n" +
         PolicyListHelp() +
         "\nexample:\n"
         "  skrull-plan simulate --lengths wiki.txt --dp 4 --cp 8 --bucket-size 26K \\\n"
         "      --batch-size 64 --steps 50\n";
}

namespace {

StatusOr<Invocation> ParseBucketCommand(const std::vector<std::string>& args) {
  FlagValues values;
  std::vector<std::string> errors;
  const std::vector<std::string> known = {
      "--model",      "--hardware",        "--dp",        "--cp",
      "--zero-stage", "--precision",       "--lora-rank", "--lora-modules",
      "--recompute",  "--memory-fraction", "--format"};
  Status parsed = CollectFlags(args, "bucket", known, &values, &errors);
  if (!parsed.ok()) return JoinErrors({parsed.message()}, "bucket");
  Invocation inv;
  inv.command = Command::kBucket;
  ParseBucket(values, &inv.bucket, &errors);
  if (!errors.empty()) return JoinErrors(errors, "bucket");
  return inv;
}

}  // namespace

std::string BucketUsage() {
  return "usage: skrull-plan bucket --model M --dp D --cp C --zero-stage 0|1|2\n"
         "                          --precision bf16|fp32 [--hardware FILE] [--lora-rank R]\n"
         "                          [--lora-modules a,b] [--recompute none|selective|full]\n"
         "                          [--memory-fraction F] [--format text|json]\n"
         "\n"
         "Derives BucketSize from the memory model (docs/scheduler.md): static bytes per rank\n"
         "(weights, gradients, optimizer state; ZeRO shards them over all D x C ranks),\n"
         "activation bytes per token, and the device memory of the hardware profile:\n"
         "  bucket_size_tokens = (device x F - reserve - static) / activation bytes per token\n"
         "Exits 2 when the static memory alone fills the budget, naming the ZeRO stage\n"
         "that would fit (the report is still printed). JSON output:\n"
         "  {\"static_bytes\":{\"weights\",\"gradients\",\"optimizer\",\"total\"},\n"
         "   \"activation_bytes_per_token\",\"bucket_size_tokens\",\"fits\",\n"
         "   \"fitting_zero_stage\", ...}\n"
         "\n"
         "flags:\n"
         "  --model M            preset (qwen2.5-0.5b, qwen2.5-7b, tiny) or a Hugging Face\n"
         "                       config.json path\n"
         "  --hardware FILE      hardware profile JSON with \"device_memory_bytes\"\n"
         "                       (default: built-in H100 profile, 81,559 MiB)\n"
         "  --dp D, --cp C       data- and context-parallel degrees (>= 1)\n"
         "  --zero-stage S       0 (replicated), 1 (optimizer state sharded), 2 (also gradients)\n"
         "  --precision P        bf16 (mixed precision, fp32 master weights) or fp32\n"
         "  --lora-rank R        LoRA adapters of rank R (default 0: full fine-tuning)\n"
         "  --lora-modules a,b   LoRA targets (default q_proj,k_proj,v_proj,o_proj)\n"
         "  --recompute R        none (default) or full activation recompute\n"
         "  --memory-fraction F  share of device memory to plan for (default 0.9)\n"
         "  --format F           text (default) or json\n"
         "\nexample:\n"
         "  skrull-plan bucket --model qwen2.5-7b --dp 4 --cp 8 --zero-stage 2 --precision bf16\n";
}

StatusOr<Invocation> ParseCommandLine(const std::vector<std::string>& args) {
  Invocation inv;
  if (args.empty()) {
    return InvalidArgumentError("missing command (schedule, simulate or bucket)\n" +
                                TopLevelUsage());
  }
  const std::string& command = args[0];
  auto wants_help = [&](size_t from) {
    for (size_t i = from; i < args.size(); ++i) {
      if (args[i] == "--help" || args[i] == "-h") return true;
    }
    return false;
  };
  if (command == "--help" || command == "-h" || command == "help") {
    inv.command = Command::kHelp;
    inv.help_text = TopLevelUsage();
    if (command == "help" && args.size() > 1) {
      if (args[1] == "schedule") inv.help_text = ScheduleUsage();
      if (args[1] == "simulate") inv.help_text = SimulateUsage();
      if (args[1] == "bucket") inv.help_text = BucketUsage();
    }
    return inv;
  }
  if (command != "schedule" && command != "simulate" && command != "bucket") {
    return InvalidArgumentError("unknown command '" + command +
                                "'; expected 'schedule', 'simulate' or 'bucket'\n" +
                                TopLevelUsage());
  }
  if (wants_help(1)) {
    inv.command = Command::kHelp;
    inv.help_text = command == "schedule"   ? ScheduleUsage()
                    : command == "simulate" ? SimulateUsage()
                                            : BucketUsage();
    return inv;
  }
  if (command == "bucket") return ParseBucketCommand(args);

  std::vector<std::string> known = CommonFlagNames();
  if (command == "schedule") {
    known.push_back("--policy");
  } else {
    for (const char* name : {"--batch-size", "--steps", "--seed", "--policies", "--zero-stage",
                             "--micro-batch-size"}) {
      known.push_back(name);
    }
  }
  FlagValues values;
  std::vector<std::string> errors;
  Status parsed = CollectFlags(args, command, known, &values, &errors);
  if (!parsed.ok()) return JoinErrors({parsed.message()}, command);

  if (command == "schedule") {
    inv.command = Command::kSchedule;
    ParseCommon(values, &inv.schedule.common, &errors);
    if (values.count("--policy")) {
      inv.schedule.policy = values["--policy"];
      if (inv.schedule.policy.empty()) errors.push_back("--policy: empty policy name");
    }
  } else {
    inv.command = Command::kSimulate;
    SimulateFlags& sim = inv.simulate;
    ParseCommon(values, &sim.common, &errors);
    if (values.count("--batch-size")) {
      auto b = ParseInt64("--batch-size", values["--batch-size"], 1, kMaxGlobalBatchSequences);
      int64_t global = 0;
      if (b.ok() && !MulAtMost(sim.common.topology.dp, *b, kMaxGlobalBatchSequences, &global)) {
        errors.push_back("--dp x --batch-size = " + std::to_string(sim.common.topology.dp * *b) +
                         " sequences per step exceeds the maximum " +
                         std::to_string(kMaxGlobalBatchSequences) + "; lower --dp or --batch-size");
      } else if (b.ok()) {
        sim.batch_size = static_cast<int>(*b);
      } else {
        errors.push_back(b.status().message());
      }
    } else {
      errors.push_back("--batch-size: required (sequences per DP rank per step, e.g. 64)");
    }
    if (values.count("--steps")) {
      auto s = ParseInt64("--steps", values["--steps"], 1, 1 << 24);
      if (s.ok()) {
        sim.steps = static_cast<int>(*s);
      } else {
        errors.push_back(s.status().message());
      }
    }
    for (auto [name, lo, hi, out] :
         {std::tuple{"--zero-stage", 0, 2, &sim.zero_stage},
          std::tuple{"--micro-batch-size", 1, 1 << 20, &sim.micro_batch_size}}) {
      if (!values.count(name)) continue;
      auto v = ParseInt64(name, values[name], lo, hi);
      if (v.ok()) {
        *out = static_cast<int>(*v);
      } else {
        errors.push_back(v.status().message());
      }
    }
    if (values.count("--seed")) {
      auto s = ParseInt64("--seed", values["--seed"], 0, std::numeric_limits<int64_t>::max());
      if (s.ok()) {
        sim.seed = static_cast<uint64_t>(*s);
      } else {
        errors.push_back(s.status().message());
      }
    }
    if (values.count("--policies")) {
      sim.policies = SplitCommaList(values["--policies"]);
      for (const std::string& p : sim.policies) {
        if (p.empty()) {
          errors.push_back("--policies: empty name in '" + values["--policies"] +
                           "'; write a comma-separated list such as skrull,cp-all");
          break;
        }
      }
    }
  }
  if (!errors.empty()) return JoinErrors(errors, command);
  return inv;
}

}  // namespace skrull::scheduler::cli

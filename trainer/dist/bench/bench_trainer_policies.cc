// bench_trainer_policies: trains the same long-context job under several
// scheduler policies (default skrull, cp-all, balanced-cp, deepspeed) with
// the same processes layout (default DP=1 x CP=2: two processes), one after
// the other in one run, and prints per policy the mean iteration time (after
// warm-up steps), tokens/s, where the time went (CP exchange wait, DP
// all-reduce wait, attention) and the ratio against the first baseline.
//
// Correctness: every policy must produce the same per-step losses (fp32
// relative difference < 1e-4): the plans differ, the math must not. A
// mismatch is reported and the exit code is 1.
//
//   bench_trainer_policies [--steps 6] [--warmup 2] [--dp 1] [--cp 2]
//     [--policies skrull,cp-all,balanced-cp,deepspeed] [--samples 64] [--batch 16]
//     [--micro-batch-size 1]
//     [--short 32:256] [--long 1536:3072] [--long-fraction 0.4]
//     [--lengths bimodal|wikipedia|lmsyschat1m|chatqa2|llama3-mix]
//     [--max-length N] [--bucket 2048|auto] [--hardware-profile FILE|measure]
//     [--hidden 64] [--layers 2] [--heads 4] [--kv-heads 2]
//     [--threads 1] [--repeats 2] [--json FILE] [--keep DIR]
//
// Lengths: `bimodal` (default) draws --long-fraction of the samples uniformly
// from --long and the rest from --short. A dataset name draws from that
// dataset's CDF in bench/length_samplers.h (the paper's Table 1; wikipedia and
// lmsyschat1m: about 88% of samples < 1K tokens, a rare long tail), cut at
// --max-length (default: the BucketSize): the CDF is kept exactly below the
// cut and the mass above it is folded into the last segment below it, so the
// long tail still exists but ends at what this small CPU run can afford.
//
// --hardware-profile FILE puts `hardwareProfile: FILE` in every job (the
// skrull policy then prices its plans with it); --bucket auto then takes
// the profile's bucket_size_tokens (written by `skrull-trainer --profile`).
// --hardware-profile measure first profiles this machine with the bench's
// own job and layout (what `skrull-trainer --profile` does) into
// <dir>/profile.json and uses that.
//
// Policies run interleaved (A B C A B C ...) and each policy's best round is
// reported, so load from other processes on the machine biases no policy.
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "api/job_spec.h"
#include "bench/length_samplers.h"
#include "common/file_util.h"
#include "trainer/dist/distributed_trainer.h"
#include "trainer/dist/launcher.h"
#include "trainer/dist/profile.h"
#include "trainer/dist/testing/fork_ranks.h"
#include "trainer/train/hardware_profile_file.h"
#include "trainer/train/trainer.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace skrull;

struct Flags {
  int steps = 6;
  int warmup = 2;
  int dp = 1;
  int cp = 2;
  std::vector<std::string> policies = {"skrull", "cp-all", "balanced-cp", "deepspeed"};
  int micro_batch_size = 1;  // deepspeed's spec.scheduler.microBatchSize
  int samples = 64;
  int batch = 16;  // sequences per DP rank per step
  int short_min = 32, short_max = 256;
  int long_min = 1536, long_max = 3072;
  double long_fraction = 0.4;
  std::string lengths = "bimodal";  // or a bench::Dataset name
  int64_t max_length = 0;           // dataset lengths cut here; 0 = the bucket
  int64_t bucket = 2048;            // tokens; from the profile when bucket_auto
  bool bucket_auto = false;
  std::string hardware_profile;  // absolute path; "" = none
  int hidden = 64;
  int layers = 2;
  int heads = 4;
  int kv_heads = 2;
  int threads = 1;  // intra-op threads per rank
  int repeats = 2;  // rounds over all policies (interleaved); the fastest round counts
  std::string json_path;
  std::string keep;
};

bool ParseRange(const std::string& v, int* lo, int* hi) {
  auto colon = v.find(':');
  if (colon == std::string::npos) return false;
  *lo = std::atoi(v.substr(0, colon).c_str());
  *hi = std::atoi(v.substr(colon + 1).c_str());
  return *lo > 0 && *hi >= *lo;
}

// A flag's value that the flags alone cannot check: the message, exit 2.
int BadFlag(const std::string& msg) {
  std::cerr << "bench_trainer_policies: " << msg << " (--help lists the flags)\n";
  return 2;
}

// Parses the flags into `f`: -1 to go on, else the exit status (0 after
// --help, 2 for a bad flag, with CLI11's message).
int ParseFlags(int argc, char** argv, Flags* f) {
  CLI::App app{"bench_trainer_policies: real training steps under several scheduler policies"};
  app.add_option("--steps", f->steps, "steps per policy")->check(CLI::Range(1, 1 << 20));
  app.add_option("--warmup", f->warmup, "steps left out of the timing")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--dp", f->dp, "data-parallel ranks")->check(CLI::Range(1, 64));
  app.add_option("--cp", f->cp, "context-parallel ranks")->check(CLI::Range(1, 64));
  app.add_option("--policies", f->policies, "comma-separated policies")->delimiter(',');
  app.add_option("--micro-batch-size", f->micro_batch_size,
                 "deepspeed's sequences per micro-batch (spec.scheduler.microBatchSize)")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--samples", f->samples, "data-set size")->check(CLI::Range(1, 1 << 24));
  app.add_option("--batch", f->batch, "sequences per DP rank per step")
      ->check(CLI::Range(1, 1 << 16));
  std::string short_range, long_range, bucket;
  app.add_option("--short", short_range, "bimodal short lengths MIN:MAX");
  app.add_option("--long", long_range, "bimodal long lengths MIN:MAX");
  app.add_option("--long-fraction", f->long_fraction, "bimodal share of long sequences")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--lengths", f->lengths, "bimodal or a bench/ data-set name");
  app.add_option("--max-length", f->max_length, "data-set lengths cut here; 0 = the bucket")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--bucket", bucket, "BucketSize in tokens, or auto (from the profile)");
  app.add_option("--hardware-profile", f->hardware_profile, "profile JSON, or measure");
  app.add_option("--hidden", f->hidden, "model hidden size")->check(CLI::Range(1, 1 << 16));
  app.add_option("--layers", f->layers, "model layers")->check(CLI::Range(1, 1024));
  app.add_option("--heads", f->heads, "attention heads")->check(CLI::Range(1, 1024));
  app.add_option("--kv-heads", f->kv_heads, "key/value heads")->check(CLI::Range(1, 1024));
  app.add_option("--threads", f->threads, "intra-op threads per rank")->check(CLI::Range(1, 1024));
  app.add_option("--repeats", f->repeats, "rounds over all policies")->check(CLI::Range(1, 1000));
  app.add_option("--json", f->json_path, "write the results as JSON here");
  app.add_option("--keep", f->keep, "keep the run directories here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help exits 0, bad flags 2
  }
  if (!short_range.empty() && !ParseRange(short_range, &f->short_min, &f->short_max)) {
    return BadFlag("--short wants MIN:MAX with 0 < MIN <= MAX");
  }
  if (!long_range.empty() && !ParseRange(long_range, &f->long_min, &f->long_max)) {
    return BadFlag("--long wants MIN:MAX with 0 < MIN <= MAX");
  }
  if (!bucket.empty()) {
    f->bucket_auto = bucket == "auto";
    int64_t tokens = 0;
    const char* end = bucket.data() + bucket.size();
    if (!f->bucket_auto && (std::from_chars(bucket.data(), end, tokens).ptr != end || tokens < 1 ||
                            tokens > (1 << 30))) {
      return BadFlag("--bucket wants a token count or auto (got " + bucket + ")");
    }
    f->bucket = tokens;
  }
  if (f->steps <= f->warmup || f->policies.empty()) {
    return BadFlag("need --steps > --warmup and at least one policy");
  }
  return -1;
}

std::string ConfigJson(const Flags& f) {
  std::ostringstream c;
  c << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": )"
    << f.hidden << R"(, "intermediate_size": )" << 2 * f.hidden << R"(, "num_hidden_layers": )"
    << f.layers << R"(, "num_attention_heads": )" << f.heads << R"(, "num_key_value_heads": )"
    << f.kv_heads
    << R"(, "vocab_size": 256, "max_position_embeddings": 65536, "rope_theta": 10000.0,
      "rms_norm_eps": 1e-6, "tie_word_embeddings": false, "torch_dtype": "float32"})";
  return c.str();
}

// `name`'s length distribution (bench/length_samplers.h) cut at `max_tokens`:
// the knots below the cut as they are, then (max_tokens, 1), so P(L < x) is
// the dataset's for every knot x < max_tokens and no sample is longer.
StatusOr<bench::LengthSampler> CutDataset(const std::string& name, int64_t max_tokens) {
  SKRULL_ASSIGN_OR_RETURN(bench::LengthSampler full, bench::Dataset(name));
  if (max_tokens >= full.LongestTokens()) return full;
  std::vector<bench::CdfKnot> knots;
  for (const bench::CdfKnot& k : full.knots()) {
    if (k.length_tokens < max_tokens) knots.push_back(k);
  }
  if (knots.empty()) {
    return InvalidArgumentError("--max-length " + std::to_string(max_tokens) +
                                " is not above the shortest " + name + " sequence (" +
                                std::to_string(full.knots().front().length_tokens) + " tokens)");
  }
  knots.push_back({max_tokens, 1.0});
  return bench::LengthSampler::FromCdf(
      name + "<=" + std::to_string(max_tokens),
      full.description() + ", cut at " + std::to_string(max_tokens) + " tokens", knots);
}

// Sample lengths: the bimodal mix, or `sampler` when set.
std::vector<int64_t> SampleLengths(const Flags& f, const bench::LengthSampler* sampler) {
  if (sampler != nullptr) return sampler->SampleMany(f.samples, 5);
  std::mt19937 rng(5);
  std::vector<int64_t> lengths;
  for (int i = 0; i < f.samples; ++i) {
    const bool is_long = std::bernoulli_distribution(f.long_fraction)(rng);
    lengths.push_back(is_long ? std::uniform_int_distribution<int>(f.long_min, f.long_max)(rng)
                              : std::uniform_int_distribution<int>(f.short_min, f.short_max)(rng));
  }
  return lengths;
}

std::string DataJsonl(const std::vector<int64_t>& lengths) {
  std::mt19937 rng(5);
  std::ostringstream out;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const int64_t len = lengths[i];
    const int start = std::uniform_int_distribution<int>(0, 250)(rng);
    out << "{\"input_ids\": [";
    for (int64_t p = 0; p < len; ++p) {
      out << (p ? "," : "") << (start + p * static_cast<int64_t>(1 + i % 5)) % 251;
    }
    out << "]}\n";
  }
  return out.str();
}

std::string JobYaml(const Flags& f, const fs::path& root, const std::string& policy,
                    const std::string& run) {
  std::ostringstream y;
  y << "apiVersion: skrull.io/v1alpha1\nkind: SkrullJob\nmetadata:\n  name: bench-" << policy
    << "\nspec:\n  model:\n    config: " << (root / "config.json").string() << "\n    seed: 1\n"
    << "  data:\n    path: " << (root / "data.jsonl").string() << "\n"
    << "  parallelism:\n    nodes: 1\n    procsPerNode: " << f.dp * f.cp
    << "\n    dataParallel: " << f.dp << "\n    contextParallel: " << f.cp << "\n"
    << "  scheduler:\n    policy: " << policy
    << "\n    bucketSize: " << (f.bucket_auto ? std::string("auto") : std::to_string(f.bucket))
    << "\n    batchSize: " << f.batch << "\n    seed: 2\n";
  if (policy == "deepspeed") y << "    microBatchSize: " << f.micro_batch_size << "\n";
  if (!f.hardware_profile.empty()) y << "    hardwareProfile: " << f.hardware_profile << "\n";
  y << "  training:\n    steps: " << f.steps << "\n    learningRate: 0.001\n"
    << "    outputDir: " << (root / run / "out").string() << "\n    checkpointEvery: 0\n"
    << "  resources:\n    gpusPerProc: 0\n  metrics:\n    port: 0\n";
  return y.str();
}

struct PolicyResult {
  std::string policy;
  bool ok = false;
  std::vector<double> losses;
  std::vector<double> step_seconds;
  double mean_step_seconds = 0;  // after warm-up
  double tokens_per_step = 0;    // global batch tokens
  double tokens_per_second = 0;
  double cp_wait_seconds_per_step = 0;  // rank 0
  double dp_wait_seconds_per_step = 0;
  double local_attention_per_step = 0;
  double dist_attention_per_step = 0;
  int64_t padding_tokens = 0;
  int64_t rollbacks = 0;
};

// Profiles the bench job's model and layout on this machine (as
// `skrull-trainer --profile --job`) into <root>/profile.json.
StatusOr<std::string> MeasureProfile(const Flags& f, const fs::path& root) {
  fs::create_directories(root / "profile");
  const std::string job_file = (root / "profile" / "job.yaml").string();
  Flags unprofiled = f;
  unprofiled.hardware_profile.clear();
  std::ofstream(job_file) << JobYaml(unprofiled, root, "skrull", "profile");
  const std::string out = (root / "profile.json").string();
  Status st = dist::testing::RunForkedJobRanks(
      job_file, f.dp * f.cp, "profile",
      [&](const api::JobSpec& job, const dist::RankEnv& env) {
        setenv("OMP_NUM_THREADS", std::to_string(f.threads).c_str(), 1);
        dist::ProfileOptions po;
        po.out_path = out;
        po.device = "cpu";
        return dist::RunProfileRank(job, env, po);
      },
      std::chrono::seconds(600));
  if (!st.ok()) return st.WithContext("--hardware-profile measure");
  return out;
}

PolicyResult RunPolicy(const Flags& f, const fs::path& root, const std::string& policy, int round) {
  PolicyResult r;
  r.policy = policy;
  const std::string run = policy + "-" + std::to_string(round);
  fs::create_directories(root / run);
  const std::string job_file = (root / run / "job.yaml").string();
  std::ofstream(job_file) << JobYaml(f, root, policy, run);
  Status st = dist::testing::RunForkedJobRanks(
      job_file, f.dp * f.cp, policy,
      [&](const api::JobSpec& job, const dist::RankEnv& env) {
        setenv("OMP_NUM_THREADS", std::to_string(f.threads).c_str(), 1);
        std::ostringstream quiet;
        dist::DistributedRunOptions o;
        o.trainer.device = "cpu";
        o.trainer.serve_metrics = false;
        o.trainer.log = &quiet;
        return dist::RunDistributedTrainer(job, env, o).status();
      },
      std::chrono::seconds(1800));
  if (!st.ok()) {
    std::cerr << policy << ": " << st << "\n";
    return r;
  }
  const std::string out = (root / run / "out").string();
  auto summary = ReadFileToString(dist::RankSummaryPath(out, 0));
  auto comm = ReadFileToString(dist::RankCommPath(out, 0));
  auto metrics = ReadFileToString(out + "/metrics.jsonl");
  if (!summary.ok() || !comm.ok() || !metrics.ok()) {
    std::cerr << policy << ": missing outputs in " << out << "\n";
    return r;
  }
  json s = json::parse(*summary), c = json::parse(*comm);
  for (const auto& l : s["losses"]) r.losses.push_back(l.get<double>());
  std::istringstream lines(*metrics);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    r.step_seconds.push_back(json::parse(line)["step_seconds"].get<double>());
  }
  const int steps = static_cast<int>(r.step_seconds.size());
  const int measured = steps - f.warmup;
  if (measured <= 0) return r;
  for (int i = f.warmup; i < steps; ++i) r.mean_step_seconds += r.step_seconds[i] / measured;
  r.tokens_per_step = s["tokens"].get<double>() / std::max(1, s["steps"].get<int>());
  r.tokens_per_second = r.tokens_per_step / r.mean_step_seconds;
  r.cp_wait_seconds_per_step = c["cp"]["comm_wait_seconds"].get<double>() / steps;
  r.dp_wait_seconds_per_step = c["dp"]["wait_seconds"].get<double>() / steps;
  r.local_attention_per_step = c["cp"]["local_attention_seconds"].get<double>() / steps;
  r.dist_attention_per_step = c["cp"]["distributed_attention_seconds"].get<double>() / steps;
  r.padding_tokens = c["cp"]["padding_tokens"].get<int64_t>();
  r.rollbacks = s["rollbacks"]["dacp"].get<int64_t>() + s["rollbacks"]["gds"].get<int64_t>();
  r.ok = true;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (int status = ParseFlags(argc, argv, &f); status >= 0) return status;
  const fs::path root = f.keep.empty() ? fs::temp_directory_path() /
                                             ("skrull_bench_trainer_" + std::to_string(getpid()))
                                       : fs::path(f.keep);
  fs::create_directories(root);
  std::ofstream(root / "config.json") << ConfigJson(f);
  if (f.hardware_profile == "measure") {
    StatusOr<std::string> measured = MeasureProfile(f, root);
    if (!measured.ok()) {
      std::cerr << "bench_trainer_policies: " << measured.status() << "\n";
      return 1;
    }
    f.hardware_profile = *measured;
  }
  if (!f.hardware_profile.empty()) {
    std::error_code ec;
    f.hardware_profile = fs::absolute(f.hardware_profile, ec).lexically_normal().string();
    StatusOr<train::HardwareProfileFile> profile =
        train::LoadHardwareProfileFile(f.hardware_profile);
    if (!profile.ok()) return BadFlag("--hardware-profile: " + profile.status().message());
    if (f.bucket_auto) {
      // The trainer takes the same value; the bench needs it for --max-length.
      if (profile->bucket_size_tokens <= 0) {
        return BadFlag("--bucket auto: " + f.hardware_profile +
                       " has no bucket_size_tokens; re-run skrull-trainer --profile");
      }
      f.bucket = profile->bucket_size_tokens;
    }
  } else if (f.bucket_auto) {
    return BadFlag("--bucket auto needs --hardware-profile FILE (see skrull-trainer --profile)");
  }
  if (f.bucket <= 0) return BadFlag("--bucket must be a positive token count or auto");
  std::optional<bench::LengthSampler> sampler;
  if (f.lengths != "bimodal") {
    StatusOr<bench::LengthSampler> cut =
        CutDataset(f.lengths, f.max_length > 0 ? f.max_length : f.bucket);
    if (!cut.ok()) return BadFlag("--lengths " + f.lengths + ": " + cut.status().message());
    sampler = *cut;
  }
  const std::vector<int64_t> lengths = SampleLengths(f, sampler ? &*sampler : nullptr);
  std::ofstream(root / "data.jsonl") << DataJsonl(lengths);
  int64_t under_1k = 0, longest = 0, total = 0;
  for (int64_t len : lengths) {
    under_1k += len < 1024;
    longest = std::max(longest, len);
    total += len;
  }
  std::ostringstream data;
  if (sampler) {
    data << sampler->description();
  } else {
    data << 100 * (1 - f.long_fraction) << "% short " << f.short_min << ".." << f.short_max << ", "
         << 100 * f.long_fraction << "% long " << f.long_min << ".." << f.long_max;
  }
  std::cout << "bench_trainer_policies: DP=" << f.dp << " x CP=" << f.cp << " (" << f.dp * f.cp
            << " processes, Gloo on loopback), " << f.steps << " steps (" << f.warmup
            << " warm-up), batch " << f.batch << "/DP rank, bucketSize " << f.bucket
            << (f.bucket_auto ? " (auto, from the profile)" : "") << "; hardware profile "
            << (f.hardware_profile.empty() ? "built-in (none given)" : f.hardware_profile)
            << "; data: " << f.samples << " samples, " << data.str()
            << " (drawn: " << std::setprecision(3)
            << 100.0 * under_1k / std::max<size_t>(1, lengths.size()) << "% < 1K, mean "
            << total / std::max<int64_t>(1, f.samples) << ", longest " << longest << ")"
            << std::setprecision(6) << "; model: hidden " << f.hidden << ", " << f.layers
            << " layers, " << f.heads << "/" << f.kv_heads << " heads; " << f.threads
            << " thread(s) per rank\n";

  std::vector<PolicyResult> results(f.policies.size());
  std::vector<std::vector<double>> rounds(f.policies.size());
  for (int round = 0; round < std::max(1, f.repeats); ++round) {
    for (size_t i = 0; i < f.policies.size(); ++i) {
      PolicyResult r = RunPolicy(f, root, f.policies[i], round);
      std::cout << "  round " << round << " " << f.policies[i] << ": "
                << (r.ok ? std::to_string(r.mean_step_seconds) + " s/step" : "FAILED") << std::endl;
      if (r.ok) rounds[i].push_back(r.mean_step_seconds);
      if (round == 0 ||
          (r.ok && (!results[i].ok || r.mean_step_seconds < results[i].mean_step_seconds))) {
        results[i] = r;
      }
    }
  }
  bool correct = true;
  const PolicyResult& first = results[0];
  std::cout << "\n"
            << std::left << std::setw(13) << "policy" << std::right << std::setw(11) << "s/step"
            << std::setw(11) << "tokens/s" << std::setw(10) << "cp_wait" << std::setw(10)
            << "dp_wait" << std::setw(10) << "attn_loc" << std::setw(10) << "attn_dst"
            << std::setw(10) << "padding" << std::setw(13) << "vs skrull"
            << "\n";
  for (const PolicyResult& r : results) {
    if (!r.ok) {
      std::cout << std::left << std::setw(13) << r.policy << " FAILED\n";
      correct = false;
      continue;
    }
    std::cout << std::left << std::setw(13) << r.policy << std::right << std::fixed
              << std::setprecision(3) << std::setw(11) << r.mean_step_seconds << std::setw(11)
              << std::setprecision(0) << r.tokens_per_second << std::setprecision(3)
              << std::setw(10) << r.cp_wait_seconds_per_step << std::setw(10)
              << r.dp_wait_seconds_per_step << std::setw(10) << r.local_attention_per_step
              << std::setw(10) << r.dist_attention_per_step << std::setw(10) << r.padding_tokens
              << std::setw(12) << std::setprecision(2)
              << (first.ok ? r.mean_step_seconds / first.mean_step_seconds : 0) << "x\n";
    if (first.ok && r.losses.size() == first.losses.size()) {
      for (size_t i = 0; i < r.losses.size(); ++i) {
        if (std::abs(r.losses[i] - first.losses[i]) > 1e-4 * std::abs(first.losses[i])) {
          std::cout << "  MISMATCH: " << r.policy << " step " << i << " loss " << r.losses[i]
                    << " vs " << first.policy << " " << first.losses[i] << "\n";
          correct = false;
        }
      }
    } else {
      correct = false;
    }
  }
  std::cout << "(seconds per step after warm-up on rank 0; cp_wait/dp_wait/attn_*: seconds per "
               "step including warm-up, rank 0; padding: all-gather padding rows, rank 0, whole "
               "run; last column: time relative to "
            << first.policy << ", > 1 is slower)\n";
  std::cout << "correctness (same losses for every policy): " << (correct ? "OK" : "FAILED")
            << "\n";
  if (!f.json_path.empty()) {
    json j = json::array();
    for (const PolicyResult& r : results) {
      j.push_back({{"policy", r.policy},
                   {"ok", r.ok},
                   {"mean_step_seconds", r.mean_step_seconds},
                   {"tokens_per_second", r.tokens_per_second},
                   {"cp_wait_seconds_per_step", r.cp_wait_seconds_per_step},
                   {"dp_wait_seconds_per_step", r.dp_wait_seconds_per_step},
                   {"step_seconds", r.step_seconds},
                   {"round_mean_step_seconds", rounds[&r - results.data()]},
                   {"losses", r.losses}});
    }
    std::ofstream(f.json_path) << j.dump(2) << "\n";
  }
  if (f.keep.empty()) fs::remove_all(root);
  return correct ? 0 : 1;
}

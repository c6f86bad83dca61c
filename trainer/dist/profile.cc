#include "trainer/dist/profile.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "scheduler/cost_model.h"
#include "scheduler/memory_model.h"
#include "scheduler/model_config.h"
#include "trainer/dist/cp_exchange.h"
#include "trainer/dist/process_groups.h"
#include "trainer/model/model.h"
#include "trainer/model/torch_compat.h"
#include "trainer/train/device_memory.h"
#include "trainer/train/model_options.h"
#include "trainer/train/optimizer.h"

namespace skrull::dist {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using Samples = std::vector<std::pair<int64_t, double>>;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Seconds of fn() (median of `repeats` after one warm-up call).
template <typename Fn>
double TimeIt(int repeats, c10::Device device, Fn&& fn) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    model::compat::Synchronize(device);
    const auto start = Clock::now();
    fn();
    model::compat::Synchronize(device);
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return Median(t);
}

double CollectiveFactor(scheduler::CollectiveOp op, int n) {
  const double f = static_cast<double>(n - 1) / n;
  return op == scheduler::CollectiveOp::kAllReduce ? 2 * f : f;
}

// `count` sequences of `length` random tokens, packed.
model::PackedBatch RandomBatch(int64_t count, int64_t length, int64_t vocab, c10::Device device,
                               std::mt19937* rng) {
  std::uniform_int_distribution<int64_t> token(0, vocab - 1);
  std::vector<std::vector<int64_t>> seqs(count, std::vector<int64_t>(length));
  for (auto& s : seqs) {
    for (auto& t : s) t = token(*rng);
  }
  return model::PackSequences(seqs, device);
}

Samples MeasureCollective(Group& group, scheduler::CollectiveOp op, const ProfileOptions& o) {
  Samples out;
  const int n = group.size;
  for (int64_t bytes : o.collective_bytes) {
    const int64_t rows = std::max<int64_t>(1, bytes / 4 / n);  // float32 rows per rank
    at::Tensor small = at::ones({rows});
    at::Tensor big = at::ones({rows * n});
    auto once = [&] {
      switch (op) {
        case scheduler::CollectiveOp::kAllGather:
          StartAllGather(group, small, big).Wait();
          break;
        case scheduler::CollectiveOp::kReduceScatter:
          StartReduceScatterSum(group, big, small).Wait();
          break;
        case scheduler::CollectiveOp::kAllReduce:
          StartAllReduceSum(group, big).Wait();
          break;
      }
    };
    out.emplace_back(rows * n * 4, TimeIt(o.repeats, c10::Device(c10::kCPU), once));
  }
  return out;
}

json PairsJson(const Samples& s) {
  json a = json::array();
  for (const auto& [x, y] : s) a.push_back(json::array({x, y}));
  return a;
}

}  // namespace

LinearFit FitLine(const std::vector<double>& xs, const std::vector<double>& ys) {
  SKRULL_CHECK(!xs.empty() && xs.size() == ys.size());
  const double n = static_cast<double>(xs.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    sx += xs[i];
    sy += ys[i];
    sxx += xs[i] * xs[i];
    sxy += xs[i] * ys[i];
  }
  const double den = n * sxx - sx * sx;
  LinearFit f;
  if (xs.size() == 1 || std::abs(den) < 1e-300) {
    f.slope = sx != 0 ? sy / sx : 0;
    return f;
  }
  f.slope = (n * sxy - sx * sy) / den;
  f.intercept = (sy - f.slope * sx) / n;
  return f;
}

scheduler::HardwareProfile::Collective FitCollective(scheduler::CollectiveOp op, int group_size,
                                                     const Samples& samples) {
  std::vector<double> xs, ys;
  for (const auto& [bytes, seconds] : samples) {
    xs.push_back(static_cast<double>(bytes) * CollectiveFactor(op, std::max(2, group_size)));
    ys.push_back(seconds);
  }
  LinearFit f = FitLine(xs, ys);
  scheduler::HardwareProfile::Collective c;
  c.latency_seconds = std::max(0.0, f.intercept);
  if (f.slope <= 0) {
    // Flat or noisy: charge the largest sample's time to bandwidth.
    f.slope = ys.empty() || xs.back() <= 0 ? 1e-12 : std::max(1e-15, ys.back() / xs.back());
  }
  c.bandwidth_bytes_per_second = 1.0 / f.slope;
  return c;
}

Status RunProfileRank(const api::JobSpec& job, const RankEnv& env, const ProfileOptions& o) {
  try {
    SKRULL_ASSIGN_OR_RETURN(c10::Device device, model::compat::ParseDevice(o.device));
    if (device.is_cuda()) device = c10::Device(c10::kCUDA, env.layout.local_rank());
    SKRULL_ASSIGN_OR_RETURN(std::string config_text, ReadFileToString(job.model.config));
    SKRULL_ASSIGN_OR_RETURN(scheduler::ModelConfig config,
                            scheduler::ParseHfConfigJson(config_text, job.model.config));
    const model::ModelOptions mo = train::ModelOptionsFromSpec(job, device);
    std::unique_ptr<train::DeviceMemory> memory = train::MakeDeviceMemory(device);
    const uint64_t before_model = memory->CurrentBytes();
    SKRULL_ASSIGN_OR_RETURN(std::unique_ptr<model::DecoderModel> model,
                            model::DecoderModel::Create(config, mo));
    train::Optimizer optimizer(model->NamedTrainableParameters(),
                               train::OptimizerOptionsFromSpec(job.training));
    std::mt19937 rng(static_cast<uint32_t>(17 + env.layout.rank()));
    const int64_t vocab = config.vocab_size;
    auto step = [&](const model::PackedBatch& b) {
      at::Tensor loss = model->LossSum(b);
      loss.backward();
    };
    // Warm-up with an optimizer step: AdamW state and gradients now exist.
    step(RandomBatch(1, 16, vocab, device, &rng));
    optimizer.ReducibleGradients();
    optimizer.Step(1e-9);
    const uint64_t static_bytes = memory->CurrentBytes();

    std::unique_ptr<ProcessGroups> groups;
    if (env.layout.world_size() > 1) {
      // Gloo: MeasureCollective times host tensors.
      SKRULL_ASSIGN_OR_RETURN(
          groups, ProcessGroups::Create(env.layout, RendezvousOptionsFor(env, CommBackend::kGloo)));
      auto barrier = groups->world().pg->barrier();
      SKRULL_C10D_CHECK(groups->world(), "barrier", 0, barrier->wait());
    }

    // Memory and dense compute vs tokens, ascending: where the peak cannot be
    // reset, each sample's peak is then still its own.
    std::vector<int64_t> counts = o.token_counts;
    std::sort(counts.begin(), counts.end());
    Samples memory_samples, token_seconds;
    for (int64_t tokens : counts) {
      const int64_t seqs = std::max<int64_t>(1, tokens / o.short_sequence_tokens);
      model::PackedBatch b = RandomBatch(seqs, o.short_sequence_tokens, vocab, device, &rng);
      memory->ResetPeak();
      step(b);
      optimizer.ZeroGrad();
      const double peak = static_cast<double>(memory->TakePeak().allocated_bytes);
      memory_samples.emplace_back(seqs * o.short_sequence_tokens,
                                  std::max(0.0, peak - static_cast<double>(static_bytes)));
      token_seconds.emplace_back(seqs * o.short_sequence_tokens, TimeIt(o.repeats, device, [&] {
                                   step(b);
                                   optimizer.ZeroGrad();
                                 }));
    }
    Samples seqlen_seconds;
    for (int64_t len : o.sequence_lengths) {
      model::PackedBatch b = RandomBatch(1, len, vocab, device, &rng);
      seqlen_seconds.emplace_back(len, TimeIt(o.repeats, device, [&] {
                                    step(b);
                                    optimizer.ZeroGrad();
                                  }));
    }
    // Peak: a square matmul in the model's dtype.
    const int64_t n = 1024;
    at::Tensor a = at::randn({n, n}, at::TensorOptions().dtype(mo.dtype).device(device));
    const double mm_seconds = TimeIt(o.repeats, device, [&] { at::mm(a, a); });
    const double peak_flops = 2.0 * n * n * n / std::max(mm_seconds, 1e-9);
    at::Tensor tiny = at::ones({1}, at::TensorOptions().device(device));
    const double launch = TimeIt(o.repeats, device,
                                 [&] {
                                   for (int i = 0; i < 100; ++i) tiny.add_(1);
                                 }) /
                          100;

    // Efficiency tables against the measured peak. The cost model's FLOPs
    // split into a linear (dense) and a quadratic (attention) part.
    scheduler::CostModel cost(config);
    const double f1 = cost.FlopsPerSequence(1), f2 = cost.FlopsPerSequence(2);
    const double quad = std::max(0.0, (f2 - 2 * f1) / 2);
    const double lin = f1 - quad;
    scheduler::HardwareProfile hw;
    hw.name =
        std::string(device.is_cuda() ? "cuda" : "cpu") + " (measured by skrull-trainer --profile)";
    hw.peak_flops_per_second = peak_flops;
    for (const auto& [tokens, seconds] : token_seconds) {
      const double flops =
          lin * tokens + quad * static_cast<double>(o.short_sequence_tokens) * tokens;
      hw.gemm_efficiency.emplace_back(tokens,
                                      std::clamp(flops / (peak_flops * seconds), 1e-4, 1.0));
    }
    for (const auto& [len, seconds] : seqlen_seconds) {
      const double eff = scheduler::HardwareProfile::Interpolate(hw.gemm_efficiency, len);
      const double attention_seconds = seconds - lin * len / (peak_flops * eff);
      const double flops = quad * static_cast<double>(len) * len;
      hw.attention_efficiency.emplace_back(
          len, attention_seconds <= 0
                   ? 1.0
                   : std::clamp(flops / (peak_flops * attention_seconds), 1e-4, 1.0));
    }
    hw.kernel_launch_seconds = launch;
    json collectives = json::object();
    if (groups) {
      Group& kv_group = groups->cp().size > 1 ? groups->cp() : groups->world();
      const Samples ag = MeasureCollective(kv_group, scheduler::CollectiveOp::kAllGather, o);
      const Samples rs = MeasureCollective(kv_group, scheduler::CollectiveOp::kReduceScatter, o);
      const Samples ar = MeasureCollective(groups->world(), scheduler::CollectiveOp::kAllReduce, o);
      hw.all_gather = FitCollective(scheduler::CollectiveOp::kAllGather, kv_group.size, ag);
      hw.reduce_scatter = FitCollective(scheduler::CollectiveOp::kReduceScatter, kv_group.size, rs);
      hw.all_reduce = FitCollective(scheduler::CollectiveOp::kAllReduce, groups->world().size, ar);
      collectives = {{"group_size_kv", kv_group.size},
                     {"group_size_world", groups->world().size},
                     {"backend", CommBackendName(groups->backend())},
                     {"all_gather", PairsJson(ag)},
                     {"reduce_scatter", PairsJson(rs)},
                     {"all_reduce", PairsJson(ar)}};
    } else {
      // One process: nothing to measure; a memory-copy bandwidth stands in.
      at::Tensor src = at::ones({16 << 20}, at::TensorOptions().device(device));
      at::Tensor dst = at::empty_like(src);
      const double s = TimeIt(o.repeats, device, [&] { dst.copy_(src); });
      const scheduler::HardwareProfile::Collective copy{0.0, 64.0 * (1 << 20) / std::max(s, 1e-9)};
      hw.all_gather = hw.reduce_scatter = hw.all_reduce = copy;
    }
    hw.source_notes =
        "Measured on this host by skrull-trainer --profile for model " + job.model.config +
        ": peak = 1024^3 matmul; gemm_efficiency from packed " +
        std::to_string(o.short_sequence_tokens) +
        "-token sequences (fwd+bwd); attention_efficiency from single sequences minus the dense "
        "part; collectives fitted latency + bytes x factor / busbw" +
        (groups ? "" : " (one process: collectives not measured, memory-copy bandwidth)") + ".";

    // Memory fit and BucketSize.
    std::vector<double> xs, ys;
    for (const auto& [t, b] : memory_samples) {
      xs.push_back(static_cast<double>(t));
      ys.push_back(b);
    }
    LinearFit mem = FitLine(xs, ys);
    const double alpha = std::max(mem.slope, 1.0);
    const double beta = std::max(0.0, mem.intercept);
    // A GPU is the rank's own; host memory is shared by the node's ranks.
    const int sharing = device.is_cuda() ? 1 : std::max(1, env.layout.procs_per_node());
    const uint64_t capacity = memory->CapacityBytes() / static_cast<uint64_t>(sharing);
    const scheduler::MemoryLine line{static_cast<double>(static_bytes), alpha};
    int64_t bucket = scheduler::BucketSizeTokens(line, static_cast<double>(capacity),
                                                 1.0 - o.safety_margin, beta);
    const int64_t raw_bucket = bucket;
    bucket =
        std::clamp(bucket, job.tuning.min_bucket_size_tokens, job.tuning.max_bucket_size_tokens);

    if (env.layout.rank() != 0) return OkStatus();
    json j = json::parse(scheduler::ToJson(hw));
    j["bucket_size_tokens"] = bucket;
    j["memory"] = {{"alpha_bytes_per_token", alpha},
                   {"beta_bytes", beta},
                   {"static_bytes", static_bytes},
                   {"model_bytes", static_bytes > before_model ? static_bytes - before_model : 0},
                   {"capacity_bytes", capacity},
                   {"safety_margin", o.safety_margin},
                   {"unclamped_bucket_size_tokens", raw_bucket},
                   {"procs_sharing_memory", device.is_cuda() ? 1 : env.layout.procs_per_node()},
                   {"samples", PairsJson(memory_samples)}};
    j["measurements"] = {{"tokens_seconds", PairsJson(token_seconds)},
                         {"seqlen_seconds", PairsJson(seqlen_seconds)},
                         {"matmul_seconds", mm_seconds},
                         {"collectives", collectives}};
    j["job"] = job.name;
    j["world_size"] = env.layout.world_size();
    std::string out = o.out_path;
    if (out.empty()) {
      out = (env.output_dir.empty() ? api::OutputDirOf(job) : env.output_dir) + "/profile.json";
    }
    const std::string text = j.dump(2) + "\n";
    // The scheduler must be able to read what we wrote.
    SKRULL_RETURN_IF_ERROR(scheduler::ParseHardwareProfileJson(text, out).status());
    SKRULL_RETURN_IF_ERROR(WriteFileAtomically(out, text));
    std::cerr << "skrull profile: " << out << ": peak " << peak_flops / 1e9 << " GFLOP/s, memory "
              << alpha << " bytes/token + " << beta << " (static " << static_bytes / (1 << 20)
              << " MiB of " << capacity / (1 << 20) << " MiB) -> bucketSize " << bucket
              << " tokens; to train with it set spec.scheduler.hardwareProfile: " << out
              << " and bucketSize: auto" << std::endl;
    return OkStatus();
  } catch (const std::exception& e) {
    return InternalError(std::string("profiling failed: ") + e.what());
  }
}

}  // namespace skrull::dist

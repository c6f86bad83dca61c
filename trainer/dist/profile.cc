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
#include "trainer/dist/c10d_collectives.h"
#include "trainer/dist/cp_exchange.h"
#include "trainer/dist/process_groups.h"
#include "trainer/dist/rank_device.h"
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

// Times `op` on the group's own backend and device (NCCL: device tensors,
// timed with a device synchronize), the way training runs it.
Samples MeasureCollective(Group& group, scheduler::CollectiveOp op, const ProfileOptions& o) {
  Samples out;
  const int n = group.size;
  const at::TensorOptions on_device = at::TensorOptions().device(group.device);
  for (int64_t bytes : o.collective_bytes) {
    const int64_t rows = std::max<int64_t>(1, bytes / 4 / n);  // float32 rows per rank
    at::Tensor small = at::ones({rows}, on_device);
    at::Tensor big = at::ones({rows * n}, on_device);
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
    out.emplace_back(rows * n * 4, TimeIt(o.repeats, group.device, once));
  }
  return out;
}

json PairsJson(const Samples& s) {
  json a = json::array();
  for (const auto& [x, y] : s) a.push_back(json::array({x, y}));
  return a;
}

}  // namespace

scheduler::HardwareProfile::Collective FitCollective(scheduler::CollectiveOp op, int group_size,
                                                     const Samples& samples) {
  std::vector<double> xs, ys;
  for (const auto& [bytes, seconds] : samples) {
    xs.push_back(static_cast<double>(bytes) * CollectiveFactor(op, std::max(2, group_size)));
    ys.push_back(seconds);
  }
  scheduler::LinearFit f = scheduler::FitLine(xs, ys);
  scheduler::HardwareProfile::Collective c;
  c.latency_seconds = std::max(0.0, f.intercept);
  if (f.slope <= 0) {
    // Flat or noisy: charge the largest sample's time to bandwidth.
    f.slope = ys.empty() || xs.back() <= 0 ? 1e-12 : std::max(1e-15, ys.back() / xs.back());
  }
  c.bandwidth_bytes_per_second = 1.0 / f.slope;
  return c;
}

namespace {

// Memory and dense compute vs tokens, ascending (where the peak cannot be
// reset, each sample's peak is then still its own); attention vs length; the
// matmul peak and the launch latency.
template <typename StepFn>
void MeasureCompute(const ProfileOptions& o, int64_t vocab, c10::Device device,
                    c10::ScalarType dtype, train::DeviceMemory* memory, std::mt19937* rng,
                    StepFn&& step, ProfileMeasurements* m) {
  std::vector<int64_t> counts = o.token_counts;
  std::sort(counts.begin(), counts.end());
  for (int64_t tokens : counts) {
    const int64_t seqs = std::max<int64_t>(1, tokens / o.short_sequence_tokens);
    model::PackedBatch b = RandomBatch(seqs, o.short_sequence_tokens, vocab, device, rng);
    memory->ResetPeak();
    step(b);
    const double peak = static_cast<double>(memory->TakePeak().allocated_bytes);
    m->memory_samples.emplace_back(seqs * o.short_sequence_tokens,
                                   std::max(0.0, peak - static_cast<double>(m->static_bytes)));
    m->token_seconds.emplace_back(seqs * o.short_sequence_tokens,
                                  TimeIt(o.repeats, device, [&] { step(b); }));
  }
  for (int64_t len : o.sequence_lengths) {
    model::PackedBatch b = RandomBatch(1, len, vocab, device, rng);
    m->seqlen_seconds.emplace_back(len, TimeIt(o.repeats, device, [&] { step(b); }));
  }
  // Peak: a square matmul in the model's dtype.
  const int64_t n = 1024;
  at::Tensor a = at::randn({n, n}, at::TensorOptions().dtype(dtype).device(device));
  m->matmul_seconds = TimeIt(o.repeats, device, [&] { at::mm(a, a); });
  m->peak_flops = 2.0 * n * n * n / std::max(m->matmul_seconds, 1e-9);
  at::Tensor tiny = at::ones({1}, at::TensorOptions().device(device));
  m->launch_seconds = TimeIt(o.repeats, device,
                             [&] {
                               for (int i = 0; i < 100; ++i) tiny.add_(1);
                             }) /
                      100;
}

// Collectives on the CP group (the world when CP = 1) and the world; one
// process: a memory-copy bandwidth stands in.
void MeasureCollectives(const ProfileOptions& o, c10::Device device, ProcessGroups* groups,
                        ProfileMeasurements* m) {
  if (groups == nullptr) {
    at::Tensor src = at::ones({16 << 20}, at::TensorOptions().device(device));
    at::Tensor dst = at::empty_like(src);
    m->copy_seconds = TimeIt(o.repeats, device, [&] { dst.copy_(src); });
    return;
  }
  Group& kv_group = groups->cp().size > 1 ? groups->cp() : groups->world();
  m->collectives_measured = true;
  m->kv_group_size = kv_group.size;
  m->world_group_size = groups->world().size;
  m->backend = CommBackendName(groups->backend());
  m->all_gather = MeasureCollective(kv_group, scheduler::CollectiveOp::kAllGather, o);
  m->reduce_scatter = MeasureCollective(kv_group, scheduler::CollectiveOp::kReduceScatter, o);
  m->all_reduce = MeasureCollective(groups->world(), scheduler::CollectiveOp::kAllReduce, o);
}

}  // namespace

StatusOr<ProfileMeasurements> MeasureProfile(const api::JobSpec& job, const RankEnv& env,
                                             const ProfileOptions& o) {
  try {
    // The device training would use (rank_device.h): cuda:<local rank>, or refused.
    SKRULL_ASSIGN_OR_RETURN(
        const RankDevice rank_device,
        ChooseRankDevice(o.device, job.resources.gpus_per_proc, env.layout.local_rank(),
                         env.layout.procs_per_node(), model::compat::CudaDeviceCount()));
    const c10::Device device =
        rank_device.cuda ? c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(rank_device.index))
                         : c10::Device(c10::kCPU);
    SKRULL_ASSIGN_OR_RETURN(std::string config_text, ReadFileToString(job.model.config));
    ProfileMeasurements m;
    SKRULL_ASSIGN_OR_RETURN(m.config, scheduler::ParseHfConfigJson(config_text, job.model.config));
    const model::ModelOptions mo = train::ModelOptionsFromSpec(job, device);
    m.config_path = job.model.config;
    m.cuda = device.is_cuda();
    std::unique_ptr<train::DeviceMemory> memory = train::MakeDeviceMemory(device);
    const uint64_t before_model = memory->CurrentBytes();
    SKRULL_ASSIGN_OR_RETURN(std::unique_ptr<model::DecoderModel> model,
                            model::DecoderModel::Create(m.config, mo));
    train::Optimizer optimizer(model->NamedTrainableParameters(),
                               train::OptimizerOptionsFromSpec(job.training));
    std::mt19937 rng(static_cast<uint32_t>(17 + env.layout.rank()));
    auto step = [&](const model::PackedBatch& b) {
      at::Tensor loss = model->LossSum(b);
      loss.backward();
      optimizer.ZeroGrad();
    };
    // Warm-up with an optimizer step: AdamW state and gradients now exist.
    {
      at::Tensor loss = model->LossSum(RandomBatch(1, 16, m.config.vocab_size, device, &rng));
      loss.backward();
    }
    optimizer.ReducibleGradients();
    optimizer.Step(1e-9);
    m.static_bytes = memory->CurrentBytes();
    m.model_bytes = m.static_bytes > before_model ? m.static_bytes - before_model : 0;
    // A GPU is the rank's own; host memory is shared by the node's ranks.
    m.procs_sharing_memory = device.is_cuda() ? 1 : std::max(1, env.layout.procs_per_node());
    m.capacity_bytes = memory->CapacityBytes() / static_cast<uint64_t>(m.procs_sharing_memory);

    std::unique_ptr<ProcessGroups> groups;
    if (env.layout.world_size() > 1) {
      // Training's backend on training's device: NCCL prices CP traffic at
      // NVLink speed, not Gloo's TCP over host tensors.
      RendezvousOptions ro = RendezvousOptionsFor(env, TrainingBackend(rank_device), job);
      ro.cuda_device = rank_device.index;
      SKRULL_ASSIGN_OR_RETURN(groups, ProcessGroups::Create(env.layout, ro));
      C10dCollectives world(&groups->world());
      SKRULL_RETURN_IF_ERROR(world.Barrier());
    }
    MeasureCompute(o, m.config.vocab_size, device, mo.dtype, memory.get(), &rng, step, &m);
    MeasureCollectives(o, device, groups.get(), &m);
    return m;
  } catch (const std::exception& e) {
    return InternalError(std::string("profiling failed: ") + e.what());
  }
}

FittedProfile FitProfile(const ProfileMeasurements& m, const ProfileOptions& o,
                         int64_t min_bucket_size_tokens, int64_t max_bucket_size_tokens) {
  FittedProfile f;
  // Efficiency tables against the measured peak. The cost model's FLOPs
  // split into a linear (dense) and a quadratic (attention) part.
  scheduler::CostModel cost(m.config);
  const double f1 = cost.FlopsPerSequence(1), f2 = cost.FlopsPerSequence(2);
  const double quad = std::max(0.0, (f2 - 2 * f1) / 2);
  const double lin = f1 - quad;
  scheduler::HardwareProfile& hw = f.hardware;
  hw.name = std::string(m.cuda ? "cuda" : "cpu") + " (measured by skrull-trainer --profile)";
  hw.peak_flops_per_second = m.peak_flops;
  for (const auto& [tokens, seconds] : m.token_seconds) {
    const double flops =
        lin * tokens + quad * static_cast<double>(o.short_sequence_tokens) * tokens;
    hw.gemm_efficiency.emplace_back(tokens,
                                    std::clamp(flops / (m.peak_flops * seconds), 1e-4, 1.0));
  }
  for (const auto& [len, seconds] : m.seqlen_seconds) {
    const double eff = scheduler::HardwareProfile::Interpolate(hw.gemm_efficiency, len);
    const double attention_seconds = seconds - lin * len / (m.peak_flops * eff);
    const double flops = quad * static_cast<double>(len) * len;
    hw.attention_efficiency.emplace_back(
        len, attention_seconds <= 0
                 ? 1.0
                 : std::clamp(flops / (m.peak_flops * attention_seconds), 1e-4, 1.0));
  }
  hw.kernel_launch_seconds = m.launch_seconds;
  if (m.collectives_measured) {
    hw.all_gather =
        FitCollective(scheduler::CollectiveOp::kAllGather, m.kv_group_size, m.all_gather);
    hw.reduce_scatter =
        FitCollective(scheduler::CollectiveOp::kReduceScatter, m.kv_group_size, m.reduce_scatter);
    hw.all_reduce =
        FitCollective(scheduler::CollectiveOp::kAllReduce, m.world_group_size, m.all_reduce);
  } else {
    const scheduler::HardwareProfile::Collective copy{
        0.0, 64.0 * (1 << 20) / std::max(m.copy_seconds, 1e-9)};
    hw.all_gather = hw.reduce_scatter = hw.all_reduce = copy;
  }
  hw.source_notes =
      "Measured on this host by skrull-trainer --profile for model " + m.config_path +
      ": peak = 1024^3 matmul; gemm_efficiency from packed " +
      std::to_string(o.short_sequence_tokens) +
      "-token sequences (fwd+bwd); attention_efficiency from single sequences minus the dense "
      "part; collectives fitted latency + bytes x factor / busbw" +
      (m.collectives_measured ? ""
                              : " (one process: collectives not measured, memory-copy bandwidth)") +
      ".";

  // Memory fit and BucketSize.
  std::vector<double> xs, ys;
  for (const auto& [t, b] : m.memory_samples) {
    xs.push_back(static_cast<double>(t));
    ys.push_back(b);
  }
  const scheduler::LinearFit mem = scheduler::FitLine(xs, ys);
  f.alpha_bytes_per_token = std::max(mem.slope, 1.0);
  f.beta_bytes = std::max(0.0, mem.intercept);
  const scheduler::MemoryLine line{static_cast<double>(m.static_bytes), f.alpha_bytes_per_token};
  f.unclamped_bucket_size_tokens = scheduler::BucketSizeTokens(
      line, static_cast<double>(m.capacity_bytes), 1.0 - o.safety_margin, f.beta_bytes);
  f.bucket_size_tokens =
      std::clamp(f.unclamped_bucket_size_tokens, min_bucket_size_tokens, max_bucket_size_tokens);
  return f;
}

std::string ProfileJson(const ProfileMeasurements& m, const FittedProfile& f,
                        const ProfileOptions& o, const std::string& job_name, int world_size) {
  json collectives = json::object();
  if (m.collectives_measured) {
    collectives = {{"group_size_kv", m.kv_group_size},
                   {"group_size_world", m.world_group_size},
                   {"backend", m.backend},
                   {"all_gather", PairsJson(m.all_gather)},
                   {"reduce_scatter", PairsJson(m.reduce_scatter)},
                   {"all_reduce", PairsJson(m.all_reduce)}};
  }
  json j = json::parse(scheduler::ToJson(f.hardware));
  j["bucket_size_tokens"] = f.bucket_size_tokens;
  j["memory"] = {{"alpha_bytes_per_token", f.alpha_bytes_per_token},
                 {"beta_bytes", f.beta_bytes},
                 {"static_bytes", m.static_bytes},
                 {"model_bytes", m.model_bytes},
                 {"capacity_bytes", m.capacity_bytes},
                 {"safety_margin", o.safety_margin},
                 {"unclamped_bucket_size_tokens", f.unclamped_bucket_size_tokens},
                 {"procs_sharing_memory", m.procs_sharing_memory},
                 {"samples", PairsJson(m.memory_samples)}};
  j["measurements"] = {{"tokens_seconds", PairsJson(m.token_seconds)},
                       {"seqlen_seconds", PairsJson(m.seqlen_seconds)},
                       {"matmul_seconds", m.matmul_seconds},
                       {"collectives", collectives}};
  j["job"] = job_name;
  j["world_size"] = world_size;
  return j.dump(2) + "\n";
}

Status RunProfileRank(const api::JobSpec& job, const RankEnv& env, const ProfileOptions& o) {
  SKRULL_ASSIGN_OR_RETURN(const ProfileMeasurements m, MeasureProfile(job, env, o));
  const FittedProfile f =
      FitProfile(m, o, job.tuning.min_bucket_size_tokens, job.tuning.max_bucket_size_tokens);
  if (env.layout.rank() != 0) return OkStatus();
  std::string out = o.out_path;
  if (out.empty()) {
    out = (env.output_dir.empty() ? api::OutputDirOf(job) : env.output_dir) + "/profile.json";
  }
  const std::string text = ProfileJson(m, f, o, job.name, env.layout.world_size());
  // The scheduler must be able to read what we wrote.
  SKRULL_RETURN_IF_ERROR(scheduler::ParseHardwareProfileJson(text, out).status());
  SKRULL_RETURN_IF_ERROR(WriteFileAtomically(out, text));
  std::cerr << "skrull profile: " << out << ": peak " << m.peak_flops / 1e9 << " GFLOP/s, memory "
            << f.alpha_bytes_per_token << " bytes/token + " << f.beta_bytes << " (static "
            << m.static_bytes / (1 << 20) << " MiB of " << m.capacity_bytes / (1 << 20)
            << " MiB) -> bucketSize " << f.bucket_size_tokens
            << " tokens; to train with it set spec.scheduler.hardwareProfile: " << out
            << " and bucketSize: auto" << std::endl;
  return OkStatus();
}

}  // namespace skrull::dist

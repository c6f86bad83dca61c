#include "trainer/metrics/trainer_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "trainer/metrics/metric_names.h"
#include "trainer/metrics/metrics_http_server.h"
#include "trainer/metrics/pushgateway.h"
#include "trainer/metrics/snapshot_collectable.h"
#include "trainer/metrics/tensorboard_events.h"

#ifndef SKRULL_VERSION
#define SKRULL_VERSION "unknown"
#endif

namespace skrull::metrics {

const std::vector<double>& StepDurationBucketsSeconds() {
  static const std::vector<double> kBuckets = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,  2.5,
                                               5,    10,    25,   50,  100,  250, 600};
  return kBuckets;
}

const std::vector<double>& SchedulerDurationBucketsSeconds() {
  static const std::vector<double> kBuckets = {1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3,
                                               1e-2, 3e-2, 0.1,  0.3,  1,    3,    10};
  return kBuckets;
}

namespace {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::Labels;

double SystemNowUnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// gethostname(), or "unknown" when it fails or is empty.
std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "unknown";
  return name;
}

}  // namespace

Status ValidateMetricsOptions(const MetricsOptions& o) {
  std::vector<std::string> problems;
  auto add = [&problems](const std::string& field, const std::string& what) {
    problems.push_back("metrics." + field + ": " + what);
  };
  if (o.job.empty()) add("job", "must not be empty");
  if (o.rank < 0) add("rank", "must be >= 0 (got " + std::to_string(o.rank) + ")");
  if (o.dp_rank < 0) add("dpRank", "must be >= 0 (got " + std::to_string(o.dp_rank) + ")");
  if (o.cp_rank < 0) add("cpRank", "must be >= 0 (got " + std::to_string(o.cp_rank) + ")");
  if (o.dp < 1) add("dp", "must be >= 1 (got " + std::to_string(o.dp) + ")");
  if (o.cp < 1) add("cp", "must be >= 1 (got " + std::to_string(o.cp) + ")");
  if (o.dp >= 1 && o.dp_rank >= o.dp) {
    add("dpRank",
        "must be < dp (" + std::to_string(o.dp_rank) + " >= " + std::to_string(o.dp) + ")");
  }
  if (o.cp >= 1 && o.cp_rank >= o.cp) {
    add("cpRank",
        "must be < cp (" + std::to_string(o.cp_rank) + " >= " + std::to_string(o.cp) + ")");
  }
  if (o.port != 0 && o.port != kEphemeralPort && (o.port < 1 || o.port > 65535)) {
    add("port",
        "must be 0 (off), -1 (ephemeral) or in 1..65535 (got " + std::to_string(o.port) + ")");
  }
  if (o.port != 0 && o.bind_address.empty()) add("bindAddress", "must not be empty when serving");
  if (o.server_threads < 1) {
    add("serverThreads", "must be >= 1 (got " + std::to_string(o.server_threads) + ")");
  }
  if (!o.pushgateway_url.empty()) {
    StatusOr<PushgatewayAddress> address = ParsePushgatewayUrl(o.pushgateway_url);
    if (!address.ok()) problems.push_back(address.status().message());
    if (o.job.find('/') != std::string::npos) {
      add("job", "must not contain '/' when pushing to a Pushgateway (got \"" + o.job + "\")");
    }
    if (!(o.push_timeout_seconds > 0)) {
      add("pushTimeoutSeconds", "must be > 0 (got " + std::to_string(o.push_timeout_seconds) + ")");
    }
  }
  if (problems.empty()) return OkStatus();
  std::string message;
  for (const std::string& p : problems) message += (message.empty() ? "" : "; ") + p;
  return InvalidArgumentError(message);
}

struct TrainerMetrics::Impl {
  MetricsOptions options;
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::shared_ptr<SnapshotCollectable> collectable =
      std::make_shared<SnapshotCollectable>(registry);
  std::unique_ptr<MetricsHttpServer> server;  // null when not serving

  std::mutex jsonl_mu;
  std::FILE* jsonl = nullptr;               // guarded by jsonl_mu
  std::unique_ptr<EventFileWriter> events;  // guarded by jsonl_mu; null without

  // Series, owned by `registry`.
  Counter* steps = nullptr;
  Counter* tokens = nullptr;
  Counter* padding_tokens = nullptr;
  Counter* model_flops = nullptr;
  Counter* hardware_flops = nullptr;
  Counter* micro_batches = nullptr;
  Counter* rollbacks_dacp = nullptr;
  Counter* rollbacks_gds = nullptr;
  Counter* sequences_local = nullptr;
  Counter* sequences_distributed = nullptr;
  Counter* time_compute = nullptr;
  Counter* time_cp_wait = nullptr;
  Counter* time_dp_wait = nullptr;
  Counter* time_idle = nullptr;
  prometheus::Family<Counter>* source_samples = nullptr;  // series added per source
  prometheus::Family<Counter>* source_tokens = nullptr;
  Gauge* step = nullptr;
  Gauge* loss = nullptr;
  Gauge* eval_loss = nullptr;
  Gauge* tokens_per_second = nullptr;
  Gauge* mfu = nullptr;
  Gauge* hfu = nullptr;
  Gauge* peak_flops = nullptr;
  Gauge* memory_peak = nullptr;
  Gauge* memory_peak_allocated = nullptr;
  Gauge* memory_capacity = nullptr;
  Gauge* memory_static = nullptr;
  Gauge* bucket_size = nullptr;
  Gauge* rank_tokens_peak = nullptr;
  Gauge* last_step_timestamp = nullptr;
  Histogram* step_duration = nullptr;
  Histogram* scheduler_duration = nullptr;

  ~Impl() {
    server.reset();  // stop scrapes before the series go away
    if (jsonl != nullptr) std::fclose(jsonl);
  }

  Labels IdentityLabels() const {
    return {{kLabelJob, options.job},
            {kLabelRank, std::to_string(options.rank)},
            {kLabelDpRank, std::to_string(options.dp_rank)},
            {kLabelCpRank, std::to_string(options.cp_rank)},
            {kLabelNode, options.node}};
  }

  void RegisterFamilies() {
    prometheus::Registry& reg = *registry;
    const Labels identity = IdentityLabels();
    auto counter = [&](const char* name, const char* help) -> prometheus::Family<Counter>& {
      return prometheus::BuildCounter().Name(name).Help(help).Labels(identity).Register(reg);
    };
    auto gauge = [&](const char* name, const char* help) -> Gauge* {
      return &prometheus::BuildGauge().Name(name).Help(help).Labels(identity).Register(reg).Add({});
    };
    auto histogram = [&](const char* name, const char* help, const std::vector<double>& buckets) {
      return &prometheus::BuildHistogram().Name(name).Help(help).Labels(identity).Register(reg).Add(
          {}, buckets);
    };

    steps = &counter(kTrainStepsTotal, "Training steps (optimizer updates) completed by the rank.")
                 .Add({});
    tokens = &counter(kTrainTokensTotal, "Real (non-padding) tokens the rank trained on.").Add({});
    padding_tokens =
        &counter(kPaddingTokensTotal, "Padding tokens the rank processed (wasted work).").Add({});
    model_flops = &counter(kModelFlopsTotal,
                           "Model FLOPs executed by the rank: forward + backward, causal attention "
                           "counted as half, no recompute (the MFU numerator).")
                       .Add({});
    hardware_flops = &counter(kHardwareFlopsTotal,
                              "Model FLOPs plus recomputed forward FLOPs executed by the rank (the "
                              "HFU numerator).")
                          .Add({});
    micro_batches =
        &counter(kMicroBatchesTotal, "Micro-batches the rank ran (forward + backward passes).")
             .Add({});
    auto& rollbacks = counter(kSchedulerRollbacksTotal,
                              "Scheduler roll-backs taken to respect BucketSize, by level: dacp "
                              "(local placement made distributed), gds (re-batched with one more "
                              "micro-batch).");
    rollbacks_dacp = &rollbacks.Add({{kLabelLevel, kLevelDacp}});
    rollbacks_gds = &rollbacks.Add({{kLabelLevel, kLevelGds}});
    auto& sequences = counter(kSequencesTotal,
                              "Sequences the rank ran, by placement: local (whole on one rank) or "
                              "distributed (a context-parallel shard).");
    sequences_local = &sequences.Add({{kLabelPlacement, kPlacementLocal}});
    sequences_distributed = &sequences.Add({{kLabelPlacement, kPlacementDistributed}});
    auto& time = counter(kTimeSecondsTotal,
                         "Wall time of the rank's steps by phase: compute, cp_comm_wait (blocked "
                         "on context-parallel exchange), dp_comm_wait (blocked on the gradient "
                         "all-reduce), idle (everything else).");
    time_compute = &time.Add({{kLabelPhase, kPhaseCompute}});
    time_cp_wait = &time.Add({{kLabelPhase, kPhaseCpCommWait}});
    time_dp_wait = &time.Add({{kLabelPhase, kPhaseDpCommWait}});
    time_idle = &time.Add({{kLabelPhase, kPhaseIdle}});
    source_samples = &counter(kSourceSamplesTotal,
                              "Samples drawn from each data source (spec.data.sources) over the "
                              "global batch.");
    source_tokens = &counter(kSourceTokensTotal,
                             "Tokens drawn from each data source (spec.data.sources) over the "
                             "global batch.");

    step = gauge(kTrainStep, "Global step number of the rank's last recorded step.");
    loss = gauge(kTrainLoss, "Training loss of the last step (NaN when unknown).");
    loss->Set(std::numeric_limits<double>::quiet_NaN());  // no step yet: a gap, not a 0
    eval_loss = gauge(kEvalLoss,
                      "Validation loss (spec.data.eval) of the last evaluation: mean CE per label "
                      "token of the held-out set (NaN before the first).");
    eval_loss->Set(std::numeric_limits<double>::quiet_NaN());
    tokens_per_second =
        gauge(kTokensPerSecond, "Real tokens per second of the last step on the rank.");
    mfu = gauge(kMfuRatio,
                "Model FLOPs utilisation of the last step: model FLOPs / step seconds / peak "
                "FLOP/s of the hardware profile.");
    hfu = gauge(kHfuRatio,
                "Hardware FLOPs utilisation of the last step: like MFU but counting recomputed "
                "FLOPs.");
    peak_flops = gauge(kPeakFlopsPerSecond,
                       "Dense peak FLOP/s of the rank's device in the hardware profile (the MFU "
                       "denominator).");
    memory_peak = gauge(kMemoryPeakBytes,
                        "Peak device memory of the last step: the CUDA caching allocator's "
                        "reserved bytes (host RSS high-water mark on CPU runs).");
    memory_peak_allocated =
        gauge(kMemoryPeakAllocatedBytes,
              "Peak device memory held by tensors in the last step: the CUDA caching "
              "allocator's allocated bytes (host RSS high-water mark on CPU runs).");
    memory_capacity = gauge(kMemoryCapacityBytes, "Device (or host) memory capacity of the rank.");
    memory_static = gauge(kMemoryStaticBytes,
                          "Parameters, gradients and optimizer state the rank holds between "
                          "steps (by ZeRO stage).");
    bucket_size = gauge(kBucketSizeTokens, "BucketSize in force: most tokens a rank may hold.");
    rank_tokens_peak = gauge(kRankTokensPeak,
                             "Most tokens the rank held in one micro-batch during the last step.");
    last_step_timestamp =
        gauge(kLastStepTimestampSeconds, "Unix time at which the rank recorded its last step.");
    step_duration = histogram(kStepDurationSeconds, "Wall time of one training step on the rank.",
                              StepDurationBucketsSeconds());
    scheduler_duration = histogram(kSchedulerDurationSeconds,
                                   "Time spent planning one step (scheduler::Plan) on the rank.",
                                   SchedulerDurationBucketsSeconds());

    Labels info = {{kLabelVersion, options.version},
                   {kLabelPolicy, options.policy},
                   {kLabelDp, std::to_string(options.dp)},
                   {kLabelCp, std::to_string(options.cp)}};
    prometheus::BuildGauge()
        .Name(kInfo)
        .Help("Constant 1, labelled with the build version, scheduling policy and topology.")
        .Labels(identity)
        .Register(reg)
        .Add(info)
        .Set(1);
  }
};

TrainerMetrics::TrainerMetrics(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TrainerMetrics::~TrainerMetrics() = default;

StatusOr<std::unique_ptr<TrainerMetrics>> TrainerMetrics::Create(MetricsOptions options) {
  SKRULL_RETURN_IF_ERROR(ValidateMetricsOptions(options));
  if (options.version.empty()) options.version = SKRULL_VERSION;
  if (!options.now_unix_seconds) options.now_unix_seconds = SystemNowUnixSeconds;
  // Prometheus drops a label with an empty value: keep `node` on every series.
  if (options.node.empty()) options.node = HostName();

  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  const MetricsOptions& o = impl->options;
  impl->RegisterFamilies();

  if (!o.jsonl_path.empty()) {
    std::filesystem::path path(o.jsonl_path);
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) {
      return IoError(o.jsonl_path + ": cannot create the parent directory: " + ec.message());
    }
    impl->jsonl = std::fopen(o.jsonl_path.c_str(), "a");
    if (impl->jsonl == nullptr) {
      return IoError(o.jsonl_path + ": cannot open for append: " + std::strerror(errno));
    }
  }

  if (!o.tensorboard_dir.empty()) {
    SKRULL_ASSIGN_OR_RETURN(
        impl->events, EventFileWriter::Create(o.tensorboard_dir, impl->options.now_unix_seconds()));
  }

  if (o.port != 0) {
    std::shared_ptr<SnapshotCollectable> collectable = impl->collectable;
    SKRULL_ASSIGN_OR_RETURN(
        impl->server, MetricsHttpServer::Start(
                          o.bind_address, o.port == kEphemeralPort ? 0 : o.port, o.server_threads,
                          [collectable] { return collectable->Serialize(); }));
  }
  return std::unique_ptr<TrainerMetrics>(new TrainerMetrics(std::move(impl)));
}

Status TrainerMetrics::RecordStep(const StepRecord& r) {
  const std::string problem = StepRecordProblem(r);
  SKRULL_CHECK(problem.empty()) << "TrainerMetrics::RecordStep(step " << r.step << "): " << problem;
  Impl& m = *impl_;
  const StepRates rates = ComputeStepRates(r);
  const double now = m.options.now_unix_seconds();
  {
    auto lock = m.collectable->LockForUpdate();
    m.steps->Increment();
    m.tokens->Increment(static_cast<double>(r.tokens));
    m.padding_tokens->Increment(static_cast<double>(r.padding_tokens));
    m.model_flops->Increment(r.model_flops);
    m.hardware_flops->Increment(r.hardware_flops);
    m.micro_batches->Increment(static_cast<double>(r.micro_batches));
    m.rollbacks_dacp->Increment(static_cast<double>(r.rollbacks.dacp));
    m.rollbacks_gds->Increment(static_cast<double>(r.rollbacks.gds));
    m.sequences_local->Increment(static_cast<double>(r.local_sequences));
    m.sequences_distributed->Increment(static_cast<double>(r.distributed_sequences));
    m.time_compute->Increment(r.phase_seconds.compute);
    m.time_cp_wait->Increment(r.phase_seconds.cp_comm_wait);
    m.time_dp_wait->Increment(r.phase_seconds.dp_comm_wait);
    m.time_idle->Increment(r.phase_seconds.idle);
    for (size_t i = 0; i < r.source_samples.size(); ++i) {
      const Labels source = {{kLabelSource, std::to_string(i)}};
      m.source_samples->Add(source).Increment(static_cast<double>(r.source_samples[i]));
      m.source_tokens->Add(source).Increment(static_cast<double>(r.source_tokens[i]));
    }
    m.step->Set(static_cast<double>(r.step));
    m.loss->Set(r.loss);
    if (std::isfinite(r.eval_loss)) m.eval_loss->Set(r.eval_loss);
    m.tokens_per_second->Set(rates.tokens_per_second);
    m.mfu->Set(rates.mfu);
    m.hfu->Set(rates.hfu);
    m.peak_flops->Set(r.peak_flops_per_second);
    m.memory_peak->Set(static_cast<double>(r.memory_peak_bytes));
    m.memory_peak_allocated->Set(static_cast<double>(r.memory_peak_allocated_bytes));
    m.memory_capacity->Set(static_cast<double>(r.memory_capacity_bytes));
    m.memory_static->Set(static_cast<double>(r.memory_static_bytes));
    m.bucket_size->Set(static_cast<double>(r.bucket_size_tokens));
    m.rank_tokens_peak->Set(static_cast<double>(r.rank_tokens_peak));
    m.last_step_timestamp->Set(now);
    m.step_duration->Observe(r.step_seconds);
    m.scheduler_duration->Observe(r.scheduler_seconds);
  }

  std::lock_guard<std::mutex> lock(m.jsonl_mu);
  if (m.events != nullptr) {
    SKRULL_RETURN_IF_ERROR(
        m.events->WriteScalars(now, r.step,
                               {{"train/loss", r.loss},
                                {"train/learning_rate", r.learning_rate},
                                {"train/grad_norm", r.grad_norm},
                                {"eval/loss", r.eval_loss},
                                {"perf/tokens_per_second", rates.tokens_per_second},
                                {"perf/mfu", rates.mfu},
                                {"memory/peak_bytes", static_cast<double>(r.memory_peak_bytes)}}));
  }
  if (m.jsonl == nullptr) return OkStatus();
  StepLine line;
  line.job = m.options.job;
  line.rank = m.options.rank;
  line.dp_rank = m.options.dp_rank;
  line.cp_rank = m.options.cp_rank;
  line.node = m.options.node;
  line.time_unix_seconds = now;
  line.record = r;
  line.rates = rates;
  const std::string text = FormatStepLine(line);
  if (std::fwrite(text.data(), 1, text.size(), m.jsonl) != text.size() ||
      std::fflush(m.jsonl) != 0) {
    return IoError(m.options.jsonl_path + ": cannot append step " + std::to_string(r.step) + ": " +
                   std::strerror(errno));
  }
  return OkStatus();
}

Status TrainerMetrics::PushFinal() {
  const MetricsOptions& o = impl_->options;
  if (o.pushgateway_url.empty()) return OkStatus();
  StatusOr<PushgatewayAddress> address = ParsePushgatewayUrl(o.pushgateway_url);
  SKRULL_CHECK(address.ok()) << "validated in Create: " << address.status();
  return PushReplacingGroup(*address, o.job, {{kLabelRank, std::to_string(o.rank)}},
                            impl_->collectable, o.push_timeout_seconds);
}

int TrainerMetrics::port() const { return impl_->server ? impl_->server->port() : 0; }

std::string TrainerMetrics::Exposition() const { return impl_->collectable->Serialize(); }

const MetricsOptions& TrainerMetrics::options() const { return impl_->options; }

}  // namespace skrull::metrics

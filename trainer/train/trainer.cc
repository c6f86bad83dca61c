#include "trainer/train/trainer.h"

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>

#include "common/file_util.h"
#include "common/json_fields.h"
#include "scheduler/cost_model.h"
#include "scheduler/layout.h"
#include "scheduler/model_config.h"
#include "scheduler/policy.h"
#include "trainer/data/data_mixture.h"
#include "trainer/data/dataset.h"
#include "trainer/dist/rank_device.h"
#include "trainer/metrics/oom_record.h"
#include "trainer/metrics/trainer_metrics.h"
#include "trainer/model/model.h"
#include "trainer/model/torch_compat.h"
#include "trainer/train/checkpoint.h"
#include "trainer/train/epochs.h"
#include "trainer/train/eval_loss.h"
#include "trainer/train/hardware_profile_file.h"
#include "trainer/train/lr_schedule.h"
#include "trainer/train/model_options.h"
#include "trainer/train/optimizer.h"
#include "trainer/train/rng_state.h"
#include "trainer/train/serving_files.h"
#include "trainer/train/train_step.h"
#include "trainer/train/zero_optimizer.h"

namespace skrull::train {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One rank's run: setup, the step loop, checkpoints and the summary.
class Run {
 public:
  Run(const api::JobSpec& job, const dist::RankLayout& layout, Collectives* collectives,
      const TrainerOptions& options)
      : job_(job),
        layout_(layout),
        coll_(collectives),
        options_(options),
        log_(options.log != nullptr ? *options.log : std::cerr) {}

  // Trains; an out-of-memory error becomes the out-of-memory record and an
  // OutOfMemory status.
  StatusOr<TrainSummary> Go();

 private:
  StatusOr<TrainSummary> Train();
  Status OutOfMemory(const std::string& what);
  Status Setup();
  Status SetupDevice();
  Status SetupModel();
  Status SetupData();
  Status SetupEval(const data::DatasetOptions& base, int64_t global_batch);
  // spec.data.eval after `done` steps, when due: the loss, else NaN.
  StatusOr<double> MaybeEvaluate(int64_t done);
  Status SetupScheduler();
  Status SetupMetrics();
  Status Resume();
  // One step and its stages (Step calls them in this order).
  struct PlannedStep {
    std::vector<int64_t> indices;  // dataset index of each sequence id of the global batch
    scheduler::Plan plan;          // the same on every rank
    int64_t global_labels = 0;     // label tokens of the global batch
  };
  struct RankBatch {  // this rank's sequences of the plan; tokens point into samples
    std::vector<data::Sample> samples;
    std::vector<scheduler::SequenceTokens> tokens;
  };
  struct StepSeconds {
    double work = 0;  // forward/backward, reductions and the optimizer
    double cp_wait = 0;
    double dp_wait = 0;
  };
  StatusOr<StepStats> Step(int64_t step, bool* stop_requested);
  StatusOr<PlannedStep> PlanStep(int64_t step, StepStats* stats);
  StatusOr<RankBatch> LoadRankBatch(const PlannedStep& planned);
  StatusOr<RankStepWork> RunMicroBatches(const PlannedStep& planned, const RankBatch& batch);
  Status ReduceAndApply(const RankStepWork& work, int64_t global_labels, StepStats* stats,
                        bool* stop_requested);
  void RecordMetrics(const PlannedStep& planned, const RankStepWork& work, const StepStats& stats,
                     const StepSeconds& seconds);
  void AdvanceState(const PlannedStep& planned, const StepStats& stats);
  void SetupGradientOverlap();
  // TrainerOptions::out_of_memory_in_gradient_hook_at_step.
  void InjectOutOfMemoryInGradientHooks(GradientReducer* reducer);
  Status SaveCheckpoint(int64_t step_done);
  // How long ranks wait for each other around checkpoint I/O.
  std::chrono::milliseconds CheckpointWaitTimeout() const {
    return std::chrono::seconds(job_.training.collective_timeout_seconds);
  }
  Status SaveZeroShards(const std::string& staging);
  Status SaveOptimizer(const std::string& tmp, const std::string& staging);
  void Notice(const std::string& line) {
    if (layout_.rank() == 0) log_ << "[skrull] " << line << std::endl;
  }
  // This step's memory peak (device_memory.h); also raises run_peak_.
  MemoryPeak TakeMemoryPeak();
  // Most tokens `plan` puts in one of this rank's micro-batches.
  int64_t RankTokensPlanned(const scheduler::Plan& plan) const;
  uint64_t StaticMemoryBytes() const {
    return static_cast<uint64_t>(zero_ != nullptr ? zero_->StaticMemoryBytes()
                                                  : optimizer_->StaticMemoryBytes());
  }
  TrainSummary Summary() const;

  const api::JobSpec& job_;
  dist::RankLayout layout_;  // where this process sits; DP and CP come from here
  Collectives* coll_;
  TrainerOptions options_;
  std::ostream& log_;

  std::string output_dir_;
  c10::Device device_ = c10::Device(c10::kCPU);
  c10::ScalarType dtype_ = c10::kFloat;
  scheduler::ModelConfig config_;
  std::unique_ptr<model::DecoderModel> model_;
  ContextParallelAttention* cp_attention_ = nullptr;  // owned by model_
  std::unique_ptr<Optimizer> optimizer_;              // spec.training.zeroStage 0
  std::unique_ptr<ZeroOptimizer> zero_;               // zeroStage 1 or 2 (optimizer_ is null)
  LrScheduleOptions lr_;
  std::unique_ptr<data::DataMixture> dataset_;  // spec.data.path or spec.data.sources
  std::unique_ptr<data::MixtureSampler> sampler_;
  int64_t total_steps_ = 0;        // spec.training.steps, or derived from epochs (epochs.h)
  std::unique_ptr<EvalSet> eval_;  // spec.data.eval; null without
  std::unique_ptr<scheduler::CostModel> cost_;
  scheduler::Policy policy_ = scheduler::Policy::kSkrull;
  int64_t bucket_size_tokens_ = 0;
  // spec.scheduler.hardwareProfile, loaded; null = the scheduler's built-in H100.
  std::unique_ptr<scheduler::HardwareProfile> hardware_;
  std::string hardware_profile_name_;  // for logs and the summary
  std::unique_ptr<metrics::TrainerMetrics> metrics_;
  std::unique_ptr<DeviceMemory> memory_;
  uint64_t memory_capacity_bytes_ = 0;
  bool capacity_after_warmup_ = false;  // re-read after this invocation's first step
  MemoryPeak run_peak_;                 // the largest step peaks of this invocation
  // Where an out-of-memory error struck (-1: setting up) and the most tokens
  // the plan put in one of this rank's micro-batches there.
  int64_t current_step_ = -1;
  int64_t current_rank_tokens_ = 0;

  TrainerState state_;
  std::string resumed_from_;
  std::string last_checkpoint_;
  bool stopped_early_ = false;
  std::vector<StepStats> history_;
  metrics::PhaseSeconds phase_totals_;  // this invocation's steps
  // Gradient all-reduce overlapped with the last backward of a step (null:
  // reduce after backward).
  std::unique_ptr<GradientReducer> grad_reducer_;
  std::unique_ptr<GradReadyHooks> grad_hooks_;  // declared after grad_reducer_: dies first
};

Status Run::SetupDevice() {
  // The rule the NCCL groups follow too (dist/rank_device.h).
  SKRULL_ASSIGN_OR_RETURN(
      const dist::RankDevice chosen,
      dist::ChooseRankDevice(options_.device, job_.resources.gpus_per_proc, layout_.local_rank(),
                             layout_.procs_per_node(), model::compat::CudaDeviceCount()));
  if (chosen.fell_back_to_cpu) {
    Notice("no CUDA device visible (libtorch " + model::compat::TorchVersion() +
           "): training on CPU");
  }
  device_ = chosen.cuda ? c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(chosen.index))
                        : c10::Device(c10::kCPU);
  memory_ = options_.device_memory ? options_.device_memory(device_) : MakeDeviceMemory(device_);
  dtype_ = c10::kFloat;
  if (job_.training.precision == api::Precision::kBf16) {
    if (device_.is_cuda()) {
      dtype_ = c10::kBFloat16;
    } else {
      Notice("spec.training.precision bf16 runs as float32 on CPU");
    }
  }
  return OkStatus();
}

Status Run::SetupModel() {
  SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(job_.model.config));
  SKRULL_ASSIGN_OR_RETURN(config_, scheduler::ParseHfConfigJson(text, job_.model.config));
  StatusOr<std::unique_ptr<model::DecoderModel>> created =
      model::DecoderModel::Create(config_, ModelOptionsFromSpec(job_, device_));
  if (!created.ok()) return created.status().WithContext(job_.model.config);
  model_ = std::move(created).value();
  if (!job_.model.weights.empty()) {
    SKRULL_RETURN_IF_ERROR(model_->LoadWeights(job_.model.weights));
  }
  if (layout_.cp() > 1) {
    if (!options_.cp_attention) {
      return FailedPreconditionError(
          "spec.parallelism.contextParallel is " + std::to_string(layout_.cp()) +
          " but this trainer has no context-parallel attention (trainer/dist); set "
          "contextParallel: 1");
    }
    SKRULL_ASSIGN_OR_RETURN(std::unique_ptr<ContextParallelAttention> cp,
                            options_.cp_attention(device_));
    cp_attention_ = cp.get();
    model_->SetAttentionBackend(std::move(cp));
  }
  if (job_.training.zero_stage > 0) {
    zero_ = std::make_unique<ZeroOptimizer>(model_->NamedTrainableParameters(),
                                            OptimizerOptionsFromSpec(job_.training),
                                            job_.training.zero_stage, coll_);
  } else {
    optimizer_ = std::make_unique<Optimizer>(model_->NamedTrainableParameters(),
                                             OptimizerOptionsFromSpec(job_.training));
  }
  lr_ = LrScheduleFromSpec(job_.training);
  Notice("model " + config_.model_type + ": " + std::to_string(config_.num_hidden_layers) +
         " layers, hidden " + std::to_string(config_.hidden_size) + ", " +
         FormatCount(static_cast<double>(model_->NumParameters())) + " parameters (" +
         FormatCount(static_cast<double>(model_->NumTrainableParameters())) + " trainable) on " +
         device_.str() + " in " + model::compat::DtypeName(dtype_) +
         (job_.model.weights.empty() ? ", random init seed " + std::to_string(job_.model.seed)
                                     : ", weights " + job_.model.weights));
  return OkStatus();
}

Status Run::SetupData() {
  data::DatasetOptions o =
      data::DatasetOptionsFromSpec(job_.data, static_cast<int32_t>(config_.vocab_size));
  // maxLength 0 means "whatever the scheduler can place": bucketSize x CP.
  // With onOverLength skip / truncate the dataset applies that bound; with
  // error the check below names the sample and the knobs to turn.
  const int64_t placeable = bucket_size_tokens_ * layout_.cp();
  if (o.max_length_tokens == 0 && o.over_length != api::OverLengthPolicy::kError) {
    o.max_length_tokens = placeable;
  }
  SKRULL_ASSIGN_OR_RETURN(dataset_,
                          data::DataMixture::Open(data::MixtureSourcesFromSpec(job_.data, o),
                                                  (fs::path(output_dir_) / "data-cache").string()));
  for (const std::string& line : dataset_->Describe()) Notice("data " + line);
  // Refuse a sample that no plan can place before training starts.
  int64_t longest = 0, longest_i = 0;
  for (int64_t i = 0; i < dataset_->size(); ++i) {
    if (dataset_->Length(i) > longest) {
      longest = dataset_->Length(i);
      longest_i = i;
    }
  }
  const std::string problem = scheduler::FitProblem(longest, layout_.cp(), bucket_size_tokens_);
  if (!problem.empty()) {
    return FailedPreconditionError(
        dataset_->Location(longest_i) + ": sample of " + problem +
        " (spec.scheduler.bucketSize, spec.parallelism.contextParallel); or set "
        "spec.data.onOverLength: truncate or skip");
  }
  const int64_t gbs = static_cast<int64_t>(layout_.dp()) * job_.scheduler.batch_size;
  sampler_ = dataset_->MakeSampler(gbs, job_.scheduler.seed);
  SKRULL_ASSIGN_OR_RETURN(total_steps_, TotalSteps(job_.training, dataset_->size(), gbs));
  lr_.total_steps = total_steps_;
  Notice("length: " + DescribeLength(job_.training, dataset_->size(), gbs, total_steps_));
  if (job_.data.eval.has_value()) SKRULL_RETURN_IF_ERROR(SetupEval(o, gbs));
  return OkStatus();
}

Status Run::SetupEval(const data::DatasetOptions& base, int64_t global_batch) {
  const api::EvalSpec& e = *job_.data.eval;
  data::MixtureSource source{"spec.data.eval.path", 1.0, base};
  source.options.path = e.path;
  source.options.format = e.format;
  source.options.fields = e.fields;
  SKRULL_ASSIGN_OR_RETURN(
      std::unique_ptr<data::DataMixture> set,
      data::DataMixture::Open({source}, (fs::path(output_dir_) / "data-cache").string()));
  eval_ = std::make_unique<EvalSet>(std::move(set), e.max_sequences, global_batch);
  for (int64_t i = 0; i < eval_->sequences(); ++i) {
    const int64_t length = eval_->data().Length(i);
    if (scheduler::ShardTokens(length, layout_.cp()) > bucket_size_tokens_) {
      return FailedPreconditionError(
          eval_->data().Location(i) + ": spec.data.eval: sample of " + std::to_string(length) +
          " tokens does not fit spec.scheduler.bucketSize (" + std::to_string(bucket_size_tokens_) +
          ") x spec.parallelism.contextParallel (" + std::to_string(layout_.cp()) +
          "); set spec.data.onOverLength: truncate or skip, or raise bucketSize");
    }
  }
  Notice("eval " + e.path + ": " + std::to_string(eval_->sequences()) + " sequences, " +
         std::to_string(eval_->label_tokens()) + " label tokens, after " +
         (e.every_steps > 0 ? "every " + std::to_string(e.every_steps) + " steps and " : "") +
         "the last step");
  return OkStatus();
}

StatusOr<double> Run::MaybeEvaluate(int64_t done) {
  const int64_t every = eval_ != nullptr ? job_.data.eval->every_steps : 0;
  if (eval_ == nullptr || !(done == total_steps_ || (every > 0 && done % every == 0))) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  EvalContext ctx;
  ctx.model = model_.get();
  ctx.cp_attention = cp_attention_;
  ctx.collectives = coll_;
  ctx.policy = policy_;
  ctx.schedule.topology = {layout_.dp(), layout_.cp()};
  ctx.schedule.bucket_size_tokens = bucket_size_tokens_;
  ctx.schedule.hardware = hardware_.get();
  ctx.schedule.micro_batch_size = job_.scheduler.micro_batch_size;
  ctx.cost = cost_.get();
  ctx.dp_rank = layout_.dp_rank();
  ctx.cp_rank = layout_.cp_rank();
  SKRULL_ASSIGN_OR_RETURN(const double loss, eval_->Evaluate(ctx));
  state_.last_eval_loss = loss;
  if (state_.best_eval_step < 0 || loss < state_.best_eval_loss) {
    state_.best_eval_loss = loss;
    state_.best_eval_step = done;
  }
  return loss;
}

Status Run::SetupScheduler() {
  policy_ = job_.scheduler.policy;
  // The memory model's precision and LoRA are the run's (BucketSize auto on
  // CPU, below; gradient bytes in plan pricing).
  scheduler::CostModelOptions cost_options;
  cost_options.precision =
      dtype_ == c10::kBFloat16 ? scheduler::Precision::kBf16 : scheduler::Precision::kFp32;
  if (job_.model.lora.has_value()) {
    cost_options.lora.rank = job_.model.lora->rank;
    cost_options.lora.target_modules = job_.model.lora->target_modules;
  }
  // ZeRO shards static state over every world rank (optimizer.h).
  cost_options.zero_stage = job_.training.zero_stage;
  cost_options.recompute = job_.training.recompute == api::Recompute::kFull;
  cost_options.recompute_mlp = job_.training.recompute == api::Recompute::kSelective;
  cost_options.dp_for_sharding = layout_.world_size();
  cost_ = std::make_unique<scheduler::CostModel>(config_, cost_options);
  memory_capacity_bytes_ = memory_->CapacityBytes();
  const std::string& profile_path = job_.scheduler.hardware_profile;
  int64_t profile_bucket_tokens = 0;
  if (!profile_path.empty()) {
    SKRULL_ASSIGN_OR_RETURN(HardwareProfileFile file, LoadHardwareProfileFile(profile_path));
    hardware_ = std::make_unique<scheduler::HardwareProfile>(std::move(file.hardware));
    hardware_profile_name_ = profile_path;
    profile_bucket_tokens = file.bucket_size_tokens;
  } else {
    hardware_profile_name_ = "built-in " + scheduler::H100Profile().name;
  }
  std::string bucket_source;
  if (!job_.scheduler.bucket_size_auto) {
    bucket_size_tokens_ = job_.scheduler.bucket_size_tokens;
    bucket_source = "spec.scheduler.bucketSize";
  } else if (hardware_ != nullptr) {
    if (profile_bucket_tokens <= 0) {
      return InvalidArgumentError(
          "spec.scheduler.hardwareProfile: " + profile_path +
          ": has no \"bucket_size_tokens\", which spec.scheduler.bucketSize: auto takes from it; "
          "write the profile with `skrull-trainer --profile --job FILE --out " +
          profile_path + "` on this device, or set bucketSize to a token count");
    }
    bucket_size_tokens_ = profile_bucket_tokens;
    bucket_source = "auto, from the hardware profile";
  } else if (!device_.is_cpu()) {
    return FailedPreconditionError(
        "spec.scheduler.bucketSize: auto on " + device_.str() +
        " needs a measured hardware profile: run `skrull-trainer --profile --job FILE --out "
        "profile.json` on this machine and set spec.scheduler.hardwareProfile: profile.json, or "
        "set bucketSize to a token count");
  } else {
    if (memory_capacity_bytes_ == 0) {
      return FailedPreconditionError(
          "spec.scheduler.bucketSize: auto: no spec.scheduler.hardwareProfile is set and this "
          "host's memory size cannot be read; run `skrull-trainer --profile --job FILE --out "
          "profile.json` and set spec.scheduler.hardwareProfile: profile.json, or set bucketSize "
          "to a token count");
    }
    bucket_size_tokens_ = cost_->BucketSizeTokens(static_cast<double>(memory_capacity_bytes_), 0.2);
    if (bucket_size_tokens_ <= 0) {
      return FailedPreconditionError(
          "spec.scheduler.bucketSize: auto: the model's weights and optimizer state leave no "
          "memory for activations on this host; use a smaller model or LoRA");
    }
    bucket_source =
        "auto, estimated from host memory with the analytic memory model because no "
        "spec.scheduler.hardwareProfile is set; for a measured value run `skrull-trainer "
        "--profile --job FILE` and set it";
  }
  Notice("hardware profile: " + hardware_profile_name_ +
         (hardware_ != nullptr ? " (" + hardware_->name + ")" : std::string()) +
         (policy_ == scheduler::Policy::kSkrull ? " prices the plans"
                                                : " (only the skrull policy prices plans)") +
         "; bucketSize " + std::to_string(bucket_size_tokens_) + " tokens per rank (" +
         bucket_source + ")");
  return OkStatus();
}

Status Run::SetupMetrics() {
  metrics::MetricsOptions mo;
  mo.job = job_.name;
  mo.rank = layout_.rank();
  mo.dp_rank = layout_.dp_rank();
  mo.cp_rank = layout_.cp_rank();
  mo.policy = scheduler::PolicyName(policy_);
  mo.dp = layout_.dp();
  mo.cp = layout_.cp();
  mo.port = options_.serve_metrics && job_.metrics.port > 0
                ? job_.metrics.port + layout_.local_rank()
                : 0;
  mo.bind_address = api::MetricsAddressOf(job_);
  mo.pushgateway_url = job_.metrics.pushgateway;
  mo.jsonl_path =
      (fs::path(output_dir_) / (layout_.rank() == 0
                                    ? std::string("metrics.jsonl")
                                    : "metrics-rank" + std::to_string(layout_.rank()) + ".jsonl"))
          .string();
  // TensorBoard event files beside metrics.jsonl, from rank 0 (docs/metrics.md).
  if (layout_.rank() == 0) mo.tensorboard_dir = output_dir_;
  StatusOr<std::unique_ptr<metrics::TrainerMetrics>> m = metrics::TrainerMetrics::Create(mo);
  if (!m.ok() && m.status().code() == StatusCode::kUnavailable && mo.port != 0) {
    // A busy port must not stop training: keep metrics.jsonl, skip serving.
    log_ << "[skrull] rank " << layout_.rank() << ": not serving /metrics: " << m.status().message()
         << std::endl;
    mo.port = 0;
    m = metrics::TrainerMetrics::Create(mo);
  }
  if (!m.ok()) return m.status();
  metrics_ = std::move(m).value();
  if (metrics_->port() != 0) {
    Notice("metrics on http://0.0.0.0:" + std::to_string(metrics_->port()) + "/metrics, " +
           mo.jsonl_path);
  }
  return OkStatus();
}

Status Run::Resume() {
  SKRULL_ASSIGN_OR_RETURN(std::optional<std::string> dir,
                          ResolveResumeDir(output_dir_, job_.training.resume_from));
  int64_t found_step = -1;
  if (dir.has_value()) {
    SKRULL_ASSIGN_OR_RETURN(TrainerState peek, ReadTrainerState(*dir));
    found_step = peek.step;
  }
  // Every rank must resume from the same step (rank 0 writes checkpoints, so
  // outputDir must be storage every rank sees).
  std::vector<double> agree = {static_cast<double>(found_step),
                               static_cast<double>(found_step) * static_cast<double>(found_step)};
  SKRULL_RETURN_IF_ERROR(coll_->AllReduceSum(&agree));
  const double n = static_cast<double>(coll_->world_size());
  if (agree[0] * agree[0] != agree[1] * n) {
    return FailedPreconditionError(
        "rank " + std::to_string(layout_.rank()) + " found " +
        (dir.has_value() ? "the checkpoint " + *dir + " (step " + std::to_string(found_step) + ")"
                         : std::string("no checkpoint")) +
        " under " + CheckpointsRoot(output_dir_) +
        " but other ranks found another; spec.training.outputDir must be one folder every "
        "rank sees (shared storage)");
  }
  state_ = TrainerState();
  state_.sampler_seed = job_.scheduler.seed;
  state_.job_spec_hash = JobSpecHash(job_);
  state_.initial_loss = std::numeric_limits<double>::quiet_NaN();
  if (!dir.has_value()) {
    if (!job_.training.resume_from.empty()) {
      Notice("resumeFrom latest: no checkpoint under " + CheckpointsRoot(output_dir_) +
             "; starting fresh");
    }
    return OkStatus();
  }
  if (options_.disk_full_on_resume) {
    return IoError("resuming from " + *dir + ": " + std::strerror(ENOSPC) +
                   " (injected by the test hook SKRULL_TEST_DISK_FULL_ON_RESUME_RANK)");
  }
  SKRULL_ASSIGN_OR_RETURN(TrainerState saved, ReadTrainerState(*dir));
  if (job_.model.lora.has_value()) {
    Status loaded = model_->LoadLoraAdapters((fs::path(*dir) / kAdapterWeightsFile).string());
    if (!loaded.ok()) {
      return loaded.WithContext(
          "resuming from " + *dir + ": spec.model.lora is set, so the checkpoint must hold its " +
          "LoRA adapter (" + kAdapterWeightsFile +
          "); a checkpoint of a job without LoRA holds full model weights instead (set "
          "spec.training.resumeFrom to a step-<N> folder this LoRA job wrote, or remove "
          "spec.model.lora to resume the full weights)");
    }
  } else {
    SKRULL_RETURN_IF_ERROR(model_->LoadWeights((fs::path(*dir) / kModelWeightsFile).string()));
  }
  SKRULL_RETURN_IF_ERROR(zero_ != nullptr ? zero_->Load(*dir) : optimizer_->Load(*dir));
  SKRULL_RETURN_IF_ERROR(
      RestoreCpuRngState(saved.rng_state_hex, (fs::path(*dir) / kTrainerStateFile).string()));
  if (saved.job_spec_hash != state_.job_spec_hash) {
    Notice("warning: " + *dir +
           " was written by a job with different model/data/parallelism/"
           "optimizer settings (spec hash " +
           saved.job_spec_hash + ", now " + state_.job_spec_hash + "); continuing");
  }
  if (saved.sampler_seed != job_.scheduler.seed) {
    Notice("resuming with the checkpoint's sampler seed " + std::to_string(saved.sampler_seed) +
           " (spec.scheduler.seed is " + std::to_string(job_.scheduler.seed) + ")");
    sampler_ = dataset_->MakeSampler(sampler_->global_batch_size(), saved.sampler_seed);
  }
  if (!saved.source_cursors.empty()) {  // else the sampler replays to the step
    SKRULL_RETURN_IF_ERROR(sampler_->Restore({saved.step, saved.source_cursors})
                               .WithContext((fs::path(*dir) / kTrainerStateFile).string()));
  }
  const std::string hash = state_.job_spec_hash;
  state_ = saved;
  state_.job_spec_hash = hash;
  resumed_from_ = *dir;
  Notice("resumed from " + *dir + " at step " + std::to_string(state_.step));
  return OkStatus();
}

Status Run::Setup() {
  output_dir_ = api::OutputDirOf(job_);
  std::error_code ec;
  fs::create_directories(output_dir_, ec);
  if (ec) {
    return IoError(output_dir_ + ": cannot create spec.training.outputDir: " + ec.message());
  }
  // A record from an earlier run in this directory is not this run's.
  fs::remove(fs::path(output_dir_) / metrics::OomRecordFileName(layout_.rank()), ec);
  SKRULL_RETURN_IF_ERROR(SetupDevice());
  SKRULL_RETURN_IF_ERROR(SetupModel());
  SKRULL_RETURN_IF_ERROR(SetupScheduler());
  SKRULL_RETURN_IF_ERROR(SetupData());
  SKRULL_RETURN_IF_ERROR(Resume());
  SetupGradientOverlap();  // after Resume: on the parameters training will update
  SKRULL_RETURN_IF_ERROR(SetupMetrics());
  return OkStatus();
}

int64_t Run::RankTokensPlanned(const scheduler::Plan& plan) const {
  int64_t most = 0;
  for (const scheduler::MicroBatch& mb : plan.ranks[layout_.dp_rank()].micro_batches) {
    if (static_cast<int>(mb.cp_rank_tokens.size()) > layout_.cp_rank()) {
      most = std::max(most, mb.cp_rank_tokens[layout_.cp_rank()]);
    }
  }
  return most;
}

MemoryPeak Run::TakeMemoryPeak() {
  const MemoryPeak peak = memory_->TakePeak();
  run_peak_.allocated_bytes = std::max(run_peak_.allocated_bytes, peak.allocated_bytes);
  run_peak_.reserved_bytes = std::max(run_peak_.reserved_bytes, peak.reserved_bytes);
  return peak;
}

Status Run::OutOfMemory(const std::string& what) {
  metrics::OomRecord r;
  r.rank = layout_.rank();
  r.step = current_step_;
  r.device = device_.str();
  r.bucket_size_tokens = bucket_size_tokens_;
  r.rank_tokens_planned = current_rank_tokens_;
  if (memory_ != nullptr) {
    const MemoryPeak peak = TakeMemoryPeak();
    r.memory_peak_bytes = peak.reserved_bytes;
    r.memory_peak_allocated_bytes = peak.allocated_bytes;
  }
  r.memory_capacity_bytes = memory_capacity_bytes_;
  r.message = what.substr(0, what.find('\n'));
  const std::string where =
      "rank " + std::to_string(r.rank) + ", " +
      (r.step >= 0 ? "step " + std::to_string(r.step) : std::string("setting up")) + ", " +
      r.device;
  StatusOr<std::string> path = metrics::WriteOomRecord(output_dir_, r);
  return OutOfMemoryError(
      where + ": out of memory: " + r.message + "; " +
      (path.ok() ? "wrote " + *path
                 : "could not write the out-of-memory record: " + path.status().message()) +
      "; lower spec.scheduler.bucketSize (the tuner steps it down from this record: "
      "docs/metrics.md)");
}

void Run::SetupGradientOverlap() {
  // bf16 parameters: every backward's gradient is folded into a float32 sum
  // (docs/architecture.md, "Gradient precision"); float32 ones accumulate in
  // their own .grad.
  const bool sum_in_float32 = dtype_ != c10::kFloat;
  if (zero_ != nullptr) {  // ZeRO always reduce-scatters from the backward hooks
    ZeroOptimizer* zero = zero_.get();
    std::function<void(size_t)> accumulate;
    if (sum_in_float32) accumulate = [zero](size_t i) { zero->AccumulateGradient(i); };
    std::vector<at::Tensor> params;
    for (const model::NamedTensor& p : zero->params()) params.push_back(p.second);
    grad_hooks_ = std::make_unique<GradReadyHooks>(params, zero->reducer(), std::move(accumulate));
    InjectOutOfMemoryInGradientHooks(zero->reducer());
    return;
  }
  // Hooks fire on the model's parameters; what is reduced is each one's
  // float32 reducible gradient (for bf16 parameters the master's float32
  // sum), exactly what ReducibleGradients() hands out.
  Optimizer* optimizer = optimizer_.get();
  grad_reducer_ = coll_->MakeGradientReducer(optimizer->reducible_tensors(), [optimizer](size_t i) {
    return optimizer->ReducibleGradient(i);
  });
  std::function<void(size_t)> accumulate;
  if (sum_in_float32) accumulate = [optimizer](size_t i) { optimizer->AccumulateGradient(i); };
  if (grad_reducer_ == nullptr && !accumulate) return;
  std::vector<at::Tensor> params;
  for (const model::NamedTensor& p : optimizer->params()) params.push_back(p.second);
  grad_hooks_ =
      std::make_unique<GradReadyHooks>(params, grad_reducer_.get(), std::move(accumulate));
  if (grad_reducer_ != nullptr) InjectOutOfMemoryInGradientHooks(grad_reducer_.get());
}

void Run::InjectOutOfMemoryInGradientHooks(GradientReducer* reducer) {
  const int64_t at_step = options_.out_of_memory_in_gradient_hook_at_step;
  if (at_step < 0) return;
  reducer->set_pack_hook_for_testing([this, at_step] {
    if (current_step_ == at_step) ThrowInjectedOutOfMemory(at_step);
  });
}

// One step, in stages: plan (the same on every rank), micro-batches (this
// rank's forward and backward), reduce (gradients and scalars over the world,
// then the optimizer), record (metrics and run state).
StatusOr<StepStats> Run::Step(int64_t step, bool* stop_requested) {
  const Clock::time_point t0 = Clock::now();
  StepStats stats;
  stats.step = step;
  // Waits before this step (resume agreement, checkpoint barriers) are not its own.
  coll_->TakeWaitSeconds();
  if (cp_attention_ != nullptr) cp_attention_->TakeCommWaitSeconds();

  current_step_ = step;
  current_rank_tokens_ = 0;
  SKRULL_ASSIGN_OR_RETURN(PlannedStep planned, PlanStep(step, &stats));
  current_rank_tokens_ = RankTokensPlanned(planned.plan);
  SKRULL_ASSIGN_OR_RETURN(RankBatch batch, LoadRankBatch(planned));

  // Forward/backward, the gradient and scalar reductions, the optimizer: the
  // waits on other ranks inside this window are reported apart from compute.
  const Clock::time_point t_work = Clock::now();
  SKRULL_ASSIGN_OR_RETURN(RankStepWork work, RunMicroBatches(planned, batch));
  SKRULL_RETURN_IF_ERROR(ReduceAndApply(work, planned.global_labels, &stats, stop_requested));
  if (!capacity_after_warmup_) {  // device_memory.h: after the first step
    memory_capacity_bytes_ = memory_->CapacityBytes();
    capacity_after_warmup_ = true;
  }
  StepSeconds seconds;
  seconds.work = SecondsSince(t_work);
  stats.seconds = SecondsSince(t0);
  seconds.cp_wait = cp_attention_ != nullptr ? cp_attention_->TakeCommWaitSeconds() : 0.0;
  seconds.dp_wait = coll_->TakeWaitSeconds();
  SKRULL_ASSIGN_OR_RETURN(stats.eval_loss, MaybeEvaluate(step + 1));

  RecordMetrics(planned, work, stats, seconds);
  AdvanceState(planned, stats);
  return stats;
}

StatusOr<Run::PlannedStep> Run::PlanStep(int64_t step, StepStats* stats) {
  PlannedStep p;
  p.indices = dataset_->GlobalIndices(sampler_->GlobalBatch(step));
  std::vector<scheduler::Sequence> sequences;
  for (size_t k = 0; k < p.indices.size(); ++k) {
    sequences.push_back({static_cast<int64_t>(k), dataset_->Length(p.indices[k])});
    stats->tokens += dataset_->Length(p.indices[k]);
    p.global_labels += dataset_->LabelTokenCount(p.indices[k]);
  }
  stats->label_tokens = p.global_labels;
  scheduler::ScheduleOptions so;
  so.topology = {layout_.dp(), layout_.cp()};
  so.bucket_size_tokens = bucket_size_tokens_;
  so.hardware = hardware_.get();  // null: the scheduler's built-in H100 profile
  so.micro_batch_size = job_.scheduler.micro_batch_size;  // policy deepspeed only
  StatusOr<scheduler::Plan> planned = scheduler::Schedule(policy_, sequences, so, *cost_);
  if (!planned.ok()) return planned.status().WithContext("step " + std::to_string(step));
  p.plan = std::move(planned).value();
  if (options_.plan_hook_for_testing) {
    Status hooked = options_.plan_hook_for_testing(&p.plan);
    if (!hooked.ok()) return hooked.WithContext("step " + std::to_string(step));
  }
  stats->micro_batches = p.plan.NumMicroBatches();
  return p;
}

StatusOr<Run::RankBatch> Run::LoadRankBatch(const PlannedStep& planned) {
  RankBatch b;
  b.samples.resize(planned.indices.size());
  b.tokens.resize(planned.indices.size());
  for (int64_t id :
       scheduler::NeededSequenceIds(planned.plan, layout_.dp_rank(), layout_.cp_rank())) {
    SKRULL_ASSIGN_OR_RETURN(b.samples[id], dataset_->Get(planned.indices[id]));
    b.tokens[id] = {b.samples[id].input_ids.data(), b.samples[id].targets.data(),
                    static_cast<int64_t>(b.samples[id].input_ids.size())};
  }
  return b;
}

StatusOr<RankStepWork> Run::RunMicroBatches(const PlannedStep& planned, const RankBatch& batch) {
  if (current_step_ == options_.out_of_memory_at_step) ThrowInjectedOutOfMemory(current_step_);
  if (zero_ != nullptr) {
    // Stage 2 joins one reduce-scatter round per backward of the busiest DP
    // rank (CP ranks of a DP rank run the same micro-batches).
    int64_t rounds = 0;
    for (const scheduler::DpRankPlan& rank : planned.plan.ranks) {
      int64_t n = 0;
      for (const scheduler::MicroBatch& mb : rank.micro_batches) n += mb.empty() ? 0 : 1;
      rounds = std::max(rounds, n);
    }
    zero_->BeginStep(rounds);
  }
  return AccumulateGradients(model_.get(), planned.plan, batch.tokens, layout_.dp_rank(),
                             layout_.cp_rank(), std::max<int64_t>(1, planned.global_labels),
                             cp_attention_, grad_hooks_.get());
}

Status Run::ReduceAndApply(const RankStepWork& work, int64_t global_labels, StepStats* stats,
                           bool* stop_requested) {
  // No device-wide synchronize before the collectives: NCCL's stream waits
  // for the compute stream's queued work (cp_exchange.h), and the loss's
  // .item() in AccumulateGradients already waited for backward. One at the
  // end, so the step's seconds hold its device work. Out of memory in a
  // gradient hook: the reducer joined the step's collectives; the scalar
  // all-reduce below tells every rank.
  Status reduced = OkStatus();
  if (zero_ != nullptr) {
    reduced = zero_->FinishGradients();
  } else if (grad_reducer_ != nullptr) {
    // Every ReducibleGradient(i) was taken and reduced: what Step() needs.
    reduced = grad_reducer_->Finish();
  } else {
    std::vector<at::Tensor> grads = optimizer_->ReducibleGradients();
    SKRULL_RETURN_IF_ERROR(coll_->AllReduceSum(grads));
  }
  const bool oom_here = reduced.code() == StatusCode::kOutOfMemory;
  if (!reduced.ok() && !oom_here) return reduced;
  const bool stop_here = options_.stop_signal != nullptr && options_.stop_signal->load() != 0;
  std::vector<double> scalars = {work.loss_sum, stop_here ? 1.0 : 0.0, oom_here ? 1.0 : 0.0};
  SKRULL_RETURN_IF_ERROR(coll_->AllReduceSum(&scalars));  // copies back to the host: waits
  *stop_requested = scalars[1] > 0;
  if (scalars[2] > 0) {
    return OutOfMemory(oom_here ? reduced.message()
                                : std::to_string(std::lround(scalars[2])) +
                                      " other rank(s) ran out of memory in this step's gradient "
                                      "hooks (their oom-rank<r>.json names the allocation)");
  }

  stats->loss = scalars[0] / static_cast<double>(std::max<int64_t>(1, global_labels));
  stats->lr = LearningRateAt(lr_, stats->step);
  if (zero_ != nullptr) {
    SKRULL_ASSIGN_OR_RETURN(stats->grad_norm, zero_->Step(stats->lr));
  } else {
    stats->grad_norm = optimizer_->Step(stats->lr);
  }
  model::compat::Synchronize(device_);
  return OkStatus();
}

void Run::RecordMetrics(const PlannedStep& planned, const RankStepWork& work,
                        const StepStats& stats, const StepSeconds& seconds) {
  const scheduler::Plan& plan = planned.plan;
  metrics::StepRecord r;
  r.step = stats.step;
  r.loss = stats.loss;
  r.tokens = static_cast<uint64_t>(work.tokens);
  for (const scheduler::MicroBatch& mb : plan.ranks[layout_.dp_rank()].micro_batches) {
    if (static_cast<int>(mb.cp_rank_flops.size()) > layout_.cp_rank()) {
      r.model_flops += mb.cp_rank_flops[layout_.cp_rank()];
    }
  }
  r.hardware_flops = r.model_flops;
  r.step_seconds = stats.seconds;
  r.scheduler_seconds = plan.schedule_seconds;
  // Both waits lie inside the work window, so compute + waits <= step.
  r.phase_seconds.cp_comm_wait = seconds.cp_wait;
  r.phase_seconds.dp_comm_wait = seconds.dp_wait;
  r.phase_seconds.compute = std::max(0.0, seconds.work - seconds.cp_wait - seconds.dp_wait);
  r.phase_seconds.idle =
      std::max(0.0, stats.seconds - r.phase_seconds.compute - seconds.cp_wait - seconds.dp_wait);
  phase_totals_.compute += r.phase_seconds.compute;
  phase_totals_.cp_comm_wait += seconds.cp_wait;
  phase_totals_.dp_comm_wait += seconds.dp_wait;
  phase_totals_.idle += r.phase_seconds.idle;
  r.rank_tokens_peak = static_cast<uint64_t>(work.rank_tokens_peak);
  r.bucket_size_tokens = static_cast<uint64_t>(bucket_size_tokens_);
  const MemoryPeak peak = TakeMemoryPeak();
  r.memory_peak_bytes = peak.reserved_bytes;
  r.memory_peak_allocated_bytes = peak.allocated_bytes;
  r.memory_capacity_bytes = memory_capacity_bytes_;
  r.memory_static_bytes = StaticMemoryBytes();
  r.rollbacks.dacp = static_cast<uint64_t>(plan.rollbacks.dacp);
  r.rollbacks.gds = static_cast<uint64_t>(plan.rollbacks.gds);
  r.local_sequences = static_cast<uint64_t>(work.local_sequences);
  r.distributed_sequences = static_cast<uint64_t>(work.distributed_sequences);
  r.micro_batches = static_cast<uint64_t>(work.micro_batches);
  r.eval_loss = stats.eval_loss;
  r.learning_rate = stats.lr;
  r.grad_norm = stats.grad_norm;
  if (!job_.data.sources.empty()) {
    r.source_samples.assign(dataset_->num_sources(), 0);
    r.source_tokens.assign(dataset_->num_sources(), 0);
    for (int64_t g : planned.indices) {
      ++r.source_samples[dataset_->SourceOf(g)];
      r.source_tokens[dataset_->SourceOf(g)] += static_cast<uint64_t>(dataset_->Length(g));
    }
  }
  Status recorded = metrics_->RecordStep(r);
  if (!recorded.ok()) log_ << "[skrull] metrics: " << recorded.message() << std::endl;
}

void Run::AdvanceState(const PlannedStep& planned, const StepStats& stats) {
  if (stats.step == 0) state_.initial_loss = stats.loss;
  state_.step = stats.step + 1;
  state_.data_position = stats.step + 1;
  state_.tokens += stats.tokens;
  state_.train_seconds += stats.seconds;
  state_.rollbacks_dacp += planned.plan.rollbacks.dacp;
  state_.rollbacks_gds += planned.plan.rollbacks.gds;
  if (state_.loss_history.empty()) state_.loss_history_first_step = stats.step;
  state_.loss_history.push_back(stats.loss);
  if (state_.loss_history.size() > kLossHistoryTail) {
    state_.loss_history.erase(state_.loss_history.begin());
    ++state_.loss_history_first_step;
  }
}

// ZeRO: every rank writes its optimizer shard into step-<N>.shards/ first;
// rank 0 moves them into the folder it commits (checkpoint.h), so the
// checkpoint still appears at once, complete.
Status Run::SaveZeroShards(const std::string& staging) {
  Status written = zero_->SaveShard(staging);
  // The slowest rank's write is waited for on the store, not in the all-reduce.
  SKRULL_RETURN_IF_ERROR(coll_->WaitForAllRanks(CheckpointWaitTimeout()));
  std::vector<double> failed = {written.ok() ? 0.0 : 1.0};
  SKRULL_RETURN_IF_ERROR(coll_->AllReduceSum(&failed));
  SKRULL_RETURN_IF_ERROR(written);
  if (failed[0] > 0) {
    return IoError(staging + ": " + std::to_string(static_cast<int64_t>(failed[0])) +
                   " other ranks could not write their optimizer shard (see their logs)");
  }
  return OkStatus();
}

Status Run::SaveOptimizer(const std::string& tmp, const std::string& staging) {
  if (zero_ == nullptr) return optimizer_->Save(tmp);
  const int world = layout_.world_size();
  for (int r = 0; r < world; ++r) {
    const fs::path from = fs::path(staging) / ZeroShardFileName(r, world);
    std::error_code ec;
    fs::rename(from, fs::path(tmp) / ZeroShardFileName(r, world), ec);
    if (ec) return IoError(from.string() + ": cannot move into " + tmp + ": " + ec.message());
  }
  return zero_->SaveIndex(tmp);
}

Status Run::SaveCheckpoint(int64_t step_done) {
  Status saved = OkStatus();
  const std::string staging = CheckpointDir(output_dir_, step_done) + ".shards";
  if (zero_ != nullptr) SKRULL_RETURN_IF_ERROR(SaveZeroShards(staging));
  if (layout_.rank() == 0) {
    state_.rng_state_hex = CpuRngStateHex();
    state_.source_cursors = sampler_->state().cursors;  // the sampler is at state_.step
    StatusOr<std::string> dir =
        CommitCheckpoint(output_dir_, step_done, [&](const std::string& tmp) -> Status {
          const fs::path d(tmp);
          SKRULL_RETURN_IF_ERROR(WriteFileAtomically((d / kHfConfigFile).string(),
                                                     scheduler::ToHfConfigJson(config_)));
          // A model folder serving engines take as it is (serving_files.h).
          ServingSources sources;
          sources.model_dir = fs::path(job_.model.config).parent_path().string();
          sources.tokenizer = job_.data.tokenizer;
          sources.chat_template = job_.data.chat_template;
          SKRULL_RETURN_IF_ERROR(WriteServingFiles(config_, sources, tmp).status());
          if (job_.model.lora.has_value()) {
            SKRULL_RETURN_IF_ERROR(model_->SaveLoraAdapters(tmp, job_.model.weights));
          } else {
            SKRULL_RETURN_IF_ERROR(model_->SaveWeights((d / kModelWeightsFile).string()));
          }
          SKRULL_RETURN_IF_ERROR(SaveOptimizer(tmp, staging));
          return WriteFileAtomically((d / kTrainerStateFile).string(), TrainerStateToJson(state_));
        });
    if (zero_ != nullptr) {
      std::error_code ec;
      fs::remove_all(staging, ec);
    }
    if (dir.ok()) {
      last_checkpoint_ = *dir;
      Notice("checkpoint " + *dir);
      StatusOr<std::vector<std::string>> pruned =
          PruneCheckpoints(output_dir_, job_.checkpoint.keep_last);
      if (!pruned.ok()) {
        saved = pruned.status();
      } else if (!pruned->empty()) {
        Notice("spec.checkpoint.keepLast " + std::to_string(job_.checkpoint.keep_last) +
               ": deleted " + std::to_string(pruned->size()) + " older checkpoint(s)");
      }
    } else {
      saved = dir.status();
    }
  }
  // Ranks leave together, so a checkpoint is complete before any rank exits;
  // they wait on the store, not in a collective that rank 0's writing could
  // time out (Collectives::WaitForAllRanks).
  SKRULL_RETURN_IF_ERROR(coll_->WaitForAllRanks(CheckpointWaitTimeout()));
  return saved;
}

TrainSummary Run::Summary() const {
  TrainSummary s;
  s.job = job_.name;
  s.steps = state_.step;
  s.first_step = history_.empty() ? state_.step : history_.front().step;
  s.initial_loss = state_.initial_loss;
  s.final_loss = history_.empty()
                     ? (state_.loss_history.empty() ? std::numeric_limits<double>::quiet_NaN()
                                                    : state_.loss_history.back())
                     : history_.back().loss;
  s.tokens = state_.tokens;
  double seconds = 0, tokens = 0;
  for (const StepStats& h : history_) {
    seconds += h.seconds;
    tokens += static_cast<double>(h.tokens);
  }
  s.mean_iteration_seconds = history_.empty() ? 0 : seconds / history_.size();
  s.tokens_per_second = seconds > 0 ? tokens / seconds : 0;
  s.policy = scheduler::PolicyName(policy_);
  s.hardware_profile = hardware_profile_name_;
  s.bucket_size_tokens = bucket_size_tokens_;
  s.dp = layout_.dp();
  s.cp = layout_.cp();
  s.rank = layout_.rank();
  s.world_size = layout_.world_size();
  s.device = device_.str();
  s.peak_memory_bytes = run_peak_.reserved_bytes;
  s.peak_memory_allocated_bytes = run_peak_.allocated_bytes;
  s.zero_stage = job_.training.zero_stage;
  s.static_memory_bytes = StaticMemoryBytes();
  s.rollbacks = {state_.rollbacks_dacp, state_.rollbacks_gds};
  s.eval_loss = state_.last_eval_loss;
  s.best_eval_loss = state_.best_eval_loss;
  s.best_eval_step = state_.best_eval_step;
  s.resumed_from = resumed_from_;
  s.last_checkpoint = last_checkpoint_;
  s.stopped_early = stopped_early_;
  s.history = history_;
  s.phase_seconds = phase_totals_;
  return s;
}

StatusOr<TrainSummary> Run::Go() {
  try {
    return Train();
  } catch (const c10::OutOfMemoryError& e) {
    return OutOfMemory(e.what_without_backtrace());
  } catch (const c10::Error& e) {
    // Device allocations outside the caching allocator (cuBLAS workspaces,
    // NCCL buffers) fail through C10_CUDA_CHECK as a plain c10::Error.
    const std::string what = e.what_without_backtrace();
    if (what.find("CUDA error: out of memory") == std::string::npos) throw;
    return OutOfMemory(what);
  }
}

StatusOr<TrainSummary> Run::Train() {
  SKRULL_RETURN_IF_ERROR(Setup());
  const int64_t total = total_steps_;
  const int64_t first = state_.step;
  const int64_t every = std::max<int64_t>(1, job_.training.log_every);
  if (first < total) {
    Notice("training steps " + std::to_string(first) + ".." + std::to_string(total - 1) +
           ": policy " + scheduler::PolicyName(policy_) + ", dp " + std::to_string(layout_.dp()) +
           " x cp " + std::to_string(layout_.cp()) + ", global batch " +
           std::to_string(sampler_->global_batch_size()) + " sequences, bucketSize " +
           std::to_string(bucket_size_tokens_) + " tokens");
  }
  int64_t last_saved = -1;
  double seconds = 0;
  double tokens = 0;
  for (int64_t step = first; step < total; ++step) {
    bool stop = false;
    SKRULL_ASSIGN_OR_RETURN(StepStats stats, Step(step, &stop));
    history_.push_back(stats);
    seconds += stats.seconds;
    tokens += static_cast<double>(stats.tokens);
    const int64_t done = step + 1;
    if ((step - first) % every == 0 || done == total) {
      Notice(ProgressLine(stats, total, seconds, tokens, static_cast<int64_t>(history_.size())));
    }
    if (!std::isfinite(stats.loss)) {
      return FailedPreconditionError(
          "step " + std::to_string(step) + ": the loss is not finite (" +
          std::to_string(stats.loss) +
          "); lower spec.training.learningRate or set spec.training.gradClip");
    }
    const bool budget =
        options_.stop_after_steps > 0 && done - first >= options_.stop_after_steps && done < total;
    if (stop || budget) {
      stopped_early_ = true;
      SKRULL_RETURN_IF_ERROR(SaveCheckpoint(done));
      last_saved = done;
      Notice(std::string("stopping after step ") + std::to_string(done) +
             (stop ? " (signal)" : " (stop_after_steps)"));
      break;
    }
    if (job_.training.checkpoint_every > 0 && done % job_.training.checkpoint_every == 0 &&
        done < total) {
      SKRULL_RETURN_IF_ERROR(SaveCheckpoint(done));
      last_saved = done;
    }
  }
  if (!stopped_early_ && last_saved != state_.step && state_.step > first) {
    SKRULL_RETURN_IF_ERROR(SaveCheckpoint(state_.step));
  }
  Status pushed = metrics_->PushFinal();
  if (!pushed.ok()) Notice("pushgateway: " + pushed.message());

  TakeMemoryPeak();  // a run with no step to do still reports its memory
  TrainSummary summary = Summary();
  const std::string path = options_.summary_path.empty()
                               ? (fs::path(output_dir_) / "summary.json").string()
                               : options_.summary_path;
  SKRULL_RETURN_IF_ERROR(WriteFileAtomically(path, SummaryToJson(summary)));
  if (!history_.empty()) {
    std::ostringstream line;
    line << "done: steps " << summary.steps << ", loss " << std::fixed << std::setprecision(4)
         << summary.initial_loss << " -> " << summary.final_loss << ", " << std::setprecision(1)
         << summary.tokens_per_second << " tokens/s, " << std::setprecision(3)
         << summary.mean_iteration_seconds << " s/step; summary " << path;
    Notice(line.str());
  }
  return summary;
}

}  // namespace

std::string JobSpecHash(const api::JobSpec& job) {
  api::JobSpec j = job;
  j.name.clear();
  j.namespace_name.clear();
  j.labels.clear();
  j.annotations.clear();
  j.training.steps = 0;
  j.training.epochs = 0;  // like steps: the run's length, which a resume may extend
  j.training.output_dir.clear();
  j.training.resume_from.clear();
  j.training.log_every = 1;
  j.training.checkpoint_every = 0;
  // Neither changes the math: a resumed run may change them.
  j.training.recompute = api::Recompute::kNone;
  j.training.collective_timeout_seconds = api::TrainingSpec().collective_timeout_seconds;
  j.checkpoint = api::CheckpointSpec();
  j.metrics = api::MetricsSpec();
  j.resources = api::ResourcesSpec();
  j.image = api::ImageSpec();
  j.tuning = api::TuningSpec();
  j.source_dir.clear();
  // Where the profile lives only changes how plans are priced, never the
  // math (plans are equivalent), so a moved or re-measured profile resumes;
  // so does a BucketSize the controller's tuner changed between runs.
  j.scheduler.hardware_profile.clear();
  j.scheduler.bucket_size_auto = false;
  j.scheduler.bucket_size_tokens = 1;
  j.run_policy = api::RunPolicy();
  j.storage = api::StorageSpec();
  const std::string text = api::ToYaml(j);
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

StatusOr<TrainSummary> RunTrainer(const api::JobSpec& job, const dist::RankLayout& layout,
                                  Collectives* collectives, const TrainerOptions& options) {
  SKRULL_CHECK(collectives != nullptr);
  try {
    Run run(job, layout, collectives, options);
    return run.Go();
  } catch (const c10::Error& e) {
    return InternalError("libtorch error on rank " + std::to_string(layout.rank()) + ": " +
                         e.what_without_backtrace());
  } catch (const std::exception& e) {
    return InternalError("error on rank " + std::to_string(layout.rank()) + ": " + e.what());
  }
}

}  // namespace skrull::train

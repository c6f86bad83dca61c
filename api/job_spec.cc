#include "api/job_spec.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "api/diagnostics.h"
#include "api/enum_names.h"
#include "api/parse.h"
#include "api/validate.h"
#include "api/yaml_reader.h"

#ifndef SKRULL_VERSION
#define SKRULL_VERSION "dev"
#endif

namespace skrull::api {

const char* DataFormatName(DataFormat f) { return NameOf(kDataFormatNames, f); }

std::vector<std::string> MappableFields(DataFormat f) {
  switch (f) {
    case DataFormat::kTokenizedJsonl:
      return {};
    case DataFormat::kTextJsonl:
      return {"text", "messages", "role", "content"};
    case DataFormat::kAlpaca:
      return {"instruction", "input", "output", "system"};
    case DataFormat::kShareGpt:
      return {"conversations", "from", "value", "system", "human", "gpt"};
  }
  return {};
}
const char* OverLengthPolicyName(OverLengthPolicy p) { return NameOf(kOverLengthPolicyNames, p); }
const char* MalformedPolicyName(MalformedPolicy p) { return NameOf(kMalformedPolicyNames, p); }
const char* LrScheduleName(LrSchedule s) { return NameOf(kLrScheduleNames, s); }
const char* PrecisionName(Precision p) { return NameOf(kPrecisionNames, p); }
const char* RecomputeName(Recompute r) { return NameOf(kRecomputeNames, r); }
const char* GradReduceDtypeName(GradReduceDtype d) { return NameOf(kGradReduceDtypeNames, d); }
const char* CleanPodPolicyName(CleanPodPolicy p) { return NameOf(kCleanPodPolicyNames, p); }

const char* DefaultImageTag() { return SKRULL_VERSION; }

bool operator==(const EvalSpec& a, const EvalSpec& b) {
  return std::tie(a.path, a.format, a.fields, a.every_steps, a.max_sequences) ==
         std::tie(b.path, b.format, b.fields, b.every_steps, b.max_sequences);
}

bool operator==(const DataSourceSpec& a, const DataSourceSpec& b) {
  return std::tie(a.path, a.format, a.weight, a.fields) ==
         std::tie(b.path, b.format, b.weight, b.fields);
}

namespace {

auto Fields(const LoraSpec& l) { return std::tie(l.rank, l.alpha, l.target_modules); }
auto Fields(const ModelSpec& m) { return std::tie(m.config, m.weights, m.seed); }
auto Fields(const DataSpec& d) {
  return std::tie(d.path, d.format, d.max_length_tokens, d.over_length, d.malformed, d.tokenizer,
                  d.chat_template, d.max_line_bytes, d.template_max_bytes, d.template_max_steps,
                  d.template_max_seconds, d.fields, d.sources, d.eval);
}
auto Fields(const ParallelismSpec& p) {
  return std::tie(p.nodes, p.procs_per_node, p.data_parallel, p.context_parallel);
}
auto Fields(const SchedulerSpec& s) {
  return std::tie(s.policy, s.bucket_size_auto, s.bucket_size_tokens, s.batch_size,
                  s.micro_batch_size, s.seed, s.hardware_profile);
}
auto Fields(const TrainingSpec& t) {
  return std::tie(t.steps, t.epochs, t.learning_rate, t.warmup_steps, t.schedule, t.min_lr_ratio,
                  t.weight_decay, t.adam_beta1, t.adam_beta2, t.adam_epsilon, t.grad_clip,
                  t.precision, t.checkpoint_every, t.output_dir, t.resume_from, t.log_every,
                  t.collective_timeout_seconds, t.zero_stage, t.recompute, t.grad_reduce_dtype);
}
auto Fields(const CheckpointSpec& c) { return std::tie(c.keep_last); }
auto Fields(const MetricsSpec& m) { return std::tie(m.port, m.pushgateway, m.address); }
auto Fields(const ResourcesSpec& r) { return std::tie(r.gpus_per_proc, r.cpu, r.memory); }
auto Fields(const ImageSpec& i) { return std::tie(i.repository, i.tag, i.pull_policy); }
auto Fields(const TuningSpec& t) {
  return std::tie(t.enabled, t.target_memory_fraction, t.min_bucket_size_tokens,
                  t.max_bucket_size_tokens);
}
auto Fields(const StorageSpec& s) { return std::tie(s.claim_name, s.mount_path, s.read_only); }
auto Fields(const RunPolicy& r) {
  return std::tie(r.backoff_limit, r.start_deadline_seconds, r.active_deadline_seconds,
                  r.ttl_seconds_after_finished, r.clean_pod_policy, r.suspend);
}

auto Fields(const PodTemplateSpec& p) {
  return std::tie(p.node_selector, p.tolerations, p.affinity, p.priority_class_name,
                  p.scheduler_name, p.env, p.env_names, p.volumes, p.volume_names, p.volume_mounts,
                  p.volume_mount_names, p.image_pull_secrets, p.requests, p.limits, p.host_network);
}

template <typename T>
bool Same(const T& a, const T& b) {
  return Fields(a) == Fields(b);
}

bool SameLora(const std::optional<LoraSpec>& a, const std::optional<LoraSpec>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a.has_value() || Same(*a, *b);
}

// `path` unchanged when empty or absolute; else base_dir/path, normalized.
std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

void ResolvePaths(const std::string& base_dir, JobSpec* spec) {
  spec->model.config = Resolve(base_dir, spec->model.config);
  spec->model.weights = Resolve(base_dir, spec->model.weights);
  spec->data.path = Resolve(base_dir, spec->data.path);
  for (DataSourceSpec& source : spec->data.sources) source.path = Resolve(base_dir, source.path);
  if (spec->data.eval) spec->data.eval->path = Resolve(base_dir, spec->data.eval->path);
  spec->data.tokenizer = Resolve(base_dir, spec->data.tokenizer);
  spec->scheduler.hardware_profile = Resolve(base_dir, spec->scheduler.hardware_profile);
  spec->training.output_dir = Resolve(base_dir, spec->training.output_dir);
  if (spec->training.resume_from != kResumeLatest) {
    spec->training.resume_from = Resolve(base_dir, spec->training.resume_from);
  }
}

// The file's bytes, but no more than one past kMaxDocumentBytes (enough for
// LoadYamlDocument to refuse it): a job path naming /dev/zero or a huge file
// costs no more than a large job.
StatusOr<std::string> ReadJobFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return NotFoundError(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgumentError(path + ": is a directory, expected a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path + ": cannot open for reading: " + std::strerror(errno));
  std::string text(kMaxDocumentBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return IoError(path + ": read failed");
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

}  // namespace

bool operator==(const JobSpec& a, const JobSpec& b) {
  return std::tie(a.name, a.namespace_name, a.labels, a.annotations) ==
             std::tie(b.name, b.namespace_name, b.labels, b.annotations) &&
         Same(a.model, b.model) && SameLora(a.model.lora, b.model.lora) && Same(a.data, b.data) &&
         Same(a.parallelism, b.parallelism) && Same(a.scheduler, b.scheduler) &&
         Same(a.training, b.training) && Same(a.checkpoint, b.checkpoint) &&
         Same(a.metrics, b.metrics) && Same(a.resources, b.resources) && Same(a.image, b.image) &&
         Same(a.tuning, b.tuning) && Same(a.run_policy, b.run_policy) &&
         Same(a.storage, b.storage) && Same(a.pod, b.pod);
}

bool PodTemplateSpec::Empty() const { return Fields(*this) == Fields(PodTemplateSpec{}); }

std::string OutputDirOf(const JobSpec& spec) {
  if (!spec.training.output_dir.empty()) return spec.training.output_dir;
  return "runs/" + (spec.name.empty() ? std::string("job") : spec.name);
}

std::string MetricsAddressOf(const JobSpec& spec) {
  return spec.metrics.address.empty() ? kLocalMetricsAddress : spec.metrics.address;
}

void ApplyDefaults(JobSpec* spec) {
  const JobSpec defaults;
  if (spec->namespace_name.empty()) spec->namespace_name = defaults.namespace_name;
  SchedulerSpec& scheduler = spec->scheduler;
  if (!scheduler.bucket_size_auto && scheduler.bucket_size_tokens == 0) {
    scheduler.bucket_size_auto = true;
  }
  spec->training.output_dir = OutputDirOf(*spec);
  if (spec->image.repository.empty()) spec->image.repository = defaults.image.repository;
  if (spec->image.tag.empty()) spec->image.tag = DefaultImageTag();
  if (spec->image.pull_policy.empty()) spec->image.pull_policy = defaults.image.pull_policy;
}

Status ValidateJobSpec(const JobSpec& spec, const std::string& origin) {
  ParsedJobSpec parsed;
  parsed.api_version = kApiVersion;
  parsed.kind = kKind;
  parsed.spec = spec;
  Diagnostics diag;
  CollectValidationErrors(parsed, &diag);
  return diag.ToStatus(origin);
}

StatusOr<JobSpec> WithBucketSize(const JobSpec& spec, int64_t tokens, const std::string& origin) {
  if (tokens <= 0) {
    return InvalidArgumentError(
        origin + ": spec.scheduler.bucketSize: the override must be > 0 tokens (got " +
        std::to_string(tokens) + ")");
  }
  JobSpec tuned = spec;
  tuned.scheduler.bucket_size_auto = false;
  tuned.scheduler.bucket_size_tokens = tokens;
  SKRULL_RETURN_IF_ERROR(ValidateJobSpec(tuned, origin));
  return tuned;
}

StatusOr<JobSpec> LoadJobSpec(const std::string& yaml_text, const std::string& origin,
                              const std::string& base_dir) {
  SKRULL_ASSIGN_OR_RETURN(YAML::Node doc, LoadYamlDocument(yaml_text, origin));
  Diagnostics diag;
  ParsedJobSpec parsed = ParseJobSpec(doc, &diag);
  CollectValidationErrors(parsed, &diag);
  SKRULL_RETURN_IF_ERROR(diag.ToStatus(origin));
  JobSpec spec = std::move(parsed.spec);
  ApplyDefaults(&spec);
  if (!base_dir.empty()) ResolvePaths(base_dir, &spec);
  spec.source_dir = base_dir;
  return spec;
}

StatusOr<JobSpec> LoadJobSpecFile(const std::string& path) {
  SKRULL_ASSIGN_OR_RETURN(std::string text, ReadJobFile(path));
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec) return IoError(path + ": cannot make the path absolute: " + ec.message());
  return LoadJobSpec(text, path, absolute.parent_path().lexically_normal().string());
}

std::string DescribeJobSpec(const JobSpec& spec) {
  const ParallelismSpec& p = spec.parallelism;
  const SchedulerSpec& s = spec.scheduler;
  const TrainingSpec& t = spec.training;
  auto plural = [](int64_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
  };
  std::string text = spec.name + " (namespace " + spec.namespace_name +
                     "): " + plural(p.WorldSize(), "rank") + " = " + plural(p.nodes, "node") +
                     " x " + plural(p.procs_per_node, "proc") +
                     " per node, split as dataParallel " + std::to_string(p.data_parallel) +
                     " x contextParallel " + std::to_string(p.context_parallel) + ". Scheduler " +
                     scheduler::PolicyName(s.policy) + " with bucketSize ";
  if (s.bucket_size_auto) {
    text += s.hardware_profile.empty() ? "auto (no hardware profile: host memory on CPU)"
                                       : "auto (from the hardware profile)";
  } else {
    text += std::to_string(s.bucket_size_tokens) + " tokens per rank";
  }
  if (!s.hardware_profile.empty()) text += ", plans priced with " + s.hardware_profile;
  text += "; global batch " + plural(int64_t{s.batch_size} * p.data_parallel, "sequence") +
          " (batchSize " + std::to_string(s.batch_size) + " x dataParallel " +
          std::to_string(p.data_parallel) + "). Training " +
          (t.epochs > 0 ? plural(t.epochs, "epoch") + " (steps derived from the data size)"
                        : plural(t.steps, "step")) +
          ", learning rate " + FormatDouble(t.learning_rate) + " (" + LrScheduleName(t.schedule) +
          ", " + plural(t.warmup_steps, "warmup step") + "), " + PrecisionName(t.precision) + ", ";
  if (spec.model.lora) {
    text += "LoRA rank " + std::to_string(spec.model.lora->rank) + " on " +
            JoinNames(spec.model.lora->target_modules);
  } else {
    text += "full fine-tuning";
  }
  text += ". Model " + spec.model.config + ", data ";
  if (spec.data.sources.empty()) {
    text += spec.data.path + " (" + std::string(DataFormatName(spec.data.format)) + ")";
  } else {
    for (size_t i = 0; i < spec.data.sources.size(); ++i) {
      const DataSourceSpec& source = spec.data.sources[i];
      text += (i == 0 ? "" : ", ") + source.path + " (" + DataFormatName(source.format) +
              ", weight " + FormatDouble(source.weight) + ")";
    }
  }
  text += ", output " + t.output_dir + ".";
  return text;
}

}  // namespace skrull::api

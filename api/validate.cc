#include "api/validate.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "api/enum_names.h"
#include "api/syntax.h"
#include "scheduler/policy_name.h"

namespace skrull::api {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }
std::string Str(double v) { return FormatDouble(v); }

// Reports errors at a field's position and skips fields the parser rejected.
class Checker {
 public:
  Checker(const FieldIndex& fields, Diagnostics* diag) : fields_(fields), diag_(diag) {}

  void Error(const std::string& path, const std::string& message) {
    diag_->Add(fields_.PositionOf(path), path, message);
  }
  // False when the parser rejected `path` or a mapping above it (whose fields
  // then all hold defaults): those were reported already.
  bool Usable(const std::string& path) const {
    for (std::string p = path; !p.empty(); p = ParentPath(p)) {
      if (fields_.IsInvalid(p)) return false;
    }
    return true;
  }
  // Whether rules across the fields of `section` can be judged: every field
  // named there was read (no typos, no duplicates).
  bool Complete(const std::string& section) const { return fields_.incomplete.count(section) == 0; }

  void AtLeast(const std::string& path, int64_t value, int64_t min) {
    if (Usable(path) && value < min) {
      Error(path, "must be >= " + Str(min) + " (got " + Str(value) + ")");
    }
  }
  void AtLeast(const std::string& path, double value, double min) {
    if (Usable(path) && value < min) {
      Error(path, "must be >= " + Str(min) + " (got " + Str(value) + ")");
    }
  }
  void Positive(const std::string& path, double value) {
    if (Usable(path) && !(value > 0)) Error(path, "must be > 0 (got " + Str(value) + ")");
  }
  // lo <= value <= hi, or value < hi when !hi_closed; lo < value when !lo_closed.
  void InRange(const std::string& path, double value, double lo, bool lo_closed, double hi,
               bool hi_closed) {
    if (!Usable(path)) return;
    bool ok = (lo_closed ? value >= lo : value > lo) && (hi_closed ? value <= hi : value < hi);
    if (ok) return;
    Error(path, std::string("must be in ") + (lo_closed ? "[" : "(") + Str(lo) + ", " + Str(hi) +
                    (hi_closed ? "]" : ")") + " (got " + Str(value) + ")");
  }
  void InRange(const std::string& path, int64_t value, int64_t lo, int64_t hi) {
    if (Usable(path) && (value < lo || value > hi)) {
      Error(path, "must be in " + Str(lo) + ".." + Str(hi) + " (got " + Str(value) + ")");
    }
  }
  // `check` is one of the Check* functions of syntax.h.
  void Syntax(const std::string& path, const std::string& value,
              std::string (*check)(std::string_view)) {
    if (!Usable(path)) return;
    std::string problem = check(value);
    if (!problem.empty()) Error(path, problem + " (got " + Quote(value) + ")");
  }
  void Required(const std::string& path, const std::string& value, const std::string& what) {
    if (Usable(path) && value.empty()) Error(path, "required: " + what);
  }

 private:
  const FieldIndex& fields_;
  Diagnostics* diag_;
};

void CheckHeader(const ParsedJobSpec& p, Checker& c) {
  if (p.api_version.empty()) {
    c.Required("apiVersion", p.api_version, std::string("write apiVersion: ") + kApiVersion);
  } else if (c.Usable("apiVersion") && p.api_version != kApiVersion) {
    c.Error("apiVersion",
            std::string("must be ") + kApiVersion + " (got " + Quote(p.api_version) + ")");
  }
  if (p.kind.empty()) {
    c.Required("kind", p.kind, std::string("write kind: ") + kKind);
  } else if (c.Usable("kind") && p.kind != kKind) {
    c.Error("kind", std::string("must be ") + kKind + " (got " + Quote(p.kind) + ")");
  }
}

void CheckStringMap(const std::string& path, const std::map<std::string, std::string>& map,
                    bool check_values, Checker& c) {
  for (const auto& [key, value] : map) {
    const std::string entry = path + "[" + Abbreviate(key) + "]";
    std::string problem = CheckLabelKey(key);
    if (!problem.empty()) c.Error(entry, "key " + problem + " (got " + Quote(key) + ")");
    if (check_values) {
      problem = CheckLabelValue(value);
      if (!problem.empty()) c.Error(entry, "value " + problem + " (got " + Quote(value) + ")");
    }
  }
}

void CheckMetadata(const JobSpec& s, Checker& c) {
  if (s.name.empty()) {
    c.Required("metadata.name", s.name, "a DNS-1123 label such as my-job");
  } else {
    c.Syntax("metadata.name", s.name, CheckDns1123Label);
  }
  if (!s.namespace_name.empty())
    c.Syntax("metadata.namespace", s.namespace_name, CheckDns1123Label);
  CheckStringMap("metadata.labels", s.labels, /*check_values=*/true, c);
  CheckStringMap("metadata.annotations", s.annotations, /*check_values=*/false, c);
}

void CheckModel(const ModelSpec& m, Checker& c) {
  c.Required("spec.model.config", m.config, "path to a Hugging Face config.json");
  if (!m.lora) return;
  c.InRange("spec.model.lora.rank", int64_t{m.lora->rank}, 1, kMaxLoraRank);
  c.Positive("spec.model.lora.alpha", m.lora->alpha);
  const std::string modules = "spec.model.lora.targetModules";
  if (!c.Usable(modules)) return;
  if (m.lora->target_modules.empty()) {
    c.Error(modules, "must name at least one of " + JoinNames(NamesOf(kLoraTargetModules)));
  }
  const std::vector<std::string> allowed = NamesOf(kLoraTargetModules);
  for (size_t i = 0; i < m.lora->target_modules.size(); ++i) {
    const std::string& name = m.lora->target_modules[i];
    const std::string path = modules + "[" + std::to_string(i) + "]";
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      c.Error(path, "must be one of " + JoinNames(allowed) + " (got " + Quote(name) + ")" +
                        DidYouMean(name, allowed));
    } else if (std::find(m.lora->target_modules.begin(), m.lora->target_modules.begin() + i,
                         name) != m.lora->target_modules.begin() + i) {
      c.Error(path, "duplicate module " + Quote(name));
    }
  }
}

// <section>.fields: keys from MappableFields(format), non-empty names.
void CheckFields(const std::string& section, DataFormat format,
                 const std::map<std::string, std::string>& fields, Checker& c) {
  const std::vector<std::string> allowed = MappableFields(format);
  for (const auto& [key, name] : fields) {
    const std::string path = section + ".fields." + key;
    if (allowed.empty()) {
      c.Error(path, std::string("format ") + DataFormatName(format) +
                        " has no fields to map (its records hold token ids); remove "
                        "fields or use a text format");
    } else if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      c.Error(path, std::string("is not a field of format ") + DataFormatName(format) +
                        "; map one of " + JoinNames(allowed) + DidYouMean(key, allowed));
    } else if (name.empty()) {
      c.Error(path, "is empty; name the field this data uses for '" + key + "'");
    }
  }
}

// spec.data.sources[i]: a path, a positive weight, fields of its format.
void CheckSources(const std::vector<DataSourceSpec>& sources, Checker& c) {
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string base = "spec.data.sources[" + std::to_string(i) + "]";
    if (!c.Usable(base)) continue;
    c.Required(base + ".path", sources[i].path,
               "a .jsonl or .jsonl.gz file, a directory of them, or a glob such as "
               "data/*.jsonl");
    if (c.Usable(base + ".weight") && !(sources[i].weight > 0)) {
      c.Error(base + ".weight", "must be > 0 (got " + Str(sources[i].weight) +
                                    "); a source's share of the samples is weight / the sum "
                                    "of weights, e.g. 1; remove a source to leave it out");
    }
    CheckFields(base, sources[i].format, sources[i].fields, c);
  }
}

void CheckData(const JobSpec& s, Checker& c) {
  const DataSpec& d = s.data;
  if (d.sources.empty()) {
    c.Required("spec.data.path", d.path, "path to a .jsonl file");
  } else if (!d.path.empty()) {
    c.Error("spec.data.sources", "set either path or sources, not both (got path '" + d.path +
                                     "'); list that file as one of the sources");
  }
  CheckSources(d.sources, c);
  if (d.eval.has_value()) {
    c.Required("spec.data.eval.path", d.eval->path,
               "a held-out .jsonl or .jsonl.gz file, a directory of them, or a glob");
    c.InRange("spec.data.eval.everySteps", d.eval->every_steps, 0, kMaxSteps);
    c.InRange("spec.data.eval.maxSequences", d.eval->max_sequences, 0, kMaxSteps);
    CheckFields("spec.data.eval", d.eval->format, d.eval->fields, c);
  }
  c.InRange("spec.data.maxLength", d.max_length_tokens, 0, kMaxSequenceTokens);
  c.InRange("spec.data.maxLineBytes", d.max_line_bytes, kMinMaxLineBytes, kMaxMaxLineBytes);
  c.InRange("spec.data.templateMaxBytes", d.template_max_bytes, int64_t{1} << 20,
            kMaxTemplateMaxBytes);
  c.InRange("spec.data.templateMaxSteps", d.template_max_steps, 10000, kMaxTemplateMaxSteps);
  c.InRange("spec.data.templateMaxSeconds", d.template_max_seconds, 0, false,
            kMaxTemplateMaxSeconds, true);
  CheckFields("spec.data", d.format, d.fields, c);
  bool text = d.sources.empty() && IsTextFormat(d.format);
  for (const DataSourceSpec& source : d.sources) text |= IsTextFormat(source.format);
  if (d.eval.has_value()) text |= IsTextFormat(d.eval->format);
  if (text && d.tokenizer.empty() && !s.model.weights.empty()) {
    c.Error("spec.data.tokenizer",
            std::string("required: ") + DataFormatName(d.format) +
                " with pretrained weights (spec.model.weights) needs the model's "
                "own tokenizer; set spec.data.tokenizer to the model folder or its tokenizer.json "
                "(the built-in byte tokenizer's ids mean nothing to a pretrained model)");
  }
  if (!text && !d.tokenizer.empty()) {
    c.Error("spec.data.tokenizer",
            "only used with spec.data.format: text-jsonl, alpaca or sharegpt (tokenized-jsonl "
            "already holds ids); remove it or switch the format");
  }
  if (!d.chat_template.empty() && d.tokenizer.empty()) {
    c.Error("spec.data.chatTemplate",
            "needs spec.data.tokenizer (the byte tokenizer has a fixed chat format)");
  }
}

// Whether every field of spec.parallelism is in range, so rules across them
// (and other sections' rules that use them) can be judged.
bool ParallelismUsable(const ParallelismSpec& p, const Checker& c) {
  const std::string base = "spec.parallelism.";
  return c.Complete("spec.parallelism") && c.Usable(base + "nodes") &&
         c.Usable(base + "procsPerNode") && c.Usable(base + "dataParallel") &&
         c.Usable(base + "contextParallel") && p.nodes >= 1 && p.nodes <= kMaxNodes &&
         p.procs_per_node >= 1 && p.procs_per_node <= kMaxProcsPerNode && p.data_parallel >= 1 &&
         p.data_parallel <= kMaxWorldSize && p.context_parallel >= 1 &&
         p.context_parallel <= kMaxWorldSize;
}

void CheckParallelism(const ParallelismSpec& p, Checker& c) {
  const std::string base = "spec.parallelism";
  c.InRange(base + ".nodes", int64_t{p.nodes}, 1, kMaxNodes);
  c.InRange(base + ".procsPerNode", int64_t{p.procs_per_node}, 1, kMaxProcsPerNode);
  c.InRange(base + ".dataParallel", int64_t{p.data_parallel}, 1, kMaxWorldSize);
  c.InRange(base + ".contextParallel", int64_t{p.context_parallel}, 1, kMaxWorldSize);
  if (!ParallelismUsable(p, c)) return;
  const int64_t world = int64_t{p.nodes} * p.procs_per_node;
  const int64_t grid = int64_t{p.data_parallel} * p.context_parallel;
  if (world > kMaxWorldSize) {
    c.Error(base, "nodes (" + Str(int64_t{p.nodes}) + ") x procsPerNode (" +
                      Str(int64_t{p.procs_per_node}) + ") = " + Str(world) +
                      " processes; the world size must be <= " + Str(int64_t{kMaxWorldSize}));
    return;
  }
  if (world == grid) return;
  std::vector<std::string> fixes;
  if (world % p.context_parallel == 0) {
    fixes.push_back("dataParallel: " + Str(world / p.context_parallel));
  }
  if (world % p.data_parallel == 0) {
    fixes.push_back("contextParallel: " + Str(world / p.data_parallel));
  }
  if (grid % p.nodes == 0 && grid / p.nodes <= kMaxProcsPerNode) {
    fixes.push_back("procsPerNode: " + Str(grid / p.nodes));
  }
  std::string fix;
  for (const std::string& f : fixes) fix += (fix.empty() ? "set " : ", or ") + f;
  if (fix.empty()) fix = "choose dataParallel x contextParallel = " + Str(world);
  c.Error(base,
          "dataParallel x contextParallel must equal nodes x procsPerNode (the world "
          "size), but dataParallel (" +
              Str(int64_t{p.data_parallel}) + ") x contextParallel (" +
              Str(int64_t{p.context_parallel}) + ") = " + Str(grid) + " and nodes (" +
              Str(int64_t{p.nodes}) + ") x procsPerNode (" + Str(int64_t{p.procs_per_node}) +
              ") = " + Str(world) + "; " + fix);
}

// microBatchSize: deepspeed's sequences per micro-batch, 1..batchSize; any
// other policy packs micro-batches by bucketSize and must leave it at 1.
void CheckMicroBatchSize(const SchedulerSpec& s, Checker& c) {
  const std::string path = "spec.scheduler.microBatchSize";
  if (!c.Usable(path)) return;
  if (s.policy != scheduler::Policy::kDeepSpeed) {
    if (s.micro_batch_size != 1 && c.Usable("spec.scheduler.policy")) {
      c.Error(path, "only policy deepspeed reads it (policy is " +
                        Quote(scheduler::PolicyName(s.policy)) +
                        "); remove it or set spec.scheduler.policy: deepspeed (got " +
                        Str(int64_t{s.micro_batch_size}) + ")");
    }
    return;
  }
  const int64_t most = c.Usable("spec.scheduler.batchSize") && s.batch_size >= 1
                           ? std::min<int64_t>(s.batch_size, kMaxBatchSize)
                           : kMaxBatchSize;
  if (s.micro_batch_size < 1 || s.micro_batch_size > most) {
    c.Error(path, "must be 1.." + Str(most) + " sequences (at most batchSize) (got " +
                      Str(int64_t{s.micro_batch_size}) + ")");
  }
}

void CheckScheduler(const SchedulerSpec& s, const ParallelismSpec& p, Checker& c) {
  const std::vector<std::string> allowed = NamesOf(kSchedulerPolicyNames);
  if (c.Usable("spec.scheduler.policy") &&
      std::find(allowed.begin(), allowed.end(), scheduler::PolicyName(s.policy)) == allowed.end()) {
    c.Error("spec.scheduler.policy", "must be one of " + JoinNames(allowed) + " (got " +
                                         Quote(scheduler::PolicyName(s.policy)) + ")");
  }
  // 0 = unset (ApplyDefaults makes it auto). A 0 written in YAML is rejected
  // by the parser, which knows it was written.
  const std::string bucket = "spec.scheduler.bucketSize";
  const bool parallelism = ParallelismUsable(p, c);
  if (!s.bucket_size_auto && c.Usable(bucket)) {
    if (s.bucket_size_tokens < 0 || s.bucket_size_tokens > kMaxBucketSizeTokens) {
      c.Error(bucket, "must be 1.." + Str(kMaxBucketSizeTokens) +
                          " tokens (1024M) or 'auto' (got " + Str(s.bucket_size_tokens) + ")");
    } else if (parallelism && s.bucket_size_tokens * p.context_parallel > kMaxSequenceTokens) {
      c.Error(bucket, "bucketSize (" + Str(s.bucket_size_tokens) +
                          ") x spec.parallelism.contextParallel (" +
                          Str(int64_t{p.context_parallel}) +
                          ") = " + Str(s.bucket_size_tokens * p.context_parallel) +
                          " tokens, the longest sequence a plan can place, must be <= " +
                          Str(kMaxSequenceTokens) + "; lower bucketSize or contextParallel");
    }
  }
  const std::string batch = "spec.scheduler.batchSize";
  c.InRange(batch, int64_t{s.batch_size}, 1, kMaxBatchSize);
  if (parallelism && c.Usable(batch) && s.batch_size >= 1 && s.batch_size <= kMaxBatchSize &&
      int64_t{s.batch_size} * p.data_parallel > kMaxGlobalBatch) {
    c.Error(batch, "the global batch, batchSize (" + Str(int64_t{s.batch_size}) +
                       ") x spec.parallelism.dataParallel (" + Str(int64_t{p.data_parallel}) +
                       ") = " + Str(int64_t{s.batch_size} * p.data_parallel) +
                       " sequences, must be <= " + Str(kMaxGlobalBatch));
  }
  CheckMicroBatchSize(s, c);
}

// steps or epochs, exactly one (steps 0 = derived from epochs by the trainer).
void CheckLength(const TrainingSpec& t, Checker& c) {
  const std::string base = "spec.training.";
  if (t.epochs == 0) {
    // A rejected epochs left steps 0 (derived); that is not a second problem.
    if (c.Usable(base + "epochs")) c.InRange(base + "steps", t.steps, 1, kMaxSteps);
    return;
  }
  c.InRange(base + "epochs", t.epochs, 1, kMaxSteps);
  if (t.steps != 0 && c.Usable(base + "steps")) {
    c.Error(base + "epochs", "set either steps or epochs, not both (got steps " + Str(t.steps) +
                                 " and epochs " + Str(t.epochs) +
                                 "); remove one: epochs derives steps from the data size");
  }
}

void CheckTraining(const TrainingSpec& t, Checker& c) {
  const std::string base = "spec.training.";
  CheckLength(t, c);
  c.Positive(base + "learningRate", t.learning_rate);
  c.InRange(base + "warmupSteps", t.warmup_steps, 0, kMaxSteps);
  if (c.Complete("spec.training") && c.Usable(base + "steps") && c.Usable(base + "warmupSteps") &&
      t.steps >= 1 && t.warmup_steps >= t.steps) {
    c.Error(base + "warmupSteps",
            "must be < steps (" + Str(t.steps) + ") (got " + Str(t.warmup_steps) + ")");
  }
  c.InRange(base + "minLrRatio", t.min_lr_ratio, 0, true, 1, true);
  c.AtLeast(base + "weightDecay", t.weight_decay, 0.0);
  c.InRange(base + "adamBeta1", t.adam_beta1, 0, true, 1, false);
  c.InRange(base + "adamBeta2", t.adam_beta2, 0, true, 1, false);
  c.Positive(base + "adamEpsilon", t.adam_epsilon);
  c.AtLeast(base + "gradClip", t.grad_clip, 0.0);
  c.InRange(base + "checkpointEvery", t.checkpoint_every, 0, kMaxSteps);
  c.InRange(base + "logEvery", t.log_every, 1, kMaxSteps);
  c.InRange(base + "collectiveTimeoutSeconds", t.collective_timeout_seconds, 1, kMaxSeconds);
  c.InRange(base + "zeroStage", int64_t{t.zero_stage}, 0, 2);
}

void CheckCheckpoint(const CheckpointSpec& k, Checker& c) {
  c.InRange("spec.checkpoint.keepLast", k.keep_last, 0, kMaxSteps);
}

void CheckMetrics(const MetricsSpec& m, const ParallelismSpec& p, Checker& c) {
  const std::string port = "spec.metrics.port";
  c.InRange(port, int64_t{m.port}, 0, 65535);
  // procsPerNode is at most kMaxProcsPerNode here, so the bound is positive.
  const int64_t last_port = int64_t{m.port} + p.procs_per_node - 1;
  if (ParallelismUsable(p, c) && c.Usable(port) && m.port > 0 && m.port <= 65535 &&
      last_port > 65535) {
    c.Error(port, "ranks serve on port + local rank, so with spec.parallelism.procsPerNode " +
                      Str(int64_t{p.procs_per_node}) +
                      " it must be <= " + Str(int64_t{65535} - p.procs_per_node + 1) + " (got " +
                      Str(int64_t{m.port}) + ")");
  }
  if (!m.pushgateway.empty())
    c.Syntax("spec.metrics.pushgateway", m.pushgateway, CheckHttpHostPort);
  if (!m.address.empty()) c.Syntax("spec.metrics.address", m.address, CheckIpAddress);
}

void CheckResources(const ResourcesSpec& r, Checker& c) {
  c.AtLeast("spec.resources.gpusPerProc", int64_t{r.gpus_per_proc}, 0);
  if (!r.cpu.empty()) c.Syntax("spec.resources.cpu", r.cpu, CheckQuantity);
  if (!r.memory.empty()) c.Syntax("spec.resources.memory", r.memory, CheckQuantity);
}

void CheckImage(const ImageSpec& i, Checker& c) {
  if (!i.repository.empty()) c.Syntax("spec.image.repository", i.repository, CheckImageRepository);
  if (!i.tag.empty()) c.Syntax("spec.image.tag", i.tag, CheckImageTag);
  const std::string policy = "spec.image.pullPolicy";
  const std::vector<std::string> allowed = NamesOf(kPullPolicies);
  if (!i.pull_policy.empty() && c.Usable(policy) &&
      std::find(allowed.begin(), allowed.end(), i.pull_policy) == allowed.end()) {
    c.Error(policy, "must be one of " + JoinNames(allowed) + " (got " + Quote(i.pull_policy) + ")" +
                        DidYouMean(i.pull_policy, allowed));
  }
}

void CheckTuning(const TuningSpec& t, Checker& c) {
  const std::string base = "spec.tuning.";
  c.InRange(base + "targetMemoryFraction", t.target_memory_fraction, 0, false, 1, true);
  c.InRange(base + "minBucketSizeTokens", t.min_bucket_size_tokens, 1, kMaxBucketSizeTokens);
  c.InRange(base + "maxBucketSizeTokens", t.max_bucket_size_tokens, 1, kMaxBucketSizeTokens);
  if (c.Complete("spec.tuning") && c.Usable(base + "minBucketSizeTokens") &&
      c.Usable(base + "maxBucketSizeTokens") && t.min_bucket_size_tokens >= 1 &&
      t.min_bucket_size_tokens > t.max_bucket_size_tokens) {
    c.Error(base + "minBucketSizeTokens", "must be <= maxBucketSizeTokens (" +
                                              Str(t.max_bucket_size_tokens) + ") (got " +
                                              Str(t.min_bucket_size_tokens) + ")");
  }
}

void CheckRunPolicy(const RunPolicy& r, Checker& c) {
  const std::string base = "spec.runPolicy.";
  c.AtLeast(base + "backoffLimit", int64_t{r.backoff_limit}, 0);
  c.InRange(base + "startDeadlineSeconds", r.start_deadline_seconds, 0, kMaxSeconds);
  c.InRange(base + "activeDeadlineSeconds", r.active_deadline_seconds, 0, kMaxSeconds);
  c.InRange(base + "ttlSecondsAfterFinished", r.ttl_seconds_after_finished, 0, kMaxSeconds);
}

void CheckStorage(const StorageSpec& s, Checker& c) {
  if (!s.claim_name.empty()) c.Syntax("spec.storage.claimName", s.claim_name, CheckDns1123Label);
  const std::string mount = "spec.storage.mountPath";
  if (c.Usable(mount) && (s.mount_path.empty() || s.mount_path[0] != '/')) {
    c.Error(mount, "must be an absolute path in the trainer pod, e.g. /data (got " +
                       Quote(s.mount_path) + ")");
  }
}

// Names the controller gives its own volumes and env vars in trainer pods
// (controller/reconcile/desired.cc, trainer/dist/env.h).
constexpr const char* kControllerVolumes[] = {"job-spec", "dshm", "storage"};
constexpr char kControllerEnvPrefix[] = "SKRULL_";
// Resources spec.resources sets; spec.pod.resources adds others.
constexpr const char* kSpecResources[] = {"cpu", "memory", "nvidia.com/gpu"};

template <size_t N>
bool OneOf(const std::string& s, const char* const (&names)[N]) {
  return std::find(std::begin(names), std::end(names), s) != std::end(names);
}

void CheckPodResources(const std::string& path, const std::map<std::string, std::string>& map,
                       Checker& c) {
  for (const auto& [name, quantity] : map) {
    const std::string entry = path + "[" + Abbreviate(name) + "]";
    if (OneOf(name, kSpecResources)) {
      c.Error(entry, "set " + name + " in spec.resources (cpu, memory, gpusPerProc), not here");
      continue;
    }
    std::string problem = CheckLabelKey(name);
    if (!problem.empty()) c.Error(entry, "resource name " + problem + " (got " + Quote(name) + ")");
    c.Syntax(entry, quantity, CheckQuantity);
  }
}

void CheckPod(const JobSpec& s, Checker& c) {
  const PodTemplateSpec& p = s.pod;
  const std::string base = "spec.pod.";
  CheckStringMap(base + "nodeSelector", p.node_selector, /*check_values=*/true, c);
  if (!p.priority_class_name.empty()) {
    c.Syntax(base + "priorityClassName", p.priority_class_name, CheckDns1123Label);
  }
  if (!p.scheduler_name.empty()) {
    c.Syntax(base + "schedulerName", p.scheduler_name, CheckDns1123Label);
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < p.env_names.size(); ++i) {
    const std::string& name = p.env_names[i];
    const std::string path = base + "env[" + std::to_string(i) + "].name";
    if (name.rfind(kControllerEnvPrefix, 0) == 0) {
      c.Error(path, std::string(kControllerEnvPrefix) +
                        "* variables are set by the controller for the launcher (got " +
                        Quote(name) + ")");
    } else if (!seen.insert(name).second) {
      c.Error(path, "duplicate variable " + Quote(name));
    }
  }
  std::set<std::string> volumes;
  for (size_t i = 0; i < p.volume_names.size(); ++i) {
    const std::string& name = p.volume_names[i];
    const std::string path = base + "volumes[" + std::to_string(i) + "].name";
    if (OneOf(name, kControllerVolumes)) {
      c.Error(path,
              "job-spec, dshm and storage are the controller's volumes; choose another "
              "name (got " +
                  Quote(name) + ")");
    } else if (!volumes.insert(name).second) {
      c.Error(path, "duplicate volume " + Quote(name));
    } else {
      c.Syntax(path, name, CheckDns1123Label);
    }
  }
  for (size_t i = 0; i < p.volume_mount_names.size(); ++i) {
    const std::string& name = p.volume_mount_names[i];
    const bool controllers = (name == "storage" && !s.storage.claim_name.empty());
    if (volumes.count(name) == 0 && !controllers) {
      c.Error(base + "volumeMounts[" + std::to_string(i) + "].name",
              "names no volume of spec.pod.volumes (got " + Quote(name) + ")");
    }
  }
  CheckPodResources(base + "resources.requests", p.requests, c);
  CheckPodResources(base + "resources.limits", p.limits, c);
}

}  // namespace

void CollectValidationErrors(const ParsedJobSpec& parsed, Diagnostics* diag) {
  if (parsed.fields.IsInvalid("")) return;  // not a mapping at all; already reported
  Checker c(parsed.fields, diag);
  const JobSpec& s = parsed.spec;
  CheckHeader(parsed, c);
  CheckMetadata(s, c);
  CheckModel(s.model, c);
  CheckData(s, c);
  CheckParallelism(s.parallelism, c);
  CheckScheduler(s.scheduler, s.parallelism, c);
  CheckTraining(s.training, c);
  CheckCheckpoint(s.checkpoint, c);
  CheckMetrics(s.metrics, s.parallelism, c);
  CheckResources(s.resources, c);
  CheckImage(s.image, c);
  CheckTuning(s.tuning, c);
  CheckRunPolicy(s.run_policy, c);
  CheckStorage(s.storage, c);
  CheckPod(s, c);
}

}  // namespace skrull::api

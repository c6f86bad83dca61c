// ToYaml: JobSpec -> a SkrullJob document carrying every field.
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <string>

#include "api/diagnostics.h"
#include "api/job_spec.h"

namespace skrull::api {
namespace {

// Strings another YAML reader would take for null, a boolean or a number
// (tag: 1.0, cpu: 8, a label value "true") are quoted so every reader sees a
// string; yaml-cpp quotes the rest where the syntax needs it.
bool LooksTyped(const std::string& s) {
  if (s.empty()) return true;
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* word : {"null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", ".inf",
                           "+.inf", "-.inf", ".nan"}) {
    if (lower == word) return true;
  }
  auto digit = [&](size_t i) {
    return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]));
  };
  if (digit(0)) return true;
  if (s[0] == '+' || s[0] == '-') return digit(1) || (s.size() > 1 && s[1] == '.' && digit(2));
  return s[0] == '.' && digit(1);
}

class Writer {
 public:
  Writer() { out_ << YAML::BeginMap; }

  Writer& Str(const char* key, const std::string& value) {
    out_ << YAML::Key << key << YAML::Value;
    Scalar(value);
    return *this;
  }
  Writer& Raw(const char* key, const std::string& plain) {
    out_ << YAML::Key << key << YAML::Value << plain;
    return *this;
  }
  Writer& Int(const char* key, int64_t value) { return Raw(key, std::to_string(value)); }
  Writer& Uint(const char* key, uint64_t value) { return Raw(key, std::to_string(value)); }
  Writer& Num(const char* key, double value) { return Raw(key, FormatDouble(value)); }
  Writer& Bool(const char* key, bool value) { return Raw(key, value ? "true" : "false"); }
  Writer& Map(const char* key, const std::map<std::string, std::string>& map) {
    out_ << YAML::Key << key << YAML::Value;
    if (map.empty()) out_ << YAML::Flow;
    out_ << YAML::BeginMap;
    for (const auto& [k, v] : map) {
      out_ << YAML::Key;
      Scalar(k);
      out_ << YAML::Value;
      Scalar(v);
    }
    out_ << YAML::EndMap;
    return *this;
  }
  Writer& List(const char* key, const std::vector<std::string>& items) {
    out_ << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& item : items) Scalar(item);
    out_ << YAML::EndSeq;
    return *this;
  }
  // `json`: JSON text from MapReader::ReadObject. Its strings stay strings
  // (quoted where a reader would take them for something else).
  Writer& Object(const char* key, const std::string& json) {
    out_ << YAML::Key << key << YAML::Value;
    Node(YAML::Load(json));
    return *this;
  }
  // A list of mappings: BeginList, then BeginItem ... End per item, EndList.
  Writer& BeginList(const char* key) {
    out_ << YAML::Key << key << YAML::Value << YAML::BeginSeq;
    return *this;
  }
  Writer& BeginItem() {
    out_ << YAML::BeginMap;
    return *this;
  }
  Writer& EndList() {
    out_ << YAML::EndSeq;
    return *this;
  }
  Writer& Begin(const char* key) {
    out_ << YAML::Key << key << YAML::Value << YAML::BeginMap;
    return *this;
  }
  Writer& End() {
    out_ << YAML::EndMap;
    return *this;
  }
  std::string Finish() {
    out_ << YAML::EndMap;
    return std::string(out_.c_str()) + "\n";
  }

 private:
  void Node(const YAML::Node& n) {
    if (n.IsMap()) {
      out_ << YAML::BeginMap;
      for (const auto& pair : n) {
        out_ << YAML::Key;
        Scalar(pair.first.Scalar());
        out_ << YAML::Value;
        Node(pair.second);
      }
      out_ << YAML::EndMap;
    } else if (n.IsSequence()) {
      if (n.size() == 0) out_ << YAML::Flow;
      out_ << YAML::BeginSeq;
      for (size_t i = 0; i < n.size(); ++i) Node(n[i]);
      out_ << YAML::EndSeq;
    } else if (n.IsScalar() && n.Tag() == "!") {  // a JSON string
      Scalar(n.Scalar());
    } else if (n.IsScalar()) {  // a JSON number or boolean
      out_ << n.Scalar();
    } else {
      out_ << YAML::Null;
    }
  }
  void Scalar(const std::string& s) {
    if (LooksTyped(s)) out_ << YAML::DoubleQuoted;
    out_ << s;
  }
  YAML::Emitter out_;
};

}  // namespace

std::string ToYaml(const JobSpec& s) {
  Writer w;
  w.Str("apiVersion", kApiVersion).Str("kind", kKind);
  w.Begin("metadata")
      .Str("name", s.name)
      .Str("namespace", s.namespace_name)
      .Map("labels", s.labels)
      .Map("annotations", s.annotations)
      .End();
  w.Begin("spec");

  w.Begin("model").Str("config", s.model.config).Str("weights", s.model.weights);
  w.Uint("seed", s.model.seed);
  if (s.model.lora) {
    w.Begin("lora")
        .Int("rank", s.model.lora->rank)
        .Num("alpha", s.model.lora->alpha)
        .List("targetModules", s.model.lora->target_modules)
        .End();
  }
  w.End();

  const DataSpec& d = s.data;
  w.Begin("data")
      .Str("path", d.path)
      .Raw("format", DataFormatName(d.format))
      .Int("maxLength", d.max_length_tokens)
      .Raw("onOverLength", OverLengthPolicyName(d.over_length))
      .Raw("onMalformed", MalformedPolicyName(d.malformed));
  if (!d.tokenizer.empty()) w.Str("tokenizer", d.tokenizer);
  if (!d.chat_template.empty()) w.Str("chatTemplate", d.chat_template);
  // Like hardwareProfile below: only when not the default, so documents and
  // JobSpecHash of jobs that do not set it stay as they were.
  if (d.max_line_bytes != kDefaultMaxLineBytes) w.Int("maxLineBytes", d.max_line_bytes);
  if (d.template_max_bytes != kDefaultTemplateMaxBytes) {
    w.Int("templateMaxBytes", d.template_max_bytes);
  }
  if (d.template_max_steps != kDefaultTemplateMaxSteps) {
    w.Int("templateMaxSteps", d.template_max_steps);
  }
  if (d.template_max_seconds != kDefaultTemplateMaxSeconds) {
    w.Num("templateMaxSeconds", d.template_max_seconds);
  }
  if (!d.fields.empty()) w.Map("fields", d.fields);
  if (!d.sources.empty()) {
    w.BeginList("sources");
    for (const DataSourceSpec& source : d.sources) {
      w.BeginItem()
          .Str("path", source.path)
          .Raw("format", DataFormatName(source.format))
          .Num("weight", source.weight);
      if (!source.fields.empty()) w.Map("fields", source.fields);
      w.End();
    }
    w.EndList();
  }
  if (d.eval.has_value()) {
    w.Begin("eval")
        .Str("path", d.eval->path)
        .Raw("format", DataFormatName(d.eval->format))
        .Int("everySteps", d.eval->every_steps)
        .Int("maxSequences", d.eval->max_sequences);
    if (!d.eval->fields.empty()) w.Map("fields", d.eval->fields);
    w.End();
  }
  w.End();

  const ParallelismSpec& p = s.parallelism;
  w.Begin("parallelism")
      .Int("nodes", p.nodes)
      .Int("procsPerNode", p.procs_per_node)
      .Int("dataParallel", p.data_parallel)
      .Int("contextParallel", p.context_parallel)
      .End();

  const SchedulerSpec& sc = s.scheduler;
  w.Begin("scheduler").Raw("policy", scheduler::PolicyName(sc.policy));
  if (sc.bucket_size_auto) {
    w.Raw("bucketSize", "auto");
  } else {
    w.Int("bucketSize", sc.bucket_size_tokens);
  }
  w.Int("batchSize", sc.batch_size);
  // Only when not the default, like hardwareProfile below.
  if (sc.micro_batch_size != 1) w.Int("microBatchSize", sc.micro_batch_size);
  w.Uint("seed", sc.seed);
  // Only when set: a document without it (and JobSpecHash of such a job)
  // stays as it was before the field existed.
  if (!sc.hardware_profile.empty()) w.Str("hardwareProfile", sc.hardware_profile);
  w.End();

  const TrainingSpec& t = s.training;
  w.Begin("training");
  // epochs only when set: a document without it stays as it was before the
  // field existed (and so does JobSpecHash).
  if (t.epochs > 0) {
    w.Int("epochs", t.epochs);
  } else {
    w.Int("steps", t.steps);
  }
  w.Num("learningRate", t.learning_rate)
      .Int("warmupSteps", t.warmup_steps)
      .Raw("schedule", LrScheduleName(t.schedule))
      .Num("minLrRatio", t.min_lr_ratio)
      .Num("weightDecay", t.weight_decay)
      .Num("adamBeta1", t.adam_beta1)
      .Num("adamBeta2", t.adam_beta2)
      .Num("adamEpsilon", t.adam_epsilon)
      .Num("gradClip", t.grad_clip)
      .Raw("precision", PrecisionName(t.precision))
      .Int("checkpointEvery", t.checkpoint_every)
      .Str("outputDir", t.output_dir)
      .Str("resumeFrom", t.resume_from)
      .Int("logEvery", t.log_every);
  // Only when not the default, as zeroStage: documents of jobs without it
  // are unchanged.
  if (t.collective_timeout_seconds != TrainingSpec().collective_timeout_seconds) {
    w.Int("collectiveTimeoutSeconds", t.collective_timeout_seconds);
  }
  // Only when set, as maxLineBytes: JobSpecHash of stage-0 jobs is unchanged.
  if (t.zero_stage != 0) w.Int("zeroStage", t.zero_stage);
  // Only when set, as zeroStage.
  if (t.recompute != Recompute::kNone) w.Raw("recompute", RecomputeName(t.recompute));
  // Only when set, as zeroStage.
  if (t.grad_reduce_dtype != GradReduceDtype::kFp32) {
    w.Raw("gradReduceDtype", GradReduceDtypeName(t.grad_reduce_dtype));
  }
  w.End();

  // Only when set: documents and hashes of jobs without it are unchanged.
  if (s.checkpoint.keep_last != 0) {
    w.Begin("checkpoint").Int("keepLast", s.checkpoint.keep_last).End();
  }

  w.Begin("metrics").Int("port", s.metrics.port).Str("pushgateway", s.metrics.pushgateway);
  if (!s.metrics.address.empty()) w.Str("address", s.metrics.address);
  w.End();

  const ResourcesSpec& r = s.resources;
  w.Begin("resources")
      .Int("gpusPerProc", r.gpus_per_proc)
      .Str("cpu", r.cpu)
      .Str("memory", r.memory)
      .End();

  w.Begin("image")
      .Str("repository", s.image.repository)
      .Str("tag", s.image.tag)
      .Str("pullPolicy", s.image.pull_policy)
      .End();

  const TuningSpec& tu = s.tuning;
  w.Begin("tuning")
      .Bool("enabled", tu.enabled)
      .Num("targetMemoryFraction", tu.target_memory_fraction)
      .Int("minBucketSizeTokens", tu.min_bucket_size_tokens)
      .Int("maxBucketSizeTokens", tu.max_bucket_size_tokens)
      .End();

  const RunPolicy& rp = s.run_policy;
  w.Begin("runPolicy")
      .Int("backoffLimit", rp.backoff_limit)
      .Int("startDeadlineSeconds", rp.start_deadline_seconds)
      .Int("activeDeadlineSeconds", rp.active_deadline_seconds)
      .Int("ttlSecondsAfterFinished", rp.ttl_seconds_after_finished)
      .Raw("cleanPodPolicy", CleanPodPolicyName(rp.clean_pod_policy))
      .Bool("suspend", rp.suspend)
      .End();

  w.Begin("storage")
      .Str("claimName", s.storage.claim_name)
      .Str("mountPath", s.storage.mount_path)
      .Bool("readOnly", s.storage.read_only)
      .End();

  // Only when set, as zeroStage: JobSpecHash of jobs without it is unchanged.
  const PodTemplateSpec& pod = s.pod;
  if (!pod.Empty()) {
    w.Begin("pod");
    if (!pod.node_selector.empty()) w.Map("nodeSelector", pod.node_selector);
    if (!pod.tolerations.empty()) w.Object("tolerations", pod.tolerations);
    if (!pod.affinity.empty()) w.Object("affinity", pod.affinity);
    if (!pod.priority_class_name.empty()) w.Str("priorityClassName", pod.priority_class_name);
    if (!pod.scheduler_name.empty()) w.Str("schedulerName", pod.scheduler_name);
    if (!pod.env.empty()) w.Object("env", pod.env);
    if (!pod.volumes.empty()) w.Object("volumes", pod.volumes);
    if (!pod.volume_mounts.empty()) w.Object("volumeMounts", pod.volume_mounts);
    if (!pod.image_pull_secrets.empty()) w.Object("imagePullSecrets", pod.image_pull_secrets);
    if (!pod.requests.empty() || !pod.limits.empty()) {
      w.Begin("resources");
      if (!pod.requests.empty()) w.Map("requests", pod.requests);
      if (!pod.limits.empty()) w.Map("limits", pod.limits);
      w.End();
    }
    if (pod.host_network) w.Bool("hostNetwork", true);
    w.End();
  }

  w.End();  // spec
  return w.Finish();
}

}  // namespace skrull::api

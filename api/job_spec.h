// The SkrullJob spec: the user's contract, the same document for a local run
// and for Kubernetes. Reference: docs/job-spec.md.
//
//   apiVersion: skrull.io/v1alpha1
//   kind: SkrullJob
//   metadata: {name, namespace, labels, annotations}
//   spec: {model, data, parallelism, scheduler, training, checkpoint,
//          metrics, resources, image, tuning, runPolicy, storage}
//   status: {...}            # written by the controller; ignored on input
//
// Pipeline (LoadJobSpec does all of it):
//   parse     YAML -> typed fields. Wrong types, unknown keys (with a "did you
//             mean" hint against the keys allowed at that level), duplicate
//             keys and unknown enum values are errors.
//   validate  ranges and cross-field rules (ValidateJobSpec).
//   default   ApplyDefaults: the defaults that depend on other fields or are
//             written as empty; the static defaults are the member
//             initializers below.
//   resolve   relative paths against the job file's directory.
// Errors from parse and validate are reported together, all of them, in one
// InvalidArgument Status, one per line, in document order:
//   <origin>:<line>:<column>: <field path>: <what is wrong, the value, what is allowed>
//
// Validation never touches the filesystem: whether model.config, data.path or
// scheduler.hardwareProfile exist is checked by the trainer when it opens them.
//
// A null YAML value (`steps:` or `steps: null`) means "not set": the default
// applies (required fields report "required"). An empty string does the same
// for optional string fields.
//
// Relative paths (model.config, model.weights, data.path, data.tokenizer,
// scheduler.hardwareProfile, training.outputDir, training.resumeFrom unless it
// is "latest") are resolved against the
// directory of the job file by LoadJobSpecFile; `source_dir` records that
// directory. Absolute paths are kept.
//
// Thread safety: a JobSpec is a plain value; components take it by const
// reference and never mutate it. All functions here are thread-safe.
#ifndef SKRULL_API_JOB_SPEC_H_
#define SKRULL_API_JOB_SPEC_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/limits.h"
#include "scheduler/policy_name.h"

namespace skrull::api {

inline constexpr char kApiVersion[] = "skrull.io/v1alpha1";
inline constexpr char kKind[] = "SkrullJob";

// Upper bounds validation puts on sizes, so that no product of them overflows
// and nothing sized from them (the sampler's global batch, packed-batch
// offsets, LoRA matrices, one JSONL line) asks for more memory than a machine
// has. docs/job-spec.md lists them with each field.
// Nodes are pods on Kubernetes: 8192 pods of 8 GPUs reach the world-size
// bound, and bound what one job costs the API server and the controller.
inline constexpr int kMaxNodes = 8192;
inline constexpr int kMaxProcsPerNode = 1024;
// Shared with the scheduler (scheduler/limits.h): kMaxWorldSize (nodes x
// procsPerNode; also bounds DP and CP), kMaxBucketSizeTokens (1024M) and
// kMaxSequenceTokens (maxLength and bucketSize x contextParallel; 2^31 - 1).
using scheduler::kMaxBucketSizeTokens;
using scheduler::kMaxSequenceTokens;
using scheduler::kMaxWorldSize;
inline constexpr int kMaxLoraRank = 65536;
inline constexpr int kMaxBatchSize = 65536;                   // sequences per DP rank
inline constexpr int64_t kMaxGlobalBatch = int64_t{1} << 20;  // dataParallel x batchSize
inline constexpr int64_t kMaxSteps = 2147483647;              // steps and the other step counts
// runPolicy durations: Kubernetes' own fields of this kind are 32-bit.
inline constexpr int64_t kMaxSeconds = 2147483647;
// spec.data.maxLineBytes: default and range.
inline constexpr int64_t kDefaultMaxLineBytes = int64_t{64} << 20;   // 64 MiB
inline constexpr int64_t kMinMaxLineBytes = int64_t{1} << 10;        // 1 KiB
inline constexpr int64_t kMaxMaxLineBytes = (int64_t{4} << 30) - 1;  // 4 GiB - 1 (32-bit index)
// spec.data.templateMaxBytes / templateMaxSteps / templateMaxSeconds: the work
// budget of one chat-template rendering (docs/tokenizer.md); defaults equal
// tokenizer/jinja/budget.h's RenderLimits (trainer/data checks they agree).
inline constexpr int64_t kDefaultTemplateMaxBytes = int64_t{64} << 20;  // 64 MiB
inline constexpr int64_t kMaxTemplateMaxBytes = int64_t{16} << 30;      // 16 GiB
inline constexpr int64_t kDefaultTemplateMaxSteps = int64_t{1} << 24;
inline constexpr int64_t kMaxTemplateMaxSteps = int64_t{1} << 40;
inline constexpr double kDefaultTemplateMaxSeconds = 3.0;
inline constexpr double kMaxTemplateMaxSeconds = 3600.0;

struct LoraSpec {
  int rank = 16;        // r, >= 1
  double alpha = 32.0;  // scaling = alpha / rank
  // Hugging Face projection names: q_proj k_proj v_proj o_proj gate_proj up_proj down_proj.
  std::vector<std::string> target_modules = {"q_proj", "k_proj", "v_proj", "o_proj"};
};

struct ModelSpec {
  std::string config;            // path to a Hugging Face config.json (Llama / Qwen2)
  std::string weights;           // safetensors file or folder; empty = random init
  uint64_t seed = 0;             // random init seed when weights is empty
  std::optional<LoraSpec> lora;  // absent = full fine-tuning
};

// The record formats of a data file (docs/job-spec.md, spec.data.format).
// Every format but tokenized-jsonl holds text for the tokenizer; alpaca and
// sharegpt records become chat messages, so their loss mask follows the chat
// template as text-jsonl's messages do.
enum class DataFormat { kTokenizedJsonl, kTextJsonl, kAlpaca, kShareGpt };

// Whether records of `f` hold text (tokenized by spec.data.tokenizer or the
// byte tokenizer) rather than token ids.
inline bool IsTextFormat(DataFormat f) { return f != DataFormat::kTokenizedJsonl; }

// The names spec.data.fields may map for format `f` (empty for
// tokenized-jsonl): the format's own keys, and for sharegpt the role values
// `human` and `gpt`.
std::vector<std::string> MappableFields(DataFormat f);
enum class OverLengthPolicy { kError, kTruncate, kSkip };
enum class MalformedPolicy { kError, kSkip };

// One entry of spec.data.sources: a data set drawn from by weight.
struct DataSourceSpec {
  // A .jsonl or .jsonl.gz file, a directory (its .jsonl and .jsonl.gz files,
  // not recursive) or a glob of such files (`*`, `?`, `[...]` in the last
  // part). Resolved like the other paths.
  std::string path;
  // Written or not, a source has a format: when the document leaves it out it
  // takes spec.data.format.
  DataFormat format = DataFormat::kTokenizedJsonl;
  // Share of the samples: source i fills weight_i / sum(weights) of every
  // global batch on average (docs/job-spec.md, spec.data.sources). > 0.
  double weight = 1.0;
  std::map<std::string, std::string> fields;  // as DataSpec::fields, for this source
};
bool operator==(const DataSourceSpec& a, const DataSourceSpec& b);

// spec.data.eval: a held-out set whose loss the trainer reports
// (docs/job-spec.md, spec.data.eval).
struct EvalSpec {
  std::string path;  // file, directory or glob, as DataSourceSpec::path
  DataFormat format = DataFormat::kTokenizedJsonl;  // not written: spec.data.format
  std::map<std::string, std::string> fields;        // as DataSpec::fields
  // YAML: everySteps. Evaluate after every this many steps and after the
  // last; 0 = after the last step only.
  int64_t every_steps = 0;
  // YAML: maxSequences. The first this many samples of the set, in file
  // order; 0 = all of them.
  int64_t max_sequences = 0;
};
bool operator==(const EvalSpec& a, const EvalSpec& b);

struct DataSpec {
  std::string path;  // a .jsonl file; empty when `sources` lists the data
  DataFormat format = DataFormat::kTokenizedJsonl;
  // Longest sample in tokens; 0 = bounded only by what the scheduler can
  // place (bucketSize x contextParallel).
  int64_t max_length_tokens = 0;
  OverLengthPolicy over_length = OverLengthPolicy::kError;  // YAML: onOverLength
  MalformedPolicy malformed = MalformedPolicy::kError;      // YAML: onMalformed
  // text-jsonl: a Hugging Face tokenizer.json or model folder (tokenizer.json,
  // tokenizer_config.json with the chat template); empty = the 256-id byte
  // tokenizer, which only suits randomly initialised models. Resolved like
  // the other paths.
  std::string tokenizer;
  // YAML: chatTemplate. A Jinja chat template replacing the tokenizer's; empty
  // = the one in tokenizer_config.json (or chat_template.jinja).
  std::string chat_template;
  // YAML: maxLineBytes. The longest line of data.path the trainer reads, in
  // bytes, kMinMaxLineBytes .. kMaxMaxLineBytes; a longer line is malformed
  // (onMalformed says what happens). Bounds the memory one line costs.
  int64_t max_line_bytes = kDefaultMaxLineBytes;
  // YAML: templateMaxBytes, templateMaxSteps, templateMaxSeconds. The work
  // budget of rendering one line's chat: the largest string or list
  // (1 MiB .. 16 GiB), steps (10^4 .. 2^40) and wall-clock seconds (0 .. 3600)
  // the template may take; over one, the line is malformed.
  int64_t template_max_bytes = kDefaultTemplateMaxBytes;
  int64_t template_max_steps = kDefaultTemplateMaxSteps;
  double template_max_seconds = kDefaultTemplateMaxSeconds;
  // YAML: fields. Field mapping: a format's standard name -> the name this
  // file uses (e.g. alpaca {instruction: prompt, output: response}); names
  // not listed keep their standard name. Keys from MappableFields(format).
  std::map<std::string, std::string> fields;
  // YAML: sources. Several data sets mixed by weight, instead of `path`
  // (exactly one of the two). Empty = the single `path`.
  std::vector<DataSourceSpec> sources;
  // YAML: eval. Absent = no validation loss.
  std::optional<EvalSpec> eval;
};

struct ParallelismSpec {
  int nodes = 1;
  int procs_per_node = 1;    // YAML: procsPerNode
  int data_parallel = 1;     // YAML: dataParallel
  int context_parallel = 1;  // YAML: contextParallel
  // REQUIRES (validated): data_parallel * context_parallel == nodes * procs_per_node.
  int WorldSize() const { return nodes * procs_per_node; }
};

struct SchedulerSpec {
  // The scheduler's own enum. A job may name every policy but skrull-paper
  // (the paper's algorithms as printed, kept for the scheduler's comparisons):
  // kJobPolicies.
  scheduler::Policy policy = scheduler::Policy::kSkrull;
  // YAML: bucketSize: <tokens> | auto; tokens may be written 26K (x 1024) or
  // 1M (x 1048576). auto = take it from the offline profile. Left unset
  // (false, 0), ApplyDefaults makes it auto.
  bool bucket_size_auto = false;
  int64_t bucket_size_tokens = 0;  // > 0 unless bucket_size_auto; tokens one rank may hold
  int batch_size = 8;              // sequences per DP rank per step (global batch = dp x this)
  // YAML: microBatchSize. policy deepspeed only: the most sequences in one
  // micro-batch (DeepSpeed's train_micro_batch_size_per_gpu), 1..batchSize;
  // the other policies size micro-batches by bucketSize and reject a value
  // other than 1. Default 1, as long-context SFT on DeepSpeed runs.
  int micro_batch_size = 1;
  uint64_t seed = 0;  // sampler seed (same on every rank)
  // YAML: hardwareProfile. Path to a hardware-profile JSON (what
  // `skrull-trainer --profile` writes, or scheduler/profiles/*.json); empty =
  // none. The trainer prices every step's plan with it and, with
  // bucketSize auto, takes its "bucket_size_tokens". Resolved like the other
  // paths; read by the trainer, not by validation.
  std::string hardware_profile;
};

enum class LrSchedule { kCosine, kLinear, kConstant };
enum class Precision { kFp32, kBf16 };
// Activation recompute (trainer/model/recompute.h): none keeps every layer's
// activations; selective re-runs each layer's MLP in backward; full re-runs
// every layer from its input. Values and gradients are the same for all three.
enum class Recompute { kNone, kSelective, kFull };
// The dtype gradients travel in over the network (the DP all-reduce, ZeRO's
// reduce-scatter). fp32: as they are summed. bf16: each bucket is rounded to
// bf16 once for the wire and the reduced result is converted back to float32
// before it is added or used, as DeepSpeed's communication_data_type; half
// the bytes, at a bounded relative error (docs/architecture.md, "Gradient
// precision").
enum class GradReduceDtype { kFp32, kBf16 };

struct TrainingSpec {
  // Optimizer steps of the run, or 0 when `epochs` sets the length instead
  // (exactly one of the two is set; a document with neither gets 100).
  int64_t steps = 100;
  // Passes over the training data; 0 = not set (steps sets the length). With
  // epochs the trainer derives steps = ceil(epochs x samples / global batch)
  // once the data is indexed (DerivedSteps, trainer/train/epochs.h).
  int64_t epochs = 0;
  double learning_rate = 1e-4;  // peak LR after warmup
  int64_t warmup_steps = 0;
  LrSchedule schedule = LrSchedule::kCosine;
  double min_lr_ratio = 0.1;  // final LR = learning_rate x this (cosine / linear)
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.95;
  double adam_epsilon = 1e-8;
  double grad_clip = 1.0;  // max global L2 norm; 0 disables
  Precision precision = Precision::kFp32;
  int64_t checkpoint_every = 0;  // steps; 0 = only at the end
  std::string output_dir;        // default: runs/<metadata.name> (OutputDirOf)
  std::string resume_from;       // checkpoint dir, or "latest" in output_dir; empty = fresh
  int64_t log_every = 1;         // steps between progress lines
  // YAML: collectiveTimeoutSeconds. How long a rank waits in one collective
  // (gradient reduction, barrier, CP exchange) before NCCL's watchdog or
  // Gloo gives up; distinct from the rendezvous timeout (the launcher's
  // SKRULL_RENDEZVOUS_TIMEOUT_SECONDS, 300 s). Long enough for rank 0 to
  // write a large checkpoint while the others wait. Default 30 minutes,
  // c10d's kProcessGroupDefaultTimeout (torch/csrc/distributed/c10d/
  // ProcessGroup.hpp); NCCL's own default would be 10 minutes
  // (kProcessGroupNCCLDefaultTimeout, ProcessGroupNCCL.hpp).
  int64_t collective_timeout_seconds = 1800;
  // ZeRO stage (docs/job-spec.md): 0 = every rank keeps full fp32 master
  // weights, AdamW moments and gradients (as PyTorch DDP and DeepSpeed's own
  // default); 1 = master weights and optimizer state partitioned over all
  // world ranks (DP x CP); 2 = gradients partitioned too.
  int zero_stage = 0;
  // YAML: recompute. Priced in the memory model, so bucketSize auto and
  // `skrull-plan bucket` grow with it.
  Recompute recompute = Recompute::kNone;
  // YAML: gradReduceDtype. Written by ToYaml only when bf16.
  GradReduceDtype grad_reduce_dtype = GradReduceDtype::kFp32;
};

// Checkpoint retention (the folders under <outputDir>/checkpoints/).
struct CheckpointSpec {
  // YAML: keepLast. Keep the newest N complete checkpoints and delete older
  // ones after each new one is committed; 0 = keep all. The checkpoint being
  // written and the last complete one are never deleted.
  int64_t keep_last = 0;
};

struct MetricsSpec {
  int port = 9400;          // rank r serves on port + local_rank; 0 = do not serve
  std::string pushgateway;  // optional http(s)://host:port of a Pushgateway; empty = none
  // The address the ranks' /metrics servers listen on: an IPv4 or IPv6
  // address, or empty = the runner's choice: a local run listens on 127.0.0.1
  // only, the controller's pods on all addresses (0.0.0.0) so Prometheus can
  // scrape them.
  std::string address;
};

// Reserved for the controller; parsed and validated now.
struct ResourcesSpec {
  int gpus_per_proc = 1;  // 0 = CPU job
  std::string cpu;        // Kubernetes quantity, e.g. "8"
  std::string memory;     // Kubernetes quantity, e.g. "64Gi"
};

struct ImageSpec {
  std::string repository = "ghcr.io/skrull/trainer";
  std::string tag;                           // default: the build's version
  std::string pull_policy = "IfNotPresent";  // Always | IfNotPresent | Never
};

struct TuningSpec {
  bool enabled = false;                 // controller tunes bucketSize between runs
  double target_memory_fraction = 0.9;  // aim peak memory at this fraction of capacity
  int64_t min_bucket_size_tokens = 1024;
  int64_t max_bucket_size_tokens = 1 << 20;
};

// Which pods the controller deletes when a job finishes (Kubernetes only).
enum class CleanPodPolicy {
  kNone,     // keep every pod: failed ones keep their logs (the default)
  kRunning,  // delete pods still running (e.g. the rest of the group after a failure)
  kAll,      // delete every pod
};

// How the controller runs the job's pods (Kubernetes) or processes (local).
struct RunPolicy {
  // Whole-group restarts after a failure before the job is Failed. Any rank
  // failing restarts every rank (collectives cannot continue without it),
  // resuming from the newest checkpoint in outputDir.
  int backoff_limit = 3;
  // A pod not Running this long after it was created (Pending, unschedulable,
  // image pull failing) fails the job instead of leaving it Created forever.
  int64_t start_deadline_seconds = 600;    // 0 = no deadline
  int64_t active_deadline_seconds = 0;     // wall time from start; 0 = none
  int64_t ttl_seconds_after_finished = 0;  // delete the finished job's objects after; 0 = keep
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kNone;
  bool suspend = false;  // true: no pods run (a queue admits the job by setting false)
};

// Kubernetes only: one PersistentVolumeClaim mounted in every trainer pod,
// where the model, data and outputDir paths of the spec live.
struct StorageSpec {
  std::string claim_name;            // YAML: claimName; empty = no volume
  std::string mount_path = "/data";  // absolute path in the pod
  bool read_only = false;            // the outputDir must then be elsewhere
};

// Kubernetes only: what every trainer pod gets beyond what the controller
// writes (docs/job-spec.md, spec.pod). Objects Kubernetes defines are kept
// as JSON text as written (MapReader::ReadObject); the API server checks
// them against its own schema when the controller creates the pods.
struct PodTemplateSpec {
  std::map<std::string, std::string> node_selector;  // YAML: nodeSelector
  std::string tolerations;                           // JSON list of core/v1 Toleration; "" = none
  std::string affinity;                              // JSON core/v1 Affinity; "" = none
  std::string priority_class_name;     // YAML: priorityClassName; "" = the cluster's default
  std::string scheduler_name;          // YAML: schedulerName; "" = default-scheduler
  std::string env;                     // JSON list of core/v1 EnvVar for the trainer container
  std::vector<std::string> env_names;  // their names, in order (for validation)
  std::string volumes;                 // JSON list of core/v1 Volume
  std::vector<std::string> volume_names;
  std::string volume_mounts;  // YAML: volumeMounts; JSON list of VolumeMount (trainer container)
  std::vector<std::string> volume_mount_names;  // the volumes they mount, in order
  std::string image_pull_secrets;               // YAML: imagePullSecrets; JSON list of {name}
  // YAML: resources.{requests,limits}: extra resources of the trainer
  // container (rdma/ib, hugepages-2Mi, ...); cpu, memory and nvidia.com/gpu
  // come from spec.resources.
  std::map<std::string, std::string> requests;
  std::map<std::string, std::string> limits;
  bool host_network = false;  // YAML: hostNetwork

  bool Empty() const;
};

struct JobSpec {
  // metadata
  std::string name;                                // required; DNS-1123 label
  std::string namespace_name = "default";          // YAML: namespace; DNS-1123 label
  std::map<std::string, std::string> labels;       // Kubernetes label syntax
  std::map<std::string, std::string> annotations;  // Kubernetes annotation keys; any values
  // spec
  ModelSpec model;
  DataSpec data;
  ParallelismSpec parallelism;
  SchedulerSpec scheduler;
  TrainingSpec training;
  CheckpointSpec checkpoint;
  MetricsSpec metrics;
  ResourcesSpec resources;
  ImageSpec image;
  TuningSpec tuning;
  RunPolicy run_policy;  // YAML: runPolicy
  StorageSpec storage;
  PodTemplateSpec pod;  // YAML: pod
  // Directory that relative paths were resolved against ("" when parsed from a string).
  std::string source_dir;
};

// "latest" in training.resumeFrom: the newest complete checkpoint in outputDir.
inline constexpr char kResumeLatest[] = "latest";

// The values spec.model.lora.targetModules may take.
inline constexpr const char* kLoraTargetModules[] = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                     "gate_proj", "up_proj", "down_proj"};

// Parses, validates and defaults one YAML document (JSON works too).
// `origin` names the source in messages (a file path, or "<string>").
// Relative paths, including the default outputDir, are resolved against
// `base_dir` when it is non-empty (and kept relative when it is empty);
// source_dir = base_dir. Errors: InvalidArgument listing every problem (up to
// 100), one "<origin>:<line>:<column>: <path>: <message>" line each; values
// are echoed as at most their first 64 bytes. A document over 512 KiB, nested
// deeper than 500 levels, or whose aliases expand it past twice its size plus
// 64 KiB is refused with one line. Any document costs well under a second.
StatusOr<JobSpec> LoadJobSpec(const std::string& yaml_text, const std::string& origin,
                              const std::string& base_dir = "");

// Reads `path` (at most one byte more than LoadJobSpec accepts, so a device
// such as /dev/zero is a clean error) and calls LoadJobSpec with origin =
// `path` as given and base_dir = the file's directory made absolute and
// normalized. NotFound ("<path>: no such file") when it is missing.
StatusOr<JobSpec> LoadJobSpecFile(const std::string& path);

// Checks a spec built or changed in code (e.g. by the tuner) against the same
// rules as LoadJobSpec: OK, or InvalidArgument listing every problem as
// "<origin>: <field path>: <message>". Accepts a spec before or after
// ApplyDefaults.
Status ValidateJobSpec(const JobSpec& spec, const std::string& origin = "<JobSpec>");

// `spec` with spec.scheduler.bucketSize set to `tokens` (a count: no longer
// auto), validated as a whole (ValidateJobSpec with `origin`): the one way a
// tuned BucketSize is applied, by the operator and by the local runner alike.
// InvalidArgument "<origin>: spec.scheduler.bucketSize: ..." for tokens <= 0
// (validation reads 0 as unset) or a value the spec does not allow (over
// kMaxBucketSizeTokens, or bucketSize x contextParallel over
// kMaxSequenceTokens).
StatusOr<JobSpec> WithBucketSize(const JobSpec& spec, int64_t tokens,
                                 const std::string& origin = "<JobSpec>");

// Fills the defaults that depend on other fields or that empty values stand
// for: namespace "default", bucketSize auto when unset (0 and not auto),
// outputDir runs/<name>, image.repository / image.pullPolicy from ImageSpec's
// initializers, image.tag DefaultImageTag(). Idempotent. Does not resolve
// paths.
void ApplyDefaults(JobSpec* spec);

// spec.training.outputDir, or its default when empty: runs/<metadata.name>
// (runs/job for a spec without a name, which validation rejects). Relative
// paths stay relative. The one place that default is spelled: ApplyDefaults
// and every runner that takes a spec built in code use it.
std::string OutputDirOf(const JobSpec& spec);

// Where /metrics listens when spec.metrics.address is empty: a local run on
// loopback only; the controller writes kPodMetricsAddress into the job its
// pods run, so Prometheus can scrape them.
inline constexpr char kLocalMetricsAddress[] = "127.0.0.1";
inline constexpr char kPodMetricsAddress[] = "0.0.0.0";

// spec.metrics.address, or kLocalMetricsAddress when empty.
std::string MetricsAddressOf(const JobSpec& spec);

// The image tag a defaulted spec gets: this build's version ("0.1.0").
const char* DefaultImageTag();

// One paragraph for logs and `skrull-job validate`: name, world size and its
// DP x CP split, policy, bucket size, global batch, steps and learning rate.
// REQUIRES: spec is valid.
std::string DescribeJobSpec(const JobSpec& spec);

// Serializes to a SkrullJob YAML document (every field, defaults included;
// the optional model.lora and scheduler.hardwareProfile only when set).
// LoadJobSpec(ToYaml(s)) == s (round trip; tested).
std::string ToYaml(const JobSpec& spec);

// Field-by-field equality of everything the document carries; `source_dir`
// (where the document came from) is not compared.
bool operator==(const JobSpec& a, const JobSpec& b);
inline bool operator!=(const JobSpec& a, const JobSpec& b) { return !(a == b); }

// The policies spec.scheduler.policy may name, in the order messages list them.
inline constexpr scheduler::Policy kJobPolicies[] = {
    scheduler::Policy::kSkrull,     scheduler::Policy::kCpAll,      scheduler::Policy::kSorted,
    scheduler::Policy::kBalancedCp, scheduler::Policy::kRoundRobin, scheduler::Policy::kDeepSpeed,
    scheduler::Policy::kDynamicCp,  scheduler::Policy::kLocalIfFits};

// Enum -> YAML spelling ("tokenized-jsonl", "bf16", ...; policies:
// scheduler::PolicyName).
const char* DataFormatName(DataFormat f);
const char* OverLengthPolicyName(OverLengthPolicy p);
const char* MalformedPolicyName(MalformedPolicy p);
const char* LrScheduleName(LrSchedule s);
const char* PrecisionName(Precision p);
const char* RecomputeName(Recompute r);
const char* GradReduceDtypeName(GradReduceDtype d);
const char* CleanPodPolicyName(CleanPodPolicy p);

}  // namespace skrull::api

#endif  // SKRULL_API_JOB_SPEC_H_

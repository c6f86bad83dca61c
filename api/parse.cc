#include "api/parse.h"

#include "api/enum_names.h"
#include "api/yaml_reader.h"

namespace skrull::api {
namespace {

void ParseMetadata(MapReader& m, JobSpec* s) {
  m.Read("name", &s->name);
  m.Read("namespace", &s->namespace_name);
  m.ReadStringMap("labels", &s->labels);
  m.ReadStringMap("annotations", &s->annotations);
  for (const char* field : kServerMetadataFields) m.Ignore(field);
}

void ParseModel(MapReader& m, ModelSpec* model) {
  m.Read("config", &model->config);
  m.Read("weights", &model->weights);
  m.Read("seed", &model->seed);
  if (m.Has("lora")) {
    model->lora = LoraSpec{};
  } else if (m.HasKey("lora")) {
    // Enable with defaults, or not at all? Make the user say which.
    m.Reject("lora",
             "is empty; write 'lora: {}' for LoRA with default settings, or remove it "
             "for full fine-tuning");
  }
  MapReader lora = m.Child("lora");
  if (model->lora) {
    lora.Read("rank", &model->lora->rank);
    lora.Read("alpha", &model->lora->alpha);
    lora.ReadStringList("targetModules", &model->lora->target_modules);
  }
  lora.Finish();
}

void ParseData(MapReader& m, DataSpec* data) {
  m.Read("path", &data->path);
  m.ReadEnum("format", kDataFormatNames, &data->format);
  m.ReadTokens("maxLength", &data->max_length_tokens);
  m.ReadEnum("onOverLength", kOverLengthPolicyNames, &data->over_length);
  m.ReadEnum("onMalformed", kMalformedPolicyNames, &data->malformed);
  m.Read("tokenizer", &data->tokenizer);
  m.Read("chatTemplate", &data->chat_template);
  m.Read("maxLineBytes", &data->max_line_bytes);
  m.Read("templateMaxBytes", &data->template_max_bytes);
  m.Read("templateMaxSteps", &data->template_max_steps);
  m.Read("templateMaxSeconds", &data->template_max_seconds);
  m.ReadStringMap("fields", &data->fields);
  m.ReadMapList("sources", [data](MapReader& sources_item, size_t) {
    DataSourceSpec source;
    source.format = data->format;  // a source without `format` takes spec.data.format
    sources_item.Read("path", &source.path);
    sources_item.ReadEnum("format", kDataFormatNames, &source.format);
    sources_item.Read("weight", &source.weight);
    sources_item.ReadStringMap("fields", &source.fields);
    data->sources.push_back(std::move(source));
  });
  MapReader eval = m.Child("eval");
  if (m.Has("eval")) {
    data->eval = EvalSpec{};
    data->eval->format = data->format;  // not written: spec.data.format
    eval.Read("path", &data->eval->path);
    eval.ReadEnum("format", kDataFormatNames, &data->eval->format);
    eval.ReadStringMap("fields", &data->eval->fields);
    eval.Read("everySteps", &data->eval->every_steps);
    eval.Read("maxSequences", &data->eval->max_sequences);
  }
  eval.Finish();
}

void ParseParallelism(MapReader& m, ParallelismSpec* p) {
  m.Read("nodes", &p->nodes);
  m.Read("procsPerNode", &p->procs_per_node);
  m.Read("dataParallel", &p->data_parallel);
  m.Read("contextParallel", &p->context_parallel);
}

void ParseScheduler(MapReader& m, SchedulerSpec* s) {
  m.ReadEnum("policy", kSchedulerPolicyNames, &s->policy);
  m.ReadBucketSize("bucketSize", &s->bucket_size_auto, &s->bucket_size_tokens);
  m.Read("batchSize", &s->batch_size);
  m.Read("microBatchSize", &s->micro_batch_size);
  m.Read("seed", &s->seed);
  m.Read("hardwareProfile", &s->hardware_profile);
}

void ParseTraining(MapReader& m, TrainingSpec* t) {
  m.Read("steps", &t->steps);
  m.Read("epochs", &t->epochs);
  // epochs without steps: the length comes from the data (steps 0 = derived).
  if (m.Has("epochs") && !m.Has("steps")) t->steps = 0;
  m.Read("learningRate", &t->learning_rate);
  m.Read("warmupSteps", &t->warmup_steps);
  m.ReadEnum("schedule", kLrScheduleNames, &t->schedule);
  m.Read("minLrRatio", &t->min_lr_ratio);
  m.Read("weightDecay", &t->weight_decay);
  m.Read("adamBeta1", &t->adam_beta1);
  m.Read("adamBeta2", &t->adam_beta2);
  m.Read("adamEpsilon", &t->adam_epsilon);
  m.Read("gradClip", &t->grad_clip);
  m.ReadEnum("precision", kPrecisionNames, &t->precision);
  m.Read("checkpointEvery", &t->checkpoint_every);
  m.Read("outputDir", &t->output_dir);
  m.Read("resumeFrom", &t->resume_from);
  m.Read("logEvery", &t->log_every);
  m.Read("collectiveTimeoutSeconds", &t->collective_timeout_seconds);
  m.Read("zeroStage", &t->zero_stage);
  m.ReadEnum("recompute", kRecomputeNames, &t->recompute);
  m.ReadEnum("gradReduceDtype", kGradReduceDtypeNames, &t->grad_reduce_dtype);
}

void ParseCheckpoint(MapReader& m, CheckpointSpec* c) {
  // Retention only: the checkpoints' contents are the trainer's.
  m.Read("keepLast", &c->keep_last);
}

void ParseMetrics(MapReader& m, MetricsSpec* metrics) {
  m.Read("port", &metrics->port);
  m.Read("pushgateway", &metrics->pushgateway);
  m.Read("address", &metrics->address);
}

void ParseResources(MapReader& m, ResourcesSpec* r) {
  m.Read("gpusPerProc", &r->gpus_per_proc);
  m.Read("cpu", &r->cpu);
  m.Read("memory", &r->memory);
}

void ParseImage(MapReader& m, ImageSpec* image) {
  m.Read("repository", &image->repository);
  m.Read("tag", &image->tag);
  m.Read("pullPolicy", &image->pull_policy);
}

void ParseTuning(MapReader& m, TuningSpec* t) {
  m.Read("enabled", &t->enabled);
  m.Read("targetMemoryFraction", &t->target_memory_fraction);
  m.ReadTokens("minBucketSizeTokens", &t->min_bucket_size_tokens);
  m.ReadTokens("maxBucketSizeTokens", &t->max_bucket_size_tokens);
}

void ParseRunPolicy(MapReader& m, RunPolicy* r) {
  m.Read("backoffLimit", &r->backoff_limit);
  m.Read("startDeadlineSeconds", &r->start_deadline_seconds);
  m.Read("activeDeadlineSeconds", &r->active_deadline_seconds);
  m.Read("ttlSecondsAfterFinished", &r->ttl_seconds_after_finished);
  m.ReadEnum("cleanPodPolicy", kCleanPodPolicyNames, &r->clean_pod_policy);
  m.Read("suspend", &r->suspend);
}

void ParseStorage(MapReader& m, StorageSpec* s) {
  m.Read("claimName", &s->claim_name);
  m.Read("mountPath", &s->mount_path);
  m.Read("readOnly", &s->read_only);
}

void ParsePod(MapReader& m, PodTemplateSpec* p) {
  m.ReadStringMap("nodeSelector", &p->node_selector);
  m.ReadObject("tolerations", /*list=*/true, nullptr, &p->tolerations);
  m.ReadObject("affinity", /*list=*/false, nullptr, &p->affinity);
  m.Read("priorityClassName", &p->priority_class_name);
  m.Read("schedulerName", &p->scheduler_name);
  m.ReadObject("env", /*list=*/true, "name", &p->env, &p->env_names);
  m.ReadObject("volumes", /*list=*/true, "name", &p->volumes, &p->volume_names);
  m.ReadObject("volumeMounts", /*list=*/true, "name", &p->volume_mounts, &p->volume_mount_names);
  m.ReadObject("imagePullSecrets", /*list=*/true, "name", &p->image_pull_secrets);
  MapReader resources = m.Child("resources");
  resources.ReadStringMap("requests", &p->requests);
  resources.ReadStringMap("limits", &p->limits);
  resources.Finish();
  m.Read("hostNetwork", &p->host_network);
}

// Reads `key` of `parent` as a mapping with `parse` and finishes it.
template <typename T>
void ParseSection(MapReader& parent, const char* key, void (*parse)(MapReader&, T*), T* out) {
  MapReader section = parent.Child(key);
  parse(section, out);
  section.Finish();
}

}  // namespace

ParsedJobSpec ParseJobSpec(const YAML::Node& doc, Diagnostics* diag) {
  ParsedJobSpec parsed;
  if (!doc.IsMap()) {
    diag->Add(PositionOf(doc), "",
              doc.IsNull() ? "the document is empty; expected a SkrullJob with apiVersion, kind, "
                             "metadata and spec"
                           : "expected a SkrullJob mapping with apiVersion, kind, metadata and "
                             "spec, got " +
                                 DescribeValue(doc));
    parsed.fields.invalid.insert("");
    return parsed;
  }
  JobSpec& s = parsed.spec;
  MapReader root(doc, "", &parsed.fields, diag);
  root.Read("apiVersion", &parsed.api_version);
  root.Read("kind", &parsed.kind);
  ParseSection(root, "metadata", ParseMetadata, &s);
  MapReader spec = root.Child("spec");
  ParseSection(spec, "model", ParseModel, &s.model);
  ParseSection(spec, "data", ParseData, &s.data);
  ParseSection(spec, "parallelism", ParseParallelism, &s.parallelism);
  ParseSection(spec, "scheduler", ParseScheduler, &s.scheduler);
  ParseSection(spec, "training", ParseTraining, &s.training);
  ParseSection(spec, "checkpoint", ParseCheckpoint, &s.checkpoint);
  ParseSection(spec, "metrics", ParseMetrics, &s.metrics);
  ParseSection(spec, "resources", ParseResources, &s.resources);
  ParseSection(spec, "image", ParseImage, &s.image);
  ParseSection(spec, "tuning", ParseTuning, &s.tuning);
  ParseSection(spec, "runPolicy", ParseRunPolicy, &s.run_policy);
  ParseSection(spec, "storage", ParseStorage, &s.storage);
  ParseSection(spec, "pod", ParsePod, &s.pod);
  spec.Finish();
  root.Ignore("status");
  root.Finish();
  return parsed;
}

}  // namespace skrull::api

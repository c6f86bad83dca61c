// The names of the trainer's Prometheus families and labels: a contract with
// the Grafana dashboard (charts/skrull/dashboards/skrull.json), the recording
// rules, the tuner and docs/metrics.md. Renaming one breaks all of them; the
// dashboard test fails when a panel names a family that is not exported.
//
// Units are base units (seconds, bytes, tokens, FLOPs, ratios 0..1) and every
// counter ends in `_total`. Every series carries the identity labels below;
// nothing carries a per-step or per-sequence label.
#ifndef SKRULL_TRAINER_METRICS_METRIC_NAMES_H_
#define SKRULL_TRAINER_METRICS_METRIC_NAMES_H_

namespace skrull::metrics {

// Identity labels, on every series.
inline constexpr char kLabelJob[] = "job";
inline constexpr char kLabelRank[] = "rank";
inline constexpr char kLabelDpRank[] = "dp_rank";
inline constexpr char kLabelCpRank[] = "cp_rank";
inline constexpr char kLabelNode[] = "node";

// Counters.
inline constexpr char kTrainStepsTotal[] = "skrull_train_steps_total";
inline constexpr char kTrainTokensTotal[] = "skrull_train_tokens_total";
inline constexpr char kPaddingTokensTotal[] = "skrull_padding_tokens_total";
inline constexpr char kModelFlopsTotal[] = "skrull_model_flops_total";
inline constexpr char kHardwareFlopsTotal[] = "skrull_hardware_flops_total";
inline constexpr char kMicroBatchesTotal[] = "skrull_micro_batches_total";
inline constexpr char kSchedulerRollbacksTotal[] = "skrull_scheduler_rollbacks_total";
inline constexpr char kSequencesTotal[] = "skrull_sequences_total";
inline constexpr char kTimeSecondsTotal[] = "skrull_time_seconds_total";
// Per data source of spec.data.sources (label `source` = its index), counted
// over the global batch: the same on every rank.
inline constexpr char kSourceSamplesTotal[] = "skrull_source_samples_total";
inline constexpr char kSourceTokensTotal[] = "skrull_source_tokens_total";

// Gauges.
inline constexpr char kTrainStep[] = "skrull_train_step";
inline constexpr char kTrainLoss[] = "skrull_train_loss";
inline constexpr char kEvalLoss[] = "skrull_eval_loss";  // spec.data.eval
inline constexpr char kTokensPerSecond[] = "skrull_tokens_per_second";
inline constexpr char kMfuRatio[] = "skrull_mfu_ratio";
inline constexpr char kHfuRatio[] = "skrull_hfu_ratio";
inline constexpr char kPeakFlopsPerSecond[] = "skrull_peak_flops_per_second";
inline constexpr char kMemoryPeakBytes[] = "skrull_memory_peak_bytes";
inline constexpr char kMemoryPeakAllocatedBytes[] = "skrull_memory_peak_allocated_bytes";
inline constexpr char kMemoryCapacityBytes[] = "skrull_memory_capacity_bytes";
inline constexpr char kMemoryStaticBytes[] = "skrull_memory_static_bytes";
inline constexpr char kBucketSizeTokens[] = "skrull_bucket_size_tokens";
inline constexpr char kRankTokensPeak[] = "skrull_rank_tokens_peak";
inline constexpr char kLastStepTimestampSeconds[] = "skrull_last_step_timestamp_seconds";
inline constexpr char kInfo[] = "skrull_info";

// Histograms.
inline constexpr char kStepDurationSeconds[] = "skrull_step_duration_seconds";
inline constexpr char kSchedulerDurationSeconds[] = "skrull_scheduler_duration_seconds";

// Per-family labels and their (closed) value sets.
inline constexpr char kLabelLevel[] = "level";  // skrull_scheduler_rollbacks_total
inline constexpr char kLevelDacp[] = "dacp";
inline constexpr char kLevelGds[] = "gds";

inline constexpr char kLabelPlacement[] = "placement";  // skrull_sequences_total
inline constexpr char kPlacementLocal[] = "local";
inline constexpr char kPlacementDistributed[] = "distributed";

inline constexpr char kLabelPhase[] = "phase";    // skrull_time_seconds_total
inline constexpr char kLabelSource[] = "source";  // skrull_source_*_total
inline constexpr char kPhaseCompute[] = "compute";
inline constexpr char kPhaseCpCommWait[] = "cp_comm_wait";
inline constexpr char kPhaseDpCommWait[] = "dp_comm_wait";
inline constexpr char kPhaseIdle[] = "idle";

// skrull_info labels (besides the identity labels).
inline constexpr char kLabelVersion[] = "version";
inline constexpr char kLabelPolicy[] = "policy";
inline constexpr char kLabelDp[] = "dp";
inline constexpr char kLabelCp[] = "cp";

}  // namespace skrull::metrics

#endif  // SKRULL_TRAINER_METRICS_METRIC_NAMES_H_

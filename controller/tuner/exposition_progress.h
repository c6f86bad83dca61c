// status.progress of a running job read straight from its rank-0 trainer's
// /metrics page (the Prometheus text exposition format), for clusters where
// the controller has no Prometheus to query (controller.prometheusUrl unset).
// docs/deploy.md, "Progress without Prometheus".
//
// ProgressFromExposition is pure; TrainerEndpointProgress does one HTTP GET
// per call, bounded in time and in the bytes it reads.
#ifndef SKRULL_CONTROLLER_TUNER_EXPOSITION_PROGRESS_H_
#define SKRULL_CONTROLLER_TUNER_EXPOSITION_PROGRESS_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/job_spec.h"
#include "common/status.h"

namespace skrull::tuner {

// The status.progress fields that come from the trainer's gauges
// (trainer/metrics/metric_names.h), and how Prometheus combines the ranks'
// values (the rank-0 page has one value each).
struct ProgressGauge {
  const char* field;      // in status.progress
  const char* metric;     // the trainer's gauge
  const char* aggregate;  // PromQL over the job's ranks: max, sum or avg
};
extern const ProgressGauge kProgressGauges[5];

// status.progress before any gauge is read: {totalSteps} from
// spec.training.steps, or {} for an epochs job (the trainer derives its count).
nlohmann::json ProgressSkeleton(const api::JobSpec& spec);

// progress[field] = value: the step as an integer, other values to 4 decimals.
void SetProgressField(const std::string& field, double value, nlohmann::json* progress);

// The most of /metrics read; a larger page is refused (a trainer's page is a
// few tens of KiB).
inline constexpr size_t kMaxExpositionBytes = size_t{4} << 20;

// {step, loss, evalLoss, tokensPerSecond, mfu, totalSteps, etaSeconds}, each
// present only when the page has it: step, loss, evalLoss, tokensPerSecond
// and mfu from the trainer's gauges (metric_names.h; the largest value over
// label sets), totalSteps from spec.training.steps (absent for an epochs job:
// the trainer derives it), etaSeconds = remaining steps x the mean of
// skrull_step_duration_seconds. Lines that are not samples of these metrics
// are skipped; a page over kMaxExpositionBytes is InvalidArgument.
StatusOr<nlohmann::json> ProgressFromExposition(std::string_view text, const api::JobSpec& spec);

// A status.progress source for the reconciler: GET url_of(spec) (the
// operator passes the rank-0 pod's /metrics URL) within
// `timeout`, then ProgressFromExposition. A trainer that does not answer is
// Unavailable naming the URL (the reconciler leaves status.progress as it was).
using ProgressSource = std::function<StatusOr<nlohmann::json>(const api::JobSpec&)>;
ProgressSource TrainerEndpointProgress(std::function<std::string(const api::JobSpec&)> url_of,
                                       std::chrono::milliseconds timeout);

}  // namespace skrull::tuner

#endif  // SKRULL_CONTROLLER_TUNER_EXPOSITION_PROGRESS_H_

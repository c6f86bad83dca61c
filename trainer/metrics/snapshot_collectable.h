// SnapshotCollectable: what TrainerMetrics hands to the scrape endpoint and
// the Pushgateway instead of its raw prometheus::Registry. Private to
// trainer/metrics (tests include it); callers use TrainerMetrics.
//
// Two fixes over a bare Registry:
//  * Whole steps. A writer holds LockForUpdate() while it updates all series
//    of one step, and Collect() takes the same lock, so a scrape never sees a
//    step half applied (steps counted but its tokens not yet).
//  * HELP escaping. prometheus-cpp 1.0.x writes HELP text raw; the text format
//    wants `\` as `\\` and a newline as `\n`. Collect() escapes every family's
//    help. (Label values are already escaped by prometheus-cpp.)
//
// Thread safety: Collect() and LockForUpdate() may be called from any thread.
#ifndef SKRULL_TRAINER_METRICS_SNAPSHOT_COLLECTABLE_H_
#define SKRULL_TRAINER_METRICS_SNAPSHOT_COLLECTABLE_H_

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace skrull::metrics {

// HELP text as the 0.0.4 text format wants it: `\` -> `\\`, newline -> `\n`.
std::string EscapeHelpText(std::string_view help);

class SnapshotCollectable : public prometheus::Collectable {
 public:
  // REQUIRES: registry != nullptr.
  explicit SnapshotCollectable(std::shared_ptr<prometheus::Registry> registry);

  // Held by a writer across all updates that belong together.
  std::unique_lock<std::mutex> LockForUpdate() const { return std::unique_lock<std::mutex>(mu_); }

  std::vector<prometheus::MetricFamily> Collect() const override;

  // The 0.0.4 text exposition of Collect().
  std::string Serialize() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  mutable std::mutex mu_;
};

}  // namespace skrull::metrics

#endif  // SKRULL_TRAINER_METRICS_SNAPSHOT_COLLECTABLE_H_

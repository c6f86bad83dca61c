#include "trainer/metrics/snapshot_collectable.h"

#include <prometheus/text_serializer.h>

#include <utility>

#include "common/status.h"

namespace skrull::metrics {

std::string EscapeHelpText(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

SnapshotCollectable::SnapshotCollectable(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)) {
  SKRULL_CHECK(registry_ != nullptr);
}

std::vector<prometheus::MetricFamily> SnapshotCollectable::Collect() const {
  std::vector<prometheus::MetricFamily> families;
  {
    std::lock_guard<std::mutex> lock(mu_);
    families = registry_->Collect();
  }
  for (auto& family : families) family.help = EscapeHelpText(family.help);
  return families;
}

std::string SnapshotCollectable::Serialize() const {
  return prometheus::TextSerializer().Serialize(Collect());
}

}  // namespace skrull::metrics

// MemoryKubeApi::Watch and the watch test hooks: the history, bookmarks,
// label-selector transitions and expiry (memory_kube_api.h).
#include <algorithm>
#include <cstdlib>

#include "controller/kube/kube_errors.h"
#include "controller/kube/label_selector.h"
#include "controller/kube/memory_kube_api.h"
#include "controller/kube/rest_path.h"

namespace skrull::kube {

namespace {

using Clock = std::chrono::steady_clock;

WatchEvent Bookmark(const Resource& r, int64_t rv) {
  WatchEvent e;
  e.type = WatchEvent::Type::kBookmark;
  e.object = {{"kind", r.kind},
              {"apiVersion", r.api_version},
              {"metadata", {{"resourceVersion", std::to_string(rv)}}}};
  return e;
}

}  // namespace

int MemoryKubeApi::DropWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  ++drop_generation_;
  changed_.notify_all();
  return active_watches_;
}

void MemoryKubeApi::StopWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  watches_stopped_ = true;
  ++drop_generation_;
  changed_.notify_all();
}

Status MemoryKubeApi::Watch(const Resource& r, const std::string& ns, const WatchOptions& options,
                            const std::function<bool(const WatchEvent&)>& on_event) {
  std::string path = CollectionPath(r, ns) + "?watch=1";
  if (!options.label_selector.empty()) {
    path += "&labelSelector=" + QueryEscape(options.label_selector);
  }
  SKRULL_RETURN_IF_ERROR(CheckInjected(Verb::kWatch, r, "GET", path));
  StatusOr<LabelSelector> selector = LabelSelector::Parse(options.label_selector);
  if (!selector.ok()) return KubeError("GET", path, 400, selector.status().message());
  const std::string& from_rv = options.resource_version;
  const bool from_now = from_rv.empty() || from_rv == "0";
  int64_t cursor = 0;
  if (!from_now) {
    char* end = nullptr;
    cursor = std::strtoll(from_rv.c_str(), &end, 10);
    if (*end != '\0' || cursor < 0) {
      return KubeError("GET", path, 400, "invalid resourceVersion \"" + from_rv + "\"");
    }
  }
  const auto timeout = options.timeout.count() > 0 ? options.timeout : std::chrono::seconds(300);
  const Clock::time_point deadline = Clock::now() + timeout;
  const std::string resource = r.prefix + "/" + r.plural;

  std::unique_lock<std::mutex> lock(mu_);
  if (watches_stopped_) return UnavailableError("GET " + path + ": the server is shutting down");
  ++active_watches_;
  const uint64_t generation = drop_generation_;
  std::vector<WatchEvent> batch;
  if (from_now) {
    auto objs = objects_.find(resource);
    const std::string ns_prefix = ns.empty() ? "" : ns + "/";
    if (objs != objects_.end()) {
      for (auto it = objs->second.lower_bound(ns_prefix);
           it != objs->second.end() && it->first.compare(0, ns_prefix.size(), ns_prefix) == 0;
           ++it) {
        if (selector->MatchesObject(it->second)) {
          batch.push_back(WatchEvent{WatchEvent::Type::kAdded, it->second});
        }
      }
    }
    cursor = rv_;
  }
  // Converts a history event into what this watch sees, if anything.
  auto visible = [&](const Event& e, WatchEvent* out) {
    if (e.resource != resource || (!ns.empty() && e.ns != ns)) return false;
    const bool now_matches = selector->MatchesObject(e.object);
    const bool before_matched =
        e.type == WatchEvent::Type::kModified && selector->MatchesObject(e.previous);
    out->object = e.object;
    if (e.type != WatchEvent::Type::kModified) {
      out->type = e.type;
      return now_matches;
    }
    if (!now_matches && !before_matched) return false;
    out->type = !before_matched ? WatchEvent::Type::kAdded
                : !now_matches  ? WatchEvent::Type::kDeleted
                                : WatchEvent::Type::kModified;
    return true;
  };

  Status result;
  Clock::time_point next_bookmark = Clock::now() + options_.bookmark_interval;
  while (true) {
    if (!batch.empty()) {
      lock.unlock();
      bool go_on = true;
      for (const WatchEvent& e : batch) {
        if (!(go_on = on_event(e))) break;
      }
      batch.clear();
      lock.lock();
      if (!go_on) break;
    }
    if (watches_stopped_ || generation != drop_generation_) {
      result = UnavailableError("GET " + path +
                                ": the watch was cut (MemoryKubeApi::DropWatches or shutdown)");
      break;
    }
    if (cursor < compacted_rv_) {
      result = KubeError("GET", path, 410, "Expired",
                         "too old resource version: " + std::to_string(cursor) + " (" +
                             std::to_string(compacted_rv_) + ")");
      break;
    }
    auto it = std::upper_bound(history_.begin(), history_.end(), cursor,
                               [](int64_t rv, const Event& e) { return rv < e.rv; });
    for (; it != history_.end(); ++it) {
      WatchEvent e;
      if (visible(*it, &e)) batch.push_back(std::move(e));
    }
    cursor = rv_;
    const Clock::time_point now = Clock::now();
    if (!batch.empty()) {
      next_bookmark = now + options_.bookmark_interval;
      continue;
    }
    if (now >= deadline) {
      // As the API server does: a last bookmark, so the next watch resumes here.
      lock.unlock();
      on_event(Bookmark(r, cursor));
      lock.lock();
      break;
    }
    if (now >= next_bookmark) {
      batch.push_back(Bookmark(r, cursor));
      next_bookmark = now + options_.bookmark_interval;
      continue;
    }
    changed_.wait_until(lock, std::min(deadline, next_bookmark));
  }
  --active_watches_;
  changed_.notify_all();
  return result;
}

}  // namespace skrull::kube

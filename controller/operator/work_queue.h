// WorkQueue: the controller's deduplicating, delaying queue of job keys
// ("namespace/name"), as client-go's workqueue: a key is queued at most once;
// a key being processed is not handed to a second worker, and if it is added
// meanwhile it is queued again when Done is called; AddAfter delays a key;
// Retry backs a failing key off exponentially (1 s doubling to 5 min) until
// Forget.
//
// Thread-safe. Time comes from an injectable clock so tests need no sleeps.
#ifndef SKRULL_CONTROLLER_OPERATOR_WORK_QUEUE_H_
#define SKRULL_CONTROLLER_OPERATOR_WORK_QUEUE_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace skrull::controller {

class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;
  explicit WorkQueue(std::function<Clock::time_point()> now = [] { return Clock::now(); })
      : now_(std::move(now)) {}

  void Add(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    AddLocked(key);
  }

  // Queues `key` once `delay` has passed (an earlier Add still wins).
  void AddAfter(const std::string& key, std::chrono::milliseconds delay) {
    if (delay.count() <= 0) return Add(key);
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point at = now_() + delay;
    auto it = delayed_.find(key);
    if (it == delayed_.end() || at < it->second) delayed_[key] = at;
    cv_.notify_all();
  }

  // Requeues a failed key after its backoff; returns the delay used.
  std::chrono::milliseconds Retry(const std::string& key) {
    std::chrono::milliseconds delay;
    {
      std::lock_guard<std::mutex> lock(mu_);
      int& n = failures_[key];
      delay = std::chrono::milliseconds(1000) * (1LL << std::min(n, 9));
      if (delay > std::chrono::minutes(5)) delay = std::chrono::minutes(5);
      ++n;
    }
    AddAfter(key, delay);
    return delay;
  }
  void Forget(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_.erase(key);
  }

  // Blocks until a key is ready or Shutdown; nullopt after Shutdown.
  // `max_wait` bounds the wait (tests); the key must be passed to Done.
  std::optional<std::string> Get(std::chrono::milliseconds max_wait = std::chrono::hours(24)) {
    std::unique_lock<std::mutex> lock(mu_);
    const Clock::time_point give_up = now_() + max_wait;
    while (true) {
      if (shutdown_) return std::nullopt;
      PromoteDueLocked();
      if (!queue_.empty()) {
        std::string key = queue_.front();
        queue_.pop_front();
        queued_.erase(key);
        processing_.insert(key);
        return key;
      }
      Clock::time_point wake = give_up;
      for (const auto& [k, at] : delayed_) wake = std::min(wake, at);
      if (now_() >= give_up) return std::nullopt;
      cv_.wait_for(lock, std::min<Clock::duration>(wake - now_(), std::chrono::milliseconds(200)));
    }
  }

  void Done(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    processing_.erase(key);
    if (dirty_.erase(key) > 0) AddLocked(key);
  }

  void Shutdown() {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
    cv_.notify_all();
  }

  size_t Length() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.size();
  }

 private:
  void AddLocked(const std::string& key) {
    delayed_.erase(key);
    if (processing_.count(key) > 0) {
      dirty_.insert(key);
      return;
    }
    if (queued_.insert(key).second) queue_.push_back(key);
    cv_.notify_one();
  }
  void PromoteDueLocked() {
    const Clock::time_point now = now_();
    for (auto it = delayed_.begin(); it != delayed_.end();) {
      if (it->second <= now) {
        const std::string key = it->first;
        it = delayed_.erase(it);
        if (processing_.count(key) > 0) {
          dirty_.insert(key);
        } else if (queued_.insert(key).second) {
          queue_.push_back(key);
        }
      } else {
        ++it;
      }
    }
  }

  std::function<Clock::time_point()> now_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> queued_, processing_, dirty_;
  std::map<std::string, Clock::time_point> delayed_;
  std::map<std::string, int> failures_;
  bool shutdown_ = false;
};

}  // namespace skrull::controller

#endif  // SKRULL_CONTROLLER_OPERATOR_WORK_QUEUE_H_

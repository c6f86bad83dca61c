// ParallelFor: runs body(i) for i in [0, n) on at most `max_threads` threads
// (the caller's included), each index exactly once. Results must be written
// by index (body(i) owns slot i), so the outcome does not depend on the
// thread count or on the order indices are taken: what keeps plans
// identical on every rank. Threads are started per call and joined before
// it returns; no pool outlives it.
//
// Thread safety: body must be safe to run concurrently for distinct i.
#ifndef SKRULL_SCHEDULER_PARALLEL_FOR_H_
#define SKRULL_SCHEDULER_PARALLEL_FOR_H_

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace skrull::scheduler {

// Threads a call may use by default: the hardware's, at most kMaxSchedulerThreads.
inline constexpr int kMaxSchedulerThreads = 8;
inline int DefaultSchedulerThreads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return std::clamp(static_cast<int>(hw), 1, kMaxSchedulerThreads);
}

template <typename Body>
void ParallelFor(int n, int max_threads, const Body& body) {
  const int threads = std::clamp(std::min(max_threads, n), 1, kMaxSchedulerThreads);
  if (threads == 1) {
    for (int i = 0; i < n; ++i) body(i);
    return;
  }
  std::atomic<int> next{0};
  auto work = [&] {
    for (int i = next.fetch_add(1); i < n; i = next.fetch_add(1)) body(i);
  };
  std::vector<std::thread> helpers;
  helpers.reserve(static_cast<size_t>(threads - 1));
  for (int t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& h : helpers) h.join();
}

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_PARALLEL_FOR_H_

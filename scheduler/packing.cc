#include "scheduler/packing.h"

#include <algorithm>

#include "common/status.h"
#include "scheduler/layout.h"

namespace skrull::scheduler {

SequenceGroups ContiguousSplit(const std::vector<Sequence>& items, int parts) {
  SKRULL_CHECK(parts >= 1) << "parts=" << parts;
  SequenceGroups groups(static_cast<size_t>(parts));
  const size_t base = items.size() / parts;
  const size_t extra = items.size() % parts;
  size_t next = 0;
  for (size_t p = 0; p < groups.size(); ++p) {
    const size_t size = base + (p < extra ? 1 : 0);
    groups[p].assign(items.begin() + next, items.begin() + next + size);
    next += size;
  }
  return groups;
}

SequenceGroups PackInOrder(const std::vector<Sequence>& items, int cp, int64_t bucket_size_tokens) {
  SequenceGroups groups;
  int64_t used = 0;
  for (const Sequence& s : items) {
    const int64_t shard = ShardTokens(s.length, cp);
    SKRULL_CHECK(shard <= bucket_size_tokens) << "sequence " << s.id << " length " << s.length;
    if (groups.empty() || used + shard > bucket_size_tokens) {
      groups.emplace_back();
      used = 0;
    }
    groups.back().push_back(s);
    used += shard;
  }
  return groups;
}

SequenceGroups PackFirstFitDecreasing(const std::vector<Sequence>& items, int cp,
                                      int64_t bucket_size_tokens) {
  std::vector<Sequence> sorted = items;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Sequence& a, const Sequence& b) {
    return a.length != b.length ? a.length > b.length : a.id < b.id;
  });
  SequenceGroups groups;
  std::vector<int64_t> used;
  for (const Sequence& s : sorted) {
    const int64_t shard = ShardTokens(s.length, cp);
    SKRULL_CHECK(shard <= bucket_size_tokens) << "sequence " << s.id << " length " << s.length;
    size_t g = 0;
    while (g < groups.size() && used[g] + shard > bucket_size_tokens) ++g;
    if (g == groups.size()) {
      groups.emplace_back();
      used.push_back(0);
    }
    groups[g].push_back(s);
    used[g] += shard;
  }
  return groups;
}

std::vector<MicroBatch> AllDistributed(const SequenceGroups& groups, int dp_rank) {
  std::vector<MicroBatch> mbs;
  for (const auto& group : groups) {
    MicroBatch mb;
    mb.dp_rank = dp_rank;
    mb.index = static_cast<int>(mbs.size());
    for (const Sequence& s : group) mb.sequences.push_back({s.id, s.length, kDistributed});
    mbs.push_back(std::move(mb));
  }
  return mbs;
}

}  // namespace skrull::scheduler

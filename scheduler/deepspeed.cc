#include "scheduler/deepspeed.h"

#include "common/status.h"
#include "scheduler/layout.h"

namespace skrull::scheduler {

SequenceGroups PackDeepSpeed(const std::vector<Sequence>& items, int micro_batch_size, int cp,
                             int64_t bucket_size_tokens) {
  SKRULL_CHECK(micro_batch_size >= 1) << "micro_batch_size=" << micro_batch_size;
  SequenceGroups groups;
  int64_t used = 0;
  for (const Sequence& s : items) {
    const int64_t shard = ShardTokens(s.length, cp);
    SKRULL_CHECK(shard <= bucket_size_tokens) << "sequence " << s.id << " length " << s.length;
    if (groups.empty() || static_cast<int>(groups.back().size()) >= micro_batch_size ||
        used + shard > bucket_size_tokens) {
      groups.emplace_back();
      used = 0;
    }
    groups.back().push_back(s);
    used += shard;
  }
  return groups;
}

void ScheduleDeepSpeed(const std::vector<Sequence>& batch, int micro_batch_size, Plan& plan) {
  const SequenceGroups parts = ContiguousSplit(batch, plan.topology.dp);
  for (int d = 0; d < plan.topology.dp; ++d) {
    plan.ranks[d].micro_batches = AllDistributed(
        PackDeepSpeed(parts[d], micro_batch_size, plan.topology.cp, plan.bucket_size_tokens), d);
  }
}

}  // namespace skrull::scheduler

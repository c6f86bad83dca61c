// Context-parallel attention for DACP micro-batches (paper §5).
//
// A rank's stream is [local sequences | zig-zag shards of distributed
// sequences] (scheduler/micro_batch_builder.h). A distributed sequence is sharded
// over the whole CP group or an aligned sub-group of it (scheduler/plan.h);
// the shards of one group form one region of the stream, and each group with
// distributed sequences exchanges its own region on its own communicator
// (CpGroupSet). Per layer, forward:
//   1. per group (smallest first), launch an all-gather of the region's K/V
//      over the group (each rank's contribution padded to the group's
//      largest region: Gloo needs equal sizes; the padding is counted);
//   2. meanwhile attend the local sequences (no communication at all);
//   3. per group, wait, reassemble its sequences' K/V in position order,
//      attend this rank's query chunks to it with a causal mask by GLOBAL
//      position.
// Backward mirrors it: per group, the distributed part's backward, then its
// dK/dV reduce-scatter (Gloo: all-to-all + local sum) is launched; all are
// overlapped with the local sequences' backward. A micro-batch without distributed
// sequences is delegated to the wrapped local backend and communicates nothing.
//
// The autograd node is hand-written (a torch::autograd::Node) so the exchange
// state of the micro-batch can live in C++ members; it saves q, k, v, the
// float32 output and log-sum-exp, and (by default) the gathered K/V.
//
// Thread safety: one training thread per backend; the CP group's collectives
// must be issued in the same order on every CP rank (they are: every rank
// runs the same layers on the same plan).
#ifndef SKRULL_TRAINER_DIST_CP_ATTENTION_H_
#define SKRULL_TRAINER_DIST_CP_ATTENTION_H_

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "scheduler/micro_batch_builder.h"
#include "trainer/dist/process_groups.h"
#include "trainer/model/attention.h"
#include "trainer/train/context_parallel.h"

namespace skrull::dist {

struct CpAttentionOptions {
  int64_t block_rows = 512;  // query rows per score block (see model::CausalAttention)
  // true: keep the gathered K/V of distributed sequences for backward (one
  // all-gather per layer). false: gather again in backward (less memory:
  // only the rank's shards stay alive between forward and backward).
  bool save_gathered_kv = true;
};

// Communication and compute accounting, summed since the last TakeStats().
struct CpAttentionStats {
  int64_t attend_calls = 0;
  int64_t distributed_calls = 0;  // calls that exchanged K/V
  int64_t allgathers = 0;
  int64_t reduce_scatters = 0;
  int64_t bytes_allgathered = 0;  // output bytes of the all-gathers on this rank
  int64_t bytes_reduce_scattered = 0;
  int64_t padding_tokens = 0;          // rows this rank sent as padding, over all all-gathers
  double comm_wait_seconds = 0;        // blocked in wait() on the CP group (forward + backward)
  double local_attention_seconds = 0;  // forward + backward of local sequences
  double distributed_attention_seconds = 0;  // forward + backward of the shards
};

// The exchange of one group: the distributed sequences sharded over the CP
// ranks [group_first, group_first + group_size), which hold this rank.
struct CpGroupExchange {
  int group_first = 0;
  int group_size = 1;
  int group_rank = 0;            // this rank's index in the group
  int64_t shard_begin = 0;       // first row of the group's region in this rank's stream
  int64_t shard_tokens = 0;      // rows of that region
  int64_t max_shard_tokens = 0;  // largest region in the group (all-gather rows per rank)
  int64_t gathered_tokens = 0;   // sum of the group's sequences' lengths
  std::vector<model::AttentionSpan> dist_spans;  // keys: the reassembled sequences
  // gather_rows[i]: row of the all-gather output ([group_size * max_shard_tokens])
  // that holds position i of the group's concatenated sequences.
  std::vector<int64_t> gather_rows;
};

// Everything one CP rank needs to exchange and attend the distributed part of
// a micro-batch; the same for every layer.
struct CpExchangePlan {
  int cp = 1;
  int cp_rank = 0;
  int64_t tokens = 0;                             // rows of this rank's stream
  int64_t local_tokens = 0;                       // rows [0, local_tokens) are local sequences
  std::vector<model::AttentionSpan> local_spans;  // keys: this rank's stream
  // One per group with distributed sequences holding this rank, in stream
  // order (ascending group size); their regions tile [local_tokens, tokens).
  std::vector<CpGroupExchange> groups;

  bool has_distributed() const { return !groups.empty(); }
  // Rows this rank sends as padding per exchange round (all groups).
  int64_t PaddingTokens() const;
};

// REQUIRES: stream built for a CP group of `cp` ranks (sizes match).
CpExchangePlan MakeCpExchangePlan(const scheduler::RankStream& stream, int cp);

// The communicators a CP rank exchanges on: the whole CP group and the
// aligned sub-groups holding it (ProcessGroups::cp_sub_groups()). Not owned.
struct CpGroupSet {
  Group* all = nullptr;
  std::vector<Group*> sub_groups;
  // The group of `size` ranks starting at CP rank `first` (all when size is
  // the CP size). CHECK-fails when this rank has no such group.
  Group& For(int first, int size) const;
};

// Causal attention of a DACP stream; see the file comment. q: [T, Hq, D],
// k, v: [T, Hkv, D]; differentiable w.r.t. q, k, v. Issues collectives on
// the groups of plan.groups only. `stats` may be null.
at::Tensor CpAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const CpExchangePlan& plan, const CpGroupSet& groups,
                       const CpAttentionOptions& options, std::shared_ptr<CpAttentionStats> stats);
// The same with no sub-groups (every distributed sequence on `cp_group`).
at::Tensor CpAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const CpExchangePlan& plan, Group& cp_group,
                       const CpAttentionOptions& options, std::shared_ptr<CpAttentionStats> stats);

// The AttentionBackend the decoder sees on a CP rank (the training loop's
// train::ContextParallelAttention).
class CpAttentionBackend : public train::ContextParallelAttention {
 public:
  // `local` handles micro-batches with no distributed sequence. The groups
  // must outlive the backend.
  CpAttentionBackend(CpGroupSet groups, std::unique_ptr<model::AttentionBackend> local,
                     CpAttentionOptions options = {});
  // Without sub-groups: plans must shard over all of `cp_group`.
  CpAttentionBackend(Group* cp_group, std::unique_ptr<model::AttentionBackend> local,
                     CpAttentionOptions options = {});

  // Describes the micro-batch that the following Attend calls (every layer)
  // belong to. Call before the model's forward of each micro-batch.
  // FailedPrecondition when the stream was built for another CP size or rank.
  Status BeginMicroBatch(const scheduler::RankStream& stream) override;
  // Forgets the micro-batch (the next Attend must then be all-local).
  void ClearMicroBatch();

  // REQUIRES: layout matches the stream given to BeginMicroBatch (same local
  // cu_seqlens and token count), or is all-local.
  at::Tensor Attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                    const model::AttentionLayout& layout, int layer) override;
  std::string Name() const override;

  // Seconds blocked in wait() on the CP group since the last call (the
  // trainer's per-step cp_comm_wait); the totals in SharedStats() keep
  // accumulating.
  double TakeCommWaitSeconds() override;

  // Returns the accounting since the last call and resets it.
  CpAttentionStats TakeStats();
  // The live accounting, shared: it outlives the backend (the model owns the
  // backend; a caller reads the totals after the model is gone).
  std::shared_ptr<CpAttentionStats> SharedStats() const { return stats_; }
  const CpExchangePlan* plan() const { return has_plan_ ? &plan_ : nullptr; }

 private:
  CpGroupSet groups_;
  Group* cp_group_;  // groups_.all
  std::unique_ptr<model::AttentionBackend> local_;
  CpAttentionOptions options_;
  CpExchangePlan plan_;
  bool has_plan_ = false;
  std::shared_ptr<CpAttentionStats> stats_;
  double comm_wait_taken_ = 0;  // stats_->comm_wait_seconds at the last TakeCommWaitSeconds
};

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_CP_ATTENTION_H_

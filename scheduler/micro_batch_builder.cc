#include "scheduler/micro_batch_builder.h"

#include <algorithm>
#include <string>

namespace skrull::scheduler {

namespace {

// With cp == 1 a distributed sequence is a whole local sequence.
bool IsLocalOn(const PlacedSequence& s, int cp, int cp_rank) {
  return cp == 1 || s.cp_rank == cp_rank;
}

// The distributed sequences of `mb` in stream order: by group size, then
// plan order (see the file comment).
std::vector<const PlacedSequence*> DistributedInStreamOrder(const MicroBatch& mb, int cp) {
  std::vector<const PlacedSequence*> out;
  for (const PlacedSequence& s : mb.sequences) {
    if (s.distributed()) out.push_back(&s);
  }
  std::stable_sort(out.begin(), out.end(), [cp](const auto* a, const auto* b) {
    return a->Group(cp).size < b->Group(cp).size;
  });
  return out;
}

void Append(const SequenceTokens& seq, TokenRange range, RankStream* out) {
  for (int64_t i = range.begin; i < range.end; ++i) {
    out->input_ids.push_back(seq.input_ids[i]);
    const int64_t label = seq.targets[i];
    out->targets.push_back(label);
    out->positions.push_back(i);
    if (label != kIgnoreLabel) ++out->label_tokens;
  }
}

Status CheckTokens(const std::vector<SequenceTokens>& batch, const PlacedSequence& s) {
  if (s.id < 0 || s.id >= static_cast<int64_t>(batch.size())) {
    return FailedPreconditionError("micro-batch builder: sequence id " + std::to_string(s.id) +
                                   " is outside the global batch of " +
                                   std::to_string(batch.size()) + " sequences");
  }
  const SequenceTokens& t = batch[s.id];
  if (t.length != s.length || (s.length > 0 && (t.input_ids == nullptr || t.targets == nullptr))) {
    return FailedPreconditionError(
        "micro-batch builder: sequence " + std::to_string(s.id) + " has " +
        std::to_string(t.length) + " tokens but the plan says " + std::to_string(s.length) +
        "; the data file changed after it was indexed (re-run the job on an unchanged file)");
  }
  return OkStatus();
}

}  // namespace

std::vector<int64_t> NeededSequenceIds(const Plan& plan, int dp_rank, int cp_rank) {
  const int cp = plan.topology.cp;
  SKRULL_CHECK(dp_rank >= 0 && dp_rank < static_cast<int>(plan.ranks.size()))
      << "dp_rank=" << dp_rank;
  SKRULL_CHECK(cp_rank >= 0 && cp_rank < cp) << "cp_rank=" << cp_rank << " cp=" << cp;
  std::vector<int64_t> ids;
  for (const MicroBatch& mb : plan.ranks[dp_rank].micro_batches) {
    for (const PlacedSequence& s : mb.sequences) {
      if ((s.distributed() && s.Group(cp).Contains(cp_rank)) || IsLocalOn(s, cp, cp_rank)) {
        ids.push_back(s.id);
      }
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

StatusOr<std::vector<RankStream>> BuildRankStreams(const Plan& plan,
                                                   const std::vector<SequenceTokens>& batch,
                                                   int dp_rank, int cp_rank) {
  const int cp = plan.topology.cp;
  SKRULL_CHECK(cp >= 1) << "plan topology cp=" << cp;
  SKRULL_CHECK(dp_rank >= 0 && dp_rank < static_cast<int>(plan.ranks.size()))
      << "dp_rank=" << dp_rank << " plan ranks=" << plan.ranks.size();
  SKRULL_CHECK(cp_rank >= 0 && cp_rank < cp) << "cp_rank=" << cp_rank << " cp=" << cp;

  std::vector<RankStream> streams;
  for (const MicroBatch& mb : plan.ranks[dp_rank].micro_batches) {
    RankStream out;
    out.dp_rank = dp_rank;
    out.cp_rank = cp_rank;
    out.micro_batch = mb.index;
    out.local_cu_seqlens.push_back(0);
    out.rank_local_tokens.assign(cp, 0);
    out.rank_distributed_tokens.assign(cp, 0);

    // Pass 1: every CP rank's local token count (where its shards start).
    for (const PlacedSequence& s : mb.sequences) {
      if (cp == 1) {
        out.rank_local_tokens[0] += s.length;
      } else if (!s.distributed()) {
        SKRULL_CHECK(s.cp_rank >= 0 && s.cp_rank < cp) << "sequence " << s.id << " cp_rank";
        out.rank_local_tokens[s.cp_rank] += s.length;
      }
    }

    // Pass 2: this rank's local sequences, whole.
    for (const PlacedSequence& s : mb.sequences) {
      if (!IsLocalOn(s, cp, cp_rank)) continue;
      SKRULL_RETURN_IF_ERROR(CheckTokens(batch, s));
      Append(batch[s.id], TokenRange{0, s.length}, &out);
      out.local_cu_seqlens.push_back(static_cast<int64_t>(out.input_ids.size()));
      out.local_seq_ids.push_back(s.id);
    }
    out.local_tokens = static_cast<int64_t>(out.input_ids.size());
    SKRULL_CHECK(out.local_tokens == out.rank_local_tokens[cp_rank]);

    // Pass 3: distributed sequences, zig-zag shards with global positions.
    if (cp > 1) {
      std::vector<int64_t> cursor = out.rank_local_tokens;  // per rank stream write offset
      for (const PlacedSequence* s : DistributedInStreamOrder(mb, cp)) {
        const ShardGroup g = s->Group(cp);
        SKRULL_CHECK(g.first >= 0 && g.first + g.size <= cp) << "sequence " << s->id << " group";
        DistributedSegment seg;
        seg.seq_id = s->id;
        seg.length = s->length;
        seg.group_first = g.first;
        seg.group_size = g.size;
        seg.rank_chunks.resize(g.size);
        for (int i = 0; i < g.size; ++i) {
          const int r = g.first + i;
          const std::array<TokenRange, 2> shard = ZigZagShard(s->length, g.size, i);
          for (int k = 0; k < 2; ++k) {
            seg.rank_chunks[i][k] = ShardChunk{shard[k], cursor[r]};
            cursor[r] += shard[k].size();
          }
          out.rank_distributed_tokens[r] += seg.RankTokens(r);
        }
        if (!g.Contains(cp_rank)) continue;
        SKRULL_RETURN_IF_ERROR(CheckTokens(batch, *s));
        for (const ShardChunk& c : seg.Chunks(cp_rank)) {
          SKRULL_CHECK(c.stream_offset == static_cast<int64_t>(out.input_ids.size()));
          Append(batch[s->id], c.positions, &out);
        }
        out.distributed.push_back(std::move(seg));
      }
    }
    out.tokens = static_cast<int64_t>(out.input_ids.size());
    streams.push_back(std::move(out));
  }
  return streams;
}

}  // namespace skrull::scheduler

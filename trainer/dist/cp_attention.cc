#include "trainer/dist/cp_attention.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <type_traits>

#include "common/status.h"
#include "trainer/dist/cp_exchange.h"
#include "trainer/dist/span_attention.h"

namespace skrull::dist {
namespace {

using Clock = std::chrono::steady_clock;

// A new autograd node: libtorch >= 2.13 holds nodes in c10::intrusive_ptr
// (Node derives c10::intrusive_ptr_target), older ones in std::shared_ptr with
// the deleteNode deleter (found by ADL: only the branch in use is compiled).
template <class T>
auto MakeNode() {
  if constexpr (std::is_base_of_v<c10::intrusive_ptr_target, T>) {
    return c10::make_intrusive<T>();
  } else {
    return std::shared_ptr<T>(new T(), [](T* n) { deleteNode(n); });
  }
}

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// State shared by the forward pass and the backward node of one call.
struct Exchange {
  CpExchangePlan plan_copy;
  std::vector<Group*> groups;  // per plan_copy.groups entry
  CpAttentionOptions options;
  std::shared_ptr<CpAttentionStats> stats;
  std::vector<at::Tensor> gather_index;  // per group: its gather_rows on the tensors' device
  double scale = 1.0;
  int64_t hkv = 0;
  int64_t head_dim = 0;

  const CpExchangePlan& p() const { return plan_copy; }
};

// An all-gather of this rank's region K/V of one group in flight.
struct KvGather {
  at::Tensor send;  // [max, 2, Hkv, D]
  at::Tensor recv;  // [group_size * max, 2, Hkv, D]
  PendingCollective pending;
};

KvGather StartKvGather(const at::Tensor& k, const at::Tensor& v, Exchange& ex, size_t group) {
  const CpGroupExchange& p = ex.p().groups[group];
  KvGather g;
  g.send = at::zeros({p.max_shard_tokens, 2, ex.hkv, ex.head_dim}, k.options());
  if (p.shard_tokens > 0) {
    g.send.narrow(0, 0, p.shard_tokens)
        .select(1, 0)
        .copy_(k.narrow(0, p.shard_begin, p.shard_tokens));
    g.send.narrow(0, 0, p.shard_tokens)
        .select(1, 1)
        .copy_(v.narrow(0, p.shard_begin, p.shard_tokens));
  }
  g.recv = at::empty({p.group_size * p.max_shard_tokens, 2, ex.hkv, ex.head_dim}, k.options());
  g.pending = StartAllGather(*ex.groups[group], g.send, g.recv);
  ex.stats->allgathers += 1;
  ex.stats->bytes_allgathered += TensorBytes(g.recv);
  ex.stats->padding_tokens += p.max_shard_tokens - p.shard_tokens;
  return g;
}

std::vector<KvGather> StartKvGathers(const at::Tensor& k, const at::Tensor& v, Exchange& ex) {
  std::vector<KvGather> gathers;
  for (size_t i = 0; i < ex.p().groups.size(); ++i) gathers.push_back(StartKvGather(k, v, ex, i));
  return gathers;
}

// Gathered rows of one group -> its sequences' K and V in position order,
// [gathered_tokens, Hkv, D] each (views of one buffer).
std::pair<at::Tensor, at::Tensor> AssembleKv(const KvGather& g, const Exchange& ex, size_t group) {
  const CpGroupExchange& p = ex.p().groups[group];
  at::Tensor flat = g.recv.view({p.group_size * p.max_shard_tokens, 2 * ex.hkv * ex.head_dim});
  at::Tensor kv = flat.index_select(0, ex.gather_index[group])
                      .view({p.gathered_tokens, 2, ex.hkv, ex.head_dim});
  return {kv.select(1, 0), kv.select(1, 1)};
}

class CpAttentionBackward : public torch::autograd::Node {
 public:
  std::string name() const override { return "CpAttentionBackward"; }

  void release_variables() override {
    q_.reset();
    k_.reset();
    v_.reset();
    out_.reset();
    lse_.reset();
    k_all_.clear();
    v_all_.clear();
  }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    SKRULL_CHECK(q_.defined())
        << "CpAttentionBackward called twice (retain_graph is not supported)";
    c10::NoGradGuard no_grad;
    Exchange& ex = *ex_;
    const CpExchangePlan& p = ex.p();
    at::Tensor dout = grads[0];
    if (!dout.defined()) dout = at::zeros_like(out_);
    auto f32 = q_.options().dtype(at::kFloat);
    at::Tensor dq = at::zeros(q_.sizes(), f32);
    at::Tensor dk = at::zeros(k_.sizes(), f32);
    at::Tensor dv = at::zeros(v_.sizes(), f32);

    auto local_backward = [&] {
      const auto t = Clock::now();
      SpanAttentionBackward(q_, k_, v_, out_, lse_, dout, p.local_spans, ex.scale,
                            ex.options.block_rows, dq, dk, dv);
      ex.stats->local_attention_seconds += Since(t);
    };

    std::vector<at::Tensor> k_all = k_all_, v_all = v_all_;
    if (!ex.options.save_gathered_kv) {
      std::vector<KvGather> gathers = StartKvGathers(k_, v_, ex);
      local_backward();  // overlaps the re-gathers
      k_all.clear();
      v_all.clear();
      for (size_t i = 0; i < gathers.size(); ++i) {
        ex.stats->comm_wait_seconds += gathers[i].pending.Wait();
        auto [kg, vg] = AssembleKv(gathers[i], ex, i);
        k_all.push_back(kg);
        v_all.push_back(vg);
      }
    }
    std::vector<PendingCollective> scatters;
    std::vector<at::Tensor> mine;
    for (size_t i = 0; i < p.groups.size(); ++i) {
      scatters.push_back(StartGradScatter(i, k_all[i], v_all[i], dout, dq, &mine));
    }
    if (ex.options.save_gathered_kv) local_backward();  // overlaps the reduce-scatters
    for (size_t i = 0; i < p.groups.size(); ++i) {
      ex.stats->comm_wait_seconds += scatters[i].Wait();
      const CpGroupExchange& g = p.groups[i];
      if (g.shard_tokens > 0) {
        dk.narrow(0, g.shard_begin, g.shard_tokens)
            .add_(mine[i].narrow(0, 0, g.shard_tokens).select(1, 0));
        dv.narrow(0, g.shard_begin, g.shard_tokens)
            .add_(mine[i].narrow(0, 0, g.shard_tokens).select(1, 1));
      }
    }
    torch::autograd::variable_list result = {dq.to(q_.scalar_type()), dk.to(k_.scalar_type()),
                                             dv.to(v_.scalar_type())};
    release_variables();
    return result;
  }

  std::shared_ptr<Exchange> ex_;
  at::Tensor q_, k_, v_;                   // detached inputs
  at::Tensor out_, lse_;                   // float32
  std::vector<at::Tensor> k_all_, v_all_;  // gathered K/V per group when save_gathered_kv

 private:
  // Group i's distributed backward: dQ into `dq`, its sequences' dK/dV
  // scattered back to the all-gather layout (padding rows stay 0) and a
  // reduce-scatter of them launched; this rank's rows land in mine->back().
  PendingCollective StartGradScatter(size_t i, const at::Tensor& k_all, const at::Tensor& v_all,
                                     const at::Tensor& dout, at::Tensor& dq,
                                     std::vector<at::Tensor>* mine) {
    Exchange& ex = *ex_;
    const CpGroupExchange& g = ex.p().groups[i];
    auto f32 = q_.options().dtype(at::kFloat);
    const auto t = Clock::now();
    at::Tensor dk_all = at::zeros({g.gathered_tokens, ex.hkv, ex.head_dim}, f32);
    at::Tensor dv_all = at::zeros({g.gathered_tokens, ex.hkv, ex.head_dim}, f32);
    SpanAttentionBackward(q_, k_all, v_all, out_, lse_, dout, g.dist_spans, ex.scale,
                          ex.options.block_rows, dq, dk_all, dv_all);
    const int64_t rows = g.group_size * g.max_shard_tokens;
    const int64_t width = 2 * ex.hkv * ex.head_dim;
    at::Tensor grad_send = at::zeros({rows, 2, ex.hkv, ex.head_dim}, f32);
    grad_send.view({rows, width})
        .index_copy_(0, ex.gather_index[i],
                     at::stack({dk_all, dv_all}, 1).view({g.gathered_tokens, width}));
    mine->push_back(at::empty({g.max_shard_tokens, 2, ex.hkv, ex.head_dim}, f32));
    ex.stats->distributed_attention_seconds += Since(t);
    ex.stats->reduce_scatters += 1;
    ex.stats->bytes_reduce_scattered += TensorBytes(grad_send);
    return StartReduceScatterSum(*ex.groups[i], grad_send, mine->back());
  }
};

void CheckInputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                 const CpExchangePlan& plan) {
  SKRULL_CHECK(q.dim() == 3 && k.dim() == 3 && v.dim() == 3)
      << "q/k/v must be [T, H, D], got " << q.sizes() << " " << k.sizes() << " " << v.sizes();
  SKRULL_CHECK(k.sizes() == v.sizes()) << k.sizes() << " vs " << v.sizes();
  SKRULL_CHECK(q.size(0) == plan.tokens && k.size(0) == plan.tokens)
      << "CP attention: q/k have " << q.size(0) << "/" << k.size(0) << " rows, the plan "
      << plan.tokens;
  SKRULL_CHECK(q.size(2) == k.size(2) && k.size(1) > 0 && q.size(1) % k.size(1) == 0)
      << "head shapes q " << q.sizes() << " k " << k.sizes();
}

}  // namespace

int64_t CpExchangePlan::PaddingTokens() const {
  int64_t padding = 0;
  for (const CpGroupExchange& g : groups) padding += g.max_shard_tokens - g.shard_tokens;
  return padding;
}

Group& CpGroupSet::For(int first, int size) const {
  SKRULL_CHECK(all != nullptr) << "CpGroupSet without the CP group";
  if (size == all->size) return *all;
  for (Group* g : sub_groups) {
    if (g->size == size && g->rank == all->rank - first) return *g;
  }
  SKRULL_CHECK(false) << "no CP sub-group of " << size << " ranks from CP rank " << first << " on "
                      << all->Describe() << " (" << sub_groups.size() << " sub-groups)";
  return *all;
}

namespace {

// The exchange of the segments [begin, end) of `stream`, all on one group.
CpGroupExchange MakeGroupExchange(const scheduler::RankStream& stream, size_t begin, size_t end) {
  const scheduler::DistributedSegment& first_seg = stream.distributed[begin];
  CpGroupExchange x;
  x.group_first = first_seg.group_first;
  x.group_size = first_seg.group_size;
  x.group_rank = stream.cp_rank - x.group_first;
  const int n = x.group_size;
  SKRULL_CHECK(x.group_rank >= 0 && x.group_rank < n)
      << "segment " << first_seg.seq_id << " is not on a group holding cp rank " << stream.cp_rank;
  // Where each member's region starts in its stream, and how many rows it has.
  std::vector<int64_t> start(n), rows(n, 0);
  for (int i = 0; i < n; ++i) start[i] = first_seg.rank_chunks[i][0].stream_offset;
  for (size_t s = begin; s < end; ++s) {
    for (int i = 0; i < n; ++i) rows[i] += stream.distributed[s].RankTokens(x.group_first + i);
  }
  x.shard_begin = start[x.group_rank];
  x.shard_tokens = rows[x.group_rank];
  x.max_shard_tokens = *std::max_element(rows.begin(), rows.end());
  int64_t base = 0;
  for (size_t s = begin; s < end; ++s) {
    const scheduler::DistributedSegment& seg = stream.distributed[s];
    SKRULL_CHECK(static_cast<int>(seg.rank_chunks.size()) == n) << "segment " << seg.seq_id;
    for (int c = 0; c < 2 * n; ++c) {
      const int owner = c < n ? c : 2 * n - 1 - c;
      const scheduler::ShardChunk& ch = seg.rank_chunks[owner][c < n ? 0 : 1];
      SKRULL_CHECK(ch.positions == scheduler::ZigZagChunk(seg.length, n, c))
          << "segment " << seg.seq_id << " chunk " << c << " is not zig-zag";
      const int64_t row0 = owner * x.max_shard_tokens + (ch.stream_offset - start[owner]);
      for (int64_t i = 0; i < ch.positions.size(); ++i) x.gather_rows.push_back(row0 + i);
    }
    for (const scheduler::ShardChunk& ch : seg.rank_chunks[x.group_rank]) {
      if (ch.positions.size() == 0) continue;
      x.dist_spans.push_back(model::AttentionSpan{ch.stream_offset, ch.positions.size(), base,
                                                  ch.positions.end, ch.positions.begin});
    }
    base += seg.length;
  }
  x.gathered_tokens = base;
  SKRULL_CHECK(static_cast<int64_t>(x.gather_rows.size()) == base);
  return x;
}

}  // namespace

CpExchangePlan MakeCpExchangePlan(const scheduler::RankStream& stream, int cp) {
  SKRULL_CHECK(cp >= 1 && stream.cp_rank >= 0 && stream.cp_rank < cp)
      << "cp " << cp << " cp_rank " << stream.cp_rank;
  CpExchangePlan p;
  p.cp = cp;
  p.cp_rank = stream.cp_rank;
  p.tokens = stream.tokens;
  p.local_tokens = stream.local_tokens;
  for (size_t i = 1; i < stream.local_cu_seqlens.size(); ++i) {
    const int64_t b = stream.local_cu_seqlens[i - 1];
    const int64_t len = stream.local_cu_seqlens[i] - b;
    if (len > 0) p.local_spans.push_back(model::AttentionSpan{b, len, b, len, 0});
  }
  if (stream.distributed.empty()) return p;
  SKRULL_CHECK(static_cast<int>(stream.rank_local_tokens.size()) == cp &&
               static_cast<int>(stream.rank_distributed_tokens.size()) == cp)
      << "stream describes " << stream.rank_local_tokens.size() << " CP ranks, group has " << cp;
  int64_t shard_tokens = 0;
  for (size_t begin = 0; begin < stream.distributed.size();) {
    size_t end = begin + 1;
    const auto& first = stream.distributed[begin];
    while (end < stream.distributed.size() &&
           stream.distributed[end].group_first == first.group_first &&
           stream.distributed[end].group_size == first.group_size) {
      ++end;
    }
    p.groups.push_back(MakeGroupExchange(stream, begin, end));
    SKRULL_CHECK(p.groups.back().shard_begin == p.local_tokens + shard_tokens)
        << "group regions do not tile the stream";
    shard_tokens += p.groups.back().shard_tokens;
    begin = end;
  }
  SKRULL_CHECK(shard_tokens == stream.rank_distributed_tokens[p.cp_rank] &&
               p.local_tokens + shard_tokens == p.tokens)
      << "stream shard tokens " << p.tokens - p.local_tokens << " vs its own table "
      << stream.rank_distributed_tokens[p.cp_rank] << " vs the groups' " << shard_tokens;
  return p;
}

at::Tensor CpAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const CpExchangePlan& plan, Group& cp_group,
                       const CpAttentionOptions& options, std::shared_ptr<CpAttentionStats> stats) {
  return CpAttention(q, k, v, plan, CpGroupSet{&cp_group, {}}, options, std::move(stats));
}

at::Tensor CpAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const CpExchangePlan& plan, const CpGroupSet& groups,
                       const CpAttentionOptions& options, std::shared_ptr<CpAttentionStats> stats) {
  CheckInputs(q, k, v, plan);
  if (!stats) stats = std::make_shared<CpAttentionStats>();
  stats->attend_calls += 1;
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));
  if (!plan.has_distributed()) {
    const auto t = Clock::now();
    at::Tensor out = model::CausalAttention(q, k, v, plan.local_spans, scale, options.block_rows);
    stats->local_attention_seconds += Since(t);
    return out;
  }
  SKRULL_CHECK(groups.all != nullptr && groups.all->size == plan.cp &&
               groups.all->rank == plan.cp_rank)
      << "plan for cp rank " << plan.cp_rank << "/" << plan.cp << " on "
      << (groups.all ? groups.all->Describe() : std::string("no group"));
  stats->distributed_calls += 1;

  auto ex = std::make_shared<Exchange>();
  ex->plan_copy = plan;
  ex->options = options;
  ex->stats = stats;
  ex->scale = scale;
  ex->hkv = k.size(1);
  ex->head_dim = k.size(2);
  for (const CpGroupExchange& g : plan.groups) {
    ex->groups.push_back(&groups.For(g.group_first, g.group_size));
    ex->gather_index.push_back(
        at::tensor(g.gather_rows, at::TensorOptions().dtype(at::kLong)).to(q.device()));
  }

  at::Tensor qd = q.detach(), kd = k.detach(), vd = v.detach();
  at::Tensor out, lse;
  std::vector<at::Tensor> k_all, v_all;
  {
    c10::NoGradGuard no_grad;
    std::vector<KvGather> gathers = StartKvGathers(kd, vd, *ex);
    auto f32 = q.options().dtype(at::kFloat);
    out = at::zeros(q.sizes(), f32);
    lse = at::zeros({q.size(0), q.size(1)}, f32);
    auto t = Clock::now();
    SpanAttentionForward(qd, kd, vd, plan.local_spans, scale, options.block_rows, out, lse);
    stats->local_attention_seconds += Since(t);
    for (size_t i = 0; i < gathers.size(); ++i) {
      stats->comm_wait_seconds += gathers[i].pending.Wait();
      t = Clock::now();
      auto [kg, vg] = AssembleKv(gathers[i], *ex, i);
      SpanAttentionForward(qd, kg, vg, plan.groups[i].dist_spans, scale, options.block_rows, out,
                           lse);
      stats->distributed_attention_seconds += Since(t);
      k_all.push_back(kg);
      v_all.push_back(vg);
    }
  }
  // For float32 q, `result` is `out` itself; the node keeps a detached alias
  // (no reference cycle through the output's grad_fn).
  at::Tensor result = out.to(q.scalar_type());
  const bool needs_grad =
      c10::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad());
  if (needs_grad) {
    auto node = MakeNode<CpAttentionBackward>();
    node->ex_ = ex;
    node->q_ = qd;
    node->k_ = kd;
    node->v_ = vd;
    node->out_ = out.detach();
    node->lse_ = lse;
    if (options.save_gathered_kv) {
      node->k_all_ = k_all;
      node->v_all_ = v_all;
    }
    node->set_next_edges(torch::autograd::collect_next_edges(q, k, v));
    torch::autograd::set_history(result, node);
  }
  return result;
}

CpAttentionBackend::CpAttentionBackend(CpGroupSet groups,
                                       std::unique_ptr<model::AttentionBackend> local,
                                       CpAttentionOptions options)
    : groups_(std::move(groups)),
      cp_group_(groups_.all),
      local_(std::move(local)),
      options_(options),
      stats_(std::make_shared<CpAttentionStats>()) {
  SKRULL_CHECK(cp_group_ != nullptr && local_ != nullptr);
}

CpAttentionBackend::CpAttentionBackend(Group* cp_group,
                                       std::unique_ptr<model::AttentionBackend> local,
                                       CpAttentionOptions options)
    : CpAttentionBackend(CpGroupSet{cp_group, {}}, std::move(local), options) {}

Status CpAttentionBackend::BeginMicroBatch(const scheduler::RankStream& stream) {
  if (stream.cp_rank != cp_group_->rank ||
      (!stream.distributed.empty() &&
       static_cast<int>(stream.rank_local_tokens.size()) != cp_group_->size)) {
    return FailedPreconditionError("context-parallel attention on " + cp_group_->Describe() +
                                   " got a micro-batch built for cp rank " +
                                   std::to_string(stream.cp_rank) + " of " +
                                   std::to_string(stream.rank_local_tokens.size()) +
                                   "; spec.parallelism.contextParallel and the launch disagree");
  }
  plan_ = MakeCpExchangePlan(stream, cp_group_->size);
  has_plan_ = true;
  return OkStatus();
}

void CpAttentionBackend::ClearMicroBatch() {
  plan_ = CpExchangePlan();
  has_plan_ = false;
}

at::Tensor CpAttentionBackend::Attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const model::AttentionLayout& layout, int layer) {
  if (has_plan_) {
    SKRULL_CHECK(layout.num_tokens == plan_.tokens && layout.NumLocalTokens() == plan_.local_tokens)
        << "layer " << layer << ": attention layout (" << layout.num_tokens << " tokens, "
        << layout.NumLocalTokens() << " local) differs from the micro-batch given to "
        << "BeginMicroBatch (" << plan_.tokens << " tokens, " << plan_.local_tokens << " local)";
  }
  if (!has_plan_ || !plan_.has_distributed()) {
    SKRULL_CHECK(layout.NumLocalTokens() == layout.num_tokens)
        << "layer " << layer << ": " << layout.num_tokens - layout.NumLocalTokens()
        << " distributed tokens but no micro-batch was given to "
           "CpAttentionBackend::BeginMicroBatch";
    stats_->attend_calls += 1;
    const auto t = Clock::now();
    at::Tensor out = local_->Attend(q, k, v, layout, layer);
    stats_->local_attention_seconds += Since(t);
    return out;
  }
  return CpAttention(q, k, v, plan_, groups_, options_, stats_);
}

std::string CpAttentionBackend::Name() const { return "cp-allgather+" + local_->Name(); }

double CpAttentionBackend::TakeCommWaitSeconds() {
  const double total = stats_->comm_wait_seconds;
  // After TakeStats() reset the totals, everything since counts.
  const double waited = total >= comm_wait_taken_ ? total - comm_wait_taken_ : total;
  comm_wait_taken_ = total;
  return waited;
}

CpAttentionStats CpAttentionBackend::TakeStats() {
  CpAttentionStats s = *stats_;
  *stats_ = CpAttentionStats();
  comm_wait_taken_ = 0;
  return s;
}

}  // namespace skrull::dist

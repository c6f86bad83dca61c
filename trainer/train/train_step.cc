#include "trainer/train/train_step.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>

namespace skrull::train {

namespace {

// On a GPU the host copy is pinned and uploaded without blocking the host:
// the caching host allocator keeps the pinned block until the copy's stream
// event completes (copy_kernel_cuda in aten/src/ATen/native/cuda/Copy.cu
// records it), so `t` may go now.
at::Tensor ToLongTensor(const std::vector<int64_t>& v, c10::Device device) {
  at::Tensor t = torch::empty(
      {static_cast<int64_t>(v.size())},
      torch::TensorOptions().dtype(torch::kLong).pinned_memory(device.is_cuda() && !v.empty()));
  if (!v.empty()) std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
  return device.is_cpu() ? t : t.to(device, /*non_blocking=*/true);
}

// Calls the reducer for parameter `index` when armed.
class GradReadyPostHook final : public torch::autograd::FunctionPostHook {
 public:
  GradReadyPostHook(std::shared_ptr<GradReadyHooks::State> state, size_t index)
      : state_(std::move(state)), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override;

 private:
  std::shared_ptr<GradReadyHooks::State> state_;
  size_t index_;
};

}  // namespace

struct GradReadyHooks::State {
  GradientReducer* reducer = nullptr;      // null: accumulate only
  std::function<void(size_t)> accumulate;  // null: none
  std::atomic<bool> armed{false};
};

torch::autograd::variable_list GradReadyPostHook::operator()(
    const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
  if (state_->accumulate) state_->accumulate(index_);
  if (state_->reducer != nullptr && state_->armed.load()) state_->reducer->GradReady(index_);
  return outputs;
}

GradReadyHooks::GradReadyHooks(const std::vector<at::Tensor>& params, GradientReducer* reducer,
                               std::function<void(size_t)> accumulate)
    : state_(std::make_shared<State>()) {
  SKRULL_CHECK(reducer != nullptr || accumulate) << "GradReadyHooks with nothing to call";
  state_->reducer = reducer;
  state_->accumulate = std::move(accumulate);
  for (size_t i = 0; i < params.size(); ++i) {
    SKRULL_CHECK(params[i].is_leaf() && params[i].requires_grad())
        << "parameter " << i << " is not a leaf that requires grad";
    auto acc = torch::autograd::impl::grad_accumulator(params[i]);
    SKRULL_CHECK(acc) << "parameter " << i << " has no gradient accumulator";
    keys_.push_back(acc->add_post_hook(std::make_unique<GradReadyPostHook>(state_, i)));
    accumulators_.push_back(std::move(acc));
  }
}

GradReadyHooks::~GradReadyHooks() {
  state_->armed.store(false);
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(keys_[i]);
}

void GradReadyHooks::set_armed(bool armed) { state_->armed.store(armed); }
bool GradReadyHooks::every_backward() const {
  return state_->reducer != nullptr && state_->reducer->ReducesEveryBackward();
}
void GradReadyHooks::EndBackward() {
  if (state_->reducer != nullptr) state_->reducer->EndBackward();
}
bool GradReadyHooks::armed() const { return state_->armed.load(); }

model::PackedBatch ToPackedBatch(const scheduler::RankStream& stream, c10::Device device) {
  model::PackedBatch b;
  b.input_ids = ToLongTensor(stream.input_ids, device);
  b.position_ids = ToLongTensor(stream.positions, device);
  b.targets = ToLongTensor(stream.targets, device);
  b.cu_seqlens = stream.local_cu_seqlens;
  // Whole-sequence length per token (dynamic RoPE): local sequences, then
  // each distributed sequence's shard on this rank, in stream order.
  std::vector<int64_t> lengths;
  lengths.reserve(stream.input_ids.size());
  for (size_t i = 1; i < stream.local_cu_seqlens.size(); ++i) {
    const int64_t n = stream.local_cu_seqlens[i] - stream.local_cu_seqlens[i - 1];
    lengths.insert(lengths.end(), n, n);
  }
  for (const scheduler::DistributedSegment& d : stream.distributed) {
    lengths.insert(lengths.end(), d.RankTokens(stream.cp_rank), d.length);
  }
  SKRULL_CHECK(lengths.size() == stream.input_ids.size())
      << "stream of " << stream.input_ids.size() << " tokens, lengths for " << lengths.size();
  b.sequence_lengths = ToLongTensor(lengths, device);
  return b;
}

StatusOr<RankStepWork> AccumulateGradients(model::DecoderModel* model, const scheduler::Plan& plan,
                                           const std::vector<scheduler::SequenceTokens>& batch,
                                           int dp_rank, int cp_rank, int64_t global_label_tokens,
                                           ContextParallelAttention* cp_attention,
                                           GradReadyHooks* last_backward_hooks) {
  SKRULL_CHECK(global_label_tokens > 0) << "global_label_tokens=" << global_label_tokens;
  SKRULL_CHECK(plan.topology.cp == 1 || cp_attention != nullptr)
      << "cp=" << plan.topology.cp << " needs a context-parallel attention backend";
  SKRULL_ASSIGN_OR_RETURN(std::vector<scheduler::RankStream> streams,
                          scheduler::BuildRankStreams(plan, batch, dp_rank, cp_rank));
  const c10::Device device = model->options().device;
  const double inv_labels = 1.0 / static_cast<double>(global_label_tokens);
  RankStepWork work;
  at::Tensor loss_total =
      torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  const auto& micro_batches = plan.ranks[dp_rank].micro_batches;
  size_t last = streams.size();  // the last micro-batch this rank runs
  for (size_t i = 0; i < streams.size(); ++i) {
    if (!micro_batches[i].empty()) last = i;
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    // Skip only what is empty in the plan: that is the same on every CP rank,
    // so context-parallel exchanges stay in lockstep.
    if (micro_batches[i].empty()) continue;
    const scheduler::RankStream& stream = streams[i];
    if (cp_attention != nullptr) SKRULL_RETURN_IF_ERROR(cp_attention->BeginMicroBatch(stream));
    model::PackedBatch packed = ToPackedBatch(stream, device);
    at::Tensor loss_sum = model->LossSum(packed);
    // With context parallelism every CP rank must run backward (it carries
    // the dK/dV exchange), even one whose shard holds no label.
    SKRULL_CHECK(cp_attention == nullptr || loss_sum.requires_grad())
        << "micro-batch " << i << " on cp_rank " << cp_rank << ": the loss has no graph";
    if (loss_sum.requires_grad()) {
      const bool every = last_backward_hooks != nullptr && last_backward_hooks->every_backward();
      if (last_backward_hooks != nullptr && (every || i == last)) {
        last_backward_hooks->set_armed(true);
      }
      (loss_sum * inv_labels).backward();
      if (last_backward_hooks != nullptr) last_backward_hooks->set_armed(false);
      if (every) last_backward_hooks->EndBackward();
    }
    loss_total += loss_sum.detach().to(torch::kDouble);
    ++work.micro_batches;
    work.tokens += stream.tokens;
    work.label_tokens += stream.label_tokens;
    work.rank_tokens_peak = std::max(work.rank_tokens_peak, stream.tokens);
    work.local_sequences += static_cast<int64_t>(stream.local_seq_ids.size());
    work.distributed_sequences += static_cast<int64_t>(stream.distributed.size());
  }
  work.loss_sum = loss_total.item<double>();
  return work;
}

}  // namespace skrull::train

#include "trainer/train/zero_optimizer.h"

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>

namespace skrull::train {

namespace {

std::vector<int64_t> Numels(const std::vector<model::NamedTensor>& params) {
  std::vector<int64_t> n;
  for (const auto& [name, p] : params) n.push_back(p.numel());
  return n;
}

}  // namespace

std::string ZeroShardFileName(int rank, int world_size) {
  return "optimizer-shard-" + std::to_string(rank) + "-of-" + std::to_string(world_size) +
         ".safetensors";
}

// Reduce-scatters buckets of gradients; see the header for stages 1 and 2.
class ZeroOptimizer::Reducer final : public GradientReducer {
 public:
  explicit Reducer(ZeroOptimizer* owner)
      : owner_(owner),
        ready_(owner->params_.size(), false),
        bucket_ready_(owner->partition_.buckets().size(), 0) {}

  void BeginStep(int64_t rounds) {
    rounds_ = rounds;
    rounds_done_ = 0;
  }

  void GradReady(size_t index) override {
    if (index >= ready_.size() || ready_[index]) {
      error_ = InternalError("ZeRO: unexpected GradReady(" + std::to_string(index) + ")");
      return;
    }
    ready_[index] = true;
    const auto& buckets = owner_->partition_.buckets();
    bucket_ready_[owner_->partition_.bucket_of(index)] += 1;
    // Launch in bucket order only, so every rank issues the same sequence.
    while (next_ < buckets.size() && bucket_ready_[next_] == buckets[next_].params.size()) {
      Launch(next_++);
    }
  }

  bool ReducesEveryBackward() const override { return owner_->stage_ == 2; }

  void EndBackward() override {
    if (owner_->stage_ == 2) EndRound();
  }

  Status Finish() override {
    if (owner_->stage_ == 2) {
      if (next_ > 0) EndRound();  // a backward that was not followed by EndBackward
      while (rounds_done_ < rounds_) EndRound();
    } else {
      EndRound();
    }
    Status status = error_;
    if (status.ok() && !oom_.empty()) status = OutOfMemoryError(oom_);
    error_ = OkStatus();
    oom_.clear();
    return status;
  }

 private:
  struct InFlight {
    at::Tensor flat;   // the bucket's gradients, padded to W slices
    at::Tensor slice;  // stage 2: this round's slice, added to the shard when done
    int64_t shard_offset = 0;
    std::unique_ptr<CollectiveWork> work;
  };

  // Packs bucket b's gradients (zeros where none came), frees the model's
  // full gradients and starts the reduce-scatter.
  void Launch(size_t b) {
    if (!error_.ok()) return;
    if (first_deferred_ != SIZE_MAX) return;  // JoinDeferredBuckets launches it
    try {
      RunPackHookForTesting();
      torch::NoGradGuard no_grad;
      const ZeroBucket& bucket = owner_->partition_.buckets()[b];
      const int world = owner_->partition_.world_size();
      InFlight f;
      f.flat = torch::zeros({bucket.slice_numel * world}, owner_->grad_.options());
      for (size_t m = 0; m < bucket.params.size(); ++m) {
        const at::Tensor g = owner_->TakeGradient(bucket.params[m]);
        if (g.defined())
          f.flat.narrow(0, bucket.param_offsets[m], g.numel()).copy_(g.reshape({-1}));
      }
      f.shard_offset = bucket.shard_offset;
      at::Tensor out = owner_->grad_.narrow(0, bucket.shard_offset, bucket.slice_numel);
      if (owner_->stage_ == 2) {
        f.slice = torch::empty({bucket.slice_numel}, owner_->grad_.options());
        out = f.slice;
      }
      f.work = owner_->coll_->StartReduceScatterSum(f.flat, out);
      in_flight_.push_back(std::move(f));
    } catch (const c10::OutOfMemoryError& e) {  // GradientReducer: still join the round
      if (oom_.empty()) {
        oom_ = std::string("ZeRO gradient reduce-scatter: packing a bucket: ") +
               e.what_without_backtrace();
      }
      first_deferred_ = b;
    } catch (const std::exception& e) {  // runs inside backward: never throw
      error_ = InternalError(std::string("ZeRO gradient reduce-scatter: ") + e.what());
    }
  }

  // After an out-of-memory launch: the reduce-scatters of buckets
  // first_deferred_.. with zeros (what the peers' shapes need), one at a time
  // (one bucket of memory), in bucket order; the results are not used.
  void JoinDeferredBuckets() {
    const auto& buckets = owner_->partition_.buckets();
    const int world = owner_->partition_.world_size();
    try {
      torch::NoGradGuard no_grad;
      for (size_t k = first_deferred_; k < buckets.size() && error_.ok(); ++k) {
        at::Tensor in = torch::zeros({buckets[k].slice_numel * world}, owner_->grad_.options());
        at::Tensor out = torch::empty({buckets[k].slice_numel}, owner_->grad_.options());
        Status waited = owner_->coll_->StartReduceScatterSum(in, out)->Wait();
        if (!waited.ok()) error_ = waited;
      }
    } catch (const std::exception& e) {
      oom_ += std::string("; could not join the remaining reduce-scatters (") + e.what() +
              "): the other ranks fail on the collective timeout";
    }
    first_deferred_ = SIZE_MAX;
  }

  // Launches the buckets not launched yet, waits for all and (stage 2) adds
  // the slices into the shard. Ready for the next backward after.
  void EndRound() {
    while (next_ < bucket_ready_.size()) Launch(next_++);
    if (first_deferred_ != SIZE_MAX) JoinDeferredBuckets();
    torch::NoGradGuard no_grad;
    for (InFlight& f : in_flight_) {
      Status waited = f.work->Wait();
      if (!waited.ok() && error_.ok()) error_ = waited;
      if (error_.ok() && f.slice.defined()) {
        owner_->grad_.narrow(0, f.shard_offset, f.slice.numel()).add_(f.slice);
      }
    }
    in_flight_.clear();
    std::fill(ready_.begin(), ready_.end(), false);
    std::fill(bucket_ready_.begin(), bucket_ready_.end(), 0);
    next_ = 0;
    ++rounds_done_;
  }

  ZeroOptimizer* owner_;
  std::vector<bool> ready_;
  std::vector<size_t> bucket_ready_;
  size_t next_ = 0;  // first bucket not launched this round
  std::vector<InFlight> in_flight_;
  int64_t rounds_ = 1;
  int64_t rounds_done_ = 0;
  Status error_ = OkStatus();
  std::string oom_;  // the step's first out-of-memory error
  // The bucket this round's out-of-memory error hit (later ones wait too);
  // SIZE_MAX = none.
  size_t first_deferred_ = SIZE_MAX;
};

ZeroOptimizer::ZeroOptimizer(std::vector<model::NamedTensor> params,
                             const OptimizerOptions& options, int stage, Collectives* collectives,
                             int64_t bucket_numel)
    : params_(std::move(params)),
      options_(options),
      stage_(stage),
      coll_(collectives),
      partition_(Numels(params_), collectives->world_size(), bucket_numel),
      pieces_(partition_.Pieces(collectives->rank())) {
  SKRULL_CHECK(stage_ == 1 || stage_ == 2) << "ZeRO stage " << stage_;
  SKRULL_CHECK(!params_.empty()) << "ZeRO needs trainable parameters";
  std::set<std::string> names;
  for (const auto& [name, p] : params_) {
    SKRULL_CHECK(names.insert(name).second) << "duplicate parameter " << name;
    SKRULL_CHECK(p.requires_grad()) << name << " does not require grad";
  }
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(params_[0].second.device());
  exp_avg_ = torch::zeros({partition_.shard_numel()}, f32);
  exp_avg_sq_ = torch::zeros_like(exp_avg_);
  grad_ = torch::zeros_like(exp_avg_);
  bucket_pieces_.resize(partition_.buckets().size());
  size_t b = 0;  // the bucket whose slice holds the piece (pieces are in shard order)
  for (const ZeroPiece& pc : pieces_) {
    while (b + 1 < partition_.buckets().size() &&
           partition_.buckets()[b + 1].shard_offset <= pc.shard_offset) {
      ++b;
    }
    bucket_pieces_[b].push_back(pc);
  }
  if (mixed()) {
    master_ = torch::zeros_like(exp_avg_);
    MastersFromParams();
  }
  grad_sums_.resize(params_.size());
  reducer_ = std::make_unique<Reducer>(this);
}

ZeroOptimizer::~ZeroOptimizer() = default;

GradientReducer* ZeroOptimizer::reducer() { return reducer_.get(); }

bool ZeroOptimizer::mixed() const { return params_[0].second.scalar_type() != torch::kFloat; }

void ZeroOptimizer::MastersFromParams() {
  torch::NoGradGuard no_grad;
  for (const ZeroPiece& pc : pieces_) {
    const at::Tensor& p = params_[pc.param].second;
    master_.narrow(0, pc.shard_offset, pc.numel)
        .copy_(p.detach().reshape({-1}).narrow(0, pc.param_offset, pc.numel));
  }
}

void ZeroOptimizer::AccumulateGradient(size_t i) {
  SKRULL_CHECK(i < params_.size()) << "AccumulateGradient(" << i << ") of " << params_.size();
  at::Tensor& g = params_[i].second.mutable_grad();
  if (stage_ == 1 && g.defined() && g.scalar_type() != torch::kFloat) {
    AddIntoFloat32Sum(g, grad_sums_[i]);
  }
}

at::Tensor ZeroOptimizer::TakeGradient(size_t i) {
  AccumulateGradient(i);
  at::Tensor& own = params_[i].second.mutable_grad();
  at::Tensor g = grad_sums_[i].defined() ? grad_sums_[i] : own;
  grad_sums_[i] = at::Tensor();
  own = at::Tensor();
  return g;
}

void ZeroOptimizer::BeginStep(int64_t rounds) {
  torch::NoGradGuard no_grad;
  if (stage_ == 2) grad_.zero_();
  reducer_->BeginStep(std::max<int64_t>(1, rounds));
}

Status ZeroOptimizer::FinishGradients() { return reducer_->Finish(); }

double ZeroOptimizer::GlobalNormSquaredPart() const {
  // Bucket by bucket, so the float64 temporaries stay bucket-sized, summed on
  // the shard's device in bucket order: one copy to the host (.item) per
  // step rather than one per bucket, each a device-wide wait on a GPU.
  at::Tensor squares = torch::zeros({}, grad_.options().dtype(torch::kDouble));
  for (const ZeroBucket& b : partition_.buckets()) {
    squares += grad_.narrow(0, b.shard_offset, b.slice_numel).to(torch::kDouble).pow(2).sum();
  }
  return squares.item<double>();
}

at::Tensor ZeroOptimizer::UpdateSlice(size_t b, double lr) {
  const ZeroBucket& bucket = partition_.buckets()[b];
  const int64_t off = bucket.shard_offset;
  const int64_t n = bucket.slice_numel;
  at::Tensor master;
  if (mixed()) {
    master = master_.narrow(0, off, n);
  } else {
    // float32 parameters hold exactly the masters the last all-gather wrote.
    master = torch::zeros({n}, grad_.options());
    for (const ZeroPiece& pc : bucket_pieces_[b]) {
      master.narrow(0, pc.shard_offset - off, pc.numel)
          .copy_(
              params_[pc.param].second.detach().reshape({-1}).narrow(0, pc.param_offset, pc.numel));
    }
  }
  // torch::optim::AdamW's update, element-wise.
  if (options_.weight_decay != 0) {
    for (const ZeroPiece& pc : bucket_pieces_[b]) {
      if (params_[pc.param].second.dim() < 2) continue;  // no decay: norms, biases
      master.narrow(0, pc.shard_offset - off, pc.numel).mul_(1 - lr * options_.weight_decay);
    }
  }
  const double bias_correction1 = 1 - std::pow(options_.beta1, static_cast<double>(step_));
  const double bias_correction2 = 1 - std::pow(options_.beta2, static_cast<double>(step_));
  at::Tensor g = grad_.narrow(0, off, n);
  at::Tensor m = exp_avg_.narrow(0, off, n);
  at::Tensor v = exp_avg_sq_.narrow(0, off, n);
  m.mul_(options_.beta1).add_(g, 1 - options_.beta1);
  v.mul_(options_.beta2).addcmul_(g, g, 1 - options_.beta2);
  const at::Tensor denom = (v.sqrt() / std::sqrt(bias_correction2)).add_(options_.epsilon);
  master.addcdiv_(m, denom, -lr / bias_correction1);
  return master;
}

StatusOr<double> ZeroOptimizer::Step(double lr) {
  torch::NoGradGuard no_grad;
  std::vector<double> squares = {GlobalNormSquaredPart()};
  SKRULL_RETURN_IF_ERROR(coll_->AllReduceSum(&squares));
  const double norm = std::sqrt(squares[0]);
  if (options_.grad_clip > 0 && std::isfinite(norm) && norm > options_.grad_clip) {
    grad_.mul_(options_.grad_clip / (norm + 1e-6));  // as Optimizer::Step
  }
  ++step_;
  // Update and all-gather bucket by bucket, two all-gathers in flight.
  const auto& buckets = partition_.buckets();
  const int world = partition_.world_size();
  struct Gather {
    at::Tensor master;  // this rank's updated slice (kept alive until gathered)
    at::Tensor out;
    std::unique_ptr<CollectiveWork> work;
  };
  auto start = [&](size_t b) {
    Gather g;
    g.master = UpdateSlice(b, lr);
    g.out = torch::empty({buckets[b].slice_numel * world}, grad_.options());
    g.work = coll_->StartAllGather(g.master, g.out);
    return g;
  };
  Status status = OkStatus();
  Gather current = start(0);
  for (size_t b = 0; b < buckets.size(); ++b) {
    Gather next;
    if (b + 1 < buckets.size()) next = start(b + 1);
    Status waited = current.work->Wait();
    if (waited.ok() && status.ok()) {
      for (size_t k = 0; k < buckets[b].params.size(); ++k) {
        at::Tensor& p = params_[buckets[b].params[k]].second;
        p.copy_(current.out.narrow(0, buckets[b].param_offsets[k], p.numel()).view(p.sizes()));
      }
    } else if (status.ok()) {
      status = waited;
    }
    current = std::move(next);
  }
  SKRULL_RETURN_IF_ERROR(status);
  for (auto& [name, p] : params_) p.mutable_grad() = at::Tensor();
  return norm;
}

int64_t ZeroOptimizer::StaticMemoryBytes() const {
  int64_t params = 0;
  int64_t full_grads = 0;  // stage 1: float32 sums for parameters that are not float32
  for (const auto& [name, p] : params_) {
    params += p.numel() * p.element_size();
    full_grads += p.numel() * std::max<int64_t>(p.element_size(), 4);
  }
  // moments and gradient slice, and the master where parameters are not float32
  const int64_t shard = (mixed() ? 4 : 3) * partition_.shard_numel() * 4;
  return params + (stage_ == 1 ? full_grads : 0) + shard;
}

}  // namespace skrull::train

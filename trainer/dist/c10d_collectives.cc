#include "trainer/dist/c10d_collectives.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "trainer/dist/bf16_sum.h"
#include "trainer/dist/cp_exchange.h"

namespace skrull::dist {

namespace {

// Sums `wire` (a gradient bucket, or its bf16 copy) over the world.
PendingCollective StartWireSum(Group& world, const at::Tensor& wire) {
  return wire.scalar_type() == at::kBFloat16 ? StartBf16AllReduceSum(world, wire)
                                             : StartAllReduceSum(world, wire);
}

}  // namespace

std::vector<std::vector<size_t>> PlanBuckets(const std::vector<at::Tensor>& tensors,
                                             int64_t bucket_bytes) {
  std::vector<std::vector<size_t>> buckets;
  int64_t current_bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    SKRULL_CHECK(t.defined()) << "AllReduceSum: tensor " << i << " is undefined";
    const int64_t bytes = TensorBytes(t);
    bool start_new = buckets.empty() || current_bytes + bytes > bucket_bytes;
    if (!start_new) {
      const at::Tensor& first = tensors[buckets.back().front()];
      start_new = first.scalar_type() != t.scalar_type() || first.device() != t.device();
    }
    if (start_new) {
      buckets.emplace_back();
      current_bytes = 0;
    }
    buckets.back().push_back(i);
    current_bytes += bytes;
  }
  return buckets;
}

c10::ScalarType GradientWireDtype(api::GradReduceDtype dtype) {
  return dtype == api::GradReduceDtype::kBf16 ? c10::kBFloat16 : c10::kFloat;
}

C10dCollectives::C10dCollectives(Group* world, C10dCollectivesOptions options, c10d::Store* store)
    : world_(world), options_(options), store_(store) {
  SKRULL_CHECK(world_ != nullptr);
  SKRULL_CHECK(options_.bucket_bytes > 0);
  SKRULL_CHECK(options_.gradient_wire_dtype == c10::kFloat ||
               options_.gradient_wire_dtype == c10::kBFloat16)
      << "gradient wire dtype " << options_.gradient_wire_dtype;
}

at::Tensor C10dCollectives::OnWire(const at::Tensor& t) const {
  if (world_->size == 1 || t.scalar_type() != at::kFloat ||
      options_.gradient_wire_dtype == at::kFloat) {
    return t;
  }
  return t.to(options_.gradient_wire_dtype);
}

Status C10dCollectives::AllReduceSum(std::vector<at::Tensor>& tensors) {
  stats_.gradient_allreduces += 1;
  if (world_->size == 1 || tensors.empty()) return OkStatus();
  c10::NoGradGuard no_grad;
  struct Bucket {
    std::vector<size_t> members;
    at::Tensor flat;    // undefined when reduced in place
    at::Tensor target;  // flat, or the one member reduced in place
    at::Tensor wire;    // what travels: target or its bf16 copy
    PendingCollective pending;
  };
  std::vector<Bucket> buckets;
  try {
    for (std::vector<size_t>& members : PlanBuckets(tensors, options_.bucket_bytes)) {
      Bucket b;
      b.members = std::move(members);
      if (b.members.size() == 1 && tensors[b.members[0]].is_contiguous()) {
        b.target = tensors[b.members[0]];
      } else {
        std::vector<at::Tensor> parts;
        for (size_t i : b.members) parts.push_back(tensors[i].reshape({-1}));
        b.flat = at::cat(parts, 0);
        b.target = b.flat;
      }
      b.wire = OnWire(b.target);
      stats_.bytes += TensorBytes(b.wire);
      stats_.buckets += 1;
      b.pending = StartWireSum(*world_, b.wire);
      buckets.push_back(std::move(b));
    }
    for (Bucket& b : buckets) {
      stats_.wait_seconds += b.pending.Wait();
      if (!b.wire.is_same(b.target)) b.target.copy_(b.wire);
      if (!b.flat.defined()) continue;
      int64_t offset = 0;
      for (size_t i : b.members) {
        at::Tensor& t = tensors[i];
        t.copy_(b.flat.narrow(0, offset, t.numel()).view(t.sizes()));
        offset += t.numel();
      }
    }
  } catch (const CollectiveError& e) {
    return UnavailableError(std::string("gradient all-reduce: ") + e.what());
  }
  return OkStatus();
}

Status C10dCollectives::AllReduceSum(std::vector<double>* values) {
  stats_.scalar_allreduces += 1;
  if (world_->size == 1 || values->empty()) return OkStatus();
  at::Tensor host = at::empty({static_cast<int64_t>(values->size())}, at::kDouble);
  std::copy(values->begin(), values->end(), host.data_ptr<double>());
  // NCCL reduces device tensors only: one copy each way; the copy back
  // follows the all-reduce on the current stream.
  at::Tensor t = host.to(world_->device);
  try {
    stats_.wait_seconds += StartAllReduceSum(*world_, t).Wait();
  } catch (const CollectiveError& e) {
    return UnavailableError(std::string("scalar all-reduce: ") + e.what());
  }
  if (!t.is_cpu()) host = t.cpu();
  std::copy(host.data_ptr<double>(), host.data_ptr<double>() + values->size(), values->begin());
  return OkStatus();
}

Status C10dCollectives::Barrier() {
  if (world_->size == 1) return OkStatus();
  try {
    const auto start = std::chrono::steady_clock::now();
    // NCCL's barrier is an all-reduce on a device: name this rank's, or c10d
    // guesses one from the rank number.
    c10d::BarrierOptions options;
    if (world_->device.is_cuda()) options.device_ids = {world_->device.index()};
    auto work = SKRULL_C10D_CHECK(*world_, "barrier", 0, world_->pg->barrier(options));
    SKRULL_C10D_CHECK(*world_, "barrier", 0, work->wait());
    stats_.wait_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } catch (const CollectiveError& e) {
    return UnavailableError(e.what());
  }
  return OkStatus();
}

Status C10dCollectives::WaitForAllRanks(std::chrono::milliseconds timeout) {
  if (world_->size == 1) return OkStatus();
  if (store_ == nullptr) return Barrier();
  const std::string key = "skrull/wait-for-all/" + std::to_string(store_waits_++);
  const auto start = std::chrono::steady_clock::now();
  try {
    if (store_->add(key, 1) == world_->size) store_->set(key + "/done", std::vector<uint8_t>{1});
    store_->wait({key + "/done"}, timeout);
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (auto nl = what.find("\nException raised from"); nl != std::string::npos) what.resize(nl);
    return UnavailableError(
        world_->Describe() + ": waiting on the rendezvous store for every rank (up to " +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
        " s, spec.training.collectiveTimeoutSeconds) failed: " + what);
  }
  stats_.wait_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return OkStatus();
}

double C10dCollectives::TakeWaitSeconds() {
  const double waited = stats_.wait_seconds - wait_seconds_taken_;
  wait_seconds_taken_ = stats_.wait_seconds;
  return std::max(0.0, waited);
}

// A world-group reduce-scatter or all-gather in flight (ZeRO). With a bf16
// wire, `wire_out` receives the reduce-scatter and is copied into `out` once
// done.
class C10dCollectives::ZeroWork final : public train::CollectiveWork {
 public:
  ZeroWork(C10dCollectives* owner, PendingCollective pending, at::Tensor wire_out = at::Tensor(),
           at::Tensor out = at::Tensor())
      : owner_(owner),
        pending_(std::move(pending)),
        wire_out_(std::move(wire_out)),
        out_(std::move(out)) {}
  Status Wait() override {
    try {
      owner_->stats_.wait_seconds += pending_.Wait();
    } catch (const CollectiveError& e) {
      return UnavailableError(std::string("ZeRO collective: ") + e.what());
    }
    if (wire_out_.defined()) {
      c10::NoGradGuard no_grad;
      out_.copy_(wire_out_);  // bf16 -> float32, exact
    }
    return OkStatus();
  }

 private:
  C10dCollectives* owner_;
  PendingCollective pending_;
  at::Tensor wire_out_;
  at::Tensor out_;
};

std::unique_ptr<train::CollectiveWork> C10dCollectives::StartReduceScatterSum(
    const at::Tensor& input, const at::Tensor& out) {
  stats_.zero_collectives += 1;
  try {
    c10::NoGradGuard no_grad;
    const at::Tensor wire = OnWire(input);
    if (!wire.is_same(input)) {
      at::Tensor wire_out = at::empty(out.sizes(), out.options().dtype(wire.scalar_type()));
      return std::make_unique<ZeroWork>(this, StartBf16ReduceScatterSum(*world_, wire, wire_out),
                                        wire_out, out);
    }
    return std::make_unique<ZeroWork>(this, dist::StartReduceScatterSum(*world_, input, out));
  } catch (const CollectiveError& e) {
    return train::FinishedWork(UnavailableError(std::string("ZeRO reduce-scatter: ") + e.what()));
  }
}

std::unique_ptr<train::CollectiveWork> C10dCollectives::StartAllGather(const at::Tensor& input,
                                                                       const at::Tensor& out) {
  stats_.zero_collectives += 1;
  try {
    return std::make_unique<ZeroWork>(this, dist::StartAllGather(*world_, input, out));
  } catch (const CollectiveError& e) {
    return train::FinishedWork(UnavailableError(std::string("ZeRO all-gather: ") + e.what()));
  }
}

DpCommStats C10dCollectives::TakeStats() {
  DpCommStats s = stats_;
  stats_ = DpCommStats();
  wait_seconds_taken_ = 0;
  return s;
}

// Buckets over the parameters in reverse order; see the header.
class C10dCollectives::Reducer final : public train::GradientReducer {
 public:
  Reducer(C10dCollectives* owner, const std::vector<at::Tensor>& params,
          std::function<at::Tensor(size_t)> reducible_grad)
      : owner_(owner),
        params_(params),
        reducible_grad_(std::move(reducible_grad)),
        bucket_of_(params.size()),
        ready_(params.size(), false) {
    const std::vector<at::Tensor> reversed(params.rbegin(), params.rend());
    for (const std::vector<size_t>& members :
         PlanBuckets(reversed, owner_->options_.bucket_bytes)) {
      Bucket b;
      for (size_t j : members) {
        const size_t i = params.size() - 1 - j;
        b.params.push_back(i);
        bucket_of_[i] = buckets_.size();
      }
      buckets_.push_back(std::move(b));
    }
  }

  void GradReady(size_t index) override {
    SKRULL_CHECK(index < params_.size()) << "GradReady(" << index << ") of " << params_.size();
    SKRULL_CHECK(!ready_[index]) << "GradReady twice for parameter " << index << " in one step";
    ready_[index] = true;
    buckets_[bucket_of_[index]].ready += 1;
    // Launch in bucket order only, so every rank issues the same sequence.
    while (next_ < buckets_.size() && buckets_[next_].ready == buckets_[next_].params.size()) {
      Launch(buckets_[next_++], /*during_backward=*/true);
    }
  }

  Status Finish() override {
    c10::NoGradGuard no_grad;
    owner_->stats_.gradient_allreduces += 1;
    while (next_ < buckets_.size()) Launch(buckets_[next_++], /*during_backward=*/false);
    Status status = error_;
    if (status.ok() && !oom_.empty()) status = JoinDeferredBuckets();
    const bool unpack = status.ok();
    for (Bucket& b : buckets_) {
      // Out of memory: the buckets launched before still complete, unused.
      if (status.ok() || status.code() == StatusCode::kOutOfMemory) {
        try {
          owner_->stats_.wait_seconds += b.pending.Wait();
          if (unpack) Unpack(b);
        } catch (const CollectiveError& e) {
          status = UnavailableError(std::string("gradient all-reduce: ") + e.what());
        }
      }
      b.ready = 0;
      b.grads.clear();
      b.flat = at::Tensor();
      b.wire = at::Tensor();
      b.pending = PendingCollective();
    }
    std::fill(ready_.begin(), ready_.end(), false);
    next_ = 0;
    error_ = OkStatus();
    oom_.clear();
    first_deferred_ = buckets_.size();
    return status;
  }

 private:
  struct Bucket {
    std::vector<size_t> params;     // indices into params_, reverse order
    size_t ready = 0;               // of them, final this step
    std::vector<at::Tensor> grads;  // what is reduced, per member; set at launch
    at::Tensor flat;                // undefined when reduced in place
    at::Tensor wire;                // what travels: flat (or grads[0]) or its bf16 copy
    PendingCollective pending;
  };

  void Launch(Bucket& b, bool during_backward) {
    if (!error_.ok()) return;   // a failed launch: the step fails in Finish
    if (!oom_.empty()) return;  // out of memory: JoinDeferredBuckets launches it
    c10::NoGradGuard no_grad;
    try {
      RunPackHookForTesting();
      for (size_t i : b.params) b.grads.push_back(ReducibleGrad(i));
      at::Tensor target;
      if (b.grads.size() == 1 && b.grads[0].is_contiguous()) {
        target = b.grads[0];
      } else {
        std::vector<at::Tensor> parts;
        for (const at::Tensor& g : b.grads) parts.push_back(g.reshape({-1}));
        b.flat = at::cat(parts, 0);
        target = b.flat;
      }
      b.wire = owner_->OnWire(target);
      DpCommStats& stats = owner_->stats_;
      stats.bytes += TensorBytes(b.wire);
      stats.buckets += 1;
      if (during_backward) stats.buckets_during_backward += 1;
      b.pending = StartWireSum(*owner_->world_, b.wire);
    } catch (const CollectiveError& e) {
      error_ = UnavailableError(std::string("gradient all-reduce: ") + e.what());
    } catch (const c10::OutOfMemoryError& e) {  // see GradientReducer: still join the step
      oom_ = std::string("gradient all-reduce: packing a bucket: ") + e.what_without_backtrace();
      first_deferred_ = static_cast<size_t>(&b - buckets_.data());
      b.grads.clear();
      b.flat = at::Tensor();
    } catch (const std::exception& e) {  // GradReady runs inside backward: never throw
      error_ = InternalError(std::string("gradient all-reduce: packing a bucket: ") + e.what());
    }
  }

  // After an out-of-memory launch: the all-reduces of buckets
  // first_deferred_.. with zeros of the sizes and dtype the peers reduce, one
  // at a time (one bucket of memory), in bucket order. Returns OutOfMemory
  // (Unavailable when a collective failed).
  Status JoinDeferredBuckets() {
    c10::NoGradGuard no_grad;
    try {
      for (size_t k = first_deferred_; k < buckets_.size(); ++k) {
        Bucket& b = buckets_[k];
        int64_t numel = 0;
        for (size_t i : b.params) numel += params_[i].numel();
        // The dtype and device the peers reduce this bucket in.
        const at::TensorOptions options = ReducibleGrad(b.params.front()).options();
        // On the wire as the peers send it (gradReduceDtype bf16: their bf16 copy).
        const at::Tensor zeros = owner_->OnWire(at::zeros({numel}, options));
        owner_->stats_.wait_seconds += StartWireSum(*owner_->world_, zeros).Wait();
      }
    } catch (const CollectiveError& e) {
      return UnavailableError(oom_ + "; then the gradient all-reduce failed: " + e.what());
    } catch (const std::exception& e) {
      return OutOfMemoryError(oom_ + "; could not join the remaining all-reduces (" + e.what() +
                              "): the other ranks fail on the collective timeout");
    }
    return OutOfMemoryError(oom_);
  }

  // The tensor parameter i's gradient is reduced in: the callback's, or the
  // parameter's own .grad (zeros when backward produced none).
  at::Tensor ReducibleGrad(size_t i) {
    if (reducible_grad_) {
      at::Tensor g = reducible_grad_(i);
      SKRULL_CHECK(g.defined() && g.scalar_type() == at::kFloat && g.sizes() == params_[i].sizes())
          << "reducible gradient " << i << " must be float32 shaped like the parameter";
      return g;
    }
    at::Tensor& p = params_[i];
    if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    return p.grad();
  }

  void Unpack(Bucket& b) {
    if (!b.wire.defined()) return;  // never launched
    at::Tensor& target = b.flat.defined() ? b.flat : b.grads[0];
    if (!b.wire.is_same(target)) target.copy_(b.wire);
    if (!b.flat.defined()) return;
    int64_t offset = 0;
    for (at::Tensor& g : b.grads) {
      g.copy_(b.flat.narrow(0, offset, g.numel()).view(g.sizes()));
      offset += g.numel();
    }
  }

  C10dCollectives* owner_;
  std::vector<at::Tensor> params_;
  std::function<at::Tensor(size_t)> reducible_grad_;  // null: params_[i].grad()
  std::vector<size_t> bucket_of_;                     // parameter -> bucket
  std::vector<bool> ready_;
  std::vector<Bucket> buckets_;
  size_t next_ = 0;  // first bucket not launched this step
  Status error_ = OkStatus();
  std::string oom_;            // the first out-of-memory error of this step
  size_t first_deferred_ = 0;  // with oom_: the bucket it hit (later ones wait too)
};

std::unique_ptr<train::GradientReducer> C10dCollectives::MakeGradientReducer(
    const std::vector<at::Tensor>& params, std::function<at::Tensor(size_t)> reducible_grad) {
  if (!options_.overlap_with_backward || world_->size == 1 || params.empty()) return nullptr;
  return std::make_unique<Reducer>(this, params, std::move(reducible_grad));
}

}  // namespace skrull::dist

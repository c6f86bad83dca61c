#include "trainer/train/collectives.h"

#include <torch/torch.h>

#include <condition_variable>
#include <mutex>
#include <utility>

namespace skrull::train {

Status LocalCollectives::AllReduceSum(std::vector<at::Tensor>& tensors) { return OkStatus(); }

namespace {

class DoneWork final : public CollectiveWork {
 public:
  explicit DoneWork(Status status) : status_(std::move(status)) {}
  Status Wait() override { return status_; }

 private:
  Status status_;
};

}  // namespace

std::unique_ptr<CollectiveWork> FinishedWork(Status status) {
  return std::make_unique<DoneWork>(std::move(status));
}

std::unique_ptr<CollectiveWork> LocalCollectives::StartReduceScatterSum(const at::Tensor& input,
                                                                        const at::Tensor& out) {
  SKRULL_CHECK(input.numel() == out.numel())
      << "reduce-scatter: " << input.numel() << " vs " << out.numel();
  torch::NoGradGuard no_grad;
  at::Tensor o = out;
  o.copy_(input.view_as(out));
  return FinishedWork();
}

std::unique_ptr<CollectiveWork> LocalCollectives::StartAllGather(const at::Tensor& input,
                                                                 const at::Tensor& out) {
  return StartReduceScatterSum(input, out);
}

namespace {

// Shared state of an in-memory group: a generation-counted barrier with a
// per-rank slot for each rank's contribution.
class Hub {
 public:
  explicit Hub(int world_size) : world_size_(world_size), slots_(world_size) {}

  // Publishes `mine` as rank `rank`'s contribution, waits for every rank,
  // calls `combine(slots)` once on the last arriving rank, and waits until it
  // has run. Returns after every rank may read the combined result.
  template <typename T, typename Combine>
  void Exchange(int rank, T* mine, Combine combine) {
    std::unique_lock<std::mutex> lock(mu_);
    slots_[rank] = mine;
    const int64_t gen = generation_;
    if (++arrived_ == world_size_) {
      std::vector<T*> typed(world_size_);
      for (int r = 0; r < world_size_; ++r) typed[r] = static_cast<T*>(slots_[r]);
      combine(typed);
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != gen; });
    }
  }

 private:
  const int world_size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<void*> slots_;
  int arrived_ = 0;
  int64_t generation_ = 0;
};

class InMemoryCollectives final : public Collectives {
 public:
  InMemoryCollectives(std::shared_ptr<Hub> hub, int rank, int world_size)
      : hub_(std::move(hub)), rank_(rank), world_size_(world_size) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  Status AllReduceSum(std::vector<at::Tensor>& tensors) override {
    hub_->Exchange<std::vector<at::Tensor>>(rank_, &tensors,
                                            [](const std::vector<std::vector<at::Tensor>*>& all) {
                                              torch::NoGradGuard no_grad;
                                              for (size_t i = 0; i < all[0]->size(); ++i) {
                                                at::Tensor sum = (*all[0])[i].clone();
                                                for (size_t r = 1; r < all.size(); ++r)
                                                  sum.add_((*all[r])[i]);
                                                for (auto* t : all) (*t)[i].copy_(sum);
                                              }
                                            });
    return OkStatus();
  }

  Status AllReduceSum(std::vector<double>* values) override {
    hub_->Exchange<std::vector<double>>(rank_, values,
                                        [](const std::vector<std::vector<double>*>& all) {
                                          std::vector<double> sum(all[0]->size(), 0.0);
                                          for (auto* v : all) {
                                            for (size_t i = 0; i < sum.size(); ++i) {
                                              sum[i] += (*v)[i];
                                            }
                                          }
                                          for (auto* v : all) *v = sum;
                                        });
    return OkStatus();
  }

  // In memory the collective completes inside the call (ranks in rank order).
  std::unique_ptr<CollectiveWork> StartReduceScatterSum(const at::Tensor& input,
                                                        const at::Tensor& out) override {
    SKRULL_CHECK(input.numel() == world_size_ * out.numel())
        << "reduce-scatter: input " << input.numel() << " != " << world_size_ << " x "
        << out.numel();
    std::pair<at::Tensor, at::Tensor> mine(input, out);
    hub_->Exchange<std::pair<at::Tensor, at::Tensor>>(
        rank_, &mine, [](const std::vector<std::pair<at::Tensor, at::Tensor>*>& all) {
          torch::NoGradGuard no_grad;
          const int64_t n = all[0]->second.numel();
          for (size_t r = 0; r < all.size(); ++r) {
            const int64_t at = static_cast<int64_t>(r) * n;
            at::Tensor sum = all[0]->first.narrow(0, at, n).clone();
            for (size_t q = 1; q < all.size(); ++q) sum.add_(all[q]->first.narrow(0, at, n));
            all[r]->second.copy_(sum);
          }
        });
    return FinishedWork();
  }

  std::unique_ptr<CollectiveWork> StartAllGather(const at::Tensor& input,
                                                 const at::Tensor& out) override {
    SKRULL_CHECK(out.numel() == world_size_ * input.numel())
        << "all-gather: output " << out.numel() << " != " << world_size_ << " x " << input.numel();
    std::pair<at::Tensor, at::Tensor> mine(input, out);
    hub_->Exchange<std::pair<at::Tensor, at::Tensor>>(
        rank_, &mine, [](const std::vector<std::pair<at::Tensor, at::Tensor>*>& all) {
          torch::NoGradGuard no_grad;
          const int64_t n = all[0]->first.numel();
          for (auto* dst : all) {
            for (size_t q = 0; q < all.size(); ++q) {
              dst->second.narrow(0, static_cast<int64_t>(q) * n, n).copy_(all[q]->first);
            }
          }
        });
    return FinishedWork();
  }

  Status Barrier() override {
    int unused = 0;
    hub_->Exchange<int>(rank_, &unused, [](const std::vector<int*>&) {});
    return OkStatus();
  }

 private:
  std::shared_ptr<Hub> hub_;
  int rank_;
  int world_size_;
};

}  // namespace

std::vector<std::unique_ptr<Collectives>> MakeInMemoryGroup(int world_size) {
  SKRULL_CHECK(world_size >= 1) << "world_size=" << world_size;
  auto hub = std::make_shared<Hub>(world_size);
  std::vector<std::unique_ptr<Collectives>> group;
  for (int r = 0; r < world_size; ++r) {
    group.push_back(std::make_unique<InMemoryCollectives>(hub, r, world_size));
  }
  return group;
}

}  // namespace skrull::train

#include "trainer/train/collectives.h"

#include <torch/torch.h>

#include <condition_variable>
#include <mutex>

namespace skrull::train {

Status LocalCollectives::AllReduceSum(std::vector<at::Tensor>& tensors) { return OkStatus(); }

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

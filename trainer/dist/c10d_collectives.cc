#include "trainer/dist/c10d_collectives.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>

namespace skrull::dist {

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

C10dCollectives::C10dCollectives(Group* world, C10dCollectivesOptions options)
    : world_(world), options_(options) {
  SKRULL_CHECK(world_ != nullptr);
  SKRULL_CHECK(options_.bucket_bytes > 0);
}

Status C10dCollectives::AllReduceSum(std::vector<at::Tensor>& tensors) {
  stats_.gradient_allreduces += 1;
  if (world_->size == 1 || tensors.empty()) return OkStatus();
  c10::NoGradGuard no_grad;
  struct Bucket {
    std::vector<size_t> members;
    at::Tensor flat;  // undefined when reduced in place
    PendingCollective pending;
  };
  std::vector<Bucket> buckets;
  try {
    for (std::vector<size_t>& members : PlanBuckets(tensors, options_.bucket_bytes)) {
      Bucket b;
      b.members = std::move(members);
      at::Tensor target;
      if (b.members.size() == 1 && tensors[b.members[0]].is_contiguous()) {
        target = tensors[b.members[0]];
      } else {
        std::vector<at::Tensor> parts;
        for (size_t i : b.members) parts.push_back(tensors[i].reshape({-1}));
        b.flat = at::cat(parts, 0);
        target = b.flat;
      }
      stats_.bytes += TensorBytes(target);
      stats_.buckets += 1;
      b.pending = StartAllReduceSum(*world_, target);
      buckets.push_back(std::move(b));
    }
    for (Bucket& b : buckets) {
      stats_.wait_seconds += b.pending.Wait();
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
  at::Tensor t = at::empty({static_cast<int64_t>(values->size())}, at::kDouble);
  std::copy(values->begin(), values->end(), t.data_ptr<double>());
  try {
    stats_.wait_seconds += StartAllReduceSum(*world_, t).Wait();
  } catch (const CollectiveError& e) {
    return UnavailableError(std::string("scalar all-reduce: ") + e.what());
  }
  std::copy(t.data_ptr<double>(), t.data_ptr<double>() + values->size(), values->begin());
  return OkStatus();
}

Status C10dCollectives::Barrier() {
  if (world_->size == 1) return OkStatus();
  try {
    const auto start = std::chrono::steady_clock::now();
    auto work = SKRULL_C10D_CHECK(*world_, "barrier", 0, world_->pg->barrier());
    SKRULL_C10D_CHECK(*world_, "barrier", 0, work->wait());
    stats_.wait_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } catch (const CollectiveError& e) {
    return UnavailableError(e.what());
  }
  return OkStatus();
}

DpCommStats C10dCollectives::TakeStats() {
  DpCommStats s = stats_;
  stats_ = DpCommStats();
  return s;
}

}  // namespace skrull::dist

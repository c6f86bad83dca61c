#include "trainer/train/device_memory.h"

#include <c10/util/Exception.h>
#ifdef SKRULL_WITH_CUDA
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

#include <malloc.h>

#include <fstream>
#include <string>

#include "trainer/metrics/process_memory.h"

namespace skrull::train {
namespace {

class HostMemory : public DeviceMemory {
 public:
  MemoryPeak TakePeak() override {
    StatusOr<uint64_t> rss = metrics::ReadProcessPeakRssBytes();
    const uint64_t peak = rss.ok() ? *rss : 0;
    return {peak, peak};
  }
  uint64_t CapacityBytes() override {
    StatusOr<uint64_t> capacity = metrics::ReadHostMemoryCapacityBytes();
    return capacity.ok() ? *capacity : 0;
  }
  uint64_t CurrentBytes() override {
    malloc_trim(0);
    StatusOr<uint64_t> rss = metrics::ReadProcessRssBytes();
    return rss.ok() ? *rss : 0;
  }
  void ResetPeak() override {
    malloc_trim(0);
    std::ofstream("/proc/self/clear_refs") << "5";  // proc(5): 5 resets VmHWM
  }
};

#ifdef SKRULL_WITH_CUDA
// StatType::AGGREGATE, the first entry of every stat array in 1.x and 2.x
// (c10/cuda/CUDACachingAllocator.h, c10/core/CachingDeviceAllocator.h).
constexpr size_t kAggregate = 0;

class CudaMemory : public DeviceMemory {
 public:
  explicit CudaMemory(c10::DeviceIndex index) : index_(index) {
    // getDeviceStats asserts the allocator knows the device ("Invalid device
    // argument: did you call init?", CUDACachingAllocator.cpp
    // assertValidDevice) until CUDA is initialised; a first tensor does it.
    (void)at::empty({1}, at::TensorOptions().device(c10::Device(c10::kCUDA, index_)));
  }

  MemoryPeak TakePeak() override {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index_);
    MemoryPeak peak;
    peak.allocated_bytes = static_cast<uint64_t>(stats.allocated_bytes[kAggregate].peak);
    peak.reserved_bytes = static_cast<uint64_t>(stats.reserved_bytes[kAggregate].peak);
    ResetPeak();
    return peak;
  }
  uint64_t CapacityBytes() override {
    size_t free_bytes = 0, total_bytes = 0;
    {
      c10::cuda::CUDAGuard guard(index_);  // cudaMemGetInfo reads the current device
      C10_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    }
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index_);
    return static_cast<uint64_t>(free_bytes) +
           static_cast<uint64_t>(stats.reserved_bytes[kAggregate].current);
  }
  uint64_t CurrentBytes() override {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index_);
    return static_cast<uint64_t>(stats.allocated_bytes[kAggregate].current);
  }
  void ResetPeak() override { c10::cuda::CUDACachingAllocator::resetPeakStats(index_); }

 private:
  c10::DeviceIndex index_;
};
#endif

}  // namespace

std::unique_ptr<DeviceMemory> MakeDeviceMemory(c10::Device device) {
#ifdef SKRULL_WITH_CUDA
  if (device.is_cuda()) {
    return std::make_unique<CudaMemory>(device.has_index() ? device.index() : 0);
  }
#endif
  (void)device;
  return std::make_unique<HostMemory>();
}

void ThrowInjectedOutOfMemory(int64_t step) {
  // What the caching allocator throws (c10/cuda/CUDACachingAllocator.cpp).
  C10_THROW_ERROR(OutOfMemoryError,
                  "CUDA out of memory. Tried to allocate 2.00 GiB (injected at step " +
                      std::to_string(step) + " by the out-of-memory test hook)");
}

}  // namespace skrull::train

// Memory of the device a rank trains on, as the metrics and the BucketSize
// tuner need it: the peak of a step and the device's capacity.
//
//   CUDA  peaks from the caching allocator (allocated: bytes held by tensors;
//         reserved: bytes the allocator took from the device, what an
//         out-of-memory error runs into), reset after every TakePeak, so each
//         step reports its own peak; capacity = what the allocator can hold:
//         the device's free memory (cudaMemGetInfo) plus what it already
//         reserved. The CUDA context, cuBLAS workspaces and NCCL buffers live
//         outside the allocator, so read it after a warm-up step (the trainer
//         re-reads it after its first step, --profile after its warm-up);
//         totalGlobalMem would overstate the headroom by them. The device is
//         initialised (one allocation) when the object is made: the
//         allocator's statistics fail on a device it has not seen.
//   CPU   both peaks are the process's resident-set high-water mark (VmHWM,
//         since the process started); capacity = host memory lowered to the
//         cgroup limit (trainer/metrics/process_memory.h).
//
// A seam: TrainerOptions::device_memory may supply another implementation
// (tests do, to check what the trainer reports on CPU).
//
// Thread safety: call from the training thread only.
#ifndef SKRULL_TRAINER_TRAIN_DEVICE_MEMORY_H_
#define SKRULL_TRAINER_TRAIN_DEVICE_MEMORY_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>

namespace skrull::train {

struct MemoryPeak {
  uint64_t allocated_bytes = 0;  // held by tensors
  uint64_t reserved_bytes = 0;   // held by the allocator (>= allocated on CUDA)
};

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // The peak since the previous call (the first call: since start-up) where
  // the device can reset it, else since the process started. 0 = unknown.
  virtual MemoryPeak TakePeak() = 0;
  // Memory the rank may use, in bytes; 0 = unknown.
  virtual uint64_t CapacityBytes() = 0;
  // Bytes in use now (CUDA: held by tensors; CPU: the resident set after the
  // heap's free memory went back to the OS); 0 = unknown.
  virtual uint64_t CurrentBytes() { return 0; }
  // Starts the next peak from now where TakePeak cannot (CPU: resets VmHWM
  // to the current resident set, Linux >= 4.0); CUDA: TakePeak already does.
  // For measurements (skrull-trainer profile); the trainer does not call it.
  virtual void ResetPeak() {}
};

// The implementation for `device` (CUDA in a CUDA build, else host memory).
std::unique_ptr<DeviceMemory> MakeDeviceMemory(c10::Device device);

using DeviceMemoryFactory = std::function<std::unique_ptr<DeviceMemory>(c10::Device)>;

// Throws c10::OutOfMemoryError as the CUDA caching allocator does, with a
// message saying it was injected at `step` (the out-of-memory test hook,
// TrainerOptions::out_of_memory_at_step).
[[noreturn]] void ThrowInjectedOutOfMemory(int64_t step);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_DEVICE_MEMORY_H_

// The one place that knows which libtorch it is built against (Debian's CPU
// 1.13, or a CUDA libtorch from PyTorch 2.x) and which device it runs on.
// Everything else in trainer/ calls these and carries no version #ifs.
//
//   libtorch 1.13: no at::scaled_dot_product_attention -> HasFusedSdpa() is
//     false and attention uses the chunked path on every device.
//   libtorch >= 2.0: SDPA (flash / memory-efficient kernels on CUDA) is used
//     for local sequences on CUDA devices.
//
// Thread safety: all functions are thread safe.
#ifndef SKRULL_TRAINER_MODEL_TORCH_COMPAT_H_
#define SKRULL_TRAINER_MODEL_TORCH_COMPAT_H_

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace skrull::model::compat {

// "1.13.0", "2.4.1", ...
std::string TorchVersion();

// True when libtorch has at::scaled_dot_product_attention (>= 2.0).
bool HasFusedSdpa();

// Causal attention of one sequence through SDPA, top-left aligned (query i
// sees keys 0..i). q, k, v: [1, H, L, D], same H (repeat K/V heads first),
// scale 1/sqrt(D). REQUIRES: HasFusedSdpa().
at::Tensor SdpaCausal(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

bool CudaAvailable();
int64_t CudaDeviceCount();

// "cpu", "cuda", "cuda:N", or "auto" (cuda:0 when a GPU is visible, else
// cpu). InvalidArgument for an unknown name; FailedPrecondition for cuda
// without a CUDA build or device.
StatusOr<c10::Device> ParseDevice(const std::string& spec);

// "float32"|"fp32"|"float", "bfloat16"|"bf16", "float16"|"fp16"|"half".
StatusOr<c10::ScalarType> ParseDtype(const std::string& name);
// The Hugging Face torch_dtype name: "float32", "bfloat16", "float16".
std::string DtypeName(c10::ScalarType dtype);

// A CPU generator seeded with `seed`: random init draws on the CPU and then
// moves, so a seed gives the same weights on every device and version.
at::Generator MakeCpuGenerator(uint64_t seed);

// Waits for queued device work (for timing); a no-op on CPU.
void Synchronize(c10::Device device);

}  // namespace skrull::model::compat

#endif  // SKRULL_TRAINER_MODEL_TORCH_COMPAT_H_

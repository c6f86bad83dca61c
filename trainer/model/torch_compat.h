// The one place that knows which libtorch it is built against (Debian's CPU
// 1.13, or a CUDA libtorch from PyTorch 2.x) and which device it runs on.
// Everything else in trainer/ calls these and carries no version #ifs.
//
//   libtorch < 2.6 (Debian 12's CPU 1.13): HasFlashVarlen() is false and
//     attention uses the chunked path on every device.
//   libtorch >= 2.6: ATen's FlashAttention-2 varlen kernels
//     (at::_flash_attention_forward/_backward with cumulative sequence
//     lengths) are callable; model/flash_attention.h decides when to use them.
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
#include <tuple>

#include "common/status.h"

namespace skrull::model::compat {

// "1.13.0", "2.4.1", ...
std::string TorchVersion();

// True when this libtorch has ATen's flash varlen ops with the signature
// used below (PyTorch >= 2.6; compiled and linked against 2.6 by
// scripts/check-gpu-build.sh). Says nothing about the device.
bool HasFlashVarlen();

// True when the flash varlen kernel runs for q's device and dtype, `heads`
// heads and q's head dim: probed by calling FlashVarlenForward once on a
// tiny two-token batch (the library built with flash, an architecture and
// head dim it supports), unless flash SDP is disabled
// (at::globalContext().setSDPUseFlash(false)). Not the SDPA selector's
// preference (at::_fused_sdp_choice): from PyTorch 2.10 that prefers cuDNN
// attention on sm90/sm100 (sdp_utils.cpp check_prefer_cudnn_attention), which
// says nothing about whether flash works. Cached per (device, dtype, heads,
// head dim); false on CPU tensors or when !HasFlashVarlen().
bool FlashKernelUsable(const at::Tensor& q, int64_t heads);

// The CUDA device's compute capability as major * 10 + minor (90 = sm90);
// 0 without a CUDA build or device.
int CudaComputeCapability(int device_index);

// One call of at::_flash_attention_forward over packed sequences.
//   q: [total_q, Hq, D], k, v: [total_k, Hkv, D] (bf16/fp16, CUDA,
//   contiguous); cu_q, cu_k: int32 [B + 1] on q's device. Causal is
//   bottom-right aligned (FlashAttention-2): query i of sequence b sees key
//   j iff j <= i + (len_k(b) - len_q(b)). lse is libtorch's own layout
//   ([Hq, total_q] or [B, Hq, max_q], depending on the version).
//   REQUIRES: HasFlashVarlen().
struct FlashVarlenOutput {
  at::Tensor out;                         // [total_q, Hq, D], q's dtype
  at::Tensor lse;                         // float32 natural-log log-sum-exp of scale * scores
  at::Tensor philox_seed, philox_offset;  // dropout RNG state (unused: p = 0)
};
FlashVarlenOutput FlashVarlenForward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                     const at::Tensor& cu_q, const at::Tensor& cu_k, int64_t max_q,
                                     int64_t max_k, double scale);

// The matching at::_flash_attention_backward: returns {dq, dk, dv} in q's
// dtype and q/k/v's shapes (GQA heads summed). out, dout in q's dtype; lse
// and the philox tensors as FlashVarlenForward returned them.
// REQUIRES: HasFlashVarlen().
std::tuple<at::Tensor, at::Tensor, at::Tensor> FlashVarlenBackward(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& out, const at::Tensor& lse, const at::Tensor& cu_q, const at::Tensor& cu_k,
    int64_t max_q, int64_t max_k, double scale, const at::Tensor& philox_seed,
    const at::Tensor& philox_offset);

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

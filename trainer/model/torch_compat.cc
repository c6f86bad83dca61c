#include "trainer/model/torch_compat.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <cctype>

namespace skrull::model::compat {

// libtorch version differences: the preprocessor checks are here and in
// trainer/dist/process_groups.h (CommGroup: c10d::Backend in 2.x,
// c10d::ProcessGroup in 1.13). Four adapt by type, with no version check:
// the AdamW state key (train/optimizer.cc StateKey), how autograd nodes are
// held (dist/cp_attention.cc MakeNode, train/train_step.h NodeRef), and the
// TCPStore's libuv switch (dist/process_groups.cc UseClassicTcpStore). Checked
// with -fsyntax-only against Debian's libtorch 2.6 and 2.14 headers by
// scripts/check-torch2-syntax.sh (the build itself uses 1.13).
#if TORCH_VERSION_MAJOR >= 2
#define SKRULL_TORCH_HAS_SDPA 1
#else
#define SKRULL_TORCH_HAS_SDPA 0
#endif

std::string TorchVersion() { return TORCH_VERSION; }

bool HasFusedSdpa() { return SKRULL_TORCH_HAS_SDPA != 0; }

at::Tensor SdpaCausal(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
#if SKRULL_TORCH_HAS_SDPA
  // (query, key, value, attn_mask, dropout_p, is_causal): the prefix common
  // to every 2.x signature (2.1 added scale, 2.5 enable_gqa, both defaulted).
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
#else
  SKRULL_CHECK(false) << "SdpaCausal called on libtorch " << TORCH_VERSION
                      << ", which has no scaled_dot_product_attention (check HasFusedSdpa())";
  return at::Tensor();
#endif
}

bool CudaAvailable() { return torch::cuda::is_available(); }

int64_t CudaDeviceCount() { return static_cast<int64_t>(torch::cuda::device_count()); }

StatusOr<c10::Device> ParseDevice(const std::string& spec) {
  if (spec == "cpu") return c10::Device(c10::kCPU);
  if (spec == "auto") {
    return CudaAvailable() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  }
  if (spec == "cuda" || spec.rfind("cuda:", 0) == 0) {
    int64_t index = 0;
    if (spec.size() > 5) {
      const std::string digits = spec.substr(5);
      if (digits.empty() || digits.size() > 3 ||
          !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(c); })) {
        return InvalidArgumentError("device '" + spec + "': expected cuda:<index>");
      }
      index = std::stoll(digits);
    }
    if (!CudaAvailable()) {
      return FailedPreconditionError("device '" + spec + "': libtorch " + TorchVersion() +
                                     " sees no CUDA device (CPU-only build or no GPU); use cpu");
    }
    if (index >= CudaDeviceCount()) {
      return FailedPreconditionError("device '" + spec + "': only " +
                                     std::to_string(CudaDeviceCount()) + " CUDA devices");
    }
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  return InvalidArgumentError("device '" + spec + "': expected cpu, cuda, cuda:N or auto");
}

StatusOr<c10::ScalarType> ParseDtype(const std::string& name) {
  if (name == "float32" || name == "fp32" || name == "float") return c10::kFloat;
  if (name == "bfloat16" || name == "bf16") return c10::kBFloat16;
  if (name == "float16" || name == "fp16" || name == "half") return c10::kHalf;
  return InvalidArgumentError("dtype '" + name + "': expected float32, bfloat16 or float16");
}

std::string DtypeName(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat:
      return "float32";
    case c10::kBFloat16:
      return "bfloat16";
    case c10::kHalf:
      return "float16";
    default:
      return c10::toString(dtype);
  }
}

at::Generator MakeCpuGenerator(uint64_t seed) { return at::detail::createCPUGenerator(seed); }

void Synchronize(c10::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace skrull::model::compat

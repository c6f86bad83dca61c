#include "trainer/model/torch_compat.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/version.h>
#ifdef SKRULL_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <mutex>

namespace skrull::model::compat {

// libtorch version differences: the preprocessor checks are here and in
// trainer/dist/process_groups.h (CommGroup: c10d::Backend in 2.x,
// c10d::ProcessGroup in 1.13). Four adapt by type, with no version check:
// the AdamW state key (train/optimizer.cc StateKey), how autograd nodes are
// held (dist/cp_attention.cc MakeNode, train/train_step.h NodeRef), and the
// TCPStore's libuv switch (dist/process_groups.cc UseClassicTcpStore). Checked
// with -fsyntax-only against Debian's libtorch 2.6 and 2.14 headers by
// scripts/check-torch2-syntax.sh (the build itself uses 1.13).
// The flash varlen ops exist since 2.0, but their signatures settled (scale,
// window sizes, seqused_k, alibi) by 2.6, the version this is built against.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
#define SKRULL_TORCH_HAS_FLASH_VARLEN 1
#else
#define SKRULL_TORCH_HAS_FLASH_VARLEN 0
#endif

std::string TorchVersion() { return TORCH_VERSION; }

bool HasFlashVarlen() { return SKRULL_TORCH_HAS_FLASH_VARLEN != 0; }

namespace {

bool ProbeFlashKernel(const at::Tensor& q, int64_t heads) {
#if SKRULL_TORCH_HAS_FLASH_VARLEN
  if (!at::globalContext().userEnabledFlashSDP()) return false;
  // One sequence of two tokens, [total, heads, head_dim]: the kernel checks
  // the build, architecture, dtype and head dim and throws c10::Error when
  // one is unsupported.
  try {
    const int64_t d = q.size(-1);
    at::Tensor x = at::zeros({2, heads, d}, q.options().requires_grad(false));
    at::Tensor cu = at::arange(0, 4, 2, at::TensorOptions().dtype(at::kInt).device(q.device()));
    FlashVarlenForward(x, x, x, cu, cu, 2, 2, 1.0 / std::sqrt(static_cast<double>(d)));
    return true;
  } catch (const c10::Error&) {
    return false;
  }
#else
  (void)q;
  (void)heads;
  return false;
#endif
}

}  // namespace

bool FlashKernelUsable(const at::Tensor& q, int64_t heads) {
  if (!HasFlashVarlen() || !q.is_cuda()) return false;
  using Key = std::tuple<int, int, int64_t, int64_t>;
  static std::mutex mu;
  static std::map<Key, bool> cache;
  const Key key{q.device().index(), static_cast<int>(q.scalar_type()), heads, q.size(-1)};
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, ProbeFlashKernel(q, heads)).first;
  return it->second;
}

FlashVarlenOutput FlashVarlenForward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                     const at::Tensor& cu_q, const at::Tensor& cu_k, int64_t max_q,
                                     int64_t max_k, double scale) {
#if SKRULL_TORCH_HAS_FLASH_VARLEN
  auto [out, lse, seed, offset, unused] =
      at::_flash_attention_forward(q, k, v, cu_q, cu_k, max_q, max_k, /*dropout_p=*/0.0,
                                   /*is_causal=*/true, /*return_debug_mask=*/false, scale);
  (void)unused;
  return FlashVarlenOutput{out, lse, seed, offset};
#else
  (void)q, (void)k, (void)v, (void)cu_q, (void)cu_k, (void)max_q, (void)max_k, (void)scale;
  SKRULL_CHECK(false) << "FlashVarlenForward called on libtorch " << TORCH_VERSION
                      << " (check HasFlashVarlen())";
  return {};
#endif
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> FlashVarlenBackward(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& out, const at::Tensor& lse, const at::Tensor& cu_q, const at::Tensor& cu_k,
    int64_t max_q, int64_t max_k, double scale, const at::Tensor& philox_seed,
    const at::Tensor& philox_offset) {
#if SKRULL_TORCH_HAS_FLASH_VARLEN
  return at::_flash_attention_backward(dout, q, k, v, out, lse, cu_q, cu_k, max_q, max_k,
                                       /*dropout_p=*/0.0, /*is_causal=*/true, philox_seed,
                                       philox_offset, scale);
#else
  (void)dout, (void)q, (void)k, (void)v, (void)out, (void)lse, (void)cu_q, (void)cu_k;
  (void)max_q, (void)max_k, (void)scale, (void)philox_seed, (void)philox_offset;
  SKRULL_CHECK(false) << "FlashVarlenBackward called on libtorch " << TORCH_VERSION
                      << " (check HasFlashVarlen())";
  return {};
#endif
}

int CudaComputeCapability(int device_index) {
#ifdef SKRULL_WITH_CUDA
  if (!CudaAvailable() || device_index < 0 || device_index >= CudaDeviceCount()) return 0;
  const cudaDeviceProp* p =
      at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(device_index));
  return p->major * 10 + p->minor;
#else
  (void)device_index;
  return 0;
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

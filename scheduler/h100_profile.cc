// The built-in H100 SXM profiles (hardware_profile.h): every constant with
// its published source; source_notes repeats them for the JSON files.
#include <algorithm>
#include <cmath>
#include <string>

#include "scheduler/hardware_profile.h"

namespace skrull::scheduler {
namespace {

constexpr double kPeakFlops = 989e12;
constexpr int kLengths[] = {512, 1024, 2048, 4096, 8192, 16384};

// TFLOP/s of one kernel on an H100 80GB SXM5, BF16, head dim 128, from the
// FlashAttention-3 paper (arXiv 2407.08608), which benchmarks both kernels:
// causal forward ("Attention forward speed, head dim 128", with causal mask),
// non-causal forward (same figure, without mask) and non-causal backward
// ("Attention backward speed, head dim 128"; the paper has no causal
// backward figure), at sequence lengths kLengths.
struct Curves {
  double causal_forward[6], forward[6], backward[6];
  int block_m, block_n;  // the kernel's tile (query x key rows)
};
// FlashAttention-2's hdim-128 tile on sm90: 128 x 64
// (csrc/flash_attn/src/flash_fwd_launch_template.h, run_mha_fwd_hdim128);
// FlashAttention-3's causal hdim-128 tile: 128 x 128
// (hopper/flash_fwd_launch_template.h, run_mha_fwd_hdim128).
constexpr Curves kFa2 = {{191, 260, 298, 319, 333, 335},
                         {309, 350, 362, 368, 370, 370},
                         {214, 260, 291, 310, 318, 322},
                         128,
                         64};
constexpr Curves kFa3 = {{292, 423, 521, 579, 602, 616},
                         {467, 565, 625, 638, 646, 648},
                         {316, 424, 501, 542, 559, 561},
                         128,
                         128};

// Causal work a length-L sequence does over the tiles the kernel visits.
double CausalTileUse(int64_t length, int block_m, int block_n) {
  double visited = 0;
  for (int64_t row = 0; row < length; row += block_m) {
    const int64_t last = std::min<int64_t>(row + block_m, length);
    visited += static_cast<double>(block_m) * block_n *
               static_cast<double>((last + block_n - 1) / block_n);
  }
  const double s = static_cast<double>(length);
  return s * (s + 1) / 2 / visited;
}

}  // namespace

std::vector<std::pair<int64_t, double>> H100AttentionEfficiency(AttentionKernel kernel) {
  const Curves& c = kernel == AttentionKernel::kFa3 ? kFa3 : kFa2;
  std::vector<std::pair<int64_t, double>> table;
  // Model FLOPs are 3 x forward (cost_model.h); the kernels do a forward and
  // a backward of 2.5 x its FLOPs (the FlashAttention papers' convention), so
  // one causal sequence takes F / fwd + 2.5 F / bwd, where the causal
  // backward is the non-causal one scaled as the forward scales with the mask.
  double at_512 = 0;
  for (int i = 0; i < 6; ++i) {
    const double causal_backward = c.backward[i] * c.causal_forward[i] / c.forward[i];
    const double tflops = 3.0 / (1.0 / c.causal_forward[i] + 2.5 / causal_backward);
    table.emplace_back(kLengths[i], tflops * 1e12 / kPeakFlops);
    if (i == 0) at_512 = table.back().second;
  }
  // Below the papers' shortest length: the 512-token efficiency times the
  // share of the visited tiles that holds causal work, relative to 512.
  std::vector<std::pair<int64_t, double>> shorter;
  for (int64_t length : {16, 32, 64, 128, 256}) {
    shorter.emplace_back(length, at_512 * CausalTileUse(length, c.block_m, c.block_n) /
                                     CausalTileUse(512, c.block_m, c.block_n));
  }
  table.insert(table.begin(), shorter.begin(), shorter.end());
  return table;
}

HardwareProfile H100Profile(AttentionKernel kernel) {
  HardwareProfile p;
  const bool fa3 = kernel == AttentionKernel::kFa3;
  p.name = fa3 ? "h100-sxm-80gb-fa3" : "h100-sxm-80gb";
  p.attention_kernel = fa3 ? "fa3" : "fa2";
  p.peak_flops_per_second = kPeakFlops;
  // The most a bf16 GEMM reaches on an H100 SXM, 794.5 of 989 TFLOP/s.
  p.gemm_efficiency = {{1, 794.5 / 989.0}};
  p.gemm_tile_rows = 128;
  p.gemm_tile_cols = 128;
  p.attention_efficiency = H100AttentionEfficiency(kernel);
  p.memory_bytes_per_second = 3.35e12;
  // Between nodes: one 400 Gb/s NIC per GPU; latency from the Table-5 fit.
  p.all_gather = {43.9e-6, 47e9};
  p.reduce_scatter = {51.5e-6, 47e9};
  p.all_reduce = {64.4e-6, 47e9};
  // Within a node: NVLink, NCCL's bus bandwidth.
  p.gpus_per_node = 8;
  p.intra_node.all_gather = {43.9e-6, 370e9};
  p.intra_node.reduce_scatter = {51.5e-6, 370e9};
  p.intra_node.all_reduce = {64.4e-6, 480e9};
  p.kernel_launch_seconds = 0;  // counted in cpu_seconds_per_kernel
  p.cpu_seconds_per_kernel = 5e-6;
  p.device_memory_bytes = 81559.0 * (1 << 20);
  p.source_notes =
      "peak_flops_per_second: NVIDIA H100 SXM datasheet, 989 TFLOP/s dense BF16. "
      "gemm_efficiency: 794.5 / 989, the maximum achievable bf16 matmul on an H100 SXM "
      "(stas00/ml-engineering compute/accelerator/README.md line 354 at commit 744d01e: MAMF "
      "794.5 TFLOP/s, torch 2.7.0+cu126); gemm_tile_rows/cols 128 x 128: tile quantization "
      "(NVIDIA Deep Learning Performance guide, 'Matrix Multiplication Background', tile sizes "
      "256x128 to 64x64; 128x128 the middle of that list); wave quantization not priced "
      "(multiprocessors 0). memory_bytes_per_second: 3.35 TB/s HBM3, NVIDIA H100 SXM datasheet. "
      "attention_efficiency (" +
      std::string(fa3 ? "FlashAttention-3" : "FlashAttention-2") +
      "): the FlashAttention-3 paper (arXiv 2407.08608), H100 80GB SXM5, BF16, head dim 128: "
      "causal forward, non-causal forward and non-causal backward TFLOP/s at 512..16K "
      "(FlashAttention-2: 191-335, 309-370, 214-322; FlashAttention-3: 292-616, 467-648, "
      "316-561), combined as 3 / (1/fwd + 2.5/bwd_causal) with bwd_causal = bwd x "
      "causal_fwd / fwd; below 512 tokens scaled by the causal share of the kernel's tiles "
      "(FlashAttention-2 128x64, FlashAttention-3 128x128, flash_fwd_launch_template.h). "
      "all_gather / reduce_scatter / all_reduce (groups spanning nodes): 47 GB/s bus bandwidth, "
      "one 400 Gb/s NDR NIC per GPU (NVIDIA/nccl-tests issue 290, maintainer: '46-48GB/s per "
      "NIC'); latency from an alpha-beta fit to the Skrull paper's Table 5 (arXiv 2505.19609): "
      "43.9 / 51.5 / 64.4 us. intra_node (groups within a node of gpus_per_node 8): NVLink, "
      "370 GB/s bus bandwidth for all_gather / reduce_scatter and 480 GB/s for all_reduce with "
      "NVLink SHARP (NVIDIA/nccl-tests issue 212, maintainer); same latencies. "
      "kernel_launch_seconds: 0, the host launch (cudaLaunchKernel's ~1-3 us) is part of "
      "cpu_seconds_per_kernel: 5 us, "
      "the low end of the ~5-25 us of host work per eager PyTorch op (jiahuanglin.xyz, 'From "
      "PyTorch op to kernel launch'; low end: the trainer is C++, no Python layers). "
      "device_memory_bytes: 81,559 MiB, the total NVML reports for an H100 80GB (Modal, "
      "thundergolfer.com/blog/nvidia-gpu-memory-capacity).";
  return p;
}

}  // namespace skrull::scheduler

#include "trainer/train/rng_state.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <mutex>

namespace skrull::train {
namespace {

std::string Hex(const uint8_t* p, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s.push_back(kDigits[p[i] >> 4]);
    s.push_back(kDigits[p[i] & 15]);
  }
  return s;
}

}  // namespace

std::string CpuRngStateHex() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  at::Tensor st = gen.get_state();
  return Hex(st.data_ptr<uint8_t>(), static_cast<size_t>(st.numel()));
}

Status RestoreCpuRngState(const std::string& hex, const std::string& origin) {
  if (hex.empty()) return OkStatus();
  if (hex.size() % 2 != 0) return InvalidArgumentError(origin + ": rng_state_hex: odd length");
  at::Tensor st = at::empty({static_cast<int64_t>(hex.size() / 2)}, at::kByte);
  uint8_t* p = st.data_ptr<uint8_t>();
  auto digit = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = digit(hex[i]), lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) {
      return InvalidArgumentError(origin + ": rng_state_hex: character " +
                                  std::to_string(hi < 0 ? i : i + 1) +
                                  " is not a hex digit; the checkpoint's trainer state is damaged "
                                  "(resume from an earlier checkpoint)");
    }
    p[i / 2] = static_cast<uint8_t>(hi * 16 + lo);
  }
  try {
    at::Generator gen = at::detail::getDefaultCPUGenerator();  // a handle to the global one
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(st);
  } catch (const c10::Error& e) {
    return InvalidArgumentError(
        origin + ": rng_state_hex: not a CPU generator state: " + e.what_without_backtrace());
  }
  return OkStatus();
}

}  // namespace skrull::train

// torch/csrc/autograd/custom_function.h (torch::autograd::Function, the base
// of the trainer's custom autograd functions), included without a known GCC
// false positive, so that -Werror builds pass at -O3.
//
// Why: GCC 13 and 14 at -O3 (CMAKE_BUILD_TYPE=Release) inline libstdc++'s
// std::vector<bool>::reserve, which Function<T>::apply calls, and then report
// "__builtin_memmove ... forming offset 8 is out of the bounds [0, 8]"
// [-Warray-bounds] and, with that one off, "writing between 9 and ... bytes
// into a region of size 8" [-Wstringop-overflow] inside _M_copy_aligned on a
// path that cannot run: GCC bug 110498,
// https://gcc.gnu.org/bugzilla/show_bug.cgi?id=110498 (seen with GCC 14.2 and
// PyTorch 2.6 in Debian 13, scripts/check-gpu-build.sh). -O2 builds do not
// inline that far and do not warn.
//
// The two warnings are turned off only for the code of this header's includes:
// GCC checks a middle-end warning against the pragmas at every location of
// its inlining chain, and that chain passes through custom_function.h. The
// trainer's own code keeps both. Include this instead of
// <torch/csrc/autograd/custom_function.h>.
#ifndef SKRULL_TRAINER_MODEL_TORCH_CUSTOM_FUNCTION_H_
#define SKRULL_TRAINER_MODEL_TORCH_CUSTOM_FUNCTION_H_

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#include <torch/csrc/autograd/custom_function.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif  // SKRULL_TRAINER_MODEL_TORCH_CUSTOM_FUNCTION_H_

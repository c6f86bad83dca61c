// Thin libtorch adapter over the torch-free safetensors code: tensor <-> bytes.
#ifndef SKRULL_TRAINER_MODEL_TENSOR_IO_H_
#define SKRULL_TRAINER_MODEL_TENSOR_IO_H_

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "trainer/model/safetensors.h"

namespace skrull::model {

std::optional<DType> DTypeFromScalarType(c10::ScalarType type);
c10::ScalarType ScalarTypeFromDType(DType dtype);

// A new contiguous CPU tensor holding `data` (the bytes of `info`), converted
// to `target` (round to nearest even for narrowing float conversions).
at::Tensor TensorFromBytes(const TensorInfo& info, std::string_view data, c10::ScalarType target);

// Adds `tensor` (any device, any layout) under `name` in its own dtype, or
// converted to `as` when given. The tensor is copied to host memory only when
// the writer streams it, one tensor at a time. InvalidArgument for a dtype the
// format cannot hold.
Status AddTensor(SafetensorsWriter* writer, const std::string& name, const at::Tensor& tensor,
                 std::optional<c10::ScalarType> as = std::nullopt);

}  // namespace skrull::model

#endif  // SKRULL_TRAINER_MODEL_TENSOR_IO_H_

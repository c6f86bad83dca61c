#include "trainer/model/tensor_io.h"

#include <ATen/ATen.h>

#include <cstring>

namespace skrull::model {

std::optional<DType> DTypeFromScalarType(c10::ScalarType type) {
  switch (type) {
    case c10::kBool:
      return DType::kBool;
    case c10::kByte:
      return DType::kU8;
    case c10::kChar:
      return DType::kI8;
    case c10::kShort:
      return DType::kI16;
    case c10::kHalf:
      return DType::kF16;
    case c10::kBFloat16:
      return DType::kBF16;
    case c10::kInt:
      return DType::kI32;
    case c10::kFloat:
      return DType::kF32;
    case c10::kDouble:
      return DType::kF64;
    case c10::kLong:
      return DType::kI64;
    default:
      return std::nullopt;
  }
}

c10::ScalarType ScalarTypeFromDType(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return c10::kBool;
    case DType::kU8:
      return c10::kByte;
    case DType::kI8:
      return c10::kChar;
    case DType::kI16:
      return c10::kShort;
    case DType::kF16:
      return c10::kHalf;
    case DType::kBF16:
      return c10::kBFloat16;
    case DType::kI32:
      return c10::kInt;
    case DType::kF32:
      return c10::kFloat;
    case DType::kF64:
      return c10::kDouble;
    case DType::kI64:
      return c10::kLong;
    case DType::kU16:
    case DType::kU32:
    case DType::kU64:
      break;
  }
  SKRULL_CHECK(false) << "libtorch has no tensor type for safetensors dtype " << DTypeName(dtype);
  return c10::kFloat;
}

at::Tensor TensorFromBytes(const TensorInfo& info, std::string_view data, c10::ScalarType target) {
  SKRULL_CHECK(data.size() == info.NumBytes()) << info.name;
  at::Tensor raw =
      at::empty(info.shape, at::TensorOptions().dtype(ScalarTypeFromDType(info.dtype)));
  if (!data.empty()) std::memcpy(raw.data_ptr(), data.data(), data.size());
  return raw.scalar_type() == target ? raw : raw.to(target);
}

Status AddTensor(SafetensorsWriter* writer, const std::string& name, const at::Tensor& tensor,
                 std::optional<c10::ScalarType> as) {
  const c10::ScalarType type = as.value_or(tensor.scalar_type());
  std::optional<DType> dtype = DTypeFromScalarType(type);
  if (!dtype) {
    return InvalidArgumentError("tensor '" + name + "': dtype " + c10::toString(type) +
                                " cannot be stored in safetensors here");
  }
  at::Tensor keep = tensor.detach();
  return writer->Add(name, *dtype, keep.sizes().vec(), [keep, type](char* dst, size_t bytes) {
    at::Tensor host = keep.to(at::kCPU, type).contiguous();
    SKRULL_CHECK(static_cast<size_t>(host.nbytes()) == bytes);
    if (bytes > 0) std::memcpy(dst, host.data_ptr(), bytes);
    return OkStatus();
  });
}

}  // namespace skrull::model

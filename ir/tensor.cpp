// Host tensor storage and element conversion.
#include "ir/tensor.h"

#include <cstring>

namespace smelt {

Tensor::Tensor(TensorType type) : type_(std::move(type)), bytes_(type_.byteSize(), std::byte{0}) {}

Tensor Tensor::uninitialized(TensorType type) {
  Tensor t;
  t.bytes_.resize(type.byteSize());
  t.type_ = std::move(type);
  return t;
}

Expected<Tensor> Tensor::fromBytes(TensorType type, std::span<const std::byte> bytes) {
  if (bytes.size() != type.byteSize()) {
    return makeError("tensor of type {} needs {} bytes, got {}", type.toString(), type.byteSize(), bytes.size());
  }
  Tensor t(std::move(type));
  if (!bytes.empty()) std::memcpy(t.raw(), bytes.data(), bytes.size());
  return t;
}

Tensor Tensor::fromDoubles(TensorType type, std::span<const double> values) {
  Tensor t(std::move(type));
  const auto n = static_cast<int64_t>(values.size());
  if (n != t.numel()) {
    abortOnMisuse("Tensor::fromDoubles: ", fmt::format("{} values for {} ({} elements)", n, t.type().toString(), t.numel()));
  }
  dispatchDType(t.dtype(), [&]<typename T>(TypeTag<T>) {
    T* out = t.data<T>();
    for (int64_t i = 0; i < n; ++i) out[i] = fromDouble<T>(values[i]);
  });
  return t;
}

Tensor Tensor::scalar(DType dtype, double value) {
  double v[1] = {value};
  return fromDoubles(TensorType{dtype, {}}, v);
}

double Tensor::getDouble(int64_t i) const {
  return dispatchDType(dtype(), [&]<typename T>(TypeTag<T>) { return toDouble(data<T>()[i]); });
}

void Tensor::setDouble(int64_t i, double value) {
  dispatchDType(dtype(), [&]<typename T>(TypeTag<T>) { data<T>()[i] = fromDouble<T>(value); });
}

int64_t Tensor::getInt(int64_t i) const {
  return dispatchDType(dtype(), [&]<typename T>(TypeTag<T>) -> int64_t {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<int64_t>(data<T>()[i]);
    } else {
      return static_cast<int64_t>(toDouble(data<T>()[i]));
    }
  });
}

void Tensor::setInt(int64_t i, int64_t value) {
  dispatchDType(dtype(), [&]<typename T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, bool>) {
      data<T>()[i] = value != 0;
    } else if constexpr (std::is_integral_v<T>) {
      data<T>()[i] = static_cast<T>(value);
    } else {
      data<T>()[i] = static_cast<T>(static_cast<double>(value));
    }
  });
}

std::vector<double> Tensor::toDoubles() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  dispatchDType(dtype(), [&]<typename T>(TypeTag<T>) {
    const T* in = data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = toDouble(in[i]);
  });
  return out;
}

std::vector<int64_t> Tensor::toInts() const {
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = getInt(static_cast<int64_t>(i));
  return out;
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  t.type_.shape = std::move(shape);
  return t;
}

}  // namespace smelt

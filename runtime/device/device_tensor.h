// A tensor that lives on a device, in memory rented from the device's pool: what executables take
// and return so that parameters, optimizer state and activations stay on the device between kernels
// and steps. Copies with the host happen only in fromHost() and toHost(). Copies of a DeviceTensor
// share its memory (as torch.Tensor's); the memory returns to the pool with the last copy.
//   SMELT_TRY(DeviceTensor w, DeviceTensor::fromHost(device, Tensor::of<float>({2}, {1, 2})));
//   SMELT_TRY(Tensor back, w.toHost());
#pragma once

#include "ir/tensor.h"
#include "runtime/device/memory_pool.h"

#include <map>
#include <memory>
#include <string>

namespace smelt {

class DeviceTensor {
 public:
  DeviceTensor() = default;
  /// A zero-filled tensor of `type` on `device` (from its pool).
  static Expected<DeviceTensor> zeros(const std::shared_ptr<Device>& device, TensorType type);
  /// A tensor of `type` on `device` whose contents are whatever its block held (zeros or poison,
  /// never another tensor's data: see MemoryPool), for results written whole.
  static Expected<DeviceTensor> uninitialized(const std::shared_ptr<Device>& device, TensorType type);
  /// A copy of `host` on `device`.
  static Expected<DeviceTensor> fromHost(const std::shared_ptr<Device>& device, const Tensor& host);

  /// The tensor's values on the host (waits for the work before it on the default stream).
  Expected<Tensor> toHost() const;
  /// The same into `host`, which must have this type.
  Status toHost(Tensor& host) const;
  /// Overwrites the values from `host` (same type).
  Status copyFrom(const Tensor& host);

  const TensorType& type() const { return type_; }
  std::size_t byteSize() const { return type_.byteSize(); }
  bool defined() const { return buffer_ != nullptr; }
  /// Whether no other DeviceTensor shares this one's memory.
  bool unique() const { return buffer_ && buffer_.use_count() == 1; }
  Device& device() const { return *device_; }
  const std::shared_ptr<Device>& devicePtr() const { return device_; }
  DeviceMemory memory() const { return buffer_ ? buffer_->memory() : DeviceMemory{}; }

 private:
  TensorType type_;
  std::shared_ptr<Device> device_;
  std::shared_ptr<PooledBuffer> buffer_;
};

using DeviceTensorMap = std::map<std::string, DeviceTensor, std::less<>>;

}  // namespace smelt

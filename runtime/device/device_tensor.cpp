// DeviceTensor: pool rentals and host copies.
#include "runtime/device/device_tensor.h"

namespace smelt {

Expected<DeviceTensor> DeviceTensor::zeros(const std::shared_ptr<Device>& device, TensorType type) {
  std::shared_ptr<MemoryPool> pool = MemoryPool::forDevice(device);
  SMELT_TRY(PooledBuffer buffer, pool->rent(type.byteSize()));
  DeviceTensor t;
  // Fresh blocks hold whatever the driver gives, poisoned ones 0xFF: zero what the tensor covers.
  SMELT_CHECK_OK(device->fill(buffer.memory(), 0, type.byteSize(), 0, device->defaultStream()));
  t.type_ = std::move(type);
  t.device_ = device;
  t.buffer_ = std::make_shared<PooledBuffer>(std::move(buffer));
  return t;
}

Expected<DeviceTensor> DeviceTensor::uninitialized(const std::shared_ptr<Device>& device, TensorType type) {
  SMELT_TRY(PooledBuffer buffer, MemoryPool::forDevice(device)->rent(type.byteSize()));
  DeviceTensor t;
  t.type_ = std::move(type);
  t.device_ = device;
  t.buffer_ = std::make_shared<PooledBuffer>(std::move(buffer));
  return t;
}

Expected<DeviceTensor> DeviceTensor::fromHost(const std::shared_ptr<Device>& device, const Tensor& host) {
  SMELT_TRY(DeviceTensor t, uninitialized(device, host.type()));
  SMELT_CHECK_OK(t.copyFrom(host));
  return t;
}

Status DeviceTensor::copyFrom(const Tensor& host) {
  if (!defined()) return makeError("copy into an undefined device tensor");
  if (host.type() != type_) {
    return makeError("copy of a {} host tensor into a {} device tensor on {}", host.type().toString(), type_.toString(),
                     device_->id());
  }
  return device_->copyIn(memory(), 0, host.raw(), host.byteSize(), device_->defaultStream());
}

Status DeviceTensor::toHost(Tensor& host) const {
  if (!defined()) return makeError("fetch of an undefined device tensor");
  if (host.type() != type_) {
    return makeError("fetch of a {} device tensor into a {} host tensor", type_.toString(), host.type().toString());
  }
  return device_->copyOut(host.raw(), memory(), 0, host.byteSize(), device_->defaultStream());
}

Expected<Tensor> DeviceTensor::toHost() const {
  Tensor host = Tensor::uninitialized(type_);
  SMELT_CHECK_OK(toHost(host));
  return host;
}

}  // namespace smelt

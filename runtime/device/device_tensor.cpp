// DeviceTensor: pool rentals and host copies.
#include "runtime/device/device_tensor.h"

#include "runtime/device/host_staging.h"

namespace smelt {

Expected<DeviceTensor> DeviceTensor::zeros(const std::shared_ptr<Device>& device, TensorType type) {
  // Fresh blocks hold whatever the driver gives, poisoned ones 0xFF: the fill zeroes what the tensor
  // covers (so the pool need not zero it first).
  SMELT_TRY(PooledBuffer buffer, MemoryPool::forDevice(device)->rentToOverwrite(type.byteSize()));
  SMELT_CHECK_OK(device->fill(buffer.memory(), 0, type.byteSize(), 0, device->defaultStream()));
  return adopt(device, std::move(type), std::move(buffer));
}

DeviceTensor DeviceTensor::adopt(const std::shared_ptr<Device>& device, TensorType type, PooledBuffer buffer) {
  DeviceTensor t;
  t.type_ = std::move(type);
  t.device_ = device;
  t.buffer_ = std::make_shared<PooledBuffer>(std::move(buffer));
  return t;
}

Expected<DeviceTensor> DeviceTensor::uninitialized(const std::shared_ptr<Device>& device, TensorType type) {
  SMELT_TRY(PooledBuffer buffer, MemoryPool::forDevice(device)->rent(type.byteSize()));
  return adopt(device, std::move(type), std::move(buffer));
}

Expected<DeviceTensor> DeviceTensor::toOverwrite(const std::shared_ptr<Device>& device, TensorType type) {
  SMELT_TRY(PooledBuffer buffer, MemoryPool::forDevice(device)->rentToOverwrite(type.byteSize()));
  return adopt(device, std::move(type), std::move(buffer));
}

Expected<DeviceTensor> DeviceTensor::fromHost(const std::shared_ptr<Device>& device, const Tensor& host) {
  SMELT_TRY(DeviceTensor t, toOverwrite(device, host.type()));
  SMELT_CHECK_OK(t.copyFrom(host));
  return t;
}

Expected<DeviceTensor> DeviceTensor::fromHostAsync(const std::shared_ptr<Device>& device, const Tensor& host,
                                                   DeviceStream& stream) {
  if (&stream == &device->defaultStream()) return fromHost(device, host);
  SMELT_TRY(PooledBuffer buffer, MemoryPool::forDevice(device)->rentToOverwrite(host.byteSize()));
  // The pool zeroes a recycled block's tail on the default stream: the upload is ordered after it.
  SMELT_TRY(std::unique_ptr<DeviceEvent> rented, device->defaultStream().record());
  SMELT_CHECK_OK(stream.wait(*rented));
  std::shared_ptr<DeviceEvent> landed;
  SMELT_CHECK_OK(HostStaging::forDevice(device)->copyIn(buffer.memory(), 0, host.raw(), host.byteSize(), stream, &landed));
  if (!landed) {
    // A direct (small) copy: its own event, so the tensor is waited for like a staged one.
    SMELT_TRY(std::unique_ptr<DeviceEvent> recorded, stream.record());
    landed = std::move(recorded);
  }
  DeviceTensor t;
  t.type_ = host.type();
  t.device_ = device;
  t.ready_ = std::move(landed);
  // The block goes back to the pool once the upload into it is ordered before the default stream,
  // where the pool's next renter starts (the wait is on the device: dropping a tensor never blocks).
  t.buffer_ = std::shared_ptr<PooledBuffer>(new PooledBuffer(std::move(buffer)),
                                            [ready = t.ready_, device](PooledBuffer* b) {
                                              if (!device->defaultStream().wait(*ready).ok()) (void)ready->synchronize();
                                              delete b;
                                            });
  return t;
}

Status DeviceTensor::waitUntilReady(DeviceStream& stream) const {
  if (!ready_) return Status::success();
  SMELT_TRY(bool landed, ready_->done());
  return landed ? Status::success() : stream.wait(*ready_);
}

Status DeviceTensor::copyFrom(const Tensor& host) {
  if (!defined()) return makeError("copy into an undefined device tensor");
  if (host.type() != type_) {
    return makeError("copy of a {} host tensor into a {} device tensor on {}", host.type().toString(), type_.toString(),
                     device_->id());
  }
  DeviceStream& stream = device_->defaultStream();
  // Writing over a tensor still being uploaded on another stream would race that upload.
  SMELT_CHECK_OK(waitUntilReady(stream));
  return HostStaging::forDevice(device_)->copyIn(memory(), 0, host.raw(), host.byteSize(), stream);
}

Status DeviceTensor::toHost(Tensor& host) const {
  if (!defined()) return makeError("fetch of an undefined device tensor");
  if (host.type() != type_) {
    return makeError("fetch of a {} device tensor into a {} host tensor", type_.toString(), host.type().toString());
  }
  DeviceStream& stream = device_->defaultStream();
  SMELT_CHECK_OK(waitUntilReady(stream));
  const HostFetch fetch{host.raw(), memory(), 0, host.byteSize()};
  return HostStaging::forDevice(device_)->copyOut({&fetch, 1}, stream);
}

Expected<Tensor> DeviceTensor::toHost() const {
  Tensor host = Tensor::uninitialized(type_);
  SMELT_CHECK_OK(toHost(host));
  return host;
}

}  // namespace smelt

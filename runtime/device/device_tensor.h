// A tensor that lives on a device, in memory rented from the device's pool: what executables take
// and return so that parameters, optimizer state and activations stay on the device between kernels
// and steps. Copies with the host happen only in fromHost(), fromHostAsync() and toHost(), through
// pinned staging memory (host_staging.h). Copies of a DeviceTensor share its memory (as
// torch.Tensor's); the memory returns to the pool with the last copy.
//   SMELT_TRY(DeviceTensor w, DeviceTensor::fromHost(device, Tensor::of<float>({2}, {1, 2})));
//   SMELT_TRY(Tensor back, w.toHost());
// Overlapping the next batch's upload with this step's kernels (as a prefetching data loader does):
//   SMELT_TRY(DeviceTensor next, DeviceTensor::fromHostAsync(device, batch, *copyStream));
//   ... run the step on the default stream; the executable waits for `next` on the device when fed it.
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
  /// A tensor of `type` on `device` for a caller that overwrites it whole right away (a copy into it
  /// enqueued before anyone else sees it): a recycled block is not zeroed first.
  static Expected<DeviceTensor> toOverwrite(const std::shared_ptr<Device>& device, TensorType type);
  /// A copy of `host` on `device`, enqueued on the default stream; `host` may be reused on return.
  static Expected<DeviceTensor> fromHost(const std::shared_ptr<Device>& device, const Tensor& host);
  /// The same on `stream`, which may run beside the default stream: the tensor is ready once the
  /// stream passes the copy (ready()), and whoever uses it on another stream waits for that on the
  /// device (waitUntilReady()), as executables and toHost() do. `host` may be reused on return.
  static Expected<DeviceTensor> fromHostAsync(const std::shared_ptr<Device>& device, const Tensor& host,
                                              DeviceStream& stream);

  /// The tensor's values on the host (waits for the work before it on the default stream).
  Expected<Tensor> toHost() const;
  /// The same into `host`, which must have this type.
  Status toHost(Tensor& host) const;
  /// Overwrites the values from `host` (same type).
  Status copyFrom(const Tensor& host);
  /// Makes work enqueued on `stream` from now on wait until this tensor's asynchronous upload has
  /// landed (nothing to wait for when it was made on the default stream or already landed).
  Status waitUntilReady(DeviceStream& stream) const;
  /// The event after the asynchronous upload that made this tensor, or null.
  const std::shared_ptr<DeviceEvent>& ready() const { return ready_; }

  const TensorType& type() const { return type_; }
  std::size_t byteSize() const { return type_.byteSize(); }
  bool defined() const { return buffer_ != nullptr; }
  /// Whether no other DeviceTensor shares this one's memory.
  bool unique() const { return buffer_ && buffer_.use_count() == 1; }
  Device& device() const { return *device_; }
  const std::shared_ptr<Device>& devicePtr() const { return device_; }
  DeviceMemory memory() const { return buffer_ ? buffer_->memory() : DeviceMemory{}; }

 private:
  static DeviceTensor adopt(const std::shared_ptr<Device>& device, TensorType type, PooledBuffer buffer);

  TensorType type_;
  std::shared_ptr<Device> device_;
  std::shared_ptr<PooledBuffer> buffer_;
  std::shared_ptr<DeviceEvent> ready_;
};

using DeviceTensorMap = std::map<std::string, DeviceTensor, std::less<>>;

}  // namespace smelt

// The Device interface's defaults and the error classifiers.
#include "runtime/device/device.h"

#include <cstdlib>
#include <new>

namespace smelt {

std::string_view deviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kOpenCl: return "opencl";
    case DeviceKind::kCuda: return "cuda";
    case DeviceKind::kHip: return "hip";
  }
  return "?";
}

namespace {

/// Plain 4 KiB-aligned host memory, for devices without page-locked memory of their own.
class AlignedHostMemory final : public PinnedHostMemory {
 public:
  explicit AlignedHostMemory(std::size_t bytes)
      : bytes_(bytes), data_(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096 + 4096)) {}
  ~AlignedHostMemory() override { std::free(data_); }
  void* data() override { return data_; }
  std::size_t bytes() const override { return bytes_; }
  bool ok() const { return data_ != nullptr; }

 private:
  std::size_t bytes_;
  void* data_;
};

}  // namespace

Expected<std::unique_ptr<PinnedHostMemory>> Device::allocatePinned(std::size_t bytes) {
  auto memory = std::make_unique<AlignedHostMemory>(bytes);
  if (!memory->ok()) return makeError("{}: out of memory: {} bytes of host memory", id(), bytes);
  return std::unique_ptr<PinnedHostMemory>(std::move(memory));
}

Status Device::reset() { return makeError("{}: the device cannot be reset", id()); }

bool isOutOfMemory(const Error& error) { return error.message().find("out of memory") != std::string::npos; }

bool isDeviceLost(const Error& error) { return error.message().find("device lost") != std::string::npos; }

}  // namespace smelt

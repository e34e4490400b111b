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
  if (!memory->ok()) {
    return Error(fmt::format("{}: out of memory: {} bytes of host memory", id(), bytes), ErrorKind::kOutOfMemory);
  }
  return std::unique_ptr<PinnedHostMemory>(std::move(memory));
}

Expected<double> DeviceEvent::elapsedMsSince(DeviceEvent&) {
  return makeError("this device's events carry no timestamps");
}

void PinnedRanges::add(const void* data, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  ranges_[static_cast<const char*>(data)] = bytes;
}

void PinnedRanges::remove(const void* data) {
  std::lock_guard lock(mutex_);
  ranges_.erase(static_cast<const char*>(data));
}

bool PinnedRanges::contains(const void* data, std::size_t bytes) const {
  auto* c = static_cast<const char*>(data);
  std::lock_guard lock(mutex_);
  auto it = ranges_.upper_bound(c);
  if (it == ranges_.begin()) return false;
  --it;
  return c + bytes <= it->first + it->second;
}

namespace {

class TrackedPinned final : public PinnedHostMemory {
 public:
  TrackedPinned(PinnedRanges& ranges, std::unique_ptr<PinnedHostMemory> inner) : ranges_(ranges), inner_(std::move(inner)) {
    ranges_.add(inner_->data(), inner_->bytes());
  }
  ~TrackedPinned() override { ranges_.remove(inner_->data()); }
  void* data() override { return inner_->data(); }
  std::size_t bytes() const override { return inner_->bytes(); }

 private:
  PinnedRanges& ranges_;
  std::unique_ptr<PinnedHostMemory> inner_;
};

}  // namespace

std::unique_ptr<PinnedHostMemory> trackPinned(PinnedRanges& ranges, std::unique_ptr<PinnedHostMemory> memory) {
  return std::make_unique<TrackedPinned>(ranges, std::move(memory));
}

bool isOutOfMemory(const Error& error) { return error.kind() == ErrorKind::kOutOfMemory; }

bool isDeviceLost(const Error& error) { return error.kind() == ErrorKind::kDeviceLost; }

Status DeviceKernels::launch(const std::string& symbol, std::span<const KernelBufferArg> buffers, std::int64_t points,
                             DeviceStream& stream) {
  SMELT_TRY(std::unique_ptr<PreparedLaunch> prepared, prepare(symbol, buffers, LaunchShape{.points = points}));
  return prepared->launch(stream);
}

Status Device::reset() { return makeError("{}: this device cannot be reset", id()); }

}  // namespace smelt

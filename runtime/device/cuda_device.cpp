// CudaDevice: Device over cuda::Context's raw calls. DeviceMemory holds the CUdeviceptr.
#include "runtime/device/cuda_device.h"

#include "runtime/cuda/cuda_driver.h"
#include "runtime/device/fault_injection.h"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace smelt {

namespace {

std::uint64_t addressOf(const DeviceMemory& m) { return reinterpret_cast<std::uintptr_t>(m.handle); }

class CudaEvent final : public DeviceEvent {
 public:
  CudaEvent(cuda::Context& context, void* event) : context_(context), event_(event) {}
  ~CudaEvent() override { context_.destroyEvent(event_); }
  void* get() const { return event_; }
  Status synchronize() override { return context_.synchronizeEvent(event_); }
  Expected<bool> done() override { return context_.eventDone(event_); }
  Expected<double> elapsedMsSince(DeviceEvent& start) override {
    return context_.elapsedMs(static_cast<CudaEvent&>(start).get(), event_);
  }

 private:
  cuda::Context& context_;
  void* event_;
};

class CudaStream final : public DeviceStream {
 public:
  CudaStream(cuda::Context& context, void* stream, bool owned) : context_(context), stream_(stream), owned_(owned) {}
  ~CudaStream() override {
    if (owned_) context_.destroyStream(stream_);
  }
  void* get() const { return stream_; }
  Status synchronize() override {
    if (faultInjector().trigger(Fault::kDeviceLost)) return makeError("cuda: device lost (injected by SMELT_FAULTS)");
    return context_.synchronizeStream(stream_);
  }
  Expected<std::unique_ptr<DeviceEvent>> record(bool timing) override {
    SMELT_TRY(void* event, context_.recordEvent(stream_, timing));
    return std::unique_ptr<DeviceEvent>(std::make_unique<CudaEvent>(context_, event));
  }
  Status wait(DeviceEvent& event) override {
    return context_.streamWaitEvent(stream_, static_cast<CudaEvent&>(event).get());
  }

 private:
  cuda::Context& context_;
  void* stream_;
  bool owned_;
};

class CudaPinned final : public PinnedHostMemory {
 public:
  CudaPinned(cuda::Context& context, void* data, std::size_t bytes) : context_(context), data_(data), bytes_(bytes) {}
  ~CudaPinned() override { context_.freeHost(data_); }
  void* data() override { return data_; }
  std::size_t bytes() const override { return bytes_; }

 private:
  cuda::Context& context_;
  void* data_;
  std::size_t bytes_;
};

class CudaKernels final : public DeviceKernels {
 public:
  CudaKernels(cuda::Context& context, cuda::Module module) : context_(context), module_(std::move(module)) {}
  Status launch(const std::string& symbol, std::span<const KernelBufferArg> buffers, std::int64_t points,
                DeviceStream& stream) override {
    if (faultInjector().trigger(Fault::kDeviceLost)) {
      return makeError("cuda: device lost (injected by SMELT_FAULTS) launching {}", symbol);
    }
    if (points <= 0) return Status::success();
    cuda::Function function;
    {
      std::lock_guard lock(mutex_);
      auto it = functions_.find(symbol);
      if (it == functions_.end()) {
        SMELT_TRY(cuda::Function f, module_.function(symbol));
        it = functions_.emplace(symbol, f).first;
      }
      function = it->second;
    }
    // One address per buffer, then the point count (long long n), each passed by address.
    std::vector<std::uint64_t> args;
    for (const KernelBufferArg& b : buffers) args.push_back(addressOf(b.memory) + static_cast<std::uint64_t>(b.byteOffset));
    args.push_back(static_cast<std::uint64_t>(points));
    std::vector<void*> params;
    for (std::uint64_t& a : args) params.push_back(&a);
    constexpr unsigned kBlock = 256;
    auto blocks = static_cast<unsigned>((points + kBlock - 1) / kBlock);
    return context_.launch(function, {blocks, 1, 1}, {kBlock, 1, 1}, params, 0, static_cast<CudaStream&>(stream).get());
  }

 private:
  cuda::Context& context_;
  cuda::Module module_;
  std::mutex mutex_;
  std::map<std::string, cuda::Function> functions_;
};

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(cuda::Context context) : context_(std::move(context)) {
    const cuda::DeviceInfo& d = context_.device();
    description_.kind = DeviceKind::kCuda;
    description_.ordinal = d.ordinal;
    description_.id = fmt::format("cuda:{}", d.ordinal);
    description_.name = d.name;
    if (auto v = cuda::driverVersion()) description_.driver = fmt::format("CUDA driver {}.{}", v->major, v->minor);
    description_.memoryBytes = d.total_memory;
    description_.computeUnits = static_cast<unsigned>(d.multiprocessors);
    description_.fp64 = true;
    description_.fp16 = d.cc_major >= 6;
    description_.capabilities = fmt::format("sm_{}{}", d.cc_major, d.cc_minor);
    stream_ = std::make_unique<CudaStream>(context_, nullptr, false);
  }
  const DeviceDescription& description() const override { return description_; }

  Expected<DeviceMemory> allocate(std::size_t bytes) override {
    if (faultInjector().trigger(Fault::kOutOfMemory)) {
      return makeError("{}: out of memory allocating {} bytes (injected by SMELT_FAULTS)", description_.id, bytes);
    }
    SMELT_TRY(std::uint64_t address, context_.allocateRaw(bytes));
    return DeviceMemory{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), bytes};
  }
  void release(DeviceMemory memory) override { context_.freeRaw(addressOf(memory)); }

  Status fill(DeviceMemory memory, std::size_t offset, std::size_t bytes, std::uint8_t value,
              DeviceStream& stream) override {
    SMELT_CHECK_OK(checkRange(memory, offset, bytes));
    return context_.fillAsync(addressOf(memory) + offset, value, bytes, streamOf(stream));
  }
  Status copyIn(DeviceMemory dst, std::size_t offset, const void* src, std::size_t bytes,
                DeviceStream& stream) override {
    SMELT_CHECK_OK(checkRange(dst, offset, bytes));
    // From pageable memory the driver stages the copy before returning, so `src` may be reused.
    return context_.copyHostToDeviceAsync(addressOf(dst) + offset, src, bytes, streamOf(stream));
  }
  Status copyOut(void* dst, DeviceMemory src, std::size_t offset, std::size_t bytes, DeviceStream& stream) override {
    SMELT_CHECK_OK(checkRange(src, offset, bytes));
    SMELT_CHECK_OK(context_.copyDeviceToHostAsync(dst, addressOf(src) + offset, bytes, streamOf(stream)));
    // Into pageable memory the data is there only once the stream gets here: wait, as promised.
    return pinned_.contains(dst, bytes) ? Status::success() : stream.synchronize();
  }
  Status copy(DeviceMemory dst, std::size_t dstOffset, DeviceMemory src, std::size_t srcOffset, std::size_t bytes,
              DeviceStream& stream) override {
    SMELT_CHECK_OK(checkRange(dst, dstOffset, bytes));
    SMELT_CHECK_OK(checkRange(src, srcOffset, bytes));
    return context_.copyDeviceToDeviceAsync(addressOf(dst) + dstOffset, addressOf(src) + srcOffset, bytes,
                                            streamOf(stream));
  }
  DeviceStream& defaultStream() override { return *stream_; }
  Expected<std::unique_ptr<DeviceStream>> createStream() override {
    SMELT_TRY(void* stream, context_.createStream());
    return std::unique_ptr<DeviceStream>(std::make_unique<CudaStream>(context_, stream, true));
  }
  Expected<std::unique_ptr<PinnedHostMemory>> allocatePinned(std::size_t bytes) override {
    SMELT_TRY(void* data, context_.allocateHost(bytes));
    return trackPinned(pinned_, std::make_unique<CudaPinned>(context_, data, bytes));
  }
  Expected<std::shared_ptr<DeviceKernels>> loadKernels(const KernelImage& image) override {
    if (image.format != KernelImage::Format::kPtx) return makeError("{}: CUDA loads PTX", description_.id);
    SMELT_TRY(cuda::Module module, context_.loadModule(image.data));
    return std::shared_ptr<DeviceKernels>(std::make_shared<CudaKernels>(context_, std::move(module)));
  }
  Status synchronize() override {
    if (faultInjector().trigger(Fault::kDeviceLost)) return makeError("cuda: device lost (injected by SMELT_FAULTS)");
    return context_.synchronize();
  }

 private:
  static void* streamOf(DeviceStream& stream) { return static_cast<CudaStream&>(stream).get(); }
  Status checkRange(const DeviceMemory& m, std::size_t offset, std::size_t bytes) const {
    if (offset > m.bytes || bytes > m.bytes - offset) {
      return makeError("{}: {} bytes at offset {} overrun a {}-byte buffer", description_.id, bytes, offset, m.bytes);
    }
    return Status::success();
  }

  cuda::Context context_;
  DeviceDescription description_;
  std::unique_ptr<CudaStream> stream_;
  PinnedRanges pinned_;
};

}  // namespace

Expected<std::shared_ptr<Device>> cudaDevice(int ordinal) {
  static std::mutex mutex;
  static auto* devices = new std::map<int, std::shared_ptr<Device>>();  // live for the process, as contexts
  std::lock_guard lock(mutex);
  if (auto it = devices->find(ordinal); it != devices->end()) return it->second;
  SMELT_TRY(cuda::Context context, cuda::Context::open(ordinal));
  std::shared_ptr<Device> device = std::make_shared<CudaDevice>(std::move(context));
  devices->emplace(ordinal, device);
  return device;
}

}  // namespace smelt

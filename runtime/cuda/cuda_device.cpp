// CudaDevice: Device over cuda::Context's raw calls. DeviceMemory holds the CUdeviceptr.
#include "runtime/cuda/cuda_device.h"

#include "runtime/cuda/cuda_driver.h"
#include "codegen/cache/cache_key.h"
#include "codegen/log.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
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

class CudaGraph final : public RecordedWork {
 public:
  CudaGraph(cuda::Context& context, void* exec) : context_(context), exec_(exec) {}
  ~CudaGraph() override { context_.destroyGraphExec(exec_); }
  Status replay(DeviceStream& stream) override;

 private:
  cuda::Context& context_;
  void* exec_;
};

class CudaStream final : public DeviceStream {
 public:
  CudaStream(cuda::Context& context, void* stream, bool owned) : context_(context), stream_(stream), owned_(owned) {}
  ~CudaStream() override {
    if (owned_) context_.destroyStream(stream_);
  }
  void* get() const { return stream_; }
  Status synchronize() override { return context_.synchronizeStream(stream_); }
  Expected<std::unique_ptr<DeviceEvent>> record(bool timing) override {
    SMELT_TRY(void* event, context_.recordEvent(stream_, timing));
    return std::unique_ptr<DeviceEvent>(std::make_unique<CudaEvent>(context_, event));
  }
  Expected<bool> recordAgain(DeviceEvent& event) override {
    SMELT_CHECK_OK(context_.recordEventAgain(static_cast<CudaEvent&>(event).get(), stream_));
    return true;
  }
  Status wait(DeviceEvent& event) override {
    return context_.streamWaitEvent(stream_, static_cast<CudaEvent&>(event).get());
  }
  Expected<std::unique_ptr<RecordedWork>> capture(const std::function<Status()>& enqueue) override {
    if (!stream_) return std::unique_ptr<RecordedWork>();  // the legacy default stream cannot be captured
    SMELT_CHECK_OK(context_.beginCapture(stream_));
    Status enqueued = enqueue();
    Expected<void*> exec = context_.endCapture(stream_);  // always ended, so the stream is usable again
    if (!enqueued.ok()) {
      if (exec.ok()) context_.destroyGraphExec(*exec);
      return enqueued.error();
    }
    if (!exec.ok()) return exec.error();
    return std::unique_ptr<RecordedWork>(std::make_unique<CudaGraph>(context_, *exec));
  }

 private:
  cuda::Context& context_;
  void* stream_;
  bool owned_;
};

Status CudaGraph::replay(DeviceStream& stream) {
  return context_.launchGraph(exec_, static_cast<CudaStream&>(stream).get());
}

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

/// A launch with its argument values (each buffer's device address, then the number of points) and
/// cuLaunchKernel's pointers to them fixed once; setBuffer writes one address.
class CudaLaunch final : public PreparedLaunch {
 public:
  CudaLaunch(cuda::Context& context, cuda::Function function, std::span<const KernelBufferArg> buffers,
             LaunchShape shape)
      : context_(context), function_(function), shape_(shape) {
    for (const KernelBufferArg& b : buffers) args_.push_back(addressOf(b.memory) + static_cast<std::uint64_t>(b.byteOffset));
    args_.push_back(static_cast<std::uint64_t>(shape.points));  // long long n
    for (std::uint64_t& a : args_) params_.push_back(&a);
  }
  void setBuffer(std::size_t index, const KernelBufferArg& arg) override {
    args_[index] = addressOf(arg.memory) + static_cast<std::uint64_t>(arg.byteOffset);
  }
  Status launch(DeviceStream& stream) override {
    if (shape_.points <= 0) return Status::success();
    // One block per point for a block-mapped kernel; else one thread per point in blocks of 256.
    const auto threads = static_cast<unsigned>(shape_.blockThreads());
    const auto blocks = static_cast<unsigned>(shape_.blocks());
    return context_.launch(function_, {blocks, 1, 1}, {threads, 1, 1}, params_, 0,
                           static_cast<CudaStream&>(stream).get());
  }

 private:
  cuda::Context& context_;
  cuda::Function function_;
  LaunchShape shape_;
  std::vector<std::uint64_t> args_;
  std::vector<void*> params_;
};

class CudaKernels final : public DeviceKernels {
 public:
  CudaKernels(cuda::Context& context, cuda::Module module) : context_(context), module_(std::move(module)) {}
  Expected<std::unique_ptr<PreparedLaunch>> prepare(const std::string& symbol, std::span<const KernelBufferArg> buffers,
                                                    const LaunchShape& shape) override {
    // One 1-D grid covers the domain; cuLaunchKernel takes < 2^31 blocks.
    if (shape.blocks() > std::numeric_limits<int32_t>::max()) {
      return makeError("{}: {} points need more than 2^31 - 1 blocks of {}", symbol, shape.points, shape.blockThreads());
    }
    SMELT_TRY(cuda::Function function, module_.function(symbol));
    return std::unique_ptr<PreparedLaunch>(std::make_unique<CudaLaunch>(context_, function, buffers, shape));
  }

 private:
  cuda::Context& context_;
  cuda::Module module_;
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
  cuda::Context& context() { return context_; }

  Expected<DeviceMemory> allocate(std::size_t bytes) override {
    Expected<std::uint64_t> allocated = context_.allocateRaw(bytes);
    if (!allocated) return allocated.error().withContext(description_.id);
    std::uint64_t address = *allocated;
    return DeviceMemory{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), bytes};
  }
  void release(DeviceMemory memory) override { context_.freeRaw(addressOf(memory)); }
  void forget(DeviceMemory) override {}  // freed by the context's reset

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
  Expected<std::shared_ptr<DeviceKernels>> loadKernels(const KernelImage& image, bool* reused) override {
    if (image.format != KernelImage::Format::kPtx && image.format != KernelImage::Format::kCubin) {
      return makeError("{}: CUDA loads CUBIN or PTX", description_.id);
    }
    // One module per image and process: the executables of one image share it.
    std::string key = fmt::format("{} {}", static_cast<int>(image.format),
                                  cacheDigest(std::string_view(image.data.data(), image.data.size())));
    std::lock_guard lock(modulesMutex_);
    auto it = modules_.find(key);
    if (reused) *reused = it != modules_.end();
    if (it == modules_.end()) {
      SMELT_TRY(cuda::Module module, context_.loadModule(image.data));
      it = modules_.emplace(std::move(key), std::make_shared<CudaKernels>(context_, std::move(module))).first;
    }
    return std::shared_ptr<DeviceKernels>(it->second);
  }
  Status synchronize() override { return context_.synchronize(); }

  /// Recreates the primary context after a sticky error: every allocation, module and stream of the
  /// old one is gone (the modules are forgotten, never unloaded).
  Status reset() override {
    std::lock_guard lock(modulesMutex_);
    for (auto& [key, kernels] : modules_) retired_.push_back(kernels);
    modules_.clear();
    SMELT_CHECK_OK(context_.reset());
    generation_.fetch_add(1, std::memory_order_acq_rel);
    logger().info("{}: context reset (generation {})", description_.id, generation());
    return Status::success();
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
  std::mutex modulesMutex_;
  std::map<std::string, std::shared_ptr<CudaKernels>> modules_;
  std::vector<std::shared_ptr<CudaKernels>> retired_;  // of a reset context: never unloaded
};

}  // namespace

cuda::Context& cudaContextOf(Device& device) { return static_cast<CudaDevice&>(device).context(); }
void* cudaStreamOf(DeviceStream& stream) { return static_cast<CudaStream&>(stream).get(); }
std::uint64_t cudaAddressOf(const DeviceMemory& memory) { return addressOf(memory); }

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

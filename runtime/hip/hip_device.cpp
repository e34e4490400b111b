// HipDevice: Device over the HIP runtime API, declared here by hand (the few calls smelt makes, with
// HIP's C ABI: hipError_t is an int enum, handles are pointers) so nothing of HIP is needed to build.
#include "runtime/hip/hip_device.h"

#include "codegen/log.h"
#include "runtime/device/fault_injection.h"
#include "runtime/device/private_namespace.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <type_traits>
#include <vector>

namespace smelt {

namespace {

using HipError = int;
constexpr HipError kHipSuccess = 0;
constexpr HipError kHipErrorOutOfMemory = 2;
constexpr HipError kHipErrorIllegalAddress = 700;
constexpr HipError kHipErrorLaunchFailure = 719;
constexpr HipError kHipErrorAssert = 710;
constexpr HipError kHipErrorEccNotCorrectable = 214;
constexpr HipError kHipErrorNoDevice = 100;
constexpr HipError kHipErrorLaunchTimeOut = 702;
constexpr HipError kHipErrorContextIsDestroyed = 709;
constexpr HipError kHipErrorNotReady = 600;
using HipStream = void*;
using HipEvent = void*;

// clang-format off
#define SMELT_HIP_FUNCTIONS(X)                                                                        \
  X(hipGetDeviceCount, HipError(int*)) X(hipSetDevice, HipError(int))                                  \
  X(hipDeviceGetName, HipError(char*, int, int)) X(hipDeviceTotalMem, HipError(size_t*, int))          \
  X(hipRuntimeGetVersion, HipError(int*)) X(hipGetErrorString, const char*(HipError))                  \
  X(hipMalloc, HipError(void**, size_t)) X(hipFree, HipError(void*))                                   \
  X(hipHostMalloc, HipError(void**, size_t, unsigned)) X(hipHostFree, HipError(void*))                 \
  X(hipMemcpyHtoDAsync, HipError(void*, const void*, size_t, HipStream))                               \
  X(hipMemcpyDtoHAsync, HipError(void*, void*, size_t, HipStream))                                     \
  X(hipMemcpyDtoDAsync, HipError(void*, void*, size_t, HipStream))                                     \
  X(hipMemsetD8Async, HipError(void*, unsigned char, size_t, HipStream))                               \
  X(hipStreamCreateWithFlags, HipError(HipStream*, unsigned)) X(hipStreamDestroy, HipError(HipStream)) \
  X(hipStreamSynchronize, HipError(HipStream)) X(hipStreamWaitEvent, HipError(HipStream, HipEvent, unsigned)) \
  X(hipEventCreateWithFlags, HipError(HipEvent*, unsigned)) X(hipEventRecord, HipError(HipEvent, HipStream)) \
  X(hipEventSynchronize, HipError(HipEvent)) X(hipEventQuery, HipError(HipEvent))                      \
  X(hipEventDestroy, HipError(HipEvent)) X(hipDeviceSynchronize, HipError())                           \
  X(hipEventElapsedTime, HipError(float*, HipEvent, HipEvent)) X(hipDeviceReset, HipError())           \
  X(hipModuleLoadData, HipError(void**, const void*)) X(hipModuleGetFunction, HipError(void**, void*, const char*)) \
  X(hipModuleLaunchKernel, HipError(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
                                    unsigned, HipStream, void**, void**))
// clang-format on

struct HipApi {
#define SMELT_HIP_MEMBER(name, ...) std::add_pointer_t<__VA_ARGS__> name = nullptr;
  SMELT_HIP_FUNCTIONS(SMELT_HIP_MEMBER)
#undef SMELT_HIP_MEMBER
  int version = 0;
  PrivateNamespace ns;  // the HIP runtime's: see enterThread()
};

Expected<HipApi*> loadHip() {
  // In a namespace of its own: the HIP runtime brings its own LLVM, beside smelt's LLVM 16 JIT.
  PrivateNamespace ns = PrivateNamespace::open({"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"});
  if (!ns.handle()) return makeError("HIP runtime not found: {}", ns.errors());
  void* handle = ns.handle();
  auto api = std::make_unique<HipApi>();
  api->ns = std::move(ns);
#define SMELT_HIP_BIND(name, ...)                                                                \
  api->name = reinterpret_cast<std::add_pointer_t<__VA_ARGS__>>(dlsym(handle, #name));           \
  if (!api->name) return makeError("HIP runtime unusable: symbol {} not found", #name);
  SMELT_HIP_FUNCTIONS(SMELT_HIP_BIND)
#undef SMELT_HIP_BIND
  api->hipRuntimeGetVersion(&api->version);
  return api.release();  // kept for the process, as drivers do not survive dlclose
}

const Expected<HipApi*>& hip() {
  static const Expected<HipApi*> api = loadHip();
  if (api) (*api)->ns.enterThread();
  return api;
}

/// What a HIP error code means for recovery: out of memory, or an error that poisons the device's
/// context (a faulting kernel, a lost device), which only hipDeviceReset clears.
ErrorKind kindOf(HipError rc) {
  if (rc == kHipErrorOutOfMemory) return ErrorKind::kOutOfMemory;
  if (rc == kHipErrorIllegalAddress || rc == kHipErrorLaunchFailure || rc == kHipErrorAssert ||
      rc == kHipErrorEccNotCorrectable || rc == kHipErrorLaunchTimeOut || rc == kHipErrorContextIsDestroyed ||
      rc == kHipErrorNoDevice) {
    return ErrorKind::kDeviceLost;
  }
  return ErrorKind::kGeneric;
}

Error hipError(const HipApi& api, HipError rc, std::string_view call) {
  ErrorKind kind = kindOf(rc);
  return Error(fmt::format("hip: {} failed: {} ({}){}", call, api.hipGetErrorString(rc), rc,
                           kind == ErrorKind::kOutOfMemory ? " (out of memory)"
                           : kind == ErrorKind::kDeviceLost ? " (device lost)"
                                                            : ""),
               kind);
}

/// SMELT_FAULTS' faults as the codes HIP would return.
HipError injected(Fault fault) {
  if (!faultInjector().trigger(fault)) return kHipSuccess;
  return fault == Fault::kOutOfMemory ? kHipErrorOutOfMemory : kHipErrorIllegalAddress;
}

#define SMELT_HIP_CALL(call, what)                                          \
  do {                                                                      \
    api_.ns.enterThread();                                                  \
    if (HipError rc_ = api_.call; rc_ != kHipSuccess) return hipError(api_, rc_, what); \
  } while (0)

class HipEventImpl final : public DeviceEvent {
 public:
  HipEventImpl(const HipApi& api, HipEvent event) : api_(api), event_(event) {}
  ~HipEventImpl() override { api_.hipEventDestroy(event_); }
  HipEvent get() const { return event_; }
  Status synchronize() override {
    SMELT_HIP_CALL(hipEventSynchronize(event_), "hipEventSynchronize");
    return Status::success();
  }
  Expected<bool> done() override {
    HipError rc = api_.hipEventQuery(event_);
    if (rc == kHipSuccess) return true;
    if (rc == kHipErrorNotReady) return false;
    return hipError(api_, rc, "hipEventQuery");
  }
  Expected<double> elapsedMsSince(DeviceEvent& start) override {
    float ms = 0;
    SMELT_HIP_CALL(hipEventElapsedTime(&ms, static_cast<HipEventImpl&>(start).get(), event_), "hipEventElapsedTime");
    return static_cast<double>(ms);
  }

 private:
  const HipApi& api_;
  HipEvent event_;
};

class HipStreamImpl final : public DeviceStream {
 public:
  HipStreamImpl(const HipApi& api, int ordinal, HipStream stream, bool owned)
      : api_(api), ordinal_(ordinal), stream_(stream), owned_(owned) {}
  ~HipStreamImpl() override {
    if (owned_) api_.hipStreamDestroy(stream_);
  }
  HipStream get() const { return stream_; }
  Status synchronize() override {
    SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
    if (HipError rc = injected(Fault::kDeviceLost); rc != kHipSuccess) return hipError(api_, rc, "hipStreamSynchronize");
    SMELT_HIP_CALL(hipStreamSynchronize(stream_), "hipStreamSynchronize");
    return Status::success();
  }
  Expected<std::unique_ptr<DeviceEvent>> record(bool timing) override {
    HipEvent event = nullptr;
    SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
    SMELT_HIP_CALL(hipEventCreateWithFlags(&event, timing ? 0 : 2 /*hipEventDisableTiming*/), "hipEventCreateWithFlags");
    SMELT_HIP_CALL(hipEventRecord(event, stream_), "hipEventRecord");
    return std::unique_ptr<DeviceEvent>(std::make_unique<HipEventImpl>(api_, event));
  }
  Expected<bool> recordAgain(DeviceEvent& event) override {
    SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
    SMELT_HIP_CALL(hipEventRecord(static_cast<HipEventImpl&>(event).get(), stream_), "hipEventRecord");
    return true;
  }
  Status wait(DeviceEvent& event) override {
    SMELT_HIP_CALL(hipStreamWaitEvent(stream_, static_cast<HipEventImpl&>(event).get(), 0), "hipStreamWaitEvent");
    return Status::success();
  }

 private:
  const HipApi& api_;
  int ordinal_;
  HipStream stream_;
  bool owned_;
};

class HipPinned final : public PinnedHostMemory {
 public:
  HipPinned(const HipApi& api, void* data, std::size_t bytes) : api_(api), data_(data), bytes_(bytes) {}
  ~HipPinned() override { api_.hipHostFree(data_); }
  void* data() override { return data_; }
  std::size_t bytes() const override { return bytes_; }

 private:
  const HipApi& api_;
  void* data_;
  std::size_t bytes_;
};

/// A launch with its argument values and hipModuleLaunchKernel's pointers to them fixed once.
class HipLaunch final : public PreparedLaunch {
 public:
  HipLaunch(const HipApi& api, int ordinal, void* function, std::string symbol, std::span<const KernelBufferArg> buffers,
            LaunchShape shape)
      : api_(api), ordinal_(ordinal), function_(function), symbol_(std::move(symbol)), shape_(shape) {
    for (const KernelBufferArg& b : buffers) args_.push_back(addressOf(b));
    args_.push_back(static_cast<std::uint64_t>(shape.points));
    for (std::uint64_t& a : args_) params_.push_back(&a);
  }
  void setBuffer(std::size_t index, const KernelBufferArg& arg) override { args_[index] = addressOf(arg); }
  Status launch(DeviceStream& stream) override {
    if (shape_.points <= 0) return Status::success();
    const auto threads = static_cast<unsigned>(shape_.blockThreads());
    const auto blocks = static_cast<unsigned>(shape_.blocks());
    SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
    if (HipError rc = injected(Fault::kDeviceLost); rc != kHipSuccess) {
      return hipError(api_, rc, "hipModuleLaunchKernel(" + symbol_ + ")");
    }
    SMELT_HIP_CALL(hipModuleLaunchKernel(function_, blocks, 1, 1, threads, 1, 1, 0,
                                         static_cast<HipStreamImpl&>(stream).get(), params_.data(), nullptr),
                   "hipModuleLaunchKernel(" + symbol_ + ")");
    return Status::success();
  }

 private:
  static std::uint64_t addressOf(const KernelBufferArg& b) {
    return reinterpret_cast<std::uintptr_t>(b.memory.handle) + static_cast<std::uint64_t>(b.byteOffset);
  }
  const HipApi& api_;
  int ordinal_;
  void* function_;
  std::string symbol_;
  LaunchShape shape_;
  std::vector<std::uint64_t> args_;
  std::vector<void*> params_;
};

class HipKernels final : public DeviceKernels {
 public:
  HipKernels(const HipApi& api, int ordinal, void* module) : api_(api), ordinal_(ordinal), module_(module) {}
  Expected<std::unique_ptr<PreparedLaunch>> prepare(const std::string& symbol, std::span<const KernelBufferArg> buffers,
                                                    const LaunchShape& shape) override {
    void* function = nullptr;
    SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
    SMELT_HIP_CALL(hipModuleGetFunction(&function, module_, symbol.c_str()), "hipModuleGetFunction(" + symbol + ")");
    return std::unique_ptr<PreparedLaunch>(std::make_unique<HipLaunch>(api_, ordinal_, function, symbol, buffers, shape));
  }

 private:
  const HipApi& api_;
  int ordinal_;
  void* module_;
};

class HipDevice final : public Device {
 public:
  HipDevice(const HipApi& api, int ordinal) : api_(api), ordinal_(ordinal) {
    description_.kind = DeviceKind::kHip;
    description_.ordinal = ordinal;
    description_.id = fmt::format("hip:{}", ordinal);
    char name[256] = {};
    api.hipDeviceGetName(name, sizeof name - 1, ordinal);
    description_.name = name;
    description_.driver = fmt::format("HIP runtime {}", api.version);
    size_t total = 0;
    api.hipDeviceTotalMem(&total, ordinal);
    description_.memoryBytes = total;
    description_.fp64 = true;
    description_.fp16 = true;
    description_.capabilities = "AMD code objects from HIPRTC";
    stream_ = std::make_unique<HipStreamImpl>(api, ordinal, nullptr, false);
  }
  const DeviceDescription& description() const override { return description_; }

  Expected<DeviceMemory> allocate(std::size_t bytes) override {
    void* p = nullptr;
    SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
    if (HipError rc = injected(Fault::kOutOfMemory); rc != kHipSuccess) {
      return hipError(api_, rc, fmt::format("hipMalloc({} bytes)", bytes));
    }
    SMELT_HIP_CALL(hipMalloc(&p, bytes ? bytes : 1), fmt::format("hipMalloc({} bytes)", bytes));
    return DeviceMemory{p, bytes};
  }
  void release(DeviceMemory memory) override {
    api_.hipSetDevice(ordinal_);
    api_.hipFree(memory.handle);
  }
  void forget(DeviceMemory) override {}  // freed by hipDeviceReset
  Status fill(DeviceMemory memory, std::size_t offset, std::size_t bytes, std::uint8_t value,
              DeviceStream& stream) override {
    SMELT_CHECK_OK(checkRange(memory, offset, bytes));
    if (bytes == 0) return Status::success();
    // The null stream is the calling thread's current device's: make it this one.
    SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
    SMELT_HIP_CALL(hipMemsetD8Async(at(memory, offset), value, bytes, streamOf(stream)), "hipMemsetD8Async");
    return Status::success();
  }
  Status copyIn(DeviceMemory dst, std::size_t offset, const void* src, std::size_t bytes,
                DeviceStream& stream) override {
    SMELT_CHECK_OK(checkRange(dst, offset, bytes));
    if (bytes == 0) return Status::success();
    SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
    SMELT_HIP_CALL(hipMemcpyHtoDAsync(at(dst, offset), src, bytes, streamOf(stream)), "hipMemcpyHtoDAsync");
    return Status::success();
  }
  Status copyOut(void* dst, DeviceMemory src, std::size_t offset, std::size_t bytes, DeviceStream& stream) override {
    SMELT_CHECK_OK(checkRange(src, offset, bytes));
    if (bytes == 0) return Status::success();
    SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
    SMELT_HIP_CALL(hipMemcpyDtoHAsync(dst, at(src, offset), bytes, streamOf(stream)), "hipMemcpyDtoHAsync");
    return pinned_.contains(dst, bytes) ? Status::success() : stream.synchronize();
  }
  Status copy(DeviceMemory dst, std::size_t dstOffset, DeviceMemory src, std::size_t srcOffset, std::size_t bytes,
              DeviceStream& stream) override {
    SMELT_CHECK_OK(checkRange(dst, dstOffset, bytes));
    SMELT_CHECK_OK(checkRange(src, srcOffset, bytes));
    if (bytes == 0) return Status::success();
    SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
    SMELT_HIP_CALL(hipMemcpyDtoDAsync(at(dst, dstOffset), at(src, srcOffset), bytes, streamOf(stream)),
                   "hipMemcpyDtoDAsync");
    return Status::success();
  }
  DeviceStream& defaultStream() override { return *stream_; }
  Expected<std::unique_ptr<DeviceStream>> createStream() override {
    HipStream stream = nullptr;
    SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
    SMELT_HIP_CALL(hipStreamCreateWithFlags(&stream, 1 /*hipStreamNonBlocking*/), "hipStreamCreateWithFlags");
    return std::unique_ptr<DeviceStream>(std::make_unique<HipStreamImpl>(api_, ordinal_, stream, true));
  }
  Expected<std::unique_ptr<PinnedHostMemory>> allocatePinned(std::size_t bytes) override {
    void* data = nullptr;
    if (HipError rc = injected(Fault::kOutOfMemory); rc != kHipSuccess) {
      return hipError(api_, rc, fmt::format("hipHostMalloc({} bytes)", bytes));
    }
    SMELT_HIP_CALL(hipHostMalloc(&data, bytes ? bytes : 1, 0), "hipHostMalloc");
    return trackPinned(pinned_, std::make_unique<HipPinned>(api_, data, bytes));
  }
  Expected<std::shared_ptr<DeviceKernels>> loadKernels(const KernelImage& image, bool* reused) override {
    if (image.format != KernelImage::Format::kAmdCodeObject) {
      return makeError("{}: HIP loads AMD code objects", description_.id);
    }
    std::lock_guard lock(modulesMutex_);
    auto it = modules_.find(image.data);
    if (reused) *reused = it != modules_.end();
    if (it == modules_.end()) {
      void* module = nullptr;
      SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
      SMELT_HIP_CALL(hipModuleLoadData(&module, image.data.data()), "hipModuleLoadData");
      it = modules_.emplace(image.data, std::make_shared<HipKernels>(api_, ordinal_, module)).first;
    }
    return std::shared_ptr<DeviceKernels>(it->second);
  }
  Status synchronize() override {
    SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
    if (HipError rc = injected(Fault::kDeviceLost); rc != kHipSuccess) return hipError(api_, rc, "hipDeviceSynchronize");
    SMELT_HIP_CALL(hipDeviceSynchronize(), "hipDeviceSynchronize");
    return Status::success();
  }
  /// hipDeviceReset: every allocation, module and stream of the device is gone.
  Status reset() override {
    std::lock_guard lock(modulesMutex_);
    modules_.clear();
    SMELT_HIP_CALL(hipSetDevice(ordinal_), "hipSetDevice");
    SMELT_HIP_CALL(hipDeviceReset(), "hipDeviceReset");
    generation_.fetch_add(1, std::memory_order_acq_rel);
    return Status::success();
  }

 private:
  static void* at(const DeviceMemory& m, std::size_t offset) { return static_cast<char*>(m.handle) + offset; }
  static HipStream streamOf(DeviceStream& stream) { return static_cast<HipStreamImpl&>(stream).get(); }
  Status checkRange(const DeviceMemory& m, std::size_t offset, std::size_t bytes) const {
    if (offset > m.bytes || bytes > m.bytes - offset) {
      return makeError("{}: {} bytes at offset {} overrun a {}-byte buffer", description_.id, bytes, offset, m.bytes);
    }
    return Status::success();
  }
  const HipApi& api_;
  int ordinal_;
  DeviceDescription description_;
  std::unique_ptr<HipStreamImpl> stream_;
  PinnedRanges pinned_;
  std::mutex modulesMutex_;
  std::map<std::string, std::shared_ptr<HipKernels>> modules_;  // by code object
};

}  // namespace

ErrorKind hipErrorKind(int code) { return kindOf(code); }

Expected<int> hipDeviceCount() {
  SMELT_TRY(HipApi* api, hip());
  int count = 0;
  if (HipError rc = api->hipGetDeviceCount(&count); rc != kHipSuccess) return hipError(*api, rc, "hipGetDeviceCount");
  return count;
}

Expected<std::shared_ptr<Device>> hipDevice(int ordinal) {
  static std::mutex mutex;
  static auto* devices = new std::map<int, std::shared_ptr<Device>>();
  std::lock_guard lock(mutex);
  if (auto it = devices->find(ordinal); it != devices->end()) return it->second;
  SMELT_TRY(int count, hipDeviceCount());
  if (ordinal < 0 || ordinal >= count) return makeError("hip: no device {} ({} devices)", ordinal, count);
  std::shared_ptr<Device> device = std::make_shared<HipDevice>(*hip().value(), ordinal);
  devices->emplace(ordinal, device);
  return device;
}

}  // namespace smelt

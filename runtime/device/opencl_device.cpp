// OpenClDevice: Device over the OpenCL 1.2 API. Streams are extra in-order queues on the device's
// one context; events are markers.
#include "runtime/device/opencl_device.h"

#include "codegen/log.h"
#include "runtime/device/fault_injection.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

namespace smelt {

namespace {

Error clError(std::string_view device, std::string_view call, cl_int rc) {
  bool oom = rc == CL_MEM_OBJECT_ALLOCATION_FAILURE || rc == CL_OUT_OF_RESOURCES || rc == CL_OUT_OF_HOST_MEMORY;
  return makeError("{}: {} failed: {}{}", device, call, opencl::errorName(rc), oom ? " (out of memory)" : "");
}

class OpenClEvent final : public DeviceEvent {
 public:
  explicit OpenClEvent(cl_event event) : event_(event) {}
  ~OpenClEvent() override { clReleaseEvent(event_); }
  cl_event get() const { return event_; }
  Status synchronize() override {
    if (cl_int rc = clWaitForEvents(1, &event_); rc != CL_SUCCESS) return clError("opencl", "clWaitForEvents", rc);
    return Status::success();
  }
  Expected<bool> done() override {
    cl_int state = 0;
    if (cl_int rc = clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state, nullptr);
        rc != CL_SUCCESS) {
      return clError("opencl", "clGetEventInfo", rc);
    }
    if (state < 0) return makeError("opencl: the work before the event failed: {}", opencl::errorName(state));
    return state == CL_COMPLETE;
  }

 private:
  cl_event event_;
};

class OpenClStream final : public DeviceStream {
 public:
  OpenClStream(std::string deviceId, cl_command_queue queue, bool owned)
      : deviceId_(std::move(deviceId)), queue_(queue), owned_(owned) {}
  ~OpenClStream() override {
    if (owned_) {
      clFinish(queue_);
      clReleaseCommandQueue(queue_);
    }
  }
  cl_command_queue queue() const { return queue_; }
  Status synchronize() override {
    if (faultInjector().trigger(Fault::kDeviceLost)) {
      return makeError("{}: device lost (injected by SMELT_FAULTS) while synchronizing", deviceId_);
    }
    if (cl_int rc = clFinish(queue_); rc != CL_SUCCESS) return clError(deviceId_, "clFinish", rc);
    return Status::success();
  }
  Expected<std::unique_ptr<DeviceEvent>> record(bool) override {
    cl_event event = nullptr;
    if (cl_int rc = clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &event); rc != CL_SUCCESS) {
      return clError(deviceId_, "clEnqueueMarkerWithWaitList", rc);
    }
    clFlush(queue_);
    return std::unique_ptr<DeviceEvent>(std::make_unique<OpenClEvent>(event));
  }
  Status wait(DeviceEvent& event) override {
    cl_event e = static_cast<OpenClEvent&>(event).get();
    if (cl_int rc = clEnqueueBarrierWithWaitList(queue_, 1, &e, nullptr); rc != CL_SUCCESS) {
      return clError(deviceId_, "clEnqueueBarrierWithWaitList", rc);
    }
    return Status::success();
  }

 private:
  std::string deviceId_;
  cl_command_queue queue_;
  bool owned_;
};

/// A CL_MEM_ALLOC_HOST_PTR buffer kept mapped: page-locked on GPU drivers, plain memory on PoCL.
class OpenClPinned final : public PinnedHostMemory {
 public:
  OpenClPinned(opencl::Buffer buffer, cl_command_queue queue, void* mapped)
      : buffer_(std::move(buffer)), queue_(queue), mapped_(mapped) {}
  ~OpenClPinned() override {
    clEnqueueUnmapMemObject(queue_, buffer_.get(), mapped_, 0, nullptr, nullptr);
    clFinish(queue_);
  }
  void* data() override { return mapped_; }
  std::size_t bytes() const override { return buffer_.bytes(); }

 private:
  opencl::Buffer buffer_;
  cl_command_queue queue_;
  void* mapped_;
};

class OpenClKernels final : public DeviceKernels {
 public:
  OpenClKernels(std::string deviceId, std::shared_ptr<opencl::Program> program)
      : deviceId_(std::move(deviceId)), program_(std::move(program)) {}

  Status launch(const std::string& symbol, std::span<const KernelBufferArg> buffers, std::int64_t points,
                DeviceStream& stream) override {
    if (faultInjector().trigger(Fault::kDeviceLost)) {
      return makeError("{}: device lost (injected by SMELT_FAULTS) launching {}", deviceId_, symbol);
    }
    if (points <= 0) return Status::success();
    std::lock_guard lock(mutex_);  // arguments and enqueue together: clSetKernelArg is not thread-safe
    auto it = kernels_.find(symbol);
    if (it == kernels_.end()) {
      SMELT_TRY(opencl::Kernel kernel, program_->createKernel(symbol));
      it = kernels_.emplace(symbol, std::move(kernel)).first;
    }
    opencl::Kernel& kernel = it->second;
    unsigned arg = 0;
    for (const KernelBufferArg& b : buffers) {
      cl_mem mem = clMemOf(b.memory);
      SMELT_CHECK_OK(kernel.setArg(arg++, opencl::KernelArg::memory(mem)));
      SMELT_CHECK_OK(kernel.setArg(arg++, static_cast<cl_long>(b.byteOffset / b.elementBytes)));
    }
    SMELT_CHECK_OK(kernel.setArg(arg++, static_cast<cl_long>(points)));
    constexpr size_t kLocal = 64;
    size_t global = (static_cast<size_t>(points) + kLocal - 1) / kLocal * kLocal;
    cl_command_queue queue = static_cast<OpenClStream&>(stream).queue();
    if (cl_int rc = clEnqueueNDRangeKernel(queue, kernel.get(), 1, nullptr, &global, &kLocal, 0, nullptr, nullptr);
        rc != CL_SUCCESS) {
      return clError(deviceId_, fmt::format("clEnqueueNDRangeKernel({})", symbol), rc);
    }
    return Status::success();
  }

 private:
  std::string deviceId_;
  std::shared_ptr<opencl::Program> program_;
  std::mutex mutex_;
  std::map<std::string, opencl::Kernel> kernels_;
};

class OpenClDevice final : public Device {
 public:
  OpenClDevice(opencl::Context context, int ordinal)
      : context_(std::make_unique<opencl::Context>(std::move(context))) {
    const opencl::DeviceInfo& d = context_->device();
    description_.kind = DeviceKind::kOpenCl;
    description_.ordinal = ordinal;
    description_.id = fmt::format("opencl:{}", ordinal);
    description_.name = d.name;
    description_.driver = fmt::format("{} ({})", d.platform_name, d.driver_version);
    description_.memoryBytes = d.global_memory_bytes;
    description_.computeUnits = d.compute_units;
    description_.fp64 = d.fp64;
    description_.fp16 = d.fp16;
    description_.capabilities = fmt::format("{}, {}, max allocation {} MiB, local memory {} KiB", d.opencl_c_version,
                                            d.is_gpu ? "gpu" : d.is_cpu ? "cpu" : "accelerator",
                                            d.max_allocation_bytes >> 20, d.local_memory_bytes >> 10);
    stream_ = std::make_unique<OpenClStream>(description_.id, context_->queue(), false);
  }

  opencl::Context& context() { return *context_; }
  const DeviceDescription& description() const override { return description_; }

  Expected<DeviceMemory> allocate(std::size_t bytes) override {
    if (faultInjector().trigger(Fault::kOutOfMemory)) {
      return makeError("{}: out of memory allocating {} bytes (injected by SMELT_FAULTS)", description_.id, bytes);
    }
    cl_int rc = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(context_->get(), CL_MEM_READ_WRITE, bytes ? bytes : 1, nullptr, &rc);
    if (rc != CL_SUCCESS) return clError(description_.id, fmt::format("clCreateBuffer({} bytes)", bytes), rc);
    return DeviceMemory{mem, bytes};
  }
  void release(DeviceMemory memory) override {
    if (memory.handle) clReleaseMemObject(clMemOf(memory));
  }

  Status fill(DeviceMemory memory, std::size_t offset, std::size_t bytes, std::uint8_t value,
              DeviceStream& stream) override {
    SMELT_CHECK_OK(checkRange(memory, offset, bytes));
    if (bytes == 0) return Status::success();
    if (cl_int rc = clEnqueueFillBuffer(queueOf(stream), clMemOf(memory), &value, 1, offset, bytes, 0, nullptr, nullptr);
        rc != CL_SUCCESS) {
      return clError(description_.id, "clEnqueueFillBuffer", rc);
    }
    return Status::success();
  }
  Status copyIn(DeviceMemory dst, std::size_t offset, const void* src, std::size_t bytes,
                DeviceStream& stream) override {
    SMELT_CHECK_OK(checkRange(dst, offset, bytes));
    if (bytes == 0) return Status::success();
    // Non-blocking only from pinned memory, whose owner keeps it alive; pageable sources are copied
    // before the call returns, as the interface promises.
    cl_bool blocking = pinned_.contains(src, bytes) ? CL_FALSE : CL_TRUE;
    if (cl_int rc = clEnqueueWriteBuffer(queueOf(stream), clMemOf(dst), blocking, offset, bytes, src, 0, nullptr, nullptr);
        rc != CL_SUCCESS) {
      return clError(description_.id, "clEnqueueWriteBuffer", rc);
    }
    return Status::success();
  }
  Status copyOut(void* dst, DeviceMemory src, std::size_t offset, std::size_t bytes, DeviceStream& stream) override {
    SMELT_CHECK_OK(checkRange(src, offset, bytes));
    if (bytes == 0) return Status::success();
    cl_bool blocking = pinned_.contains(dst, bytes) ? CL_FALSE : CL_TRUE;
    if (cl_int rc = clEnqueueReadBuffer(queueOf(stream), clMemOf(src), blocking, offset, bytes, dst, 0, nullptr, nullptr);
        rc != CL_SUCCESS) {
      return clError(description_.id, "clEnqueueReadBuffer", rc);
    }
    return Status::success();
  }
  Status copy(DeviceMemory dst, std::size_t dstOffset, DeviceMemory src, std::size_t srcOffset, std::size_t bytes,
              DeviceStream& stream) override {
    SMELT_CHECK_OK(checkRange(dst, dstOffset, bytes));
    SMELT_CHECK_OK(checkRange(src, srcOffset, bytes));
    if (bytes == 0) return Status::success();
    if (cl_int rc = clEnqueueCopyBuffer(queueOf(stream), clMemOf(src), clMemOf(dst), srcOffset, dstOffset, bytes, 0,
                                        nullptr, nullptr);
        rc != CL_SUCCESS) {
      return clError(description_.id, "clEnqueueCopyBuffer", rc);
    }
    return Status::success();
  }

  DeviceStream& defaultStream() override { return *stream_; }
  Expected<std::unique_ptr<DeviceStream>> createStream() override {
    cl_int rc = CL_SUCCESS;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // the OpenCL 1.2 call, as PoCL's devices are 1.2
    cl_command_queue queue = clCreateCommandQueue(context_->get(), context_->device().id, 0, &rc);
#pragma GCC diagnostic pop
    if (rc != CL_SUCCESS) return clError(description_.id, "clCreateCommandQueue", rc);
    return std::unique_ptr<DeviceStream>(std::make_unique<OpenClStream>(description_.id, queue, true));
  }

  Expected<std::unique_ptr<PinnedHostMemory>> allocatePinned(std::size_t bytes) override {
    SMELT_TRY(opencl::Buffer buffer, context_->createBuffer(bytes, opencl::Access::kReadWrite, nullptr, true));
    cl_int rc = CL_SUCCESS;
    void* mapped = clEnqueueMapBuffer(context_->queue(), buffer.get(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                      bytes ? bytes : 1, 0, nullptr, nullptr, &rc);
    if (rc != CL_SUCCESS) return clError(description_.id, "clEnqueueMapBuffer", rc);
    return trackPinned(pinned_, std::make_unique<OpenClPinned>(std::move(buffer), context_->queue(), mapped));
  }

  Expected<std::shared_ptr<DeviceKernels>> loadKernels(const KernelImage& image) override {
    if (image.format != KernelImage::Format::kOpenClSource) {
      return makeError("{}: OpenCL loads OpenCL C source, not a binary image", description_.id);
    }
    SMELT_TRY(std::shared_ptr<opencl::Program> built, program(image.data, image.options, nullptr));
    return std::shared_ptr<DeviceKernels>(std::make_shared<OpenClKernels>(description_.id, std::move(built)));
  }

  /// See openClProgram().
  Expected<std::shared_ptr<opencl::Program>> program(const std::string& source, const std::string& options, bool* hit) {
    std::string key = options + '\0' + source;
    std::lock_guard lock(programsMutex_);
    auto it = programs_.find(key);
    if (hit) *hit = it != programs_.end();
    if (it == programs_.end()) {
      SMELT_TRY(opencl::Program built, context_->buildProgram(source, options));
      if (!built.buildLog().empty()) logger().debug("opencl: build log:\n{}", built.buildLog());
      it = programs_.emplace(std::move(key), std::make_shared<opencl::Program>(std::move(built))).first;
    }
    return it->second;
  }

  Status synchronize() override { return stream_->synchronize(); }

 private:
  cl_command_queue queueOf(DeviceStream& stream) { return static_cast<OpenClStream&>(stream).queue(); }
  Status checkRange(const DeviceMemory& m, std::size_t offset, std::size_t bytes) const {
    if (offset > m.bytes || bytes > m.bytes - offset) {
      return makeError("{}: {} bytes at offset {} overrun a {}-byte buffer", description_.id, bytes, offset, m.bytes);
    }
    return Status::success();
  }

  std::unique_ptr<opencl::Context> context_;
  DeviceDescription description_;
  std::unique_ptr<OpenClStream> stream_;
  PinnedRanges pinned_;
  std::mutex programsMutex_;
  std::map<std::string, std::shared_ptr<opencl::Program>> programs_;
};

}  // namespace

Expected<std::shared_ptr<Device>> openClDevice(std::string_view selector) {
  // Devices live for the process: OpenCL objects released during exit can outlive the ICD.
  static std::mutex mutex;
  static auto* devices = new std::map<std::string, std::shared_ptr<Device>, std::less<>>();
  std::lock_guard lock(mutex);
  auto it = devices->find(selector);
  if (it != devices->end()) return it->second;
  SMELT_TRY(opencl::Context context, opencl::Context::create(selector));
  SMELT_TRY(std::vector<opencl::DeviceInfo> all, opencl::listDevices());
  int ordinal = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].id == context.device().id) ordinal = static_cast<int>(i);
  }
  // One Device per OpenCL device, whatever selector reached it.
  for (auto& [key, device] : *devices) {
    if (device->description().ordinal == ordinal) return devices->emplace(std::string(selector), device).first->second;
  }
  std::shared_ptr<Device> device = std::make_shared<OpenClDevice>(std::move(context), ordinal);
  logger().debug("opencl: opened {} ({})", device->id(), device->description().name);
  return devices->emplace(std::string(selector), device).first->second;
}

opencl::Context& openClContext(Device& device) { return static_cast<OpenClDevice&>(device).context(); }

Expected<std::shared_ptr<opencl::Program>> openClProgram(Device& device, const std::string& source,
                                                         const std::string& options, bool* hit) {
  return static_cast<OpenClDevice&>(device).program(source, options, hit);
}

}  // namespace smelt

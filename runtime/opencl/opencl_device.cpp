// OpenClDevice: Device over the OpenCL 1.2 API. Streams are extra in-order queues on the device's
// one context; events are markers. Errors are classified from their codes (out of memory, a device
// no longer available), and SMELT_FAULTS injects those codes at the calls that would return them.
#include "runtime/opencl/opencl_device.h"

#include "codegen/log.h"
#include "runtime/device/fault_injection.h"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <vector>

namespace smelt {

namespace {

/// What an OpenCL error code means for recovery. An allocation that fails for lack of resources is
/// out of memory; a device that is gone, or a queue that fails for lack of resources while running
/// (how GPU drivers report a kernel that faulted), poisons the context.
ErrorKind kindOf(cl_int rc, bool allocating) {
  if (rc == CL_MEM_OBJECT_ALLOCATION_FAILURE || rc == CL_OUT_OF_HOST_MEMORY) return ErrorKind::kOutOfMemory;
  if (rc == CL_OUT_OF_RESOURCES) return allocating ? ErrorKind::kOutOfMemory : ErrorKind::kDeviceLost;
  if (rc == CL_DEVICE_NOT_AVAILABLE || rc == CL_DEVICE_NOT_FOUND) return ErrorKind::kDeviceLost;
  // Errors of the commands an event waited for: the device failed them.
  if (rc == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) return ErrorKind::kDeviceLost;
  return ErrorKind::kGeneric;
}

Error clError(std::string_view device, std::string_view call, cl_int rc, bool allocating = false) {
  ErrorKind kind = kindOf(rc, allocating);
  std::string_view what = kind == ErrorKind::kOutOfMemory ? " (out of memory)"
                          : kind == ErrorKind::kDeviceLost ? " (device lost)"
                                                            : "";
  return Error(fmt::format("{}: {} failed: {}{}", device, call, opencl::errorName(rc), what), kind);
}

/// SMELT_FAULTS' "lost": the code a device that went away returns.
cl_int injectLost() { return faultInjector().trigger(Fault::kDeviceLost) ? CL_DEVICE_NOT_AVAILABLE : CL_SUCCESS; }

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
    if (state < 0) return clError("opencl", "the work before the event", state);
    return state == CL_COMPLETE;
  }
  /// From the two markers' completion times: the device time of the work enqueued between them (an
  /// in-order queue completes a marker when everything before it has).
  Expected<double> elapsedMsSince(DeviceEvent& start) override {
    SMELT_TRY(cl_ulong from, static_cast<OpenClEvent&>(start).completedAt());
    SMELT_TRY(cl_ulong to, completedAt());
    return static_cast<double>(to - std::min(from, to)) * 1e-6;
  }
  /// CL_PROFILING_COMMAND_END in nanoseconds (the queue profiles: opencl::kQueueProperties).
  Expected<cl_ulong> completedAt() {
    cl_ulong ns = 0;
    if (cl_int rc = clGetEventProfilingInfo(event_, CL_PROFILING_COMMAND_END, sizeof ns, &ns, nullptr);
        rc != CL_SUCCESS) {
      return clError("opencl", "clGetEventProfilingInfo", rc);
    }
    return ns;
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
  /// The default stream follows its device's context across a reset.
  void setQueue(cl_command_queue queue) { queue_ = queue; }
  Status synchronize() override {
    cl_int rc = injectLost();
    if (rc == CL_SUCCESS) rc = clFinish(queue_);
    if (rc != CL_SUCCESS) return clError(deviceId_, "clFinish", rc);
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

/// Work-items per group: one fixed size, so PoCL compiles one work-group function per kernel.
constexpr size_t kLocalSize = 64;

/// A kernel object of its own with every argument set once: per buffer (cl_mem, element offset),
/// then the number of points. setBuffer sets the two arguments again only when they change.
class OpenClLaunch final : public PreparedLaunch {
 public:
  OpenClLaunch(std::string deviceId, opencl::Kernel kernel, LaunchShape shape, size_t buffers)
      : deviceId_(std::move(deviceId)), kernel_(std::move(kernel)), shape_(shape), bound_(buffers) {}
  Status bindAll(std::span<const KernelBufferArg> buffers) {
    for (size_t i = 0; i < buffers.size(); ++i) SMELT_CHECK_OK(bind(i, buffers[i]));
    auto points = static_cast<cl_long>(shape_.points);
    return setArg(static_cast<cl_uint>(2 * buffers.size()), sizeof points, &points);
  }
  void setBuffer(std::size_t index, const KernelBufferArg& arg) override {
    if (Status s = bind(index, arg); !s.ok()) failed_ = s;
  }
  Status launch(DeviceStream& stream) override {
    if (!failed_.ok()) return failed_;
    if (shape_.points <= 0) return Status::success();
    // One work-group per point for a block-mapped kernel; else one work-item per point.
    const size_t local = shape_.threadsPerPoint > 0 ? static_cast<size_t>(shape_.threadsPerPoint) : kLocalSize;
    size_t global = shape_.threadsPerPoint > 0 ? static_cast<size_t>(shape_.points) * local
                                               : (static_cast<size_t>(shape_.threads()) + kLocalSize - 1) / kLocalSize * kLocalSize;
    cl_int rc = injectLost();
    if (rc == CL_SUCCESS) {
      rc = clEnqueueNDRangeKernel(static_cast<OpenClStream&>(stream).queue(), kernel_.get(), 1, nullptr, &global,
                                  &local, 0, nullptr, nullptr);
    }
    if (rc != CL_SUCCESS) return clError(deviceId_, fmt::format("clEnqueueNDRangeKernel({})", kernel_.name()), rc);
    return Status::success();
  }

 private:
  struct Bound {
    cl_mem mem = nullptr;
    cl_long offset = -1;
  };
  Status bind(size_t index, const KernelBufferArg& arg) {
    Bound now{clMemOf(arg.memory), static_cast<cl_long>(arg.byteOffset / arg.elementBytes)};
    Bound& was = bound_[index];
    if (now.mem != was.mem) SMELT_CHECK_OK(setArg(static_cast<cl_uint>(2 * index), sizeof now.mem, &now.mem));
    if (now.offset != was.offset) SMELT_CHECK_OK(setArg(static_cast<cl_uint>(2 * index + 1), sizeof now.offset, &now.offset));
    was = now;
    return Status::success();
  }
  Status setArg(cl_uint index, size_t size, const void* value) {
    // The kernel object is this launch's alone, so no lock is needed around clSetKernelArg.
    if (cl_int rc = clSetKernelArg(kernel_.get(), index, size, value); rc != CL_SUCCESS) {
      return clError(deviceId_, fmt::format("clSetKernelArg({}, {})", kernel_.name(), index), rc);
    }
    return Status::success();
  }
  std::string deviceId_;
  opencl::Kernel kernel_;
  LaunchShape shape_;
  std::vector<Bound> bound_;
  Status failed_;
};

class OpenClKernels final : public DeviceKernels {
 public:
  OpenClKernels(std::string deviceId, std::shared_ptr<opencl::Program> program)
      : deviceId_(std::move(deviceId)), program_(std::move(program)) {}

  Expected<std::unique_ptr<PreparedLaunch>> prepare(const std::string& symbol, std::span<const KernelBufferArg> buffers,
                                                    const LaunchShape& shape) override {
    SMELT_TRY(opencl::Kernel kernel, program_->createKernel(symbol));
    auto launch = std::make_unique<OpenClLaunch>(deviceId_, std::move(kernel), shape, buffers.size());
    SMELT_CHECK_OK(launch->bindAll(buffers));
    return std::unique_ptr<PreparedLaunch>(std::move(launch));
  }

 private:
  std::string deviceId_;
  std::shared_ptr<opencl::Program> program_;
};

class OpenClDevice final : public Device {
 public:
  OpenClDevice(std::string selector, opencl::Context context, int ordinal)
      : selector_(std::move(selector)), context_(std::make_shared<opencl::Context>(std::move(context))) {
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
    cl_int rc = faultInjector().trigger(Fault::kOutOfMemory) ? CL_MEM_OBJECT_ALLOCATION_FAILURE : CL_SUCCESS;
    cl_mem mem = rc == CL_SUCCESS ? clCreateBuffer(context_->get(), CL_MEM_READ_WRITE, bytes ? bytes : 1, nullptr, &rc)
                                  : nullptr;
    if (rc != CL_SUCCESS) {
      return clError(description_.id, fmt::format("clCreateBuffer({} bytes)", bytes), rc, /*allocating=*/true);
    }
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
    cl_command_queue queue = clCreateCommandQueue(context_->get(), context_->device().id, opencl::kQueueProperties, &rc);
#pragma GCC diagnostic pop
    if (rc != CL_SUCCESS) return clError(description_.id, "clCreateCommandQueue", rc);
    return std::unique_ptr<DeviceStream>(std::make_unique<OpenClStream>(description_.id, queue, true));
  }

  Expected<std::unique_ptr<PinnedHostMemory>> allocatePinned(std::size_t bytes) override {
    if (faultInjector().trigger(Fault::kOutOfMemory)) {
      return clError(description_.id, fmt::format("clCreateBuffer({} bytes, host memory)", bytes),
                     CL_MEM_OBJECT_ALLOCATION_FAILURE, /*allocating=*/true);
    }
    SMELT_TRY(opencl::Buffer buffer, context_->createBuffer(bytes, opencl::Access::kReadWrite, nullptr, true));
    cl_int rc = CL_SUCCESS;
    void* mapped = clEnqueueMapBuffer(context_->queue(), buffer.get(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                      bytes ? bytes : 1, 0, nullptr, nullptr, &rc);
    if (rc != CL_SUCCESS) return clError(description_.id, "clEnqueueMapBuffer", rc, /*allocating=*/true);
    return trackPinned(pinned_, std::make_unique<OpenClPinned>(std::move(buffer), context_->queue(), mapped));
  }

  Expected<std::shared_ptr<DeviceKernels>> loadKernels(const KernelImage& image, bool* reused) override {
    if (image.format != KernelImage::Format::kOpenClSource) {
      return makeError("{}: OpenCL loads OpenCL C source, not a binary image", description_.id);
    }
    SMELT_TRY(std::shared_ptr<opencl::Program> built, program(image.data, image.options, reused));
    return std::shared_ptr<DeviceKernels>(std::make_shared<OpenClKernels>(description_.id, std::move(built)));
  }

  /// The program for `source`, built once per process and context (PoCL also keeps its own disk
  /// cache in POCL_CACHE_DIR). `hit` says whether it was built before.
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

  /// A new context and queue on the same device; the programs, memory and queues of the old one are
  /// left to their owners (OpenCL objects keep their context alive until released).
  Status reset() override {
    SMELT_TRY(opencl::Context fresh, opencl::Context::create(selector_));
    std::lock_guard lock(programsMutex_);
    retired_.push_back(context_);  // other threads may still be inside a call on it
    context_ = std::make_shared<opencl::Context>(std::move(fresh));
    stream_->setQueue(context_->queue());
    programs_.clear();
    generation_.fetch_add(1, std::memory_order_acq_rel);
    logger().info("{}: reset (generation {})", description_.id, generation());
    return Status::success();
  }

 private:
  cl_command_queue queueOf(DeviceStream& stream) { return static_cast<OpenClStream&>(stream).queue(); }
  Status checkRange(const DeviceMemory& m, std::size_t offset, std::size_t bytes) const {
    if (offset > m.bytes || bytes > m.bytes - offset) {
      return makeError("{}: {} bytes at offset {} overrun a {}-byte buffer", description_.id, bytes, offset, m.bytes);
    }
    return Status::success();
  }

  std::string selector_;
  std::shared_ptr<opencl::Context> context_;
  std::vector<std::shared_ptr<opencl::Context>> retired_;
  DeviceDescription description_;
  std::unique_ptr<OpenClStream> stream_;
  PinnedRanges pinned_;
  std::mutex programsMutex_;
  std::map<std::string, std::shared_ptr<opencl::Program>> programs_;
};

}  // namespace

ErrorKind openClErrorKind(int code, bool allocating) { return kindOf(static_cast<cl_int>(code), allocating); }

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
  std::shared_ptr<Device> device = std::make_shared<OpenClDevice>(std::string(selector), std::move(context), ordinal);
  logger().debug("opencl: opened {} ({})", device->id(), device->description().name);
  return devices->emplace(std::string(selector), device).first->second;
}

opencl::Context& openClContext(Device& device) { return static_cast<OpenClDevice&>(device).context(); }

cl_command_queue openClQueue(DeviceStream& stream) { return static_cast<OpenClStream&>(stream).queue(); }

}  // namespace smelt

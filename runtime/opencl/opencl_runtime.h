// OpenCL through the ICD loader, using OpenCL 1.2 features only (PoCL's CPU device is OpenCL
// C 1.2): device discovery, a context with an in-order queue, programs built from source, buffers,
// launches.
//   SMELT_TRY(auto ctx, smelt::opencl::Context::create());       // PoCL's CPU unless
//   SMELT_OPENCL_DEVICE SMELT_TRY(auto program, ctx.buildProgram(source, "-cl-fast-relaxed-math"));
//   SMELT_TRY(auto kernel, program.createKernel("add"));
//   SMELT_CHECK_OK(ctx.launch(kernel, {a, b, out, n}, NDRange(n), NDRange(64)));
#pragma once

#include "ir/support/expected.h"

#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace smelt::opencl {

/// Every queue smelt creates profiles its commands, so that events time device work (SMELT_PROFILE's
/// per-step table, `smelt bench --device-time`) as CUDA's do; a timestamp per command costs nothing
/// measurable beside a launch.
inline constexpr cl_command_queue_properties kQueueProperties = CL_QUEUE_PROFILING_ENABLE;

/// One OpenCL device and the facts codegen needs about it.
struct DeviceInfo {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  std::string platform_name;  ///< "Portable Computing Language"
  std::string name;           ///< "pthread-skylake-avx512-Intel(R) Xeon(R) Processor"
  std::string vendor;
  std::string version;           ///< CL_DEVICE_VERSION, "OpenCL 3.0 PoCL ..."
  std::string opencl_c_version;  ///< "OpenCL C 1.2 PoCL": what kernels may use
  std::string driver_version;
  bool is_cpu = false;
  bool is_gpu = false;
  unsigned compute_units = 0;
  std::uint64_t global_memory_bytes = 0;
  std::uint64_t max_allocation_bytes = 0;
  std::uint64_t local_memory_bytes = 0;
  std::size_t max_work_group_size = 0;
  bool fp64 = false;  ///< double arithmetic (cl_khr_fp64)
  bool fp16 = false;  ///< half arithmetic (cl_khr_fp16); PoCL's CPU device has none
  std::string extensions;
};

/// Every device of every platform. Sets POCL_CACHE_DIR first (see poclCacheDir()).
Expected<std::vector<DeviceInfo>> listDevices();

/// Where PoCL caches compiled kernels. Unless the user set POCL_CACHE_DIR, smelt sets it before the
/// first OpenCL call to <cache>/pocl (created 0700), <cache> being smelt's cache folder
/// (defaultCacheDir(): $SMELT_CACHE_DIR, else $XDG_CACHE_HOME/smelt, else ~/.cache/smelt), so
/// sandboxes without a writable ~/.cache/pocl still work. Empty if none could be made.
std::string poclCacheDir();

/// An owned OpenCL object, released on destruction. Move-only.
template <typename T, cl_int (*Release)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T handle) : handle_(handle) {}
  Handle(Handle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  T get() const { return handle_; }
  /// Gives the handle up without releasing it.
  T release() { return std::exchange(handle_, nullptr); }
  /// The handle's address, for clSetKernelArg.
  const T* address() const { return &handle_; }
  void reset() {
    if (handle_) Release(handle_);
    handle_ = nullptr;
  }

 private:
  T handle_ = nullptr;
};

/// A device buffer. Move-only; released on destruction.
class Buffer {
 public:
  Buffer() = default;
  /// A Buffer over memory someone else owns and frees (a memory pool's block): never released here.
  static Buffer borrow(cl_mem mem, std::size_t bytes) {
    Buffer b;
    b.mem_ = Handle<cl_mem, clReleaseMemObject>(mem);
    b.bytes_ = bytes;
    b.borrowed_ = true;
    return b;
  }
  Buffer(Buffer&& other) noexcept
      : mem_(std::move(other.mem_)), bytes_(other.bytes_), borrowed_(std::exchange(other.borrowed_, false)) {}
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      if (borrowed_) mem_.release();
      mem_ = std::move(other.mem_);
      bytes_ = other.bytes_;
      borrowed_ = std::exchange(other.borrowed_, false);
    }
    return *this;
  }
  ~Buffer() {
    if (borrowed_) mem_.release();
  }
  cl_mem get() const { return mem_.get(); }
  std::size_t bytes() const { return bytes_; }

 private:
  friend class Context;
  friend class KernelArg;
  Handle<cl_mem, clReleaseMemObject> mem_;
  std::size_t bytes_ = 0;
  bool borrowed_ = false;
};

/// Local (work-group shared) memory of a given size, as a kernel argument.
struct LocalMemory {
  std::size_t bytes = 0;
};

/// One kernel argument: a buffer, local memory, or a scalar passed by value. Refers to its source,
/// so use it within the statement that makes it (as Context::launch's list does).
class KernelArg {
 public:
  KernelArg(const Buffer& buffer) : size_(sizeof(cl_mem)), value_(buffer.mem_.address()) {}
  /// A cl_mem not owned by a Buffer (runtime/device's memory); `mem` must outlive the call.
  static KernelArg memory(const cl_mem& mem) { return KernelArg(sizeof(cl_mem), &mem); }
  KernelArg(LocalMemory local) : size_(local.bytes), value_(nullptr) {}
  template <typename T,
            typename = std::enable_if_t<std::is_trivially_copyable_v<T> && !std::is_pointer_v<T> &&
                                        !std::is_same_v<T, LocalMemory>>>
  KernelArg(const T& scalar) : size_(sizeof(T)), value_(&scalar) {}
  std::size_t size() const { return size_; }
  const void* value() const { return value_; }

 private:
  KernelArg(std::size_t size, const void* value) : size_(size), value_(value) {}
  std::size_t size_;
  const void* value_;
};

/// A kernel of a built program. setArg and launches lock a per-kernel mutex, since clSetKernelArg
/// on one kernel from two threads races. Move-only.
class Kernel {
 public:
  Kernel() = default;
  const std::string& name() const { return name_; }
  cl_kernel get() const { return kernel_.get(); }
  /// Sets argument `index`; the error names the kernel and the argument.
  Status setArg(unsigned index, const KernelArg& arg);

 private:
  friend class Context;
  friend class Program;
  Status setArgLocked(unsigned index, const KernelArg& arg);
  Handle<cl_kernel, clReleaseKernel> kernel_;
  std::string name_;
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
};

/// A program built for one device. Move-only.
class Program {
 public:
  Program() = default;
  /// The kernel `name`, or an error listing the kernels the program has.
  Expected<Kernel> createKernel(const std::string& name) const;
  /// The compiler's output for a successful build (warnings; often empty).
  const std::string& buildLog() const { return log_; }
  double buildMs() const { return build_ms_; }
  cl_program get() const { return program_.get(); }

 private:
  friend class Context;
  Handle<cl_program, clReleaseProgram> program_;
  std::string log_;
  double build_ms_ = 0;
};

/// An ND-range of 1 to 3 dimensions; the default (0 dimensions) as a local size lets the driver
/// pick.
struct NDRange {
  NDRange() = default;
  NDRange(std::size_t x) : dims(1), sizes{x, 1, 1} {}
  NDRange(std::size_t x, std::size_t y) : dims(2), sizes{x, y, 1} {}
  NDRange(std::size_t x, std::size_t y, std::size_t z) : dims(3), sizes{x, y, z} {}
  cl_uint dims = 0;
  std::size_t sizes[3] = {1, 1, 1};
};

/// How kernels will use a buffer.
enum class Access { kReadWrite, kReadOnly, kWriteOnly };

/// A context and an in-order command queue on one device. Thread-safe (OpenCL 1.2 calls are,
/// except clSetKernelArg, which Kernel locks). Move-only.
class Context {
 public:
  /// Opens the device matching `selector`, else $SMELT_OPENCL_DEVICE, else PoCL's CPU device (then
  /// any CPU, then the first device). A selector is a case-insensitive substring of the platform
  /// name, device name or vendor, or "cpu" / "gpu". No match: an error listing the devices.
  static Expected<Context> create(std::string_view selector = {});

  const DeviceInfo& device() const { return device_; }
  cl_context get() const { return context_.get(); }
  cl_command_queue queue() const { return queue_.get(); }

  /// Builds `source` with `options` ("-cl-fast-relaxed-math -DN=4"); a failure carries the build
  /// log.
  Expected<Program> buildProgram(std::string_view source, std::string_view options = {}) const;

  /// A buffer of `bytes`, filled from `initial` when given (bytes long).
  /// `hostAccessible`: CL_MEM_ALLOC_HOST_PTR, memory the host maps (page-locked on GPU drivers).
  Expected<Buffer> createBuffer(std::size_t bytes, Access access = Access::kReadWrite,
                                const void* initial = nullptr, bool hostAccessible = false) const;
  /// Copies host memory into `buffer` at `offset`; blocks until done.
  Status write(const Buffer& buffer, const void* src, std::size_t bytes,
               std::size_t offset = 0) const;
  /// Copies `buffer` at `offset` into host memory; blocks until done (so earlier kernels finished).
  Status read(const Buffer& buffer, void* dst, std::size_t bytes, std::size_t offset = 0) const;

  /// Enqueues `kernel` over `global` work-items in groups of `local` (default: the driver's
  /// choice). OpenCL 1.2 needs global to be a multiple of local in each dimension.
  Status enqueue(Kernel& kernel, NDRange global, NDRange local = {}) const;
  /// Sets all of `kernel`'s arguments and enqueues it, atomically with respect to other launches.
  Status launch(Kernel& kernel, std::initializer_list<KernelArg> args, NDRange global,
                NDRange local = {}) const;
  /// Blocks until everything enqueued has finished.
  Status finish() const;

 private:
  Context() = default;
  Status enqueueLocked(Kernel& kernel, NDRange global, NDRange local) const;
  DeviceInfo device_;
  Handle<cl_context, clReleaseContext> context_;
  Handle<cl_command_queue, clReleaseCommandQueue> queue_;
};

/// "CL_BUILD_PROGRAM_FAILURE" for -11: the name of an OpenCL error code.
std::string errorName(cl_int code);

}  // namespace smelt::opencl

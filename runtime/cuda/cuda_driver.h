// The CUDA driver API through dlopen("libcuda.so.1"): devices, a context, PTX modules, launches and
// device memory. Without a driver every call returns an Error and nothing crashes:
//   auto ctx = smelt::cuda::Context::open(0);
//   if (!ctx) -> "CUDA driver not found: libcuda.so.1: cannot open shared object file: ..."
#pragma once

#include "ir/support/expected.h"

#include <cstddef>
#include <functional>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace smelt::cuda {

/// What a CUresult means for recovery: kOutOfMemory, kDeviceLost for the sticky errors that poison a context
/// (an illegal address, a failed launch, ...: only a reset helps), else kGeneric. Every driver error smelt
/// reports carries this kind.
ErrorKind errorKindOf(int cuResult);

/// cuDriverGetVersion split in two: 13000 -> {13, 0}.
struct DriverVersion {
  int major = 0;
  int minor = 0;
};

/// One CUDA device as the driver describes it.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;  ///< compute capability, e.g. 9.0 for H100
  int cc_minor = 0;
  std::size_t total_memory = 0;  ///< bytes
  int multiprocessors = 0;
};

/// The driver's version (loads and cuInit's the driver on first use), or why there is none.
Expected<DriverVersion> driverVersion();

/// Number of CUDA devices; an error (not 0) when there is no usable driver.
Expected<int> deviceCount();

/// Name, compute capability and memory of device `ordinal`.
Expected<DeviceInfo> deviceInfo(int ordinal);

/// Checks that this driver can JIT PTX made by NVRTC `nvrtc_major`.x: drivers only accept PTX of
/// their own CUDA major or older (CUDA 13 PTX needs a 13.x driver, >= 580).
Status checkPtxCompatible(int nvrtc_major);

/// Grid or block extents.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

class Context;

/// Device memory owned by a Context; freed on destruction. Move-only.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(DeviceMemory&& other) noexcept;
  DeviceMemory& operator=(DeviceMemory&& other) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory();

  /// The CUdeviceptr; pass its address as a kernel parameter.
  std::uint64_t address() const { return address_; }
  std::size_t bytes() const { return bytes_; }

 private:
  friend class Context;
  void* context_ = nullptr;  // CUcontext
  std::uint64_t address_ = 0;
  std::size_t bytes_ = 0;
};

/// A kernel in a loaded module. Valid while its Module lives.
class Function {
 public:
  void* handle() const { return handle_; }  ///< CUfunction
  const std::string& name() const { return name_; }

 private:
  friend class Module;
  void* handle_ = nullptr;
  std::string name_;
};

/// A module loaded from PTX or CUBIN; unloaded on destruction. Move-only.
class Module {
 public:
  Module() = default;
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module();

  /// The kernel `name` (an extern "C" name), or an error naming it.
  Expected<Function> function(const std::string& name) const;

 private:
  friend class Context;
  void* context_ = nullptr;  // CUcontext
  void* handle_ = nullptr;   // CUmodule
};

/// The primary context of one device (the one cudart and cuBLAS share), retained for this object's
/// life. Every call makes it current on the calling thread first, so any thread may use it.
/// Move-only.
class Context {
 public:
  /// Loads the driver, checks device `ordinal` exists and retains its primary context.
  static Expected<Context> open(int ordinal = 0);

  Context(Context&& other) noexcept;
  Context& operator=(Context&& other) noexcept;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

  const DeviceInfo& device() const { return info_; }

  /// Loads a module from PTX text or a CUBIN image; a JIT failure carries the driver's error log.
  Expected<Module> loadModule(std::string_view image);

  /// Launches `kernel` on `stream` (a CUstream; null: the default stream). `params` holds one
  /// pointer per kernel argument (the address of the value, as cuLaunchKernel wants). Asynchronous:
  /// synchronize() to wait.
  Status launch(const Function& kernel, Dim3 grid, Dim3 block, std::span<void* const> params,
                unsigned shared_bytes = 0, void* stream = nullptr);

  /// Runs `call` with this context current on the calling thread, restoring the previous one after:
  /// for libraries that work in the current context (cuBLAS).
  Status withCurrent(const std::function<Status()>& call);

  /// Blocks until all work in this context finished; reports a kernel's asynchronous failure.
  Status synchronize();
  /// Resets the device's primary context after a sticky error (ErrorKind::kDeviceLost) and retains
  /// it again: every allocation, module, stream and event made in it before is gone.
  Status reset();
  /// How many resets this context has been through: libraries' handles (cuBLAS, cuDNN) made in it
  /// are kept per context and epoch, since the CUcontext a reset gives back may be the same pointer.
  std::uint64_t epoch() const { return epoch_; }

  /// Allocates `bytes` of device memory.
  Expected<DeviceMemory> allocate(std::size_t bytes);
  /// Copies `bytes` from host to device memory, `offset` bytes into `dst` (synchronous; an
  /// executable's arena holds many tensors).
  Status copyToDevice(DeviceMemory& dst, const void* src, std::size_t bytes, std::size_t offset = 0);
  /// Copies `bytes` from device memory, `offset` bytes into `src`, to the host (synchronous).
  Status copyToHost(void* dst, const DeviceMemory& src, std::size_t bytes, std::size_t offset = 0);

  // Raw handles for runtime/device/cuda_device.cpp: CUdeviceptr as uint64, CUstream and CUevent
  // as void*. Copies and fills are asynchronous on `stream` (null: the default stream).
  Expected<std::uint64_t> allocateRaw(std::size_t bytes);
  void freeRaw(std::uint64_t address);
  Expected<void*> allocateHost(std::size_t bytes);  ///< page-locked (cuMemHostAlloc)
  void freeHost(void* pointer);
  Expected<void*> createStream();
  /// Stream capture into a CUDA graph, replayed as one launch: begin on a stream of the context's own
  /// (not the default stream), end with the instantiated executable graph (CUgraphExec), launch it,
  /// and destroy it.
  Status beginCapture(void* stream);
  Expected<void*> endCapture(void* stream);
  Status launchGraph(void* exec, void* stream);
  void destroyGraphExec(void* exec);
  void destroyStream(void* stream);
  Status synchronizeStream(void* stream);
  /// An event recorded on `stream`; `timing` keeps its timestamp for elapsedMs().
  Expected<void*> recordEvent(void* stream, bool timing = false);
  /// Records an event recordEvent made again, on `stream` (no new event).
  Status recordEventAgain(void* event, void* stream);
  /// Milliseconds between two timing events that have completed (cuEventElapsedTime).
  Expected<double> elapsedMs(void* start, void* end);
  Status synchronizeEvent(void* event);
  Expected<bool> eventDone(void* event);
  void destroyEvent(void* event);
  Status streamWaitEvent(void* stream, void* event);
  Status copyHostToDeviceAsync(std::uint64_t dst, const void* src, std::size_t bytes, void* stream);
  Status copyDeviceToHostAsync(void* dst, std::uint64_t src, std::size_t bytes, void* stream);
  Status copyDeviceToDeviceAsync(std::uint64_t dst, std::uint64_t src, std::size_t bytes, void* stream);
  Status fillAsync(std::uint64_t dst, std::uint8_t value, std::size_t bytes, void* stream);
  /// Free and total device memory (cuMemGetInfo).
  Expected<std::pair<std::size_t, std::size_t>> memoryInfo();

 private:
  Context() = default;
  void* context_ = nullptr;  // CUcontext
  int device_ = -1;          // CUdevice
  DeviceInfo info_;
  std::uint64_t epoch_ = 0;
};

}  // namespace smelt::cuda

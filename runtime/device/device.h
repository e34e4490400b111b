// One interface over every place smelt runs kernels: the CPU, OpenCL devices, CUDA GPUs (driver API
// through dlopen) and HIP GPUs (libamdhip64 through dlopen). A Device owns raw memory, copies
// (asynchronous on a stream, from pinned host memory where the backend has it), streams, events and
// kernel launches; MemoryPool (memory_pool.h) caches its allocations and DeviceTensor
// (device_tensor.h) keeps tensors on it between kernels.
//   SMELT_TRY(std::shared_ptr<Device> gpu, openDevice("opencl"));   // device_list.h
//   SMELT_TRY(DeviceMemory m, gpu->allocate(1 << 20));
//   SMELT_CHECK_OK(gpu->copyIn(m, 0, host, bytes, &gpu->defaultStream()));
//   SMELT_CHECK_OK(gpu->defaultStream().synchronize());
//   gpu->release(m);
#pragma once

#include "ir/support/expected.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

namespace smelt {

enum class DeviceKind { kCpu, kOpenCl, kCuda, kHip };

/// "cpu", "opencl", "cuda", "hip".
std::string_view deviceKindName(DeviceKind kind);

/// What `smelt devices` prints and placement keys on.
struct DeviceDescription {
  DeviceKind kind = DeviceKind::kCpu;
  /// Position among the devices of its kind.
  int ordinal = 0;
  /// "opencl:0": the name openDevice() takes.
  std::string id;
  /// The device's own name ("NVIDIA H100 80GB HBM3", "pthread-skylake-avx512-...").
  std::string name;
  /// Driver or platform and its version.
  std::string driver;
  std::uint64_t memoryBytes = 0;
  unsigned computeUnits = 0;
  bool fp64 = false;
  bool fp16 = false;
  /// Backend-specific facts, one line ("sm_90", "OpenCL C 1.2", "avx512f").
  std::string capabilities;
};

/// A block of device memory as the backend knows it: a cl_mem, a CUdeviceptr, a hipDeviceptr_t or a
/// host pointer, and its size. Plain data: the Device that made it frees it (release()).
struct DeviceMemory {
  void* handle = nullptr;
  std::size_t bytes = 0;
  explicit operator bool() const { return handle != nullptr; }
};

/// A point in a stream's work; done() once everything enqueued before it has finished.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
  virtual Status synchronize() = 0;
  virtual Expected<bool> done() = 0;
  /// Milliseconds of device time from `start` to this event, both recorded with timing on the same
  /// device and both done (an error on devices that cannot time: the CPU; an OpenCL queue without profiling,
  /// which smelt never creates: opencl::kQueueProperties).
  virtual Expected<double> elapsedMsSince(DeviceEvent& start);
};

class DeviceStream;

/// Work recorded once from a stream and replayed as one launch (a CUDA graph): the same kernels and
/// copies with the same arguments, enqueued with one call.
class RecordedWork {
 public:
  virtual ~RecordedWork() = default;
  virtual Status replay(DeviceStream& stream) = 0;
};

/// An ordered queue of copies and launches (a CUDA/HIP stream, an OpenCL in-order queue). Work on
/// different streams may overlap; events order it.
class DeviceStream {
 public:
  virtual ~DeviceStream() = default;
  /// Records what `enqueue` puts on this stream, without running it, for replays; null where the
  /// device cannot (the default), an error where recording failed (nothing then ran).
  virtual Expected<std::unique_ptr<RecordedWork>> capture(const std::function<Status()>& enqueue) {
    (void)enqueue;
    return std::unique_ptr<RecordedWork>();
  }
  /// Blocks until everything enqueued so far has finished; reports an asynchronous failure.
  virtual Status synchronize() = 0;
  /// An event after everything enqueued so far; `timing` asks for one elapsedMsSince() can read
  /// (kernel time measured on the device, as CUDA events measure it).
  virtual Expected<std::unique_ptr<DeviceEvent>> record(bool timing = false) = 0;
  /// Records `event` (made by record() on a stream of this device) again, after everything enqueued so far:
  /// the ordering of a new event without making one (an executable's runs reuse theirs). False where the
  /// device cannot (the default): then record() a new one. Waits enqueued on the event before keep the
  /// position it had then.
  virtual Expected<bool> recordAgain(DeviceEvent& event) {
    (void)event;
    return false;
  }
  /// Makes work enqueued from now on wait for `event` (from any stream of the same device).
  virtual Status wait(DeviceEvent& event) = 0;
};

/// Host memory the device can copy from and to asynchronously (page-locked where the backend has
/// it). Freed on destruction.
class PinnedHostMemory {
 public:
  virtual ~PinnedHostMemory() = default;
  virtual void* data() = 0;
  virtual std::size_t bytes() const = 0;
};

/// The pinned host ranges a device handed out, so its copies know which they may leave running
/// (asynchronous) when they return. Thread-safe.
class PinnedRanges {
 public:
  void add(const void* data, std::size_t bytes);
  void remove(const void* data);
  /// Whether [data, data + bytes) lies inside one pinned range.
  bool contains(const void* data, std::size_t bytes) const;

 private:
  mutable std::mutex mutex_;
  std::map<const char*, std::size_t> ranges_;
};

/// `memory` registered in `ranges` until it is freed. `ranges` must outlive it (devices live for the
/// process).
std::unique_ptr<PinnedHostMemory> trackPinned(PinnedRanges& ranges, std::unique_ptr<PinnedHostMemory> memory);

/// A smelt kernel's buffer argument: device memory, a byte offset into it and the size of the
/// buffer's elements. Generated kernels take, per buffer, a base and an element offset (OpenCL) or
/// one address (CUDA, HIP), then the number of points they compute (codegen/c_renderer.h).
struct KernelBufferArg {
  DeviceMemory memory;
  std::int64_t byteOffset = 0;
  std::int64_t elementBytes = 1;
};

/// How a prepared kernel is launched: one work-item / thread per outer point of its domain (or per
/// `pointsPerThread` of them), or one block (work-group) of `threadsPerPoint` threads per point for a
/// block-mapped kernel
/// (codegen/map_to_blocks.h); on the CPU, whether the points are split across the thread pool.
struct LaunchShape {
  std::int64_t points = 0;
  bool parallel = true;
  std::int32_t threadsPerPoint = 0;
  /// Consecutive points per thread of a vectorized kernel (codegen/vectorize.h), else 1.
  std::int32_t pointsPerThread = 1;
  /// The threads of a kernel that is not block-mapped.
  std::int64_t threads() const { return (points + pointsPerThread - 1) / pointsPerThread; }

  /// A GPU's 1-D launch (CUDA, HIP) of a kernel that is not block-mapped: blocks of this many threads.
  static constexpr std::int32_t kFlatBlockThreads = 256;
  /// Threads per block of a GPU launch: the block-mapped kernel's, else kFlatBlockThreads.
  std::int64_t blockThreads() const { return threadsPerPoint > 0 ? threadsPerPoint : kFlatBlockThreads; }
  /// Blocks of a GPU launch: one per point when block-mapped, else enough to cover threads().
  std::int64_t blocks() const {
    return threadsPerPoint > 0 ? points : (threads() + kFlatBlockThreads - 1) / kFlatBlockThreads;
  }
};

/// One kernel launch with its arguments fixed once: what an executable prepares when it compiles and
/// replays on every run, with no argument repacking. The buffers that change between runs (fed
/// tensors, outputs) are rebound with setBuffer, which only records the address. Not thread-safe:
/// one executable owns it.
class PreparedLaunch {
 public:
  virtual ~PreparedLaunch() = default;
  /// Rebinds buffer `index` (in the kernel's buffer order) for the next launches.
  virtual void setBuffer(std::size_t index, const KernelBufferArg& arg) = 0;
  /// Enqueues the kernel on `stream` (the CPU runs it before returning).
  virtual Status launch(DeviceStream& stream) = 0;
};

/// Kernels loaded on a device from one program (JIT-compiled CPU code, OpenCL C source, a CUBIN or
/// PTX module, an AMD code object).
class DeviceKernels {
 public:
  virtual ~DeviceKernels() = default;
  /// A launch of `symbol` with `buffers` (every buffer of the kernel, in order) over `shape`.
  virtual Expected<std::unique_ptr<PreparedLaunch>> prepare(const std::string& symbol,
                                                            std::span<const KernelBufferArg> buffers,
                                                            const LaunchShape& shape) = 0;
  /// Prepares and launches once: for tests and one-off kernels, not for loops.
  Status launch(const std::string& symbol, std::span<const KernelBufferArg> buffers, std::int64_t points,
                DeviceStream& stream);
};

/// What DeviceKernels are loaded from.
struct KernelImage {
  enum class Format { kOpenClSource, kPtx, kCubin, kAmdCodeObject } format = Format::kOpenClSource;
  std::string data;
  /// Build options (OpenCL).
  std::string options;
};

/// See the file comment. Thread-safe: every call may come from any thread.
class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceDescription& description() const = 0;
  const std::string& id() const { return description().id; }
  DeviceKind kind() const { return description().kind; }

  /// `bytes` of device memory, straight from the driver (MemoryPool caches these). Out of memory is
  /// an error of kind ErrorKind::kOutOfMemory.
  virtual Expected<DeviceMemory> allocate(std::size_t bytes) = 0;
  virtual void release(DeviceMemory memory) = 0;
  /// Lets go of memory allocated before a reset: releases what the driver still holds (OpenCL
  /// objects), nothing where the reset freed it already (CUDA and HIP, where freeing an old address
  /// could free a new allocation that reuses it).
  virtual void forget(DeviceMemory memory) { release(memory); }

  /// Sets `bytes` of `memory` from `offset` to `value`.
  virtual Status fill(DeviceMemory memory, std::size_t offset, std::size_t bytes, std::uint8_t value,
                      DeviceStream& stream) = 0;
  /// Host to device. Asynchronous where `src` is pinned (allocatePinned) and the backend can: keep
  /// `src` alive and unchanged until the stream passes this point; otherwise it returns when `src`
  /// may be reused.
  virtual Status copyIn(DeviceMemory dst, std::size_t offset, const void* src, std::size_t bytes,
                        DeviceStream& stream) = 0;
  /// Device to host; asynchronous into pinned memory as copyIn, otherwise done on return.
  virtual Status copyOut(void* dst, DeviceMemory src, std::size_t offset, std::size_t bytes,
                         DeviceStream& stream) = 0;
  /// Device to device, on the device.
  virtual Status copy(DeviceMemory dst, std::size_t dstOffset, DeviceMemory src, std::size_t srcOffset,
                      std::size_t bytes, DeviceStream& stream) = 0;

  /// The stream work goes to unless given another.
  virtual DeviceStream& defaultStream() = 0;
  virtual Expected<std::unique_ptr<DeviceStream>> createStream() = 0;
  /// Page-locked host memory for asynchronous copies (plain aligned memory where there is no such
  /// thing, as on the CPU and PoCL).
  virtual Expected<std::unique_ptr<PinnedHostMemory>> allocatePinned(std::size_t bytes);

  /// Loads kernels, once per process and image: `reused`, when given, says whether this process had
  /// loaded the same image on this device before (then nothing was built or loaded).
  virtual Expected<std::shared_ptr<DeviceKernels>> loadKernels(const KernelImage& image, bool* reused = nullptr) = 0;

  /// Blocks until all work on every stream has finished.
  virtual Status synchronize() = 0;

  /// Recreates the device's context after an error of kind kDeviceLost (a sticky CUDA error, a lost
  /// OpenCL device): everything made on it before (memory, streams, loaded kernels) is gone, so the
  /// generation goes up and whoever holds such things makes them again. An error when the device
  /// cannot be recreated (then only another device helps).
  virtual Status reset();
  /// How many times the device was reset: memory, streams and kernels of an older generation are dead.
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 protected:
  std::atomic<std::uint64_t> generation_{0};
};

/// Whether `error` says the device ran out of memory (ErrorKind::kOutOfMemory).
bool isOutOfMemory(const Error& error);
/// Whether `error` says the device was lost or its context poisoned (ErrorKind::kDeviceLost).
bool isDeviceLost(const Error& error);

}  // namespace smelt

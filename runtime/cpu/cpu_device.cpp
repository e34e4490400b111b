// CpuDevice: what Device means where the device is the host.
#include "runtime/cpu/cpu_device.h"


#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>

namespace smelt {

namespace {

/// Work on the CPU is done when the call returns: nothing to wait for, and the time it was recorded
/// is the time the work before it finished.
class ImmediateEvent final : public DeviceEvent {
 public:
  Status synchronize() override { return Status::success(); }
  Expected<bool> done() override { return true; }
  Expected<double> elapsedMsSince(DeviceEvent& start) override {
    return std::chrono::duration<double, std::milli>(at_ - static_cast<ImmediateEvent&>(start).at_).count();
  }

 private:
  std::chrono::steady_clock::time_point at_ = std::chrono::steady_clock::now();
};

class ImmediateStream final : public DeviceStream {
 public:
  Status synchronize() override { return Status::success(); }
  Expected<std::unique_ptr<DeviceEvent>> record(bool) override {
    return std::unique_ptr<DeviceEvent>(std::make_unique<ImmediateEvent>());
  }
  Status wait(DeviceEvent&) override { return Status::success(); }
};

/// "avx512f avx2 fma": the vector extensions the JIT targets, from /proc/cpuinfo.
std::string cpuFeatures() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::string found;
    for (const char* flag : {"avx512f", "avx512bw", "avx512_bf16", "avx512_fp16", "avx2", "fma", "f16c"}) {
      if (line.find(std::string(" ") + flag) != std::string::npos) found += (found.empty() ? "" : " ") + std::string(flag);
    }
    return found;
  }
  return {};
}

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "host CPU";
}

class CpuDevice final : public Device {
 public:
  CpuDevice() {
    description_.kind = DeviceKind::kCpu;
    description_.id = "cpu";
    description_.name = cpuModel();
#ifdef SMELT_HAVE_LLVM
    description_.driver = "LLVM JIT";
#else
    description_.driver = "reference interpreter (no LLVM in this build)";
#endif
    long pages = sysconf(_SC_PHYS_PAGES);
    long pageSize = sysconf(_SC_PAGESIZE);
    description_.memoryBytes = pages > 0 && pageSize > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize) : 0;
    description_.computeUnits = std::thread::hardware_concurrency();
    description_.fp64 = true;
    description_.fp16 = true;  // computed in f32 and rounded, as the reference does
    description_.capabilities = cpuFeatures();
  }
  const DeviceDescription& description() const override { return description_; }

  Expected<DeviceMemory> allocate(std::size_t bytes) override {
    // SMELT_FAULTS' oom leaves the CPU alone: it is where executables fall back to.
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (!p) return Error(fmt::format("cpu: out of memory allocating {} bytes", bytes), ErrorKind::kOutOfMemory);
    return DeviceMemory{p, bytes};
  }
  void release(DeviceMemory memory) override { std::free(memory.handle); }

  Status fill(DeviceMemory memory, std::size_t offset, std::size_t bytes, std::uint8_t value, DeviceStream&) override {
    SMELT_CHECK_OK(checkRange(memory, offset, bytes));
    std::memset(static_cast<char*>(memory.handle) + offset, value, bytes);
    return Status::success();
  }
  Status copyIn(DeviceMemory dst, std::size_t offset, const void* src, std::size_t bytes, DeviceStream&) override {
    SMELT_CHECK_OK(checkRange(dst, offset, bytes));
    if (bytes) std::memcpy(static_cast<char*>(dst.handle) + offset, src, bytes);
    return Status::success();
  }
  Status copyOut(void* dst, DeviceMemory src, std::size_t offset, std::size_t bytes, DeviceStream&) override {
    SMELT_CHECK_OK(checkRange(src, offset, bytes));
    if (bytes) std::memcpy(dst, static_cast<const char*>(src.handle) + offset, bytes);
    return Status::success();
  }
  Status copy(DeviceMemory dst, std::size_t dstOffset, DeviceMemory src, std::size_t srcOffset, std::size_t bytes,
              DeviceStream&) override {
    SMELT_CHECK_OK(checkRange(dst, dstOffset, bytes));
    SMELT_CHECK_OK(checkRange(src, srcOffset, bytes));
    if (bytes) std::memmove(static_cast<char*>(dst.handle) + dstOffset, static_cast<const char*>(src.handle) + srcOffset, bytes);
    return Status::success();
  }
  DeviceStream& defaultStream() override { return stream_; }
  Expected<std::unique_ptr<DeviceStream>> createStream() override {
    return std::unique_ptr<DeviceStream>(std::make_unique<ImmediateStream>());
  }
  Expected<std::shared_ptr<DeviceKernels>> loadKernels(const KernelImage&, bool*) override {
    // The CPU's kernels are JIT-compiled from their descriptions, not loaded from an image.
    return makeError("cpu: kernels come from the LLVM JIT (runtime/cpu/cpu_backend.h), not from an image");
  }
  Status synchronize() override { return Status::success(); }

 private:
  static Status checkRange(const DeviceMemory& m, std::size_t offset, std::size_t bytes) {
    if (offset > m.bytes || bytes > m.bytes - offset) {
      return makeError("cpu: {} bytes at offset {} overrun a {}-byte buffer", bytes, offset, m.bytes);
    }
    return Status::success();
  }
  DeviceDescription description_;
  ImmediateStream stream_;
};

}  // namespace

std::shared_ptr<Device> cpuDevice() {
  static std::shared_ptr<Device> device = std::make_shared<CpuDevice>();
  return device;
}

}  // namespace smelt

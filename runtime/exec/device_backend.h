// What one kind of device adds to the one executable (executable.h): how its kernels are adapted,
// compiled into an image and loaded, how a product is handed to its vendor library, and what it
// cannot run. Everything else (the pipeline, the memory plan, the arena, feeds and outputs, host and
// device-resident runs, fallbacks, profiles) is the same code for every device. A new backend is a
// Device (runtime/device/device.h) plus a subclass of this, returned by backendFor();
// docs/adding_a_backend.md lists the few other places it touches.
//   SMELT_TRY(std::unique_ptr<DeviceBackend> backend, backendFor(device));
//   SMELT_TRY(std::shared_ptr<DeviceKernels> kernels, backend->loadKernels(kernels, symbols, info));
#pragma once

#include "codegen/cache/cache_key.h"
#include "codegen/kernel.h"
#include "codegen/kernel_passes.h"
#include "ir/graph.h"
#include "runtime/device/device.h"
#include "runtime/exec/gemm_plan.h"

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace smelt {

struct CompileOptions;

/// What loading a set of kernels did, for the compile report and `smelt kernels`.
struct KernelLoadInfo {
  /// Per kernel, in the order given: whether its compiled code came from a cache (the kernel cache on
  /// disk or in memory, or an image this process had loaded already) instead of a compiler.
  std::vector<bool> cached;
  /// The program as rendered (OpenCL C, CUDA C, HIP); empty on the CPU, whose kernels go to LLVM.
  std::string source;
  /// What the device loaded, in text where it is text (PTX); empty otherwise.
  std::string assembly;
  /// What it was compiled for: "sm_90", "compute_90", "gfx90a", "cpu=... features=...".
  std::string target;
  /// Set by cachedImage() when the image came from the kernel cache: the key to evict should the
  /// device refuse it (loadBuiltImage()).
  std::optional<CacheKey> imageFromCache;
  /// Set by the caller, or empty: told how many kernels are done after each one a backend compiles on
  /// its own (the CPU's JIT), so that a long compile can say how far it is (compile_progress.h).
  std::function<void(size_t done)> compiledOne;
};

/// The buffers of a vendor product (GemmPlan): the node's operands, where the product goes, and a
/// scratch buffer of plan.columnElements elements.
struct ProductBuffers {
  std::span<const KernelBufferArg> operands;
  KernelBufferArg product;
  KernelBufferArg scratch;
};

/// See the file comment. One per compiled graph; not shared between threads.
/// The bf16/f16 products a device computes as they are (DeviceBackend::lowPrecisionProducts).
struct LowPrecisionProducts {
  /// Every product, convolutions included.
  bool all = true;
  /// Otherwise the products of these ops ("matmul+gemm") in these dtypes ("bf16", "bf16+f16"; "": none).
  std::string dtypes;
  std::string ops;
};

class DeviceBackend {
 public:
  explicit DeviceBackend(std::shared_ptr<Device> device) : device_(std::move(device)) {}
  virtual ~DeviceBackend() = default;
  const std::shared_ptr<Device>& device() const { return device_; }

  /// Whether the host reads and writes the device's memory in place (the CPU): host tensors are then
  /// bound directly instead of copied into the arena, and ops' host implementations may run.
  virtual bool hostMemory() const { return false; }
  /// Whether an executable runs on a stream of its own (joined to the default stream at its start
  /// and end), so that waiting for a run waits for it alone and reports its own faults (CUDA, HIP).
  virtual bool ownStream() const { return false; }

  /// Which bf16 and f16 products run fast here as they are: all of them (cuBLAS, a generated GPU kernel), or only
  /// some ops in some dtypes (the CPU: oneDNN's bf16 GEMM); the executable widens the others to f32 products first
  /// (passes/widen_products.cpp). `vendorLibraries` false (CompileOptions::blas, SMELT_BLAS=0): products run on
  /// generated kernels, and no library may be loaded to answer.
  virtual LowPrecisionProducts lowPrecisionProducts(bool vendorLibraries) const {
    (void)vendorLibraries;
    return {};
  }

  /// Why `node` cannot run as a kernel here ("" when it can): no kernel lowering, no compiler in this
  /// build, a dtype the device lacks, an op or dtype SMELT_FAULTS marks unsupported. Such nodes run on
  /// the reference interpreter, their operands brought to the host and their results sent back.
  virtual std::string whyNotKernel(const Node& node) const;

  /// The vendor library's plan for product `node` (the CPU's BLAS, CLBlast, ...), or nothing: then a
  /// generated kernel computes it.
  virtual std::optional<GemmPlan> planProduct(const Node& node, const CompileOptions& options) const;
  /// Runs a plan planProduct made, writing the product into buffers.product.
  virtual Status runProduct(const GemmPlan& plan, const ProductBuffers& buffers, DeviceStream& stream) const;

  /// Whether the collective group's all-reduces of `dtype` run on this device's buffers and streams (NCCL on
  /// CUDA): all_reduce, and all_reduce_start's sum on a stream of its own while the step goes on. Otherwise
  /// (the default) collectives run on the host, their operands copied out and their results back.
  virtual bool allReducesOnDevice(DType dtype) const {
    (void)dtype;
    return false;
  }
  /// recv = the elementwise sum (`mean`: the mean) over the collective group's ranks of send, `count` elements
  /// of `dtype`, enqueued on `stream`; send may be recv. Only where allReducesOnDevice(dtype).
  virtual Status allReduce(const KernelBufferArg& send, const KernelBufferArg& recv, int64_t count, DType dtype,
                           bool mean, DeviceStream& stream) const;
  /// After a run's work has finished: an error when a collective it enqueued failed without the stream saying so
  /// (NCCL's watchdog aborted its communicator: its results may be garbage).
  virtual Status collectivesHealthy() const { return Status::success(); }

  /// The clean-up passes a node's kernel is lowered with (codegen/kernel_passes.h): the common ones,
  /// or GPUs' (gpuLoweringPipeline).
  virtual std::string_view loweringPipeline() const { return codegen::kLoweringKernelPipeline; }
  /// The kernel passes (codegen/kernel_passes.h) that shape a lowered kernel for this device before
  /// it is compiled: the CPU tiles column loops, GPUs map rows to blocks of threads
  /// (gpuKernelPipeline).
  virtual std::string_view kernelPipeline() const { return ""; }
  /// How `kernel` is launched (the CPU splits points across threads above a size).
  virtual LaunchShape shapeOf(const codegen::Kernel& kernel, const CompileOptions& options) const;

  /// Compiles `kernels` (kernels[i] named symbols[i]) into one image, through the kernel cache, and
  /// loads it on the device.
  virtual Expected<std::shared_ptr<DeviceKernels>> loadKernels(std::span<const codegen::Kernel* const> kernels,
                                                               std::span<const std::string> symbols,
                                                               KernelLoadInfo& info) const = 0;

 protected:
  /// The parts of whyNotKernel every device shares: a lowering, and SMELT_FAULTS' unsupported ops
  /// and dtypes (and `lacks`, a dtype the device cannot compute in, when given).
  std::string whyNotCommon(const Node& node, bool (*lacks)(DType, const Device&) = nullptr) const;
  /// Loads `image` (of `kernels` kernels) on the device; an image this process loaded before counts
  /// every kernel as cached.
  /// Builds an image with `build` and loads it. An image from the kernel cache that the device
  /// refuses (its checksum held, but the driver cannot load it: written by another driver, or damage
  /// the checksum cannot see) would fail every later run: its entry is evicted and `build` runs again.
  Expected<std::shared_ptr<DeviceKernels>> loadBuiltImage(size_t kernels, KernelLoadInfo& info,
                                                          const std::function<Expected<KernelImage>()>& build) const;
  Expected<std::shared_ptr<DeviceKernels>> loadImage(const KernelImage& image, size_t kernels,
                                                     KernelLoadInfo& info) const;

  std::shared_ptr<Device> device_;
};

/// The kernel pipeline of every GPU-like backend (OpenCL, CUDA, HIP): long rows to blocks of threads,
/// flat elementwise kernels to vectors (codegen/map_to_blocks.h, codegen/vectorize.h), unless $SMELT_BLOCKS is 0 (one thread per point, to
/// compare or bisect).
std::string_view gpuKernelPipeline();
/// Their lowering clean-up: kGpuLoweringKernelPipeline with blocks, the common one without them.
std::string_view gpuLoweringPipeline();

/// The kernel cache's key for one image of `kernels` (named `symbols`) built by `backend` ("cuda",
/// "hip") for `target` with `compilerVersion` and `options`.
CacheKey imageKey(std::span<const codegen::Kernel* const> kernels, std::span<const std::string> symbols,
                  std::string backend, std::string target, std::string compilerVersion, std::string options = {});

/// The compiled image `key` names: from the kernel cache when any process built it before, else from
/// `compile` (then stored). `info.cached` says which, for each of `kernels` kernels.
Expected<std::string> cachedImage(const CacheKey& key, size_t kernels, KernelLoadInfo& info,
                                  const std::function<Expected<std::string>()>& compile);

/// The backend for `device`'s kind: the one place that maps a device kind to its hooks. A kind this
/// build has none for is an error saying so.
Expected<std::unique_ptr<DeviceBackend>> backendFor(const std::shared_ptr<Device>& device);

}  // namespace smelt

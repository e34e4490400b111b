// CpuBackend (see cpu_backend.h) and its kernels: JIT-compiled entry points launched over the thread
// pool with their buffers' host addresses.
#include "runtime/cpu/cpu_backend.h"

#include "codegen/log.h"
#include "codegen/lower_kernel.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/gemm_run.h"
#include "runtime/cpu/thread_pool.h"
#include "runtime/exec/executable.h"
#ifdef SMELT_HAVE_LLVM
#include "codegen/llvm/llvm_jit.h"
#endif

#include <fmt/format.h>

#include <map>
#include <memory>
#include <vector>

namespace smelt {

namespace {

/// A compiled kernel: runs the outer points [begin, end) with `buffers[i]` as buffer i (llvm_jit.h).
using KernelEntry = void (*)(char** buffers, int64_t begin, int64_t end);

/// Rough work per outer point: the product of nested loop extents, summed. Small kernels run inline:
/// waking the pool costs more than they do.
int64_t workPerPoint(const codegen::KBlock& block) {
  int64_t work = 1;
  for (const codegen::KStmt& s : block.stmts) {
    if (const auto* l = std::get_if<std::shared_ptr<codegen::KLoop>>(&s)) work += (*l)->extent * workPerPoint((*l)->body);
  }
  return work;
}

char* addressOf(const KernelBufferArg& arg) { return static_cast<char*>(arg.memory.handle) + arg.byteOffset; }

class CpuLaunch final : public PreparedLaunch {
 public:
  CpuLaunch(KernelEntry entry, std::span<const KernelBufferArg> buffers, LaunchShape shape)
      : entry_(entry), shape_(shape) {
    for (const KernelBufferArg& b : buffers) pointers_.push_back(addressOf(b));
  }
  void setBuffer(std::size_t index, const KernelBufferArg& arg) override { pointers_[index] = addressOf(arg); }
  Status launch(DeviceStream&) override {
    if (!shape_.parallel) {
      entry_(pointers_.data(), 0, shape_.points);
    } else {
      char** buffers = pointers_.data();
      KernelEntry entry = entry_;
      ThreadPool::global().parallelFor(shape_.points, [=](int64_t begin, int64_t end) { entry(buffers, begin, end); });
    }
    return Status::success();
  }

 private:
  KernelEntry entry_;
  LaunchShape shape_;
  std::vector<char*> pointers_;
};

class CpuKernels final : public DeviceKernels {
 public:
  /// A kernel's entry point, and what keeps its code loaded (the JIT's handle, type-erased so that this
  /// file builds without LLVM too).
  struct Loaded {
    KernelEntry entry = nullptr;
    std::shared_ptr<const void> code;
  };
  explicit CpuKernels(std::map<std::string, Loaded> entries) : entries_(std::move(entries)) {}
  Expected<std::unique_ptr<PreparedLaunch>> prepare(const std::string& symbol, std::span<const KernelBufferArg> buffers,
                                                    const LaunchShape& shape) override {
    auto it = entries_.find(symbol);
    if (it == entries_.end()) return makeError("cpu: no kernel '{}' was compiled", symbol);
    return std::unique_ptr<PreparedLaunch>(std::make_unique<CpuLaunch>(it->second.entry, buffers, shape));
  }

 private:
  // The handles keep the code loaded while the executable holding these kernels lives.
  std::map<std::string, Loaded> entries_;
};

}  // namespace

std::string CpuBackend::whyNotKernel(const Node& node) const {
#ifndef SMELT_HAVE_LLVM
  (void)node;
  return "no LLVM in this build";
#else
  // The CPU is where unsupported ops go, so SMELT_FAULTS does not apply here.
  return codegen::canLower(node) ? "" : "no kernel lowering";
#endif
}

// bf16 products on oneDNN's bf16 GEMM where it is there; every other bf16/f16 product widened to f32.
// (Asked without vendor libraries, it loads none: under ThreadSanitizer oneDNN's OpenMP threads would run the pool.)
LowPrecisionProducts CpuBackend::lowPrecisionProducts(bool vendorLibraries) const {
  if (!vendorLibraries || !blas::available(DType::bf16)) return {.all = false};
  return {.all = false, .dtypes = "bf16", .ops = "matmul+gemm+conv2d+conv2d_weight_grad+conv_transpose2d"};
}

std::optional<GemmPlan> CpuBackend::planProduct(const Node& node, const CompileOptions&) const {
  std::optional<GemmPlan> plan = planGemm(node, &blas::available);
  if (!plan) return plan;
  // A bf16 transposed convolution sums its columns in f32 (runConvTransposeBf16): its scratch holds the swapped
  // images (bf16), then f32 columns and an f32 output, counted here in bf16 elements (two per float, and 64 bytes
  // of alignment between).
  if (plan->conv && plan->conv->kind == ConvGeometry::Transposed && plan->dtype == DType::bf16) {
    const ConvGeometry& g = *plan->conv;
    plan->columnElements = (g.n > 1 ? g.c * plan->n : 0) + 32 + 2 * (g.o * g.kh * g.kw * plan->n) +
                           2 * (g.n * g.o * g.oh * g.ow);
  }
  // OpenBLAS keeps its own threads; as many as smelt's pool (SMELT_NUM_THREADS), never more.
  static const bool threadsSet = [] {
    blas::setThreads(ThreadPool::global().threads());
    return true;
  }();
  (void)threadsSet;
  preferUntransposedB(*plan);
  return plan;
}

Status CpuBackend::runProduct(const GemmPlan& plan, const ProductBuffers& buffers, DeviceStream&) const {
  thread_local std::vector<char*> operands;
  operands.clear();
  for (const KernelBufferArg& b : buffers.operands) operands.push_back(addressOf(b));
  runGemm(plan, operands.data(), addressOf(buffers.product), addressOf(buffers.scratch));
  return Status::success();
}

LaunchShape CpuBackend::shapeOf(const codegen::Kernel& kernel, const CompileOptions& options) const {
  const int64_t points = kernel.domainSize();
  return LaunchShape{.points = points,
                     .parallel = options.parallel && points > 1 && points * workPerPoint(kernel.body) >= 32768};
}

Expected<std::shared_ptr<DeviceKernels>> CpuBackend::loadKernels(std::span<const codegen::Kernel* const> kernels,
                                                                std::span<const std::string> symbols,
                                                                KernelLoadInfo& info) const {
#ifdef SMELT_HAVE_LLVM
  SMELT_TRY(codegen::LlvmJit * jit, codegen::LlvmJit::global());
  std::map<std::string, CpuKernels::Loaded> entries;
  info.target = jit->target();
  for (size_t k = 0; k < kernels.size(); ++k) {
    codegen::CompileInfo compiled;
    SMELT_TRY(codegen::JitKernelHandle entry, jit->compile(*kernels[k], &compiled));
    entries.emplace(symbols[k], CpuKernels::Loaded{entry->entry, entry});
    info.cached.push_back(compiled.cacheHit);
    if (info.compiledOne) info.compiledOne(k + 1);
  }
  return std::shared_ptr<DeviceKernels>(std::make_shared<CpuKernels>(std::move(entries)));
#else
  (void)kernels;
  (void)symbols;
  (void)info;
  return makeError("cpu: this build has no LLVM to compile kernels");
#endif
}

}  // namespace smelt

// The C-family renderer: a kernel description (kernel.h) -> the source of one kernel function in
// OpenCL C, CUDA C or HIP. The base class walks the description; the dialects differ only in a few
// hooks (kernel prefix, buffer qualifier, thread index, type names, bit casts, math names), so the
// OpenCL, CUDA and HIP renderers are small subclasses (opencl/, cuda/, hip/).
//   OpenClRenderer r(/*fp64=*/true);
//   SMELT_TRY(std::string source, r.renderSource({&kernel}, {"k0_fused_0"}));   // prelude + kernel
//
// Every kernel has one work-item / thread per outer point of the domain (bounds-checked against the
// total `n`), buffers as pointer parameters, and the SSA body as C statements: one variable per
// value, loops with carried values as C loops over mutable variables. Semantics are the kernel
// interpreter's (kernel_interpreter.h): f16 and bf16 are stored as 16-bit patterns and computed in
// float, rounded after every instruction by the prelude's helpers; bool is a byte 0/1; integers wrap
// (arithmetic in unsigned, cast back); integer div/rem by 0 give 0; shifts never overflow; floats cast
// to integers as fromDouble does.
#pragma once

#include "codegen/kernel.h"

#include <span>
#include <string>
#include <string_view>

namespace smelt::codegen {

/// See the file comment. Stateless: one renderer may render any number of kernels, from any thread.
class CRenderer {
 public:
  virtual ~CRenderer() = default;

  /// "opencl", "cuda", "hip": for messages and cache keys.
  virtual std::string_view backend() const = 0;

  /// What every source starts with: pragmas, and the helpers kernels call (f16/bf16 conversions,
  /// float -> integer casts). Once per source, before the kernels.
  std::string prelude() const;

  /// One kernel function named `symbol` (a C identifier), preceded by a comment naming the kernel and
  /// the IR nodes it came from. Fails on what the dialect cannot express (f64 without fp64).
  Expected<std::string> renderKernel(const Kernel& kernel, const std::string& symbol) const;

  /// The prelude and every kernel (kernels[i] named symbols[i]), as one compilable source.
  Expected<std::string> renderSource(std::span<const Kernel* const> kernels,
                                     std::span<const std::string> symbols) const;

  /// A C identifier for kernel `index` of a source: "k3_fused_0" (the name's other characters
  /// become '_').
  static std::string symbolFor(const Kernel& kernel, size_t index);

  // --- hooks: what differs between dialects ----------------------------------------------------
  /// Before the function's name: "__kernel void", "extern \"C\" __global__ void".
  virtual std::string kernelPrefix() const = 0;
  /// Before a prelude helper's return type: "static inline", "static __device__ inline".
  virtual std::string helperPrefix() const = 0;
  /// Before a buffer parameter's element type: "__global " (with its space) or "".
  virtual std::string bufferQualifier() const { return ""; }
  /// How a pointer parameter says that no other parameter reaches its memory ("__restrict__ "),
  /// written on every buffer of a kernel whose executable found no two buffers sharing memory
  /// (Kernel::disjointBuffers; never with an in-place result or a product read from its own output).
  /// Lets the compiler keep loaded values in registers across stores and use the read-only path.
  virtual std::string restrictQualifier() const { return ""; }
  /// The calling work-item's / thread's linear index, as a 64-bit expression.
  virtual std::string threadIndex() const = 0;
  /// For block-mapped kernels (Kernel::blockThreads, codegen/map_to_blocks.h): the block's index and
  /// the thread's index within its block, as 64-bit expressions; a barrier across the block that also
  /// orders its threads' memory accesses; and what comes before a block-shared array's element type.
  virtual std::string blockIndex() const = 0;
  virtual std::string threadInBlock() const = 0;
  virtual std::string blockBarrier() const = 0;
  virtual std::string sharedQualifier() const = 0;
  /// For the combine of a split loop's partials: the lanes of a warp as an expression ("32", HIP's
  /// `warpSize`, 32 or 64 by target), and `x` read from the lane `delta` above within groups of
  /// `width` lanes. Empty: no shuffles (OpenCL C 1.2); the block combines through local memory alone.
  virtual std::string warpLanes() const { return ""; }
  virtual std::string shuffleDown(const std::string& x, const std::string& delta, const std::string& width) const {
    return "";
  }
  /// For vectorized kernels (Kernel::pointsPerThread, codegen/vectorize.h): a vector of type `type`
  /// loaded from `pointer` and stored there, and the condition under which `pointer` may be accessed
  /// as vectors of `bytes` ("" when element alignment is enough, as for OpenCL's vload/vstore).
  virtual std::string vectorLoad(const std::string& type, const std::string& pointer) const {
    return "*(const " + type + "*)(" + pointer + ")";
  }
  virtual std::string vectorStore(const std::string& type, const std::string& pointer, const std::string& value) const {
    return "*(" + type + "*)(" + pointer + ") = " + value + ";";
  }
  virtual std::string vectorAlignment(const std::string& pointer, int64_t bytes) const {
    return "((unsigned long long)" + pointer + " & " + std::to_string(bytes - 1) + ") == 0";
  }
  /// What comes before a loop whose trip count is a constant for the compiler to unroll it whole
  /// ("#pragma unroll"): a split loop's loads then all issue before the first is used. Empty: none.
  virtual std::string unrollPragma() const { return ""; }
  /// Whether consecutive split loops get a barrier between them even when neither reads what the
  /// other wrote (a workaround, see OpenClRenderer).
  virtual bool barrierBetweenSplitLoops() const { return false; }
  /// The C name of a storage or register type: any DType but f16 and bf16 (held as u16 in memory,
  /// as f32 in registers) and bool (held as u8).
  virtual std::string typeName(DType type) const = 0;
  /// The suffix of 64-bit integer literals: "L" (OpenCL's long), "LL" (CUDA's long long).
  virtual std::string int64Suffix() const = 0;
  /// A float's bits as a 32-bit unsigned integer (and back); `isDouble`: 64-bit.
  virtual std::string floatToBits(const std::string& x, bool isDouble) const = 0;
  virtual std::string bitsToFloat(const std::string& x, bool isDouble) const = 0;
  /// The C math function `base` ("exp", "fmod") for float or double arguments: OpenCL's are
  /// overloaded, CUDA's float ones end in 'f'.
  virtual std::string mathFunction(std::string_view base, bool isDouble) const = 0;
  /// Pragmas or declarations the source opens with (OpenCL's fp64 extension), and the dialect's
  /// hardware f16 / bf16 conversions: smelt_h2f and smelt_f2h with SMELT_HW_F16 defined, smelt_f2bf
  /// with SMELT_HW_BF16, in place of the prelude's software ones.
  virtual std::string preludeHeader() const { return ""; }
  /// Whether each buffer parameter is followed by a 64-bit element offset added to it (OpenCL:
  /// every buffer is a slice of one arena cl_mem, and sub-buffers need device alignment).
  virtual bool bufferOffsets() const { return false; }
  /// Whether doubles are available. Without them f64 kernels fail to render, and integer pow and
  /// i64 -> float casts compute in float.
  virtual bool fp64() const { return true; }
};

}  // namespace smelt::codegen

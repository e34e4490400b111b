// The backend-neutral kernel description: one per kernel (a `fused` node or a lone op). It holds the
// buffers the kernel reads and writes (flat, row-major), the outer index space run in parallel, and a
// small SSA body run once per outer point: scalar instructions, loads and stores at computed offsets,
// and sequential loops carrying values (reductions). Renderers (LLVM IR, OpenCL C, CUDA C, HIP) read
// this and differ only in syntax and launch geometry; its printed text is the kernel cache's key.
//   kernel @fused_2 domain [32, 128]
//     buffer %b0: f32[4096] in "p0"
//     buffer %b1: f32[4096] out "r0"
//     %0 = outer 0 : i64
//     %1 = outer 1 : i64
//     ...
//     store %b1[%5] = %9
#pragma once

#include "ir/lowering.h"

#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace smelt::codegen {

/// What an instruction computes.
enum class KInstKind {
  Const,   // a constant: `fbits` for floats, `ibits` for integers and bool
  Outer,   // the outer index along dim `ibits` (i64)
  Unary,   // `unary` of a
  Binary,  // `binary` of a and b
  Select,  // a ? b : c
  Cast,    // a converted to `dtype` (the `cast` op's semantics)
  Load,    // buffer `ibits` at element offset a (i64)
  Param,   // run-time value `ibits` of a kernel compiled for every size (codegen/size_general.h): element
           // `ibits` of the last buffer (i64; a float's bits for f32 and f64), converted to `dtype`
};

/// One SSA instruction; its result is value `result` of type `dtype`.
struct KInst {
  KInstKind kind = KInstKind::Const;
  DType dtype = DType::f32;
  int32_t result = -1;
  int32_t a = -1, b = -1, c = -1;
  KUnary unary = KUnary::Neg;
  KBinary binary = KBinary::Add;
  int64_t ibits = 0;
  double fbits = 0;
};

struct KLoop;

/// Stores `value` to buffer `buffer` at element offset `offset`.
struct KStore {
  int32_t buffer = -1;
  int32_t offset = -1;
  int32_t value = -1;
};

/// A statement: an instruction, a store, or a loop (held by pointer: loops nest).
using KStmt = std::variant<KInst, KStore, std::shared_ptr<KLoop>>;

/// A straight-line sequence of statements.
struct KBlock {
  std::vector<KStmt> stmts;
};

/// A sequential loop over [0, extent): `index` is the loop variable; each carried value starts at
/// `init[k]`, is `carried[k]` inside the body, becomes `next[k]` (defined in the body) for the next
/// iteration, and is `results[k]` after the loop.
struct KLoop {
  int32_t index = -1;
  int64_t extent = 0;
  /// A value (a Param defined before the loop) holding the extent, which is then known only at run
  /// time, or -1.
  int32_t extentValue = -1;
  std::vector<int32_t> init, carried, next, results;
  KBlock body;
  /// Split across the threads of a block (Kernel::blockThreads; only at the body's top level): each
  /// thread runs the iterations tid, tid + threads, ...; each carried value is a per-thread partial,
  /// started at `init` in thread 0 and at combine[k]'s identity elsewhere, and the partials are
  /// combined with combine[k] (associative: add, mul, min, max, and, or) into results every thread
  /// sees. Sequential renderers (LLVM, the kernel interpreter) run the loop as it is.
  bool split = false;
  std::vector<KBinary> combine;
  /// With `split`: the carried values are not combined after the loop; its results are each thread's
  /// own partials, which an enclosing loop with `combine` but no `split` combines (map_to_blocks.h's
  /// nests). Such an enclosing loop runs every iteration in every thread, its carried values per-thread
  /// partials (init in thread 0, the identity elsewhere), combined after it like a split loop's.
  bool partial = false;
};

/// A flat buffer the kernel reads or writes.
struct KBuffer {
  std::string name;  // the body input / output it stands for ("p0", "r1")
  DType dtype = DType::f32;
  /// Its elements, or kRunTimeExtent in a kernel compiled for every size.
  int64_t numel = 0;
  bool output = false;
  /// The index of an earlier buffer this one is the same memory as (an in-place result, a product
  /// computed in its output), or -1. Renderers may address both through one pointer: LLVM then sees a
  /// load and a store at one index instead of two pointers whose overlap check fails at run time.
  int32_t sameAs = -1;
};

/// An extent a kernel compiled for every size (codegen/size_general.h) learns only at run time: a
/// buffer's size, or the domain's first extent (its launch gives every point).
inline constexpr int64_t kRunTimeExtent = -1;

/// One kernel.
struct Kernel {
  std::string name;
  std::vector<KBuffer> buffers;
  /// The outer index space, run in parallel: the body runs once per point. In a kernel compiled for
  /// every size, the first extent may be kRunTimeExtent.
  std::vector<int64_t> domain;
  /// Threads per outer point on a GPU (codegen/map_to_blocks.h): 0, one thread per point; N (a
  /// power of two), one block of N threads per point, sharing the body's split loops. Top-level
  /// instructions run in every thread, top-level stores in thread 0.
  int32_t blockThreads = 0;
  /// Consecutive points each GPU thread runs (codegen/vectorize.h): 1, or kVectorLanes, with the
  /// buffers read and written at the point moved as vectors. Sequential renderers ignore it.
  int32_t pointsPerThread = 1;
  /// Set by an executable that checked where the buffers live: no two of them can share memory
  /// (renderers then mark every pointer restrict: CRenderer::restrictQualifier). Off by default (a
  /// kernel printed or rendered on its own promises nothing); not part of the text, as the rendered
  /// source, which the kernel cache's key includes, shows it.
  bool disjointBuffers = false;
  KBlock body;
  /// The dtype of every SSA value, by id.
  std::vector<DType> types;
  /// The IR nodes the kernel came from ("add %3 (Add_7)"), for comments and `smelt inspect`.
  std::vector<std::string> provenance;

  int64_t domainSize() const;
};

/// The domain as printed: "4, 128", "?, 128" for a run-time first extent.
std::string domainText(const Kernel& kernel);

/// The kernel as text (deterministic; the cache key hashes it).
std::string printKernel(const Kernel& kernel);

/// What the kernel computes, as text: printKernel() without the kernel's name, its provenance and its
/// buffers' names, with the disjointBuffers promise (which the rendered code shows). Two kernels with
/// the same computation text render to the same code but for their symbols, so one image need hold
/// only one of them (runtime/exec/distinct_kernels.h).
std::string computationText(const Kernel& kernel);

/// Instruction and loop counts, for listings and tests.
struct KernelCounts {
  int64_t instructions = 0, loads = 0, stores = 0, loops = 0, maxLoopDepth = 0;
};
KernelCounts countKernel(const Kernel& kernel);

}  // namespace smelt::codegen

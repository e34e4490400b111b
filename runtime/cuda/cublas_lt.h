// cuBLASLt's GEMM with a fused epilogue (a bias along the product's columns, then relu or tanh-approximated gelu),
// for the CUDA executable's linear layers: one launch instead of cuBLAS's product and a generated epilogue kernel
// reading it back. Loaded with dlopen (libcublasLt.so.13 or .12, found as cuBLAS is: nvidia_libraries.h), never
// linked. f32 (TF32 only when asked), f16 and bf16 with f32 accumulation. The algorithm comes from cuBLASLt's
// heuristic, asked once per shape when the graph compiles: a shape it has none for keeps the generated epilogue.
//   if (cuda::cublasLtSupports(context, call)) ... cuda::cublasLtGemm(context, stream, call, bias, workspace);
#pragma once

#include "ir/dtype.h"
#include "ir/support/expected.h"
#include "runtime/cuda/cuda_driver.h"

#include <cstdint>
#include <string>

namespace smelt::cuda {

/// "cuBLASLt 13.1.0 (libcublasLt.so.13)", or why it is not available.
std::string cublasLtDescription();

/// A row-major product alpha * op(A) op(B) + bias -> C, then the activation, enqueued on `stream` (a CUstream).
/// C is [m, n]; the bias is n elements of the dtype, one per column. Addresses are CUdeviceptrs.
struct CublasLtGemm {
  enum class Epilogue { kBias, kReluBias, kGeluTanhBias };
  Epilogue epilogue = Epilogue::kBias;
  DType dtype = DType::f32;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1;
  bool tf32 = false;
  std::uint64_t a = 0, b = 0, c = 0, bias = 0;
  /// Scratch memory cuBLASLt may use (the executable's product scratch), kCublasLtWorkspaceBytes at most.
  std::uint64_t workspace = 0;
};

/// The workspace the heuristic is told it may use.
inline constexpr std::int64_t kCublasLtWorkspaceBytes = std::int64_t{8} << 20;

/// Whether cuBLASLt loads and its heuristic has an algorithm for `call`'s shape, dtype and epilogue on `context`'s
/// GPU (addresses are not looked at). Asked once per shape; the answer and the algorithm are kept for the process.
bool cublasLtSupports(Context& context, const CublasLtGemm& call);

/// Runs `call`, which cublasLtSupports accepted.
Status cublasLtGemm(Context& context, void* stream, const CublasLtGemm& call);

}  // namespace smelt::cuda

// cuBLAS's GEMM for the CUDA executable, loaded with dlopen (libcublas.so.13 or .12, with its
// libcublasLt, from the loader's path, the CUDA toolkit or the pip wheels: nvidia_libraries.h), never
// linked. f32 (TF32 tensor cores only when asked, as PyTorch's allow_tf32), f64, f16 and bf16 with f32
// accumulation. Without the library, products stay on generated kernels.
//   if (cuda::cublasAvailable(DType::f32)) SMELT_CHECK_OK(cuda::cublasGemm(context, stream, call));
#pragma once

#include "ir/dtype.h"
#include "ir/support/expected.h"
#include "runtime/cuda/cuda_driver.h"

#include <cstdint>
#include <string>

namespace smelt::cuda {

/// Whether cuBLAS loads and covers `dtype` (f32, f64, f16, bf16).
bool cublasAvailable(DType dtype);
/// "cuBLAS 13.1.0 (/usr/local/cuda/lib64/libcublas.so.13)", or why it is not available.
std::string cublasDescription();

/// A batch of row-major products alpha * op(A) op(B) -> C (C overwritten), enqueued on `stream` (a
/// CUstream) in `context`. Addresses are CUdeviceptrs; leading dimensions and strides count elements.
struct CublasGemm {
  DType dtype = DType::f32;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1;
  std::uint64_t a = 0, b = 0, c = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1, strideA = 0, strideB = 0, strideC = 0;
  /// f32 only: let the tensor cores round the inputs to TF32 (10-bit mantissa).
  bool tf32 = false;
};
Status cublasGemm(Context& context, void* stream, const CublasGemm& call);

}  // namespace smelt::cuda

// The CPU's BLAS (OpenBLAS when the build found it): row-major f32/f64 GEMM, C = alpha * op(A) op(B)
// (beta 0). Without BLAS in the build, available() is false and gemm is never called.
//   if (blas::available()) blas::gemm(DType::f32, false, true, M, N, K, 1.0, a, K, b, K, c, N);
#pragma once

#include "ir/dtype.h"

#include <cstdint>

namespace smelt::blas {

bool available();

/// Row-major C[M,N] = alpha * op(A) * op(B); op transposes when `transA` / `transB`. f32 or f64 only.
void gemm(DType dtype, bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
          int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc);

/// The BLAS's own thread count (OpenBLAS keeps a pool beside smelt's).
void setThreads(int threads);

/// "OpenBLAS 0.3.21 ... SkylakeX" or "none".
const char* description();

}  // namespace smelt::blas

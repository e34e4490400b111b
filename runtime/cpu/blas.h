// The CPU's BLAS (oneDNN for f32 and bf16, OpenBLAS for f64 and f32 without oneDNN; loaded at run time): row-major
// GEMM, C = alpha * op(A) op(B) (beta 0). Where no library serves a dtype, available(dtype) is false
// and gemm is never called for it.
//   if (blas::available(DType::f32)) blas::gemm(DType::f32, false, true, M, N, K, 1.0, a, K, b, K, c, N);
#pragma once

#include "ir/dtype.h"

#include <cstdint>

namespace smelt::blas {

bool available(DType dtype);
/// Whether f32 products run on oneDNN.
bool onednn();

/// Row-major C[M,N] = alpha * op(A) * op(B); op transposes when `transA` / `transB`. f32, f64, or bf16 (accumulated
/// in f32, C rounded once).
void gemm(DType dtype, bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
          int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc);

/// The same over bf16 A and B (16-bit words) into an f32 C, unrounded: for sums of products that go on in f32 (a
/// transposed convolution's columns). Only where available(DType::bf16).
void gemmBf16ToF32(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
                   int64_t lda, const void* b, int64_t ldb, float* c, int64_t ldc);

/// `rows` rows of a row-major matrix with `cols` columns (leading dimension `cols`), transposed into
/// `t` (leading dimension `ldt`), on one thread: OpenBLAS's somatcopy when loaded, else a tiled loop.
void transpose(const float* a, int64_t rows, int64_t cols, float* t, int64_t ldt);

/// The libraries' own thread counts (OpenBLAS's pool and oneDNN's OpenMP threads, beside smelt's).
void setThreads(int threads);

/// "oneDNN (f32), OpenBLAS 0.3.21 ... (f64)" or "none".
const char* description();

}  // namespace smelt::blas

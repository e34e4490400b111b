// OpenBLAS behind runtime/blas.h; compiled without it (SMELT_HAVE_BLAS unset) every entry is inert.
#include "runtime/blas.h"

#ifdef SMELT_HAVE_BLAS
#include <cblas.h>
#endif

namespace smelt::blas {

#ifdef SMELT_HAVE_BLAS

bool available() { return true; }

void gemm(DType dtype, bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
          int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc) {
  auto ta = transA ? CblasTrans : CblasNoTrans;
  auto tb = transB ? CblasTrans : CblasNoTrans;
  auto i = [](int64_t v) { return static_cast<blasint>(v); };
  if (dtype == DType::f32) {
    cblas_sgemm(CblasRowMajor, ta, tb, i(m), i(n), i(k), static_cast<float>(alpha), static_cast<const float*>(a),
                i(lda), static_cast<const float*>(b), i(ldb), 0.0f, static_cast<float*>(c), i(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, i(m), i(n), i(k), alpha, static_cast<const double*>(a), i(lda),
                static_cast<const double*>(b), i(ldb), 0.0, static_cast<double*>(c), i(ldc));
  }
}

void setThreads(int threads) { openblas_set_num_threads(threads); }

const char* description() { return openblas_get_config(); }

#else

bool available() { return false; }
void gemm(DType, bool, bool, int64_t, int64_t, int64_t, double, const void*, int64_t, const void*, int64_t, void*,
          int64_t) {}
void setThreads(int) {}
const char* description() { return "none"; }

#endif

}  // namespace smelt::blas

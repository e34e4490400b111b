// See clblast.h. The C API's types are stated here (clblast_c.h's, stable since CLBlast 1.0), so the
// build needs no CLBlast headers.
#include "runtime/opencl/clblast.h"

#include <dlfcn.h>

#include <mutex>

namespace smelt::opencl {

namespace {

// clblast_c.h: CLBlastLayoutRowMajor = 101; CLBlastTransposeNo = 111, Yes = 112; status 0 = success.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
template <typename T>
using Gemm = int (*)(int layout, int transA, int transB, size_t m, size_t n, size_t k, T alpha, cl_mem a,
                     size_t offsetA, size_t lda, cl_mem b, size_t offsetB, size_t ldb, T beta, cl_mem c,
                     size_t offsetC, size_t ldc, cl_command_queue* queue, cl_event* event);

struct Library {
  Gemm<float> sgemm = nullptr;
  Gemm<double> dgemm = nullptr;
};

const Library& library() {
  static Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    void* handle = openBesideLoader("libclblast.so.1");
    if (!handle) return;
    lib.sgemm = reinterpret_cast<Gemm<float>>(dlsym(handle, "CLBlastSgemm"));
    lib.dgemm = reinterpret_cast<Gemm<double>>(dlsym(handle, "CLBlastDgemm"));
  });
  return lib;
}

template <typename T>
int call(Gemm<T> gemm, cl_command_queue queue, const GemmCall& c) {
  auto u = [](int64_t v) { return static_cast<size_t>(v); };
  return gemm(kRowMajor, c.transA ? kTrans : kNoTrans, c.transB ? kTrans : kNoTrans, u(c.m), u(c.n), u(c.k),
              static_cast<T>(c.alpha), c.a, u(c.offsetA), u(c.lda), c.b, u(c.offsetB), u(c.ldb), T(0), c.c,
              u(c.offsetC), u(c.ldc), &queue, nullptr);
}

}  // namespace

bool clblastAvailable(DType dtype) {
  const Library& lib = library();
  return (dtype == DType::f32 && lib.sgemm) || (dtype == DType::f64 && lib.dgemm);
}

Status clblastGemm(cl_command_queue queue, const GemmCall& c) {
  if (!clblastAvailable(c.dtype)) return makeError("CLBlast has no GEMM for {} here", dtypeName(c.dtype));
  // One call at a time, process-wide. CLBlast 1.5's caches (programs, binaries, tuning database) are
  // not safe to fill from several threads: with 32 threads making their first products at once, one
  // call threw std::length_error inside CLBlast ("basic_string::_M_create", status -2039) and
  // ThreadSanitizer reported data races in libclblast. A call only compiles (once per shape class)
  // and enqueues; the product itself runs on the queue after the lock is released.
  static std::mutex serialize;
  std::lock_guard lock(serialize);
  int status = c.dtype == DType::f32 ? call(library().sgemm, queue, c) : call(library().dgemm, queue, c);
  if (status != 0) {
    return makeError("CLBlast GEMM {}x{}x{} ({}) failed with status {}", c.m, c.n, c.k, dtypeName(c.dtype), status);
  }
  return Status::success();
}

}  // namespace smelt::opencl

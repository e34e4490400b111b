// CLBlast's GEMM for the OpenCL executable, loaded with dlopen beside the OpenCL ICD loader (in its
// link-map namespace when the loader has one), so nothing links it and its OpenCL objects are the
// loader's. Debian's libclblast1; without it, products stay on generated kernels.
//   if (opencl::clblastAvailable(DType::f32)) SMELT_CHECK_OK(opencl::clblastGemm(queue, call));
#pragma once

#include "ir/dtype.h"
#include "ir/support/expected.h"
#include "runtime/opencl/opencl_runtime.h"

namespace smelt::opencl {

/// Opens `soname` in the namespace the ICD loader was opened in (null when it cannot be opened).
void* openBesideLoader(const char* soname);

/// Whether CLBlast is loaded and covers `dtype` (f32; f64 where the library has it).
bool clblastAvailable(DType dtype);

/// One row-major product alpha * op(A) op(B) -> C (C overwritten), enqueued on `queue`. Offsets and
/// leading dimensions count elements of `dtype`.
struct GemmCall {
  DType dtype = DType::f32;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1;
  cl_mem a = nullptr, b = nullptr, c = nullptr;
  int64_t offsetA = 0, lda = 0, offsetB = 0, ldb = 0, offsetC = 0, ldc = 0;
};
Status clblastGemm(cl_command_queue queue, const GemmCall& call);

}  // namespace smelt::opencl

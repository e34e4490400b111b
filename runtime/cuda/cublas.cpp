// cuBLAS through dlopen (see cublas.h). The few types and enum values used are declared here, as
// cublas_api.h and library_types.h define them (an ABI cuBLAS keeps across versions), so this builds
// without the toolkit; where the toolkit is present at build time the values are checked against it.
#include "runtime/cuda/cublas.h"

#include "codegen/dynamic_library.h"
#include "codegen/log.h"
#include "runtime/cuda/nvidia_libraries.h"

#include <fmt/format.h>

#include <limits>
#include <map>
#include <memory>
#include <mutex>

#if SMELT_HAVE_CUDA_TOOLKIT
#include <cublas_api.h>
#endif

namespace smelt::cuda {

namespace {

using Handle = void*;  // cublasHandle_t
using CublasStatus = int;
constexpr CublasStatus kCublasSuccess = 0;
constexpr int kOpN = 0, kOpT = 1;
constexpr int kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14;                  // cudaDataType
constexpr int kCompute32F = 68, kCompute32FFastTf32 = 77, kCompute64F = 70;  // cublasComputeType_t
constexpr int kGemmDefault = -1;                                             // cublasGemmAlgo_t
constexpr int kMajorVersion = 0, kMinorVersion = 1, kPatchLevel = 2;         // libraryPropertyType

#if SMELT_HAVE_CUDA_TOOLKIT
static_assert(CUBLAS_STATUS_SUCCESS == kCublasSuccess && CUBLAS_OP_N == kOpN && CUBLAS_OP_T == kOpT);
static_assert(CUDA_R_32F == kR32F && CUDA_R_64F == kR64F && CUDA_R_16F == kR16F && CUDA_R_16BF == kR16BF);
static_assert(CUBLAS_COMPUTE_32F == kCompute32F && CUBLAS_COMPUTE_32F_FAST_TF32 == kCompute32FFastTf32 &&
              CUBLAS_COMPUTE_64F == kCompute64F && CUBLAS_GEMM_DEFAULT == kGemmDefault);
static_assert(MAJOR_VERSION == kMajorVersion && MINOR_VERSION == kMinorVersion && PATCH_LEVEL == kPatchLevel);
#endif

struct CublasApi {
  DynamicLibrary lt, blas;
  std::string description;
  CublasStatus (*create)(Handle*) = nullptr;
  CublasStatus (*destroy)(Handle) = nullptr;
  CublasStatus (*setStream)(Handle, void*) = nullptr;
  CublasStatus (*getProperty)(int, int*) = nullptr;
  const char* (*statusString)(CublasStatus) = nullptr;
  CublasStatus (*gemm)(Handle, int, int, int, int, int, const void*, const void*, int, int, long long, const void*, int,
                       int, long long, const void*, void*, int, int, long long, int, int, int) = nullptr;
};

Expected<CublasApi*> loadCublas() {
  // libcublasLt first, from the same place: libcublas needs it, and a wheel's may not be on the
  // loader's path (once loaded, its soname satisfies libcublas's dependency).
  auto api = std::make_unique<CublasApi>();
  bool found = false;
  for (const char* version : {"13", "12"}) {
    auto lt = DynamicLibrary::openFirst(nvidiaLibraryCandidates("cublas", {fmt::format("libcublasLt.so.{}", version)}));
    auto blas = DynamicLibrary::openFirst(nvidiaLibraryCandidates("cublas", {fmt::format("libcublas.so.{}", version)}));
    if (lt.ok() && blas.ok()) {
      api->lt = std::move(lt).value();
      api->blas = std::move(blas).value();
      found = true;
      break;
    }
  }
  if (!found) {
    return makeError(
        "cuBLAS not found (libcublas.so.13 or .12 with libcublasLt, on the loader's path, under "
        "$CUDA_HOME/lib64 or /usr/local/cuda/lib64, or in a pip wheel's nvidia/cublas/lib)");
  }
  const DynamicLibrary& lib = api->blas;
  for (Status s :
       {lib.bind(api->create, "cublasCreate_v2"), lib.bind(api->destroy, "cublasDestroy_v2"),
        lib.bind(api->setStream, "cublasSetStream_v2"), lib.bind(api->getProperty, "cublasGetProperty"),
        lib.bind(api->statusString, "cublasGetStatusString"), lib.bind(api->gemm, "cublasGemmStridedBatchedEx")}) {
    if (!s.ok()) return s.error().withContext("cuBLAS unusable");
  }
  int major = 0, minor = 0, patch = 0;
  api->getProperty(kMajorVersion, &major);
  api->getProperty(kMinorVersion, &minor);
  api->getProperty(kPatchLevel, &patch);
  api->description = fmt::format("cuBLAS {}.{}.{} ({})", major, minor, patch, lib.name());
  logger().debug("cuda: {}", api->description);
  return api.release();  // for the process: handles outlive any one executable
}

const Expected<CublasApi*>& cublas() {
  static const Expected<CublasApi*> api = loadCublas();
  return api;
}

Error cublasError(const CublasApi& api, CublasStatus status, std::string_view what) {
  const char* text = api.statusString ? api.statusString(status) : nullptr;
  return makeError("{}: {} ({})", what, text ? text : "unknown cuBLAS status", status);
}

/// One cuBLAS handle per context and epoch, made on first use with the context current (it allocates
/// its workspace there). A reset's handles are left behind, never destroyed: their context is gone.
/// Calls are serialized: a handle is bound to one stream at a time.
struct Handles {
  std::mutex mutex;
  std::map<std::pair<const Context*, std::uint64_t>, Handle> byContext;
};
Handles& handles() {
  static auto* h = new Handles();  // never destroyed: contexts live for the process too
  return *h;
}

}  // namespace

bool cublasAvailable(DType dtype) {
  if (dtype != DType::f32 && dtype != DType::f64 && dtype != DType::f16 && dtype != DType::bf16) return false;
  return cublas().ok();
}

std::string cublasDescription() {
  const auto& api = cublas();
  return api.ok() ? (*api)->description : api.error().message();
}

Status cublasGemm(Context& context, void* stream, const CublasGemm& g) {
  SMELT_TRY(CublasApi * api, cublas());
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  for (int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch}) {
    if (v < 0 || v > kMax) return makeError("cuBLAS: a dimension of {} exceeds its 32-bit interface", v);
  }
  int type = kR32F, compute = g.tf32 ? kCompute32FFastTf32 : kCompute32F;
  switch (g.dtype) {
    case DType::f32: break;
    case DType::f64: type = kR64F, compute = kCompute64F; break;
    case DType::f16: type = kR16F, compute = kCompute32F; break;
    case DType::bf16: type = kR16BF, compute = kCompute32F; break;
    default: return makeError("cuBLAS: no GEMM for {}", dtypeName(g.dtype));
  }
  // alpha and beta in the compute type's precision.
  const double alpha64 = g.alpha, beta64 = 0;
  const float alpha32 = static_cast<float>(g.alpha), beta32 = 0;
  const void* alpha = compute == kCompute64F ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = compute == kCompute64F ? static_cast<const void*>(&beta64) : &beta32;
  std::lock_guard lock(handles().mutex);
  return context.withCurrent([&]() -> Status {
    Handle& handle = handles().byContext[{&context, context.epoch()}];
    if (!handle) {
      if (CublasStatus s = api->create(&handle); s != kCublasSuccess) {
        handle = nullptr;
        return cublasError(*api, s, "cublasCreate");
      }
    }
    if (CublasStatus s = api->setStream(handle, stream); s != kCublasSuccess)
      return cublasError(*api, s, "cublasSetStream");
    // cuBLAS is column-major: row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so B
    // goes first and m and n swap.
    CublasStatus s = api->gemm(handle, g.transB ? kOpT : kOpN, g.transA ? kOpT : kOpN, static_cast<int>(g.n),
                               static_cast<int>(g.m), static_cast<int>(g.k), alpha, reinterpret_cast<const void*>(g.b),
                               type, static_cast<int>(g.ldb), g.strideB, reinterpret_cast<const void*>(g.a), type,
                               static_cast<int>(g.lda), g.strideA, beta, reinterpret_cast<void*>(g.c), type,
                               static_cast<int>(g.ldc), g.strideC, static_cast<int>(g.batch), compute, kGemmDefault);
    if (s != kCublasSuccess) {
      return cublasError(*api, s,
                         fmt::format("cublasGemmStridedBatchedEx ({} {}x{}x{}, batch {})", dtypeName(g.dtype), g.m, g.n,
                                     g.k, g.batch));
    }
    return Status::success();
  });
}

}  // namespace smelt::cuda

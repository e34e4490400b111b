// cuBLASLt through dlopen (see cublas_lt.h). The few types and enum values used are declared here, as cublasLt.h
// and library_types.h define them (an ABI cuBLASLt keeps across versions), so this builds without the toolkit;
// where the toolkit is present at build time the values are checked against it.
#include "runtime/cuda/cublas_lt.h"

#include "codegen/dynamic_library.h"
#include "codegen/log.h"
#include "runtime/cuda/nvidia_libraries.h"

#include <fmt/format.h>

#include <cstddef>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#if SMELT_HAVE_CUDA_TOOLKIT
#include <cublasLt.h>
#endif

namespace smelt::cuda {

namespace {

using LtHandle = void*;  // cublasLtHandle_t
using LtDesc = void*;    // cublasLtMatmulDesc_t
using LtLayout = void*;  // cublasLtMatrixLayout_t
using LtPref = void*;    // cublasLtMatmulPreference_t
using LtStatus = int;
constexpr LtStatus kLtSuccess = 0;
constexpr int kLtOpN = 0, kLtOpT = 1;                                 // cublasOperation_t
constexpr int kLtR32F = 0, kLtR16F = 2, kLtR16BF = 14;                // cudaDataType
constexpr int kLtCompute32F = 68, kLtCompute32FFastTf32 = 77;         // cublasComputeType_t
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7;    // cublasLtMatmulDescAttributes_t
constexpr int kDescBiasPointer = 8;                                   //
constexpr int kEpilogueBias = 4, kEpilogueReluBias = 6;               // cublasLtEpilogue_t
constexpr int kEpilogueGeluBias = 36;                                 //
constexpr int kPrefMaxWorkspace = 1, kPrefAlignA = 5, kPrefAlignB = 6;  // cublasLtMatmulPreferenceAttributes_t
constexpr int kPrefAlignC = 7, kPrefAlignD = 8;                       //
constexpr int kLtMajorVersion = 0, kLtMinorVersion = 1, kLtPatchLevel = 2;  // libraryPropertyType
/// The alignment every pointer is promised to have (the executable's arena aligns buffers to 64 bytes); the
/// heuristic then offers only algorithms that work with it, and a run checks it.
constexpr std::uint32_t kLtAlignment = 16;
/// cuBLASLt's workspace is aligned to this within the scratch it is given.
constexpr std::uint64_t kWorkspaceAlignment = 256;

struct AlgoAbi {
  std::uint64_t data[8];
};
struct HeuristicAbi {
  AlgoAbi algo;
  size_t workspaceSize;
  LtStatus state;
  float wavesCount;
  int reserved[4];
};

#if SMELT_HAVE_CUDA_TOOLKIT
static_assert(CUBLAS_STATUS_SUCCESS == kLtSuccess && CUBLAS_OP_N == kLtOpN && CUBLAS_OP_T == kLtOpT);
static_assert(CUDA_R_32F == kLtR32F && CUDA_R_16F == kLtR16F && CUDA_R_16BF == kLtR16BF);
static_assert(CUBLAS_COMPUTE_32F == kLtCompute32F && CUBLAS_COMPUTE_32F_FAST_TF32 == kLtCompute32FFastTf32);
static_assert(CUBLASLT_MATMUL_DESC_TRANSA == kDescTransA && CUBLASLT_MATMUL_DESC_TRANSB == kDescTransB &&
              CUBLASLT_MATMUL_DESC_EPILOGUE == kDescEpilogue && CUBLASLT_MATMUL_DESC_BIAS_POINTER == kDescBiasPointer);
static_assert(CUBLASLT_EPILOGUE_BIAS == kEpilogueBias && CUBLASLT_EPILOGUE_RELU_BIAS == kEpilogueReluBias &&
              CUBLASLT_EPILOGUE_GELU_BIAS == kEpilogueGeluBias);
static_assert(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES == kPrefMaxWorkspace &&
              CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES == kPrefAlignA &&
              CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES == kPrefAlignB &&
              CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES == kPrefAlignC &&
              CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES == kPrefAlignD);
static_assert(MAJOR_VERSION == kLtMajorVersion && MINOR_VERSION == kLtMinorVersion && PATCH_LEVEL == kLtPatchLevel);
static_assert(sizeof(AlgoAbi) == sizeof(cublasLtMatmulAlgo_t) &&
              sizeof(HeuristicAbi) == sizeof(cublasLtMatmulHeuristicResult_t) &&
              offsetof(HeuristicAbi, state) == offsetof(cublasLtMatmulHeuristicResult_t, state));
#endif

struct LtApi {
  DynamicLibrary lib;
  std::string description;
  LtStatus (*create)(LtHandle*) = nullptr;
  LtStatus (*getProperty)(int, int*) = nullptr;
  const char* (*statusString)(LtStatus) = nullptr;
  LtStatus (*descCreate)(LtDesc*, int, int) = nullptr;
  LtStatus (*descSet)(LtDesc, int, const void*, size_t) = nullptr;
  LtStatus (*layoutCreate)(LtLayout*, int, std::uint64_t, std::uint64_t, std::int64_t) = nullptr;
  LtStatus (*prefCreate)(LtPref*) = nullptr;
  LtStatus (*prefDestroy)(LtPref) = nullptr;
  LtStatus (*prefSet)(LtPref, int, const void*, size_t) = nullptr;
  LtStatus (*heuristic)(LtHandle, LtDesc, LtLayout, LtLayout, LtLayout, LtLayout, LtPref, int, HeuristicAbi*,
                        int*) = nullptr;
  LtStatus (*matmul)(LtHandle, LtDesc, const void*, const void*, LtLayout, const void*, LtLayout, const void*,
                     const void*, LtLayout, void*, LtLayout, const AlgoAbi*, void*, size_t, void*) = nullptr;
};

Expected<LtApi*> loadLt() {
  auto api = std::make_unique<LtApi>();
  bool found = false;
  for (const char* version : {"13", "12"}) {
    const std::string soname = fmt::format("libcublasLt.so.{}", version);
    auto lib = DynamicLibrary::openFirst(nvidiaLibraryCandidates("cublas", {soname}));
    if (lib.ok()) {
      api->lib = std::move(lib).value();
      found = true;
      break;
    }
  }
  if (!found) {
    return makeError(
        "cuBLASLt not found (libcublasLt.so.13 or .12, on the loader's path, under $CUDA_HOME/lib64 or "
        "/usr/local/cuda/lib64, or in a pip wheel's nvidia/cublas/lib)");
  }
  const DynamicLibrary& l = api->lib;
  for (Status s : {l.bind(api->create, "cublasLtCreate"), l.bind(api->getProperty, "cublasLtGetProperty"),
                   l.bind(api->statusString, "cublasLtGetStatusString"),
                   l.bind(api->descCreate, "cublasLtMatmulDescCreate"),
                   l.bind(api->descSet, "cublasLtMatmulDescSetAttribute"),
                   l.bind(api->layoutCreate, "cublasLtMatrixLayoutCreate"),
                   l.bind(api->prefCreate, "cublasLtMatmulPreferenceCreate"),
                   l.bind(api->prefDestroy, "cublasLtMatmulPreferenceDestroy"),
                   l.bind(api->prefSet, "cublasLtMatmulPreferenceSetAttribute"),
                   l.bind(api->heuristic, "cublasLtMatmulAlgoGetHeuristic"), l.bind(api->matmul, "cublasLtMatmul")}) {
    if (!s.ok()) return s.error().withContext("cuBLASLt unusable");
  }
  int major = 0, minor = 0, patch = 0;
  api->getProperty(kLtMajorVersion, &major);
  api->getProperty(kLtMinorVersion, &minor);
  api->getProperty(kLtPatchLevel, &patch);
  api->description = fmt::format("cuBLASLt {}.{}.{} ({})", major, minor, patch, l.name());
  logger().debug("cuda: {}", api->description);
  return api.release();  // for the process: handles and descriptors outlive any one executable
}

const Expected<LtApi*>& lt() {
  static const Expected<LtApi*> api = loadLt();
  return api;
}

Error ltError(const LtApi& api, LtStatus status, std::string_view what) {
  const char* text = api.statusString ? api.statusString(status) : nullptr;
  return makeError("{}: {} ({})", what, text ? text : "unknown cuBLAS status", status);
}

/// The descriptors and algorithm of one shape, dtype and epilogue on one context, or why there are none. Kept for
/// the process (a handful per model); the bias pointer is set on the descriptor before each call.
struct LtPrepared {
  bool ok = false;
  LtDesc desc = nullptr;
  LtLayout a = nullptr, b = nullptr, c = nullptr;
  AlgoAbi algo{};
};

using LtKey = std::tuple<const Context*, std::uint64_t, int, DType, bool, bool, int64_t, int64_t, int64_t, bool>;
LtKey ltKeyOf(const Context& context, const CublasLtGemm& g) {
  return {&context, context.epoch(), static_cast<int>(g.epilogue), g.dtype, g.transA, g.transB, g.m, g.n, g.k,
          g.tf32};
}

/// Every handle and prepared shape; calls are serialized (a descriptor carries the bias pointer of one call).
struct LtState {
  std::mutex mutex;
  std::map<std::pair<const Context*, std::uint64_t>, LtHandle> handles;
  std::map<LtKey, LtPrepared> prepared;
};
LtState& ltState() {
  static auto* s = new LtState();  // never destroyed: contexts live for the process too
  return *s;
}

int ltEpilogueOf(CublasLtGemm::Epilogue e) {
  switch (e) {
    case CublasLtGemm::Epilogue::kBias: return kEpilogueBias;
    case CublasLtGemm::Epilogue::kReluBias: return kEpilogueReluBias;
    case CublasLtGemm::Epilogue::kGeluTanhBias: return kEpilogueGeluBias;
  }
  return kEpilogueBias;
}

/// Builds the descriptors of `g` and asks the heuristic for an algorithm (with the context current, the state's
/// mutex held). cuBLASLt is column-major: the row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T,
/// so B comes first; each layout describes a matrix as stored (before its op), and the bias runs along C^T's rows.
Expected<LtPrepared> prepareLt(LtApi& api, LtHandle handle, const CublasLtGemm& g) {
  int type = kLtR32F;
  switch (g.dtype) {
    case DType::f32: break;
    case DType::f16: type = kLtR16F; break;
    case DType::bf16: type = kLtR16BF; break;
    default: return makeError("cuBLASLt: no fused epilogue for {}", dtypeName(g.dtype));
  }
  const int compute = g.dtype == DType::f32 && g.tf32 ? kLtCompute32FFastTf32 : kLtCompute32F;
  LtPrepared p;
  auto check = [&](LtStatus s, const char* what) -> Status {
    if (s != kLtSuccess) return ltError(api, s, what);
    return Status::success();
  };
  SMELT_CHECK_OK(check(api.descCreate(&p.desc, compute, kLtR32F), "cublasLtMatmulDescCreate"));
  const std::int32_t opFirst = g.transB ? kLtOpT : kLtOpN, opSecond = g.transA ? kLtOpT : kLtOpN;
  const std::uint32_t epilogue = static_cast<std::uint32_t>(ltEpilogueOf(g.epilogue));
  SMELT_CHECK_OK(check(api.descSet(p.desc, kDescTransA, &opFirst, sizeof opFirst), "CUBLASLT_MATMUL_DESC_TRANSA"));
  SMELT_CHECK_OK(check(api.descSet(p.desc, kDescTransB, &opSecond, sizeof opSecond), "CUBLASLT_MATMUL_DESC_TRANSB"));
  SMELT_CHECK_OK(
      check(api.descSet(p.desc, kDescEpilogue, &epilogue, sizeof epilogue), "CUBLASLT_MATMUL_DESC_EPILOGUE"));
  auto u = [](int64_t v) { return static_cast<std::uint64_t>(v); };
  // First operand: smelt's B, stored [k, n] (or [n, k] transposed) row-major, which is [n, k] ([k, n]) col-major.
  SMELT_CHECK_OK(check(g.transB ? api.layoutCreate(&p.a, type, u(g.k), u(g.n), g.k)
                                : api.layoutCreate(&p.a, type, u(g.n), u(g.k), g.n),
                       "cublasLtMatrixLayoutCreate"));
  SMELT_CHECK_OK(check(g.transA ? api.layoutCreate(&p.b, type, u(g.m), u(g.k), g.m)
                                : api.layoutCreate(&p.b, type, u(g.k), u(g.m), g.k),
                       "cublasLtMatrixLayoutCreate"));
  SMELT_CHECK_OK(check(api.layoutCreate(&p.c, type, u(g.n), u(g.m), g.n), "cublasLtMatrixLayoutCreate"));
  LtPref pref = nullptr;
  SMELT_CHECK_OK(check(api.prefCreate(&pref), "cublasLtMatmulPreferenceCreate"));
  const std::uint64_t workspace = static_cast<std::uint64_t>(kCublasLtWorkspaceBytes) - kWorkspaceAlignment;
  Status prefs = check(api.prefSet(pref, kPrefMaxWorkspace, &workspace, sizeof workspace), "workspace preference");
  for (int attr : {kPrefAlignA, kPrefAlignB, kPrefAlignC, kPrefAlignD}) {
    if (prefs.ok()) prefs = check(api.prefSet(pref, attr, &kLtAlignment, sizeof kLtAlignment), "alignment preference");
  }
  // The heuristic reads the bias pointer's value for its alignment (a null one would look perfectly aligned): a
  // placeholder aligned as much as a run promises and no more.
  const void* placeholder = reinterpret_cast<const void*>(std::uintptr_t{kLtAlignment});
  if (prefs.ok()) prefs = check(api.descSet(p.desc, kDescBiasPointer, &placeholder, sizeof placeholder), "bias pointer");
  HeuristicAbi result{};
  int returned = 0;
  LtStatus found = prefs.ok() ? api.heuristic(handle, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &returned) : 0;
  api.prefDestroy(pref);
  SMELT_CHECK_OK(prefs);
  SMELT_CHECK_OK(check(found, "cublasLtMatmulAlgoGetHeuristic"));
  if (returned < 1 || result.state != kLtSuccess) return makeError("cuBLASLt's heuristic has no algorithm");
  p.algo = result.algo;
  p.ok = true;
  return p;
}

/// The prepared shape of `g` (made on first use), with the context current and the mutex held.
Expected<LtPrepared*> ltPreparedFor(LtApi& api, Context& context, const CublasLtGemm& g) {
  LtState& s = ltState();
  auto [it, made] = s.prepared.try_emplace(ltKeyOf(context, g));
  if (!made) {
    if (!it->second.ok) return makeError("cuBLASLt has no algorithm for this product and epilogue");
    return &it->second;
  }
  LtHandle& handle = s.handles[{&context, context.epoch()}];
  if (!handle) {
    if (LtStatus st = api.create(&handle); st != kLtSuccess) {
      handle = nullptr;
      s.prepared.erase(it);
      return ltError(api, st, "cublasLtCreate");
    }
  }
  Expected<LtPrepared> p = prepareLt(api, handle, g);
  if (!p.ok()) {
    logger().debug("cuda: cuBLASLt {}x{}x{} {} with epilogue {}: {}; the generated epilogue instead", g.m, g.n, g.k,
                   dtypeName(g.dtype), static_cast<int>(g.epilogue), p.error().message());
    return p.error();  // `it` stays, not ok: asked once
  }
  it->second = *p;
  return &it->second;
}

}  // namespace

std::string cublasLtDescription() {
  const auto& api = lt();
  return api.ok() ? (*api)->description : api.error().message();
}

bool cublasLtSupports(Context& context, const CublasLtGemm& g) {
  const auto& api = lt();
  if (!api.ok()) return false;
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  for (int64_t v : {g.m, g.n, g.k}) {
    if (v <= 0 || v > kMax) return false;
  }
  std::lock_guard lock(ltState().mutex);
  bool ok = false;
  Status s = context.withCurrent([&]() -> Status {
    ok = ltPreparedFor(**api, context, g).ok();
    return Status::success();
  });
  return s.ok() && ok;
}

Status cublasLtGemm(Context& context, void* stream, const CublasLtGemm& g) {
  SMELT_TRY(LtApi * api, lt());
  for (std::uint64_t address : {g.a, g.b, g.c, g.bias}) {
    if (address % kLtAlignment != 0) {
      return makeError("cuBLASLt: a buffer at {:#x} is not aligned to {} bytes, as its algorithm was chosen for",
                       address, kLtAlignment);
    }
  }
  const std::uint64_t workspace = (g.workspace + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
  const float alpha = static_cast<float>(g.alpha), beta = 0;
  std::lock_guard lock(ltState().mutex);
  return context.withCurrent([&]() -> Status {
    SMELT_TRY(LtPrepared * p, ltPreparedFor(*api, context, g));
    const LtHandle handle = ltState().handles[{&context, context.epoch()}];
    const void* bias = reinterpret_cast<const void*>(g.bias);
    if (LtStatus s = api->descSet(p->desc, kDescBiasPointer, &bias, sizeof bias); s != kLtSuccess) {
      return ltError(*api, s, "CUBLASLT_MATMUL_DESC_BIAS_POINTER");
    }
    LtStatus s = api->matmul(handle, p->desc, &alpha, reinterpret_cast<const void*>(g.b), p->a,
                             reinterpret_cast<const void*>(g.a), p->b, &beta, reinterpret_cast<const void*>(g.c), p->c,
                             reinterpret_cast<void*>(g.c), p->c, &p->algo, reinterpret_cast<void*>(workspace),
                             static_cast<size_t>(kCublasLtWorkspaceBytes) - kWorkspaceAlignment, stream);
    if (s != kLtSuccess) {
      return ltError(*api, s,
                     fmt::format("cublasLtMatmul ({} {}x{}x{}, epilogue {})", dtypeName(g.dtype), g.m, g.n, g.k,
                                 static_cast<int>(g.epilogue)));
    }
    return Status::success();
  });
}

}  // namespace smelt::cuda

// cuDNN through dlopen (see cudnn.h). The few types and enum values used are declared here, as
// cudnn_graph.h, cudnn_ops.h and cudnn_cnn.h define them (an ABI cuDNN keeps within a major version),
// so this builds without cuDNN's headers; where they are present at build time the values are
// checked against them.
#include "runtime/cuda/cudnn.h"

#include "codegen/dynamic_library.h"
#include "codegen/log.h"
#include "runtime/cuda/nvidia_libraries.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <tuple>

#if SMELT_HAVE_CUDA_TOOLKIT && __has_include(<cudnn.h>)
#include <cudnn.h>
#define SMELT_CHECK_CUDNN_ABI 1
#endif

namespace smelt::cuda {

namespace {

using Handle = void*;      // cudnnHandle_t
using Descriptor = void*;  // cudnnTensorDescriptor_t, cudnnFilterDescriptor_t, cudnnConvolutionDescriptor_t
using CudnnStatus = int;
constexpr CudnnStatus kCudnnSuccess = 0;
constexpr int kFloat = 0, kDouble = 1, kHalf = 2, kBfloat16 = 9;  // cudnnDataType_t
constexpr int kNchw = 0;                                          // cudnnTensorFormat_t
constexpr int kCrossCorrelation = 1;                              // cudnnConvolutionMode_t
constexpr int kDefaultMath = 0, kTensorOpMath = 1, kFmaMath = 3;  // cudnnMathType_t
constexpr int kDeterministic = 1;                                 // cudnnDeterminism_t

/// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: the three share this layout.
struct AlgoPerf {
  int algo;
  CudnnStatus status;
  float time;
  size_t memory;
  int determinism;
  int mathType;
  int reserved[3];
};

#if SMELT_CHECK_CUDNN_ABI
static_assert(CUDNN_STATUS_SUCCESS == kCudnnSuccess && CUDNN_DATA_FLOAT == kFloat && CUDNN_DATA_DOUBLE == kDouble &&
              CUDNN_DATA_HALF == kHalf && CUDNN_DATA_BFLOAT16 == kBfloat16 && CUDNN_TENSOR_NCHW == kNchw &&
              CUDNN_CROSS_CORRELATION == kCrossCorrelation && CUDNN_DEFAULT_MATH == kDefaultMath &&
              CUDNN_TENSOR_OP_MATH == kTensorOpMath && CUDNN_FMA_MATH == kFmaMath &&
              CUDNN_DETERMINISTIC == kDeterministic);
static_assert(sizeof(AlgoPerf) == sizeof(cudnnConvolutionFwdAlgoPerf_t) &&
              sizeof(AlgoPerf) == sizeof(cudnnConvolutionBwdDataAlgoPerf_t) &&
              sizeof(AlgoPerf) == sizeof(cudnnConvolutionBwdFilterAlgoPerf_t) &&
              offsetof(AlgoPerf, memory) == offsetof(cudnnConvolutionFwdAlgoPerf_t, memory) &&
              offsetof(AlgoPerf, determinism) == offsetof(cudnnConvolutionFwdAlgoPerf_t, determinism));
#endif

struct CudnnApi {
  DynamicLibrary library;
  std::vector<DynamicLibrary> parts;  // its sub-libraries, loaded first from the same folder
  std::string description;
  CudnnStatus (*create)(Handle*) = nullptr;
  CudnnStatus (*setStream)(Handle, void*) = nullptr;
  size_t (*version)() = nullptr;
  const char* (*errorString)(CudnnStatus) = nullptr;
  CudnnStatus (*createTensor)(Descriptor*) = nullptr;
  CudnnStatus (*destroyTensor)(Descriptor) = nullptr;
  CudnnStatus (*setTensor)(Descriptor, int, int, int, int, int, int) = nullptr;
  CudnnStatus (*createFilter)(Descriptor*) = nullptr;
  CudnnStatus (*destroyFilter)(Descriptor) = nullptr;
  CudnnStatus (*setFilter)(Descriptor, int, int, int, int, int, int) = nullptr;
  CudnnStatus (*createConv)(Descriptor*) = nullptr;
  CudnnStatus (*destroyConv)(Descriptor) = nullptr;
  CudnnStatus (*setConv)(Descriptor, int, int, int, int, int, int, int, int) = nullptr;
  CudnnStatus (*setGroups)(Descriptor, int) = nullptr;
  CudnnStatus (*setMath)(Descriptor, int) = nullptr;
  // The algorithm queries, workspace sizes and the calls, per kind. Their descriptor arguments come
  // in each call's own order (see run below).
  CudnnStatus (*forwardAlgos)(Handle, Descriptor, Descriptor, Descriptor, Descriptor, int, int*, AlgoPerf*) = nullptr;
  CudnnStatus (*dataAlgos)(Handle, Descriptor, Descriptor, Descriptor, Descriptor, int, int*, AlgoPerf*) = nullptr;
  CudnnStatus (*filterAlgos)(Handle, Descriptor, Descriptor, Descriptor, Descriptor, int, int*, AlgoPerf*) = nullptr;
  // The same queries answered by running each algorithm once (cudnnFind*Algorithm, what PyTorch's
  // cudnn.benchmark uses; the default): the heuristics' first choice is often not the fastest
  // (ResNet-18's step on an H200: 6.72 ms with it, 5.57 ms timed).
  CudnnStatus (*forwardTimed)(Handle, Descriptor, Descriptor, Descriptor, Descriptor, int, int*, AlgoPerf*) = nullptr;
  CudnnStatus (*dataTimed)(Handle, Descriptor, Descriptor, Descriptor, Descriptor, int, int*, AlgoPerf*) = nullptr;
  CudnnStatus (*filterTimed)(Handle, Descriptor, Descriptor, Descriptor, Descriptor, int, int*, AlgoPerf*) = nullptr;
  CudnnStatus (*forwardWorkspace)(Handle, Descriptor, Descriptor, Descriptor, Descriptor, int, size_t*) = nullptr;
  CudnnStatus (*dataWorkspace)(Handle, Descriptor, Descriptor, Descriptor, Descriptor, int, size_t*) = nullptr;
  CudnnStatus (*filterWorkspace)(Handle, Descriptor, Descriptor, Descriptor, Descriptor, int, size_t*) = nullptr;
  using Call = CudnnStatus (*)(Handle, const void*, Descriptor, const void*, Descriptor, const void*, Descriptor, int,
                               void*, size_t, const void*, Descriptor, void*);
  Call forward = nullptr, data = nullptr, filter = nullptr;
};

/// What SMELT_CUDNN asks for (read once): 0 turns cuDNN off, 1 sends every dtype's convolutions to
/// it; by default only f16 and bf16 go there (cudnnPreferred).
enum class CudnnSetting { kOff, kLowPrecision, kEveryDtype };

CudnnSetting cudnnSetting() {
  static const CudnnSetting setting = [] {
    const char* env = std::getenv("SMELT_CUDNN");
    if (env && std::string_view(env) == "0") return CudnnSetting::kOff;
    if (env && std::string_view(env) == "1") return CudnnSetting::kEveryDtype;
    return CudnnSetting::kLowPrecision;
  }();
  return setting;
}

Expected<CudnnApi*> loadCudnn() {
  if (cudnnSetting() == CudnnSetting::kOff) {
    return makeError("cuDNN turned off (SMELT_CUDNN=0)");
  }
  auto api = std::make_unique<CudnnApi>();
  SMELT_TRY(api->library, DynamicLibrary::openFirst(nvidiaLibraryCandidates("cudnn", {"libcudnn.so.9"})));
  // libcudnn.so.9 opens its sub-libraries by soname when a call needs them; from a wheel's folder,
  // which is not on the loader's path, they are found only if already loaded.
  const std::filesystem::path folder = std::filesystem::path(api->library.name()).parent_path();
  if (!folder.empty()) {
    for (const char* part : {"graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn"}) {
      auto lib = DynamicLibrary::openFirst({(folder / fmt::format("libcudnn_{}.so.9", part)).string()});
      if (lib.ok()) api->parts.push_back(std::move(lib).value());
    }
  }
  const DynamicLibrary& lib = api->library;
  for (Status s : {lib.bind(api->create, "cudnnCreate"),
                   lib.bind(api->setStream, "cudnnSetStream"),
                   lib.bind(api->version, "cudnnGetVersion"),
                   lib.bind(api->errorString, "cudnnGetErrorString"),
                   lib.bind(api->createTensor, "cudnnCreateTensorDescriptor"),
                   lib.bind(api->destroyTensor, "cudnnDestroyTensorDescriptor"),
                   lib.bind(api->setTensor, "cudnnSetTensor4dDescriptor"),
                   lib.bind(api->createFilter, "cudnnCreateFilterDescriptor"),
                   lib.bind(api->destroyFilter, "cudnnDestroyFilterDescriptor"),
                   lib.bind(api->setFilter, "cudnnSetFilter4dDescriptor"),
                   lib.bind(api->createConv, "cudnnCreateConvolutionDescriptor"),
                   lib.bind(api->destroyConv, "cudnnDestroyConvolutionDescriptor"),
                   lib.bind(api->setConv, "cudnnSetConvolution2dDescriptor"),
                   lib.bind(api->setGroups, "cudnnSetConvolutionGroupCount"),
                   lib.bind(api->setMath, "cudnnSetConvolutionMathType"),
                   lib.bind(api->forwardAlgos, "cudnnGetConvolutionForwardAlgorithm_v7"),
                   lib.bind(api->dataAlgos, "cudnnGetConvolutionBackwardDataAlgorithm_v7"),
                   lib.bind(api->filterAlgos, "cudnnGetConvolutionBackwardFilterAlgorithm_v7"),
                   lib.bind(api->forwardTimed, "cudnnFindConvolutionForwardAlgorithm"),
                   lib.bind(api->dataTimed, "cudnnFindConvolutionBackwardDataAlgorithm"),
                   lib.bind(api->filterTimed, "cudnnFindConvolutionBackwardFilterAlgorithm"),
                   lib.bind(api->forwardWorkspace, "cudnnGetConvolutionForwardWorkspaceSize"),
                   lib.bind(api->dataWorkspace, "cudnnGetConvolutionBackwardDataWorkspaceSize"),
                   lib.bind(api->filterWorkspace, "cudnnGetConvolutionBackwardFilterWorkspaceSize"),
                   lib.bind(api->forward, "cudnnConvolutionForward"),
                   lib.bind(api->data, "cudnnConvolutionBackwardData"),
                   lib.bind(api->filter, "cudnnConvolutionBackwardFilter")}) {
    if (!s.ok()) return s.error().withContext("cuDNN unusable");
  }
  const size_t v = api->version();  // major * 10000 + minor * 100 + patch since cuDNN 9
  if (v / 10000 != 9) return makeError("cuDNN {} from {}: smelt needs cuDNN 9", v, lib.name());
  api->description = fmt::format("cuDNN {}.{}.{} ({})", v / 10000, v / 100 % 100, v % 100, lib.name());
  logger().debug("cuda: {}", api->description);
  return api.release();  // for the process: handles outlive any one executable
}

const Expected<CudnnApi*>& cudnn() {
  static const Expected<CudnnApi*> api = loadCudnn();
  return api;
}

Error cudnnError(const CudnnApi& api, CudnnStatus status, std::string_view what) {
  const char* text = api.errorString ? api.errorString(status) : nullptr;
  return makeError("{}: {} ({})", what, text ? text : "unknown cuDNN status", status);
}

/// One cuDNN handle per context and the algorithm chosen per shape; calls are serialized (a handle is
/// bound to one stream at a time).
using ShapeKey = std::tuple<int, int, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                            int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;
class Descriptors;
/// A shape's descriptors, described once, and the algorithm chosen for them with its workspace.
struct Plan {
  std::unique_ptr<Descriptors> descriptors;
  int algorithm = 0;
  size_t workspace = 0;
};
struct State {
  std::mutex mutex;
  // Per context and epoch (Context::epoch): what a reset left behind is never used again.
  using ContextKey = std::pair<const Context*, std::uint64_t>;
  std::map<ContextKey, Handle> handles;
  std::map<std::pair<ContextKey, ShapeKey>, Plan> plans;
};
State& state() {
  static auto* s = new State();  // never destroyed: contexts live for the process too
  return *s;
}

ShapeKey keyOf(const CudnnConvolution& c) {
  return {static_cast<int>(c.kind),
          static_cast<int>(c.dtype),
          c.tf32,
          c.n,
          c.c,
          c.h,
          c.w,
          c.o,
          c.oh,
          c.ow,
          c.kh,
          c.kw,
          c.padH,
          c.padW,
          c.strideH,
          c.strideW,
          c.dilationH,
          c.dilationW,
          c.groups};
}

/// The descriptors of one convolution, destroyed with it.
class Descriptors {
 public:
  explicit Descriptors(const CudnnApi& api) : api_(api) {}
  ~Descriptors() {
    if (x_) api_.destroyTensor(x_);
    if (y_) api_.destroyTensor(y_);
    if (filter_) api_.destroyFilter(filter_);
    if (conv_) api_.destroyConv(conv_);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  Status describe(const CudnnConvolution& c) {
    int type = kFloat, compute = kFloat;
    int math = c.tf32 ? kTensorOpMath : kFmaMath;  // f32 without TF32 is FMA_MATH: DEFAULT allows TF32
    switch (c.dtype) {
      case DType::f32: break;
      case DType::f64: type = compute = kDouble, math = kDefaultMath; break;
      case DType::f16: type = kHalf, math = kTensorOpMath; break;  // f32 accumulation
      case DType::bf16: type = kBfloat16, math = kTensorOpMath; break;
      default: return makeError("cuDNN: no convolution in {}", dtypeName(c.dtype));
    }
    constexpr int64_t kMax = std::numeric_limits<int>::max();
    for (int64_t v :
         {c.n, c.c, c.h, c.w, c.o, c.oh, c.ow, c.kh, c.kw, c.n * c.c * c.h * c.w, c.n * c.o * c.oh * c.ow}) {
      if (v <= 0 || v > kMax) return makeError("cuDNN: a size of {} is outside its 32-bit interface", v);
    }
    auto i = [](int64_t v) { return static_cast<int>(v); };
    for (auto [status, what] :
         {std::pair{api_.createTensor(&x_), "cudnnCreateTensorDescriptor"},
          std::pair{api_.createTensor(&y_), "cudnnCreateTensorDescriptor"},
          std::pair{api_.createFilter(&filter_), "cudnnCreateFilterDescriptor"},
          std::pair{api_.createConv(&conv_), "cudnnCreateConvolutionDescriptor"},
          std::pair{api_.setTensor(x_, kNchw, type, i(c.n), i(c.c), i(c.h), i(c.w)), "cudnnSetTensor4dDescriptor (x)"},
          std::pair{api_.setTensor(y_, kNchw, type, i(c.n), i(c.o), i(c.oh), i(c.ow)),
                    "cudnnSetTensor4dDescriptor (y)"},
          std::pair{api_.setFilter(filter_, type, kNchw, i(c.o), i(c.c / c.groups), i(c.kh), i(c.kw)),
                    "cudnnSetFilter4dDescriptor"},
          std::pair{api_.setConv(conv_, i(c.padH), i(c.padW), i(c.strideH), i(c.strideW), i(c.dilationH),
                                 i(c.dilationW), kCrossCorrelation, compute),
                    "cudnnSetConvolution2dDescriptor"},
          std::pair{api_.setGroups(conv_, i(c.groups)), "cudnnSetConvolutionGroupCount"},
          std::pair{api_.setMath(conv_, math), "cudnnSetConvolutionMathType"}}) {
      if (status != kCudnnSuccess) return cudnnError(api_, status, what);
    }
    return Status::success();
  }

  /// The fastest deterministic algorithm and its workspace as cuDNN times them (once per shape, when
  /// the graph compiles), or by its heuristics with SMELT_CUDNN_ALGO=heuristic or where timing fails.
  /// Timed is 1.07-1.2x faster on ResNet-18's step on an H200 (three GPU runs).
  Expected<std::pair<int, size_t>> choose(Handle handle, CudnnConvolution::Kind kind) {
    static const bool timedChoice = [] {
      const char* env = std::getenv("SMELT_CUDNN_ALGO");
      return !(env && std::string_view(env) == "heuristic");
    }();
    if (timedChoice) {
      auto timed = rank(handle, kind, true);
      if (timed.ok()) return timed;
      logger().debug("cuda: timing cuDNN's algorithms failed ({}); its heuristics choose", timed.error().message());
    }
    return rank(handle, kind, false);
  }

  Status run(Handle handle, const CudnnConvolution& c, int algo, std::uint64_t first, std::uint64_t second,
             std::uint64_t result, std::uint64_t workspace, size_t bytes) {
    const double alpha64 = 1, beta64 = 0;
    const float alpha32 = 1, beta32 = 0;
    const void* alpha = c.dtype == DType::f64 ? static_cast<const void*>(&alpha64) : &alpha32;
    const void* beta = c.dtype == DType::f64 ? static_cast<const void*>(&beta64) : &beta32;
    auto p = [](std::uint64_t a) { return reinterpret_cast<void*>(a); };
    auto ws = p(workspace);
    CudnnStatus s = 0;
    switch (c.kind) {
      case CudnnConvolution::Forward:  // y = conv(x, filter)
        s = api_.forward(handle, alpha, x_, p(first), filter_, p(second), conv_, algo, ws, bytes, beta, y_, p(result));
        break;
      case CudnnConvolution::BackwardData:  // x = conv^T(y, filter)
        s = api_.data(handle, alpha, filter_, p(second), y_, p(first), conv_, algo, ws, bytes, beta, x_, p(result));
        break;
      case CudnnConvolution::BackwardFilter:  // filter from x and y
        s = api_.filter(handle, alpha, x_, p(first), y_, p(second), conv_, algo, ws, bytes, beta, filter_, p(result));
        break;
    }
    if (s != kCudnnSuccess) return cudnnError(api_, s, "cudnnConvolution* call");
    return Status::success();
  }

 private:
  /// cuDNN's algorithms for `kind`, ranked by its heuristics or by timing them; the first deterministic one.
  Expected<std::pair<int, size_t>> rank(Handle handle, CudnnConvolution::Kind kind, bool timed) {
    constexpr int kRequested = 16;
    AlgoPerf perf[kRequested] = {};
    int returned = 0;
    auto query = [&](auto heuristicQuery, auto timedQuery, Descriptor a, Descriptor b, Descriptor d) {
      return (timed ? timedQuery : heuristicQuery)(handle, a, b, conv_, d, kRequested, &returned, perf);
    };
    CudnnStatus s = kind == CudnnConvolution::Forward ? query(api_.forwardAlgos, api_.forwardTimed, x_, filter_, y_)
                    : kind == CudnnConvolution::BackwardData
                        ? query(api_.dataAlgos, api_.dataTimed, filter_, y_, x_)
                        : query(api_.filterAlgos, api_.filterTimed, x_, y_, filter_);
    if (s != kCudnnSuccess)
      return cudnnError(api_, s, timed ? "cudnnFindConvolution*Algorithm" : "cudnnGetConvolution*Algorithm_v7");
    for (int r = 0; r < returned; ++r) {
      // Ranked fastest first; the non-deterministic ones (atomics in gradients) are skipped.
      if (perf[r].status != kCudnnSuccess || perf[r].determinism != kDeterministic) continue;
      size_t bytes = 0;
      s = kind == CudnnConvolution::Forward
              ? api_.forwardWorkspace(handle, x_, filter_, conv_, y_, perf[r].algo, &bytes)
          : kind == CudnnConvolution::BackwardData
              ? api_.dataWorkspace(handle, filter_, y_, conv_, x_, perf[r].algo, &bytes)
              : api_.filterWorkspace(handle, x_, y_, conv_, filter_, perf[r].algo, &bytes);
      if (s == kCudnnSuccess) return std::pair{perf[r].algo, bytes};
    }
    return makeError("cuDNN has no deterministic algorithm for this convolution ({} candidates)", returned);
  }

  const CudnnApi& api_;
  Descriptor x_ = nullptr, y_ = nullptr, filter_ = nullptr, conv_ = nullptr;
};

/// The context's handle (made on first use, with the context current), under state().mutex.
Expected<Handle> handleFor(const CudnnApi& api, const Context& context) {
  Handle& handle = state().handles[{&context, context.epoch()}];
  if (!handle) {
    if (CudnnStatus s = api.create(&handle); s != kCudnnSuccess) {
      handle = nullptr;
      return cudnnError(api, s, "cudnnCreate");
    }
  }
  return handle;
}

/// The descriptors, algorithm and workspace for `conv`, made once per context and shape (compiling
/// asks first; every run then only calls), under state().mutex.
Expected<Plan*> planFor(const CudnnApi& api, Context& context, Handle handle, const CudnnConvolution& conv) {
  auto key = std::pair{State::ContextKey{&context, context.epoch()}, keyOf(conv)};
  if (auto it = state().plans.find(key); it != state().plans.end()) return &it->second;
  Plan plan{std::make_unique<Descriptors>(api)};
  SMELT_CHECK_OK(plan.descriptors->describe(conv));
  SMELT_TRY(auto chosen, plan.descriptors->choose(handle, conv.kind));
  std::tie(plan.algorithm, plan.workspace) = chosen;
  logger().debug("cuda: cuDNN algorithm {} ({} bytes of workspace) for a {} convolution of [{},{},{},{}]", chosen.first,
                 chosen.second, dtypeName(conv.dtype), conv.n, conv.c, conv.h, conv.w);
  return &(state().plans[key] = std::move(plan));
}

}  // namespace

bool cudnnAvailable() { return cudnn().ok(); }

bool cudnnPreferred(DType dtype) {
  return cudnnSetting() == CudnnSetting::kEveryDtype || dtype == DType::f16 || dtype == DType::bf16;
}

bool cudnnExpresses(const CudnnConvolution& c) {
  auto output = [](int64_t in, int64_t pad, int64_t dilation, int64_t k, int64_t stride) {
    const int64_t span = in + 2 * pad - dilation * (k - 1) - 1;
    return span < 0 ? -1 : span / stride + 1;
  };
  return c.groups >= 1 && c.c % c.groups == 0 && c.o % c.groups == 0 &&
         output(c.h, c.padH, c.dilationH, c.kh, c.strideH) == c.oh &&
         output(c.w, c.padW, c.dilationW, c.kw, c.strideW) == c.ow;
}

std::string cudnnDescription() {
  const auto& api = cudnn();
  return api.ok() ? (*api)->description : api.error().message();
}

Expected<size_t> cudnnWorkspace(Context& context, const CudnnConvolution& conv) {
  SMELT_TRY(CudnnApi * api, cudnn());
  if (!cudnnExpresses(conv)) return makeError("cuDNN: the window's padding differs between the sides of an axis");
  std::lock_guard lock(state().mutex);
  size_t bytes = 0;
  SMELT_CHECK_OK(context.withCurrent([&]() -> Status {
    SMELT_TRY(Handle handle, handleFor(*api, context));
    // The handle is the context's, shared by its executables: the stream the last of them ran on may
    // be destroyed by now. Choosing an algorithm by timing runs kernels on the handle's stream, so it
    // gets the context's default stream here (the run sets its own again).
    if (CudnnStatus s = api->setStream(handle, nullptr); s != kCudnnSuccess)
      return cudnnError(*api, s, "cudnnSetStream");
    SMELT_TRY(Plan * plan, planFor(*api, context, handle, conv));
    bytes = plan->workspace;
    return Status::success();
  }));
  return bytes;
}

Status cudnnConvolve(Context& context, void* stream, const CudnnConvolution& conv, std::uint64_t first,
                     std::uint64_t second, std::uint64_t result, std::uint64_t workspace, size_t workspaceBytes) {
  SMELT_TRY(CudnnApi * api, cudnn());
  std::lock_guard lock(state().mutex);
  return context.withCurrent([&]() -> Status {
    SMELT_TRY(Handle handle, handleFor(*api, context));
    if (CudnnStatus s = api->setStream(handle, stream); s != kCudnnSuccess)
      return cudnnError(*api, s, "cudnnSetStream");
    SMELT_TRY(Plan * plan, planFor(*api, context, handle, conv));
    if (plan->workspace > workspaceBytes) {
      return makeError("cuDNN: the convolution needs {} bytes of workspace, {} given", plan->workspace, workspaceBytes);
    }
    return plan->descriptors->run(handle, conv, plan->algorithm, first, second, result, workspace, workspaceBytes);
  });
}

}  // namespace smelt::cuda

// The CUDA driver API through dlopen("libcuda.so.1"). Never the toolkit's stubs/libcuda.so: its
// cuInit fails with CUDA_ERROR_STUB_LIBRARY, and linking it makes binaries fail to start without a
// driver.
#include "runtime/cuda/cuda_driver.h"

#include "codegen/dynamic_library.h"
#include "codegen/log.h"
#include "runtime/device/fault_injection.h"

#include <utility>

#if SMELT_HAVE_CUDA_TOOLKIT
#include <cuda.h>
#endif

namespace smelt::cuda {

#if SMELT_HAVE_CUDA_TOOLKIT

namespace {

// cuda.h #defines several API names to versioned ABI symbols (cuMemAlloc -> cuMemAlloc_v2). Listing
// the plain names here lets the preprocessor pick the same symbol for the member's type, its name
// and the string given to dlsym, so the versions always match the header smelt was built with.
// clang-format off
#define SMELT_CUDA_DRIVER_FUNCTIONS(X)                                                            \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount)        \
  X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem)                    \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxPushCurrent) X(cuCtxPopCurrent)  \
  X(cuCtxSynchronize) X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction)              \
  X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH)                    \
  X(cuMemHostAlloc) X(cuMemFreeHost) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)   \
  X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventQuery) X(cuEventDestroy)        \
  X(cuStreamWaitEvent) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync)              \
  X(cuMemsetD8Async) X(cuMemGetInfo) X(cuEventElapsedTime) X(cuDevicePrimaryCtxReset)                \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch)              \
  X(cuGraphExecDestroy) X(cuGraphDestroy)
// clang-format on
#define SMELT_STRINGIZE_INNER(x) #x
#define SMELT_STRINGIZE(x) SMELT_STRINGIZE_INNER(x)

/// The driver entry points smelt uses, typed from <cuda.h>.
struct DriverApi {
#define SMELT_CUDA_MEMBER(fn) decltype(&::fn) fn = nullptr;
  SMELT_CUDA_DRIVER_FUNCTIONS(SMELT_CUDA_MEMBER)
#undef SMELT_CUDA_MEMBER
  DriverVersion version;
};

/// What a CUresult means for recovery. Out of memory; or a sticky error: the context is poisoned
/// (every later call in it fails the same way) until it is reset, so only a reset or another
/// device helps. The driver documents these as leaving the process in an inconsistent state.
ErrorKind kindOf(CUresult rc) {
  switch (rc) {
    case CUDA_ERROR_OUT_OF_MEMORY: return ErrorKind::kOutOfMemory;
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_LAUNCH_TIMEOUT: return ErrorKind::kDeviceLost;
    default: return ErrorKind::kGeneric;
  }
}

/// "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)", of the kind kindOf says.
Error cudaError(const DriverApi& api, CUresult rc, std::string_view call) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName(rc, &name) != CUDA_SUCCESS) name = nullptr;
  if (api.cuGetErrorString(rc, &text) != CUDA_SUCCESS) text = nullptr;
  return Error(fmt::format("{} failed: {} ({})", call, name ? name : fmt::format("CUresult {}", static_cast<int>(rc)),
                           text ? text : "no description"),
               kindOf(rc));
}

/// SMELT_FAULTS at the driver-call layer: an allocation fails as the driver reports out of memory,
/// and a launch or a wait as it reports a kernel's illegal address, so injected faults take the
/// same path as real ones.
CUresult injectedAllocationFault() {
  return faultInjector().trigger(Fault::kOutOfMemory) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}
CUresult injectedExecutionFault() {
  return faultInjector().trigger(Fault::kDeviceLost) ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS;
}

Expected<DriverApi*> loadDriver() {
  // The runtime soname only: "libcuda.so" is the development symlink and may be the toolkit stub.
  auto library = DynamicLibrary::openFirst({"libcuda.so.1"});
  if (!library) return library.error().withContext("CUDA driver not found");
  auto api = std::make_unique<DriverApi>();
#define SMELT_CUDA_BIND(fn)                                                               \
  {                                                                                       \
    auto symbol =                                                                         \
        library->function<std::remove_pointer_t<decltype(api->fn)>>(SMELT_STRINGIZE(fn)); \
    if (!symbol) return symbol.error().withContext("CUDA driver unusable");               \
    api->fn = *symbol;                                                                    \
  }
  SMELT_CUDA_DRIVER_FUNCTIONS(SMELT_CUDA_BIND)
#undef SMELT_CUDA_BIND
  // cuInit also rejects the stub library (CUDA_ERROR_STUB_LIBRARY) and machines without a GPU
  // (CUDA_ERROR_NO_DEVICE): the backend is disabled rather than failing later.
  if (CUresult rc = api->cuInit(0); rc != CUDA_SUCCESS)
    return cudaError(*api, rc, "cuInit").withContext("CUDA driver found but not usable");
  int version = 0;
  if (CUresult rc = api->cuDriverGetVersion(&version); rc != CUDA_SUCCESS)
    return cudaError(*api, rc, "cuDriverGetVersion");
  api->version = {version / 1000, (version % 1000) / 10};
  library->leak();  // libcuda is never unloaded: contexts and atexit handlers depend on it
  logger().debug("cuda: driver {}.{} loaded", api->version.major, api->version.minor);
  return api.release();
}

/// The process-wide driver, loaded and initialised on first use (thread-safe static init).
const Expected<DriverApi*>& driver() {
  static const Expected<DriverApi*> api = loadDriver();
  return api;
}

/// The loaded driver; only called where an object exists, which proves the driver loaded.
const DriverApi& loadedDriver() { return *driver().value(); }

/// Makes a context current on this thread for one call and restores the previous one after.
class ScopedContext {
 public:
  ScopedContext(const DriverApi& api, void* context) : api_(api) {
    pushed_ = api.cuCtxPushCurrent(static_cast<CUcontext>(context)) == CUDA_SUCCESS;
  }
  ~ScopedContext() {
    CUcontext previous = nullptr;
    if (pushed_) api_.cuCtxPopCurrent(&previous);
  }
  bool ok() const { return pushed_; }

 private:
  const DriverApi& api_;
  bool pushed_ = false;
};

}  // namespace

ErrorKind errorKindOf(int cuResult) { return kindOf(static_cast<CUresult>(cuResult)); }

Expected<DriverVersion> driverVersion() {
  SMELT_TRY(const DriverApi* api, driver());
  return api->version;
}

Expected<int> deviceCount() {
  SMELT_TRY(const DriverApi* api, driver());
  int count = 0;
  if (CUresult rc = api->cuDeviceGetCount(&count); rc != CUDA_SUCCESS)
    return cudaError(*api, rc, "cuDeviceGetCount");
  return count;
}

Expected<DeviceInfo> deviceInfo(int ordinal) {
  SMELT_TRY(const DriverApi* api, driver());
  CUdevice device = 0;
  if (CUresult rc = api->cuDeviceGet(&device, ordinal); rc != CUDA_SUCCESS)
    return cudaError(*api, rc, fmt::format("cuDeviceGet({})", ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  if (CUresult rc = api->cuDeviceGetName(name, sizeof(name) - 1, device); rc != CUDA_SUCCESS)
    return cudaError(*api, rc, "cuDeviceGetName");
  info.name = name;
  const std::pair<CUdevice_attribute, int*> attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.cc_major},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.cc_minor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.multiprocessors}};
  for (auto [attribute, slot] : attributes)
    if (CUresult rc = api->cuDeviceGetAttribute(slot, attribute, device); rc != CUDA_SUCCESS)
      return cudaError(*api, rc, "cuDeviceGetAttribute");
  if (CUresult rc = api->cuDeviceTotalMem(&info.total_memory, device); rc != CUDA_SUCCESS)
    return cudaError(*api, rc, "cuDeviceTotalMem");
  return info;
}

Status checkPtxCompatible(int nvrtc_major) {
  SMELT_TRY(DriverVersion v, driverVersion());
  if (v.major >= nvrtc_major) return Status::success();
  return makeError(
      "CUDA driver {}.{} cannot JIT PTX from NVRTC {}: update the driver (CUDA 13 needs >= 580) "
      "or use an NVRTC of CUDA {} or older",
      v.major, v.minor, nvrtc_major, v.major);
}

// --- DeviceMemory
// ---------------------------------------------------------------------------------

DeviceMemory::DeviceMemory(DeviceMemory&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)),
      address_(std::exchange(other.address_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& other) noexcept {
  if (this != &other) {
    DeviceMemory old(std::move(*this));  // frees the current allocation
    context_ = std::exchange(other.context_, nullptr);
    address_ = std::exchange(other.address_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceMemory::~DeviceMemory() {
  if (!address_) return;
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (current.ok()) api.cuMemFree(static_cast<CUdeviceptr>(address_));
}

// --- Module
// ---------------------------------------------------------------------------------------

Module::Module(Module&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)),
      handle_(std::exchange(other.handle_, nullptr)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    Module old(std::move(*this));  // unloads the current module
    context_ = std::exchange(other.context_, nullptr);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Module::~Module() {
  if (!handle_) return;
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (current.ok()) api.cuModuleUnload(static_cast<CUmodule>(handle_));
}

Expected<Function> Module::function(const std::string& name) const {
  const DriverApi& api = loadedDriver();
  CUfunction handle = nullptr;
  if (CUresult rc = api.cuModuleGetFunction(&handle, static_cast<CUmodule>(handle_), name.c_str());
      rc != CUDA_SUCCESS)
    return cudaError(api, rc, fmt::format("cuModuleGetFunction(\"{}\")", name));
  Function f;
  f.handle_ = handle;
  f.name_ = name;
  return f;
}

// --- Context
// --------------------------------------------------------------------------------------

Expected<Context> Context::open(int ordinal) {
  SMELT_TRY(const DriverApi* api, driver());
  SMELT_TRY(DeviceInfo info, deviceInfo(ordinal));
  CUdevice device = 0;
  if (CUresult rc = api->cuDeviceGet(&device, ordinal); rc != CUDA_SUCCESS)
    return cudaError(*api, rc, "cuDeviceGet");
  CUcontext context = nullptr;
  if (CUresult rc = api->cuDevicePrimaryCtxRetain(&context, device); rc != CUDA_SUCCESS)
    return cudaError(*api, rc, "cuDevicePrimaryCtxRetain");
  Context c;
  c.context_ = context;
  c.device_ = device;
  c.info_ = std::move(info);
  logger().debug("cuda: opened device {} ({}, sm_{}{})", ordinal, c.info_.name, c.info_.cc_major,
                 c.info_.cc_minor);
  return c;
}

Context::Context(Context&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)),
      device_(std::exchange(other.device_, -1)),
      info_(std::move(other.info_)),
      epoch_(other.epoch_) {}

Context& Context::operator=(Context&& other) noexcept {
  if (this != &other) {
    Context old(std::move(*this));  // releases the current context
    context_ = std::exchange(other.context_, nullptr);
    device_ = std::exchange(other.device_, -1);
    info_ = std::move(other.info_);
    epoch_ = other.epoch_;
  }
  return *this;
}

Context::~Context() {
  if (context_) loadedDriver().cuDevicePrimaryCtxRelease(device_);
}

Expected<Module> Context::loadModule(std::string_view image) {
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (!current.ok()) return makeError("cuCtxPushCurrent failed");
  // PTX must be NUL-terminated; a CUBIN is an ELF the driver sizes itself. Copying covers both.
  const std::string data(image);
  char error_log[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log,
                    reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof(error_log)))};
  CUmodule module = nullptr;
  if (CUresult rc = api.cuModuleLoadDataEx(&module, data.c_str(), 2, options, values);
      rc != CUDA_SUCCESS) {
    Error e = cudaError(api, rc, "cuModuleLoadDataEx");
    std::string hint;
    if (rc == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
      hint = fmt::format("\n(the PTX is newer than driver {}.{}; see checkPtxCompatible)",
                         api.version.major, api.version.minor);
    return makeError("{}{}{}{}", e.message(), error_log[0] ? ":\n" : "", error_log, hint);
  }
  Module m;
  m.context_ = context_;
  m.handle_ = module;
  return m;
}

Status Context::launch(const Function& kernel, Dim3 grid, Dim3 block, std::span<void* const> params,
                       unsigned shared_bytes, void* stream) {
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (!current.ok()) return makeError("cuCtxPushCurrent failed");
  CUresult rc = injectedExecutionFault();
  if (rc == CUDA_SUCCESS) {
    rc = api.cuLaunchKernel(static_cast<CUfunction>(kernel.handle()), grid.x, grid.y, grid.z, block.x, block.y,
                            block.z, shared_bytes, static_cast<CUstream>(stream), const_cast<void**>(params.data()),
                            /*extra=*/nullptr);
  }
  if (rc != CUDA_SUCCESS)
    return cudaError(api, rc,
                     fmt::format("cuLaunchKernel({}, grid {}x{}x{}, block {}x{}x{})", kernel.name(),
                                 grid.x, grid.y, grid.z, block.x, block.y, block.z));
  return Status::success();
}

Status Context::withCurrent(const std::function<Status()>& call) {
  ScopedContext current(loadedDriver(), context_);
  if (!current.ok()) return makeError("cuCtxPushCurrent failed");
  return call();
}

Status Context::synchronize() {
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (!current.ok()) return makeError("cuCtxPushCurrent failed");
  CUresult rc = injectedExecutionFault();
  if (rc == CUDA_SUCCESS) rc = api.cuCtxSynchronize();
  if (rc != CUDA_SUCCESS) return cudaError(api, rc, "cuCtxSynchronize");
  return Status::success();
}

Status Context::reset() {
  const DriverApi& api = loadedDriver();
  // Destroys every allocation, module and stream of the primary context, then takes it again.
  ++epoch_;
  if (CUresult rc = api.cuDevicePrimaryCtxReset(device_); rc != CUDA_SUCCESS) {
    return cudaError(api, rc, fmt::format("cuDevicePrimaryCtxReset({})", info_.ordinal));
  }
  api.cuDevicePrimaryCtxRelease(device_);
  CUcontext context = nullptr;
  if (CUresult rc = api.cuDevicePrimaryCtxRetain(&context, device_); rc != CUDA_SUCCESS) {
    context_ = nullptr;
    return cudaError(api, rc, fmt::format("cuDevicePrimaryCtxRetain({})", info_.ordinal));
  }
  context_ = context;
  return Status::success();
}

Expected<DeviceMemory> Context::allocate(std::size_t bytes) {
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (!current.ok()) return makeError("cuCtxPushCurrent failed");
  CUdeviceptr address = 0;
  if (CUresult rc = api.cuMemAlloc(&address, bytes); rc != CUDA_SUCCESS)
    return cudaError(api, rc, fmt::format("cuMemAlloc({} bytes)", bytes));
  DeviceMemory m;
  m.context_ = context_;
  m.address_ = address;
  m.bytes_ = bytes;
  return m;
}

Status Context::copyToDevice(DeviceMemory& dst, const void* src, std::size_t bytes,
                             std::size_t offset) {
  if (offset > dst.bytes() || bytes > dst.bytes() - offset)
    return makeError("copyToDevice: {} bytes at offset {} into a {}-byte buffer", bytes, offset,
                     dst.bytes());
  if (bytes == 0) return Status::success();  // empty tensors: nothing to copy
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (!current.ok()) return makeError("cuCtxPushCurrent failed");
  if (CUresult rc = api.cuMemcpyHtoD(static_cast<CUdeviceptr>(dst.address() + offset), src, bytes);
      rc != CUDA_SUCCESS)
    return cudaError(api, rc, "cuMemcpyHtoD");
  return Status::success();
}

Status Context::copyToHost(void* dst, const DeviceMemory& src, std::size_t bytes,
                           std::size_t offset) {
  if (offset > src.bytes() || bytes > src.bytes() - offset)
    return makeError("copyToHost: {} bytes at offset {} from a {}-byte buffer", bytes, offset,
                     src.bytes());
  if (bytes == 0) return Status::success();
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (!current.ok()) return makeError("cuCtxPushCurrent failed");
  if (CUresult rc = api.cuMemcpyDtoH(dst, static_cast<CUdeviceptr>(src.address() + offset), bytes);
      rc != CUDA_SUCCESS)
    return cudaError(api, rc, "cuMemcpyDtoH");
  return Status::success();
}

// Every raw call: make the context current, call, turn a failure into an error naming the call.
#define SMELT_CUDA_CALL(call, what)                                       \
  do {                                                                    \
    const DriverApi& api_ = loadedDriver();                               \
    ScopedContext current_(api_, context_);                               \
    if (!current_.ok()) return makeError("cuCtxPushCurrent failed");      \
    if (CUresult rc_ = api_.call; rc_ != CUDA_SUCCESS)                    \
      return cudaError(api_, rc_, what);                                  \
  } while (0)

Expected<std::uint64_t> Context::allocateRaw(std::size_t bytes) {
  CUdeviceptr address = 0;
  if (CUresult rc = injectedAllocationFault(); rc != CUDA_SUCCESS) {
    return cudaError(loadedDriver(), rc, fmt::format("cuMemAlloc({} bytes)", bytes));
  }
  SMELT_CUDA_CALL(cuMemAlloc(&address, bytes ? bytes : 1), fmt::format("cuMemAlloc({} bytes)", bytes));
  return static_cast<std::uint64_t>(address);
}

void Context::freeRaw(std::uint64_t address) {
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (current.ok() && address) api.cuMemFree(static_cast<CUdeviceptr>(address));
}

Expected<void*> Context::allocateHost(std::size_t bytes) {
  void* pointer = nullptr;
  if (CUresult rc = injectedAllocationFault(); rc != CUDA_SUCCESS) {
    return cudaError(loadedDriver(), rc, fmt::format("cuMemHostAlloc({} bytes)", bytes));
  }
  SMELT_CUDA_CALL(cuMemHostAlloc(&pointer, bytes ? bytes : 1, 0), fmt::format("cuMemHostAlloc({} bytes)", bytes));
  return pointer;
}

void Context::freeHost(void* pointer) {
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (current.ok() && pointer) api.cuMemFreeHost(pointer);
}

Status Context::beginCapture(void* stream) {
  // Relaxed: nothing in a step's enqueueing is unsafe, and other threads' CUDA calls stay allowed.
  SMELT_CUDA_CALL(cuStreamBeginCapture(static_cast<CUstream>(stream), CU_STREAM_CAPTURE_MODE_RELAXED),
                  "cuStreamBeginCapture");
  return Status::success();
}

Expected<void*> Context::endCapture(void* stream) {
  CUgraph graph = nullptr;
  SMELT_CUDA_CALL(cuStreamEndCapture(static_cast<CUstream>(stream), &graph), "cuStreamEndCapture");
  CUgraphExec exec = nullptr;
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  CUresult rc = api.cuGraphInstantiate(&exec, graph, 0);
  api.cuGraphDestroy(graph);
  if (rc != CUDA_SUCCESS) return cudaError(api, rc, "cuGraphInstantiate");
  return static_cast<void*>(exec);
}

Status Context::launchGraph(void* exec, void* stream) {
  SMELT_CUDA_CALL(cuGraphLaunch(static_cast<CUgraphExec>(exec), static_cast<CUstream>(stream)), "cuGraphLaunch");
  return Status::success();
}

void Context::destroyGraphExec(void* exec) {
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (exec) api.cuGraphExecDestroy(static_cast<CUgraphExec>(exec));
}

Expected<void*> Context::createStream() {
  CUstream stream = nullptr;
  SMELT_CUDA_CALL(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return static_cast<void*>(stream);
}

void Context::destroyStream(void* stream) {
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (current.ok() && stream) api.cuStreamDestroy(static_cast<CUstream>(stream));
}

Status Context::synchronizeStream(void* stream) {
  if (CUresult rc = injectedExecutionFault(); rc != CUDA_SUCCESS) return cudaError(loadedDriver(), rc, "cuStreamSynchronize");
  SMELT_CUDA_CALL(cuStreamSynchronize(static_cast<CUstream>(stream)), "cuStreamSynchronize");
  return Status::success();
}

Expected<void*> Context::recordEvent(void* stream, bool timing) {
  CUevent event = nullptr;
  // Events that only order work skip the timestamp (cheaper); timing ones keep it.
  SMELT_CUDA_CALL(cuEventCreate(&event, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  SMELT_CUDA_CALL(cuEventRecord(event, static_cast<CUstream>(stream)), "cuEventRecord");
  return static_cast<void*>(event);
}

Status Context::recordEventAgain(void* event, void* stream) {
  SMELT_CUDA_CALL(cuEventRecord(static_cast<CUevent>(event), static_cast<CUstream>(stream)), "cuEventRecord");
  return Status::success();
}

Status Context::synchronizeEvent(void* event) {
  SMELT_CUDA_CALL(cuEventSynchronize(static_cast<CUevent>(event)), "cuEventSynchronize");
  return Status::success();
}

Expected<double> Context::elapsedMs(void* start, void* end) {
  float ms = 0;
  SMELT_CUDA_CALL(cuEventElapsedTime(&ms, static_cast<CUevent>(start), static_cast<CUevent>(end)),
                  "cuEventElapsedTime");
  return static_cast<double>(ms);
}

Expected<bool> Context::eventDone(void* event) {
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (!current.ok()) return makeError("cuCtxPushCurrent failed");
  CUresult rc = api.cuEventQuery(static_cast<CUevent>(event));
  if (rc == CUDA_SUCCESS) return true;
  if (rc == CUDA_ERROR_NOT_READY) return false;
  return cudaError(api, rc, "cuEventQuery");
}

void Context::destroyEvent(void* event) {
  const DriverApi& api = loadedDriver();
  ScopedContext current(api, context_);
  if (current.ok() && event) api.cuEventDestroy(static_cast<CUevent>(event));
}

Status Context::streamWaitEvent(void* stream, void* event) {
  SMELT_CUDA_CALL(cuStreamWaitEvent(static_cast<CUstream>(stream), static_cast<CUevent>(event), 0), "cuStreamWaitEvent");
  return Status::success();
}

Status Context::copyHostToDeviceAsync(std::uint64_t dst, const void* src, std::size_t bytes, void* stream) {
  if (bytes == 0) return Status::success();
  SMELT_CUDA_CALL(cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(dst), src, bytes, static_cast<CUstream>(stream)),
                  "cuMemcpyHtoDAsync");
  return Status::success();
}

Status Context::copyDeviceToHostAsync(void* dst, std::uint64_t src, std::size_t bytes, void* stream) {
  if (bytes == 0) return Status::success();
  SMELT_CUDA_CALL(cuMemcpyDtoHAsync(dst, static_cast<CUdeviceptr>(src), bytes, static_cast<CUstream>(stream)),
                  "cuMemcpyDtoHAsync");
  return Status::success();
}

Status Context::copyDeviceToDeviceAsync(std::uint64_t dst, std::uint64_t src, std::size_t bytes, void* stream) {
  if (bytes == 0) return Status::success();
  SMELT_CUDA_CALL(cuMemcpyDtoDAsync(static_cast<CUdeviceptr>(dst), static_cast<CUdeviceptr>(src), bytes,
                                    static_cast<CUstream>(stream)),
                  "cuMemcpyDtoDAsync");
  return Status::success();
}

Status Context::fillAsync(std::uint64_t dst, std::uint8_t value, std::size_t bytes, void* stream) {
  if (bytes == 0) return Status::success();
  SMELT_CUDA_CALL(cuMemsetD8Async(static_cast<CUdeviceptr>(dst), value, bytes, static_cast<CUstream>(stream)),
                  "cuMemsetD8Async");
  return Status::success();
}

Expected<std::pair<std::size_t, std::size_t>> Context::memoryInfo() {
  std::size_t free = 0, total = 0;
  SMELT_CUDA_CALL(cuMemGetInfo(&free, &total), "cuMemGetInfo");
  return std::make_pair(free, total);
}

#undef SMELT_CUDA_CALL

#else  // !SMELT_HAVE_CUDA_TOOLKIT: no cuda.h at build time, so no driver support at all

namespace {
Error unavailable() {
  return Error("CUDA driver support not built: smelt was built without the CUDA toolkit headers");
}
}  // namespace

ErrorKind errorKindOf(int) { return ErrorKind::kGeneric; }
Expected<DriverVersion> driverVersion() { return unavailable(); }
Expected<int> deviceCount() { return unavailable(); }
Expected<DeviceInfo> deviceInfo(int) { return unavailable(); }
Status checkPtxCompatible(int) { return unavailable(); }
DeviceMemory::DeviceMemory(DeviceMemory&&) noexcept {}
DeviceMemory& DeviceMemory::operator=(DeviceMemory&&) noexcept { return *this; }
DeviceMemory::~DeviceMemory() = default;
Module::Module(Module&&) noexcept {}
Module& Module::operator=(Module&&) noexcept { return *this; }
Module::~Module() = default;
Expected<Function> Module::function(const std::string&) const { return unavailable(); }
Expected<Context> Context::open(int) { return unavailable(); }
Context::Context(Context&&) noexcept {}
Context& Context::operator=(Context&&) noexcept { return *this; }
Context::~Context() = default;
Expected<Module> Context::loadModule(std::string_view) { return unavailable(); }
Status Context::launch(const Function&, Dim3, Dim3, std::span<void* const>, unsigned, void*) {
  return unavailable();
}
Expected<std::uint64_t> Context::allocateRaw(std::size_t) { return unavailable(); }
void Context::freeRaw(std::uint64_t) {}
Expected<void*> Context::allocateHost(std::size_t) { return unavailable(); }
void Context::freeHost(void*) {}
Expected<void*> Context::createStream() { return unavailable(); }
Status Context::beginCapture(void*) { return unavailable(); }
Expected<void*> Context::endCapture(void*) { return unavailable(); }
Status Context::launchGraph(void*, void*) { return unavailable(); }
void Context::destroyGraphExec(void*) {}
void Context::destroyStream(void*) {}
Status Context::synchronizeStream(void*) { return unavailable(); }
Expected<void*> Context::recordEvent(void*, bool) { return unavailable(); }
Status Context::recordEventAgain(void*, void*) { return unavailable(); }
Expected<double> Context::elapsedMs(void*, void*) { return unavailable(); }
Status Context::synchronizeEvent(void*) { return unavailable(); }
Expected<bool> Context::eventDone(void*) { return unavailable(); }
void Context::destroyEvent(void*) {}
Status Context::streamWaitEvent(void*, void*) { return unavailable(); }
Status Context::copyHostToDeviceAsync(std::uint64_t, const void*, std::size_t, void*) { return unavailable(); }
Status Context::copyDeviceToHostAsync(void*, std::uint64_t, std::size_t, void*) { return unavailable(); }
Status Context::copyDeviceToDeviceAsync(std::uint64_t, std::uint64_t, std::size_t, void*) { return unavailable(); }
Status Context::fillAsync(std::uint64_t, std::uint8_t, std::size_t, void*) { return unavailable(); }
Expected<std::pair<std::size_t, std::size_t>> Context::memoryInfo() { return unavailable(); }
Status Context::synchronize() { return unavailable(); }
Status Context::withCurrent(const std::function<Status()>&) { return unavailable(); }
Status Context::reset() { return unavailable(); }
Expected<DeviceMemory> Context::allocate(std::size_t) { return unavailable(); }
Status Context::copyToDevice(DeviceMemory&, const void*, std::size_t, std::size_t) {
  return unavailable();
}
Status Context::copyToHost(void*, const DeviceMemory&, std::size_t, std::size_t) {
  return unavailable();
}

#endif

}  // namespace smelt::cuda

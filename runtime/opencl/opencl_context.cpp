// OpenCL devices: PoCL's cache folder set up before the first OpenCL call, discovery, device facts,
// selection (SMELT_OPENCL_DEVICE) and Context creation.
#include "runtime/opencl/opencl_runtime.h"

#include "codegen/cache/cache_dir.h"
#include "codegen/log.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

namespace smelt::opencl {

namespace {

/// Points POCL_CACHE_DIR at <smelt cache dir>/pocl (created 0700) unless the user set it. PoCL
/// reads it when the ICD loader first loads it, so this runs (once) before any OpenCL call; PoCL's
/// default,
/// ~/.cache/pocl, is often not writable in CI sandboxes.
void preparePoclEnvironment() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* set = std::getenv("POCL_CACHE_DIR"); set && *set) return;
    const std::string base = defaultCacheDir();
    if (base.empty()) return;
    const std::string pocl = base + "/pocl";
    if (Status made = createPrivateDir(pocl); !made.ok()) {
      logger().warn("opencl: {}; PoCL keeps its default cache folder", made.error().message());
      return;
    }
    setenv("POCL_CACHE_DIR", pocl.c_str(), /*overwrite=*/0);
    logger().debug("opencl: POCL_CACHE_DIR={}", pocl);
  });
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

template <typename Getter, typename Object>
std::string infoString(Getter get, Object object, cl_uint what) {
  size_t size = 0;
  if (get(object, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string value(size, '\0');
  if (get(object, what, size, value.data(), nullptr) != CL_SUCCESS) return {};
  value.resize(strnlen(value.data(), size));
  return value;
}

template <typename T>
T deviceValue(cl_device_id device, cl_device_info what) {
  T value{};
  if (clGetDeviceInfo(device, what, sizeof(T), &value, nullptr) != CL_SUCCESS) return T{};
  return value;
}

DeviceInfo describe(cl_platform_id platform, cl_device_id device) {
  DeviceInfo d;
  d.platform = platform;
  d.id = device;
  d.platform_name = infoString(clGetPlatformInfo, platform, CL_PLATFORM_NAME);
  d.name = infoString(clGetDeviceInfo, device, CL_DEVICE_NAME);
  d.vendor = infoString(clGetDeviceInfo, device, CL_DEVICE_VENDOR);
  d.version = infoString(clGetDeviceInfo, device, CL_DEVICE_VERSION);
  d.opencl_c_version = infoString(clGetDeviceInfo, device, CL_DEVICE_OPENCL_C_VERSION);
  d.driver_version = infoString(clGetDeviceInfo, device, CL_DRIVER_VERSION);
  d.extensions = infoString(clGetDeviceInfo, device, CL_DEVICE_EXTENSIONS);
  const auto type = deviceValue<cl_device_type>(device, CL_DEVICE_TYPE);
  d.is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
  d.is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
  d.compute_units = deviceValue<cl_uint>(device, CL_DEVICE_MAX_COMPUTE_UNITS);
  d.global_memory_bytes = deviceValue<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE);
  d.max_allocation_bytes = deviceValue<cl_ulong>(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  d.local_memory_bytes = deviceValue<cl_ulong>(device, CL_DEVICE_LOCAL_MEM_SIZE);
  d.max_work_group_size = deviceValue<size_t>(device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  const std::string extensions = " " + d.extensions + " ";
  d.fp64 = deviceValue<cl_device_fp_config>(device, CL_DEVICE_DOUBLE_FP_CONFIG) != 0 ||
           extensions.find(" cl_khr_fp64 ") != std::string::npos;
  d.fp16 = extensions.find(" cl_khr_fp16 ") != std::string::npos;
  return d;
}

bool matches(const DeviceInfo& d, std::string_view selector) {
  const std::string s = lower(selector);
  if (s == "cpu") return d.is_cpu;
  if (s == "gpu") return d.is_gpu;
  for (const std::string* field : {&d.platform_name, &d.name, &d.vendor})
    if (lower(*field).find(s) != std::string::npos) return true;
  return false;
}

/// The default choice: PoCL's CPU device (what smelt is tested on), then any CPU, then the first.
int preference(const DeviceInfo& d) {
  const bool pocl =
      lower(d.platform_name).find("portable computing language") != std::string::npos ||
      lower(d.platform_name).find("pocl") != std::string::npos;
  return d.is_cpu ? (pocl ? 2 : 1) : 0;
}

}  // namespace

std::string errorName(cl_int code) {
  // clang-format off
#define SMELT_CL_ERRORS(X) \
    X(CL_SUCCESS) X(CL_DEVICE_NOT_FOUND) X(CL_DEVICE_NOT_AVAILABLE) X(CL_COMPILER_NOT_AVAILABLE) \
    X(CL_MEM_OBJECT_ALLOCATION_FAILURE) X(CL_OUT_OF_RESOURCES) X(CL_OUT_OF_HOST_MEMORY) \
    X(CL_BUILD_PROGRAM_FAILURE) X(CL_MISALIGNED_SUB_BUFFER_OFFSET) X(CL_INVALID_VALUE) \
    X(CL_INVALID_DEVICE_TYPE) X(CL_INVALID_PLATFORM) X(CL_INVALID_DEVICE) X(CL_INVALID_CONTEXT) \
    X(CL_INVALID_COMMAND_QUEUE) X(CL_INVALID_HOST_PTR) X(CL_INVALID_MEM_OBJECT) \
    X(CL_INVALID_BUFFER_SIZE) X(CL_INVALID_BINARY) X(CL_INVALID_BUILD_OPTIONS) \
    X(CL_INVALID_PROGRAM) X(CL_INVALID_PROGRAM_EXECUTABLE) X(CL_INVALID_KERNEL_NAME) \
    X(CL_INVALID_KERNEL_DEFINITION) X(CL_INVALID_KERNEL) X(CL_INVALID_ARG_INDEX) \
    X(CL_INVALID_ARG_VALUE) X(CL_INVALID_ARG_SIZE) X(CL_INVALID_KERNEL_ARGS) \
    X(CL_INVALID_WORK_DIMENSION) X(CL_INVALID_WORK_GROUP_SIZE) X(CL_INVALID_WORK_ITEM_SIZE) \
    X(CL_INVALID_GLOBAL_OFFSET) X(CL_INVALID_EVENT_WAIT_LIST) X(CL_INVALID_OPERATION) \
    X(CL_INVALID_GLOBAL_WORK_SIZE) X(CL_COMPILE_PROGRAM_FAILURE) X(CL_LINK_PROGRAM_FAILURE) \
    X(CL_INVALID_COMPILER_OPTIONS)
  // clang-format on
#define SMELT_CL_ERROR_CASE(name) \
  case name:                      \
    return #name;
  switch (code) {
    SMELT_CL_ERRORS(SMELT_CL_ERROR_CASE)
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return fmt::format("OpenCL error {}", code);
  }
#undef SMELT_CL_ERROR_CASE
#undef SMELT_CL_ERRORS
}

std::string poclCacheDir() {
  preparePoclEnvironment();
  const char* dir = std::getenv("POCL_CACHE_DIR");
  return dir ? dir : "";
}

Expected<std::vector<DeviceInfo>> listDevices() {
  preparePoclEnvironment();
  cl_uint count = 0;
  cl_int rc = clGetPlatformIDs(0, nullptr, &count);
  if (rc == -1001 || (rc == CL_SUCCESS && count == 0))
    return Error(
        "no OpenCL platform found (install an ICD such as pocl-opencl-icd; see "
        "/etc/OpenCL/vendors)");
  if (rc != CL_SUCCESS) return makeError("clGetPlatformIDs failed: {}", errorName(rc));
  std::vector<cl_platform_id> platforms(count);
  if ((rc = clGetPlatformIDs(count, platforms.data(), nullptr)) != CL_SUCCESS)
    return makeError("clGetPlatformIDs failed: {}", errorName(rc));
  std::vector<DeviceInfo> devices;
  for (cl_platform_id platform : platforms) {
    cl_uint n = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0)
      continue;
    std::vector<cl_device_id> ids(n);
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr) != CL_SUCCESS)
      continue;
    for (cl_device_id id : ids) devices.push_back(describe(platform, id));
  }
  if (devices.empty()) return Error("OpenCL platforms found, but no devices");
  return devices;
}

Expected<Context> Context::create(std::string_view selector) {
  SMELT_TRY(std::vector<DeviceInfo> devices, listDevices());
  std::string wanted(selector);
  if (wanted.empty())
    if (const char* env = std::getenv("SMELT_OPENCL_DEVICE"); env && *env) wanted = env;
  const DeviceInfo* chosen = nullptr;
  if (!wanted.empty()) {
    for (const DeviceInfo& d : devices)
      if (matches(d, wanted)) {
        chosen = &d;
        break;
      }
    if (!chosen) {
      std::vector<std::string> names;
      for (const DeviceInfo& d : devices)
        names.push_back(fmt::format("'{}' on '{}'", d.name, d.platform_name));
      return makeError(
          "no OpenCL device matches '{}' (SMELT_OPENCL_DEVICE or selector); devices: {}", wanted,
          fmt::join(names, ", "));
    }
  } else {
    chosen = &devices.front();
    for (const DeviceInfo& d : devices)
      if (preference(d) > preference(*chosen)) chosen = &d;
  }

  Context c;
  c.device_ = *chosen;
  cl_int rc = CL_SUCCESS;
  const cl_context_properties properties[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(c.device_.platform), 0};
  c.context_ =
      decltype(c.context_)(clCreateContext(properties, 1, &c.device_.id, nullptr, nullptr, &rc));
  if (rc != CL_SUCCESS)
    return makeError("clCreateContext on '{}' failed: {}", c.device_.name, errorName(rc));
  // clCreateCommandQueue is deprecated in 2.0 but is the 1.2 call; every 1.2+ platform has it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  c.queue_ = decltype(c.queue_)(clCreateCommandQueue(c.get(), c.device_.id, kQueueProperties, &rc));
#pragma GCC diagnostic pop
  if (rc != CL_SUCCESS)
    return makeError("clCreateCommandQueue on '{}' failed: {}", c.device_.name, errorName(rc));
  logger().debug("opencl: using '{}' on '{}' ({})", c.device_.name, c.device_.platform_name,
                 c.device_.version);
  return c;
}

}  // namespace smelt::opencl

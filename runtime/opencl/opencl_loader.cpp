// The OpenCL entry points smelt calls, defined here and forwarded to the ICD loader (libOpenCL.so.1)
// opened at run time. When another LLVM is already loaded in the process (smelt's LLVM 16 JIT), the
// loader and everything it opens (PoCL, its LLVM 15 and clang) go into a private link-map namespace
// (dlmopen): PoCL's libclang-cpp.so.15 has unversioned weak symbols (template vtables such as
// PassModel<Module, VerifierPass>) that otherwise bind to libLLVM-16's copies, and its first cold
// clBuildProgram crashes inside LLVM 16 (a warm PoCL cache skips clang, which hid this). Without
// another LLVM the loader is dlopen'ed as usual (runtime/device/private_namespace.h: what a private
// namespace needs mended). Functions smelt does not call are not defined.
#include "runtime/device/private_namespace.h"

#include <CL/cl.h>
#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

// What every call returns when no ICD loader could be opened (CL_PLATFORM_NOT_FOUND_KHR): listing
// the platforms fails first, with the same code as a loader without platforms.
constexpr cl_int kUnavailable = -1001;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // clCreateCommandQueue: the 1.2 call
#define SMELT_CL_FUNCTIONS(X)  \
  X(clGetPlatformIDs)          \
  X(clGetPlatformInfo)         \
  X(clGetDeviceIDs)            \
  X(clGetDeviceInfo)           \
  X(clCreateContext)           \
  X(clReleaseContext)          \
  X(clCreateCommandQueue)      \
  X(clReleaseCommandQueue)     \
  X(clCreateBuffer)            \
  X(clReleaseMemObject)        \
  X(clCreateProgramWithSource) \
  X(clReleaseProgram)          \
  X(clBuildProgram)            \
  X(clGetProgramInfo)          \
  X(clGetProgramBuildInfo)     \
  X(clCreateKernel)            \
  X(clReleaseKernel)           \
  X(clSetKernelArg)            \
  X(clFinish)                  \
  X(clEnqueueReadBuffer)       \
  X(clEnqueueWriteBuffer)      \
  X(clEnqueueNDRangeKernel)    \
  X(clEnqueueCopyBuffer)       \
  X(clEnqueueFillBuffer)       \
  X(clEnqueueMarkerWithWaitList) \
  X(clEnqueueBarrierWithWaitList) \
  X(clEnqueueMapBuffer)        \
  X(clEnqueueUnmapMemObject)   \
  X(clWaitForEvents)           \
  X(clGetEventInfo)            \
  X(clGetEventProfilingInfo)   \
  X(clReleaseEvent)            \
  X(clFlush)

/// The loader's functions (null when it could not be opened).
struct Api {
  void* handle = nullptr;
  /// The namespace the loader was opened in, when isolated (its handle null otherwise).
  smelt::PrivateNamespace isolated;
#define SMELT_CL_MEMBER(name) decltype(&::name) name = nullptr;
  SMELT_CL_FUNCTIONS(SMELT_CL_MEMBER)
#undef SMELT_CL_MEMBER
};
#pragma GCC diagnostic pop

/// Whether a libLLVM is already mapped in the default namespace.
bool otherLlvmLoaded() {
  bool found = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name && std::string_view(info->dlpi_name).find("libLLVM") != std::string_view::npos) {
          *static_cast<bool*>(data) = true;
        }
        return 0;
      },
      &found);
  return found;
}

Api load() {
  Api api;
  // SMELT_OPENCL_NAMESPACE=shared / private forces either way (for debugging).
  const char* force = std::getenv("SMELT_OPENCL_NAMESPACE");
  bool isolate = force ? std::strcmp(force, "private") == 0 : otherLlvmLoaded();
  if (isolate) {
    api.isolated = smelt::PrivateNamespace::open({"libOpenCL.so.1", "libOpenCL.so"});
    api.handle = api.isolated.handle();
  } else {
    for (const char* name : {"libOpenCL.so.1", "libOpenCL.so"}) {
      api.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (api.handle) break;
    }
  }
  if (!api.handle) return api;
#define SMELT_CL_LOAD(name) api.name = reinterpret_cast<decltype(api.name)>(dlsym(api.handle, #name));
  SMELT_CL_FUNCTIONS(SMELT_CL_LOAD)
#undef SMELT_CL_LOAD
  // Kept loaded for the life of the process: drivers do not survive dlclose.
  return api;
}

const Api& api() {
  static const Api instance = load();
  instance.isolated.enterThread();
  return instance;
}

}  // namespace

namespace smelt::opencl {

void* openBesideLoader(const char* soname) {
  const Api& a = api();
  if (!a.handle) return nullptr;
  if (!a.isolated.handle()) return dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  return a.isolated.openBeside(soname);
}

}  // namespace smelt::opencl

extern "C" {

CL_API_ENTRY cl_int CL_API_CALL clGetPlatformIDs(cl_uint num_entries, cl_platform_id* platforms,
                                                 cl_uint* num_platforms) {
  return api().clGetPlatformIDs ? api().clGetPlatformIDs(num_entries, platforms, num_platforms) : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id platform, cl_platform_info param_name,
                                                  size_t param_value_size, void* param_value,
                                                  size_t* param_value_size_ret) {
  return api().clGetPlatformInfo
             ? api().clGetPlatformInfo(platform, param_name, param_value_size, param_value, param_value_size_ret)
             : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clGetDeviceIDs(cl_platform_id platform, cl_device_type device_type, cl_uint num_entries,
                                               cl_device_id* devices, cl_uint* num_devices) {
  return api().clGetDeviceIDs ? api().clGetDeviceIDs(platform, device_type, num_entries, devices, num_devices)
                              : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clGetDeviceInfo(cl_device_id device, cl_device_info param_name, size_t param_value_size,
                                                void* param_value, size_t* param_value_size_ret) {
  return api().clGetDeviceInfo
             ? api().clGetDeviceInfo(device, param_name, param_value_size, param_value, param_value_size_ret)
             : kUnavailable;
}

CL_API_ENTRY cl_context CL_API_CALL clCreateContext(
    const cl_context_properties* properties, cl_uint num_devices, const cl_device_id* devices,
    void(CL_CALLBACK* pfn_notify)(const char* errinfo, const void* private_info, size_t cb, void* user_data),
    void* user_data, cl_int* errcode_ret) {
  if (api().clCreateContext)
    return api().clCreateContext(properties, num_devices, devices, pfn_notify, user_data, errcode_ret);
  if (errcode_ret) *errcode_ret = kUnavailable;
  return nullptr;
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseContext(cl_context context) {
  return api().clReleaseContext ? api().clReleaseContext(context) : kUnavailable;
}

CL_API_ENTRY cl_command_queue CL_API_CALL clCreateCommandQueue(cl_context context, cl_device_id device,
                                                               cl_command_queue_properties properties,
                                                               cl_int* errcode_ret) {
  if (api().clCreateCommandQueue) return api().clCreateCommandQueue(context, device, properties, errcode_ret);
  if (errcode_ret) *errcode_ret = kUnavailable;
  return nullptr;
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseCommandQueue(cl_command_queue command_queue) {
  return api().clReleaseCommandQueue ? api().clReleaseCommandQueue(command_queue) : kUnavailable;
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void* host_ptr,
                                               cl_int* errcode_ret) {
  if (api().clCreateBuffer) return api().clCreateBuffer(context, flags, size, host_ptr, errcode_ret);
  if (errcode_ret) *errcode_ret = kUnavailable;
  return nullptr;
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseMemObject(cl_mem memobj) {
  return api().clReleaseMemObject ? api().clReleaseMemObject(memobj) : kUnavailable;
}

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithSource(cl_context context, cl_uint count, const char** strings,
                                                              const size_t* lengths, cl_int* errcode_ret) {
  if (api().clCreateProgramWithSource)
    return api().clCreateProgramWithSource(context, count, strings, lengths, errcode_ret);
  if (errcode_ret) *errcode_ret = kUnavailable;
  return nullptr;
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseProgram(cl_program program) {
  return api().clReleaseProgram ? api().clReleaseProgram(program) : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id* device_list,
                                               const char* options,
                                               void(CL_CALLBACK* pfn_notify)(cl_program program, void* user_data),
                                               void* user_data) {
  return api().clBuildProgram ? api().clBuildProgram(program, num_devices, device_list, options, pfn_notify, user_data)
                              : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramInfo(cl_program program, cl_program_info param_name,
                                                 size_t param_value_size, void* param_value,
                                                 size_t* param_value_size_ret) {
  return api().clGetProgramInfo
             ? api().clGetProgramInfo(program, param_name, param_value_size, param_value, param_value_size_ret)
             : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramBuildInfo(cl_program program, cl_device_id device,
                                                      cl_program_build_info param_name, size_t param_value_size,
                                                      void* param_value, size_t* param_value_size_ret) {
  return api().clGetProgramBuildInfo ? api().clGetProgramBuildInfo(program, device, param_name, param_value_size,
                                                                   param_value, param_value_size_ret)
                                     : kUnavailable;
}

CL_API_ENTRY cl_kernel CL_API_CALL clCreateKernel(cl_program program, const char* kernel_name, cl_int* errcode_ret) {
  if (api().clCreateKernel) return api().clCreateKernel(program, kernel_name, errcode_ret);
  if (errcode_ret) *errcode_ret = kUnavailable;
  return nullptr;
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseKernel(cl_kernel kernel) {
  return api().clReleaseKernel ? api().clReleaseKernel(kernel) : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clSetKernelArg(cl_kernel kernel, cl_uint arg_index, size_t arg_size,
                                               const void* arg_value) {
  return api().clSetKernelArg ? api().clSetKernelArg(kernel, arg_index, arg_size, arg_value) : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clFinish(cl_command_queue command_queue) {
  return api().clFinish ? api().clFinish(command_queue) : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueReadBuffer(cl_command_queue command_queue, cl_mem buffer,
                                                    cl_bool blocking_read, size_t offset, size_t size, void* ptr,
                                                    cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                                    cl_event* event) {
  return api().clEnqueueReadBuffer ? api().clEnqueueReadBuffer(command_queue, buffer, blocking_read, offset, size, ptr,
                                                               num_events_in_wait_list, event_wait_list, event)
                                   : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteBuffer(cl_command_queue command_queue, cl_mem buffer,
                                                     cl_bool blocking_write, size_t offset, size_t size,
                                                     const void* ptr, cl_uint num_events_in_wait_list,
                                                     const cl_event* event_wait_list, cl_event* event) {
  return api().clEnqueueWriteBuffer ? api().clEnqueueWriteBuffer(command_queue, buffer, blocking_write, offset, size,
                                                                 ptr, num_events_in_wait_list, event_wait_list, event)
                                    : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueNDRangeKernel(cl_command_queue command_queue, cl_kernel kernel,
                                                       cl_uint work_dim, const size_t* global_work_offset,
                                                       const size_t* global_work_size, const size_t* local_work_size,
                                                       cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                                       cl_event* event) {
  return api().clEnqueueNDRangeKernel
             ? api().clEnqueueNDRangeKernel(command_queue, kernel, work_dim, global_work_offset, global_work_size,
                                            local_work_size, num_events_in_wait_list, event_wait_list, event)
             : kUnavailable;
}

// Streams, events and device-side copies (runtime/device/opencl_device.cpp).

CL_API_ENTRY cl_int CL_API_CALL clEnqueueCopyBuffer(cl_command_queue queue, cl_mem src, cl_mem dst, size_t src_offset,
                                                    size_t dst_offset, size_t size, cl_uint num_events,
                                                    const cl_event* wait_list, cl_event* event) {
  return api().clEnqueueCopyBuffer
             ? api().clEnqueueCopyBuffer(queue, src, dst, src_offset, dst_offset, size, num_events, wait_list, event)
             : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueFillBuffer(cl_command_queue queue, cl_mem buffer, const void* pattern,
                                                    size_t pattern_size, size_t offset, size_t size,
                                                    cl_uint num_events, const cl_event* wait_list, cl_event* event) {
  return api().clEnqueueFillBuffer ? api().clEnqueueFillBuffer(queue, buffer, pattern, pattern_size, offset, size,
                                                               num_events, wait_list, event)
                                   : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueMarkerWithWaitList(cl_command_queue queue, cl_uint num_events,
                                                            const cl_event* wait_list, cl_event* event) {
  return api().clEnqueueMarkerWithWaitList ? api().clEnqueueMarkerWithWaitList(queue, num_events, wait_list, event)
                                           : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueBarrierWithWaitList(cl_command_queue queue, cl_uint num_events,
                                                             const cl_event* wait_list, cl_event* event) {
  return api().clEnqueueBarrierWithWaitList ? api().clEnqueueBarrierWithWaitList(queue, num_events, wait_list, event)
                                            : kUnavailable;
}

CL_API_ENTRY void* CL_API_CALL clEnqueueMapBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                                  cl_map_flags flags, size_t offset, size_t size, cl_uint num_events,
                                                  const cl_event* wait_list, cl_event* event, cl_int* errcode_ret) {
  if (api().clEnqueueMapBuffer)
    return api().clEnqueueMapBuffer(queue, buffer, blocking, flags, offset, size, num_events, wait_list, event,
                                    errcode_ret);
  if (errcode_ret) *errcode_ret = kUnavailable;
  return nullptr;
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueUnmapMemObject(cl_command_queue queue, cl_mem memobj, void* mapped,
                                                        cl_uint num_events, const cl_event* wait_list,
                                                        cl_event* event) {
  return api().clEnqueueUnmapMemObject
             ? api().clEnqueueUnmapMemObject(queue, memobj, mapped, num_events, wait_list, event)
             : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clWaitForEvents(cl_uint num_events, const cl_event* event_list) {
  return api().clWaitForEvents ? api().clWaitForEvents(num_events, event_list) : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clGetEventInfo(cl_event event, cl_event_info param_name, size_t param_value_size,
                                               void* param_value, size_t* param_value_size_ret) {
  return api().clGetEventInfo
             ? api().clGetEventInfo(event, param_name, param_value_size, param_value, param_value_size_ret)
             : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clGetEventProfilingInfo(cl_event event, cl_profiling_info param_name,
                                                        size_t param_value_size, void* param_value,
                                                        size_t* param_value_size_ret) {
  return api().clGetEventProfilingInfo
             ? api().clGetEventProfilingInfo(event, param_name, param_value_size, param_value, param_value_size_ret)
             : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseEvent(cl_event event) {
  return api().clReleaseEvent ? api().clReleaseEvent(event) : kUnavailable;
}

CL_API_ENTRY cl_int CL_API_CALL clFlush(cl_command_queue queue) {
  return api().clFlush ? api().clFlush(queue) : kUnavailable;
}

}  // extern "C"

// OpenCL programs, kernels, buffers and launches on a Context's in-order queue.
#include "runtime/opencl/opencl_runtime.h"

#include "codegen/log.h"

#include <chrono>
#include <cstring>

namespace smelt::opencl {

namespace {

std::string buildLog(cl_program program, cl_device_id device) {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) !=
          CL_SUCCESS ||
      size == 0)
    return {};
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) !=
      CL_SUCCESS)
    return {};
  log.resize(strnlen(log.data(), size));
  while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
  return log;
}

std::string describe(NDRange r) {
  if (r.dims == 0) return "auto";
  std::string s = std::to_string(r.sizes[0]);
  for (cl_uint i = 1; i < r.dims; ++i) s += "x" + std::to_string(r.sizes[i]);
  return s;
}

}  // namespace

// --- Programs and kernels
// -------------------------------------------------------------------------

Expected<Program> Context::buildProgram(std::string_view source, std::string_view options) const {
  const auto start = std::chrono::steady_clock::now();
  const char* text = source.data();
  const size_t length = source.size();
  cl_int rc = CL_SUCCESS;
  Program p;
  p.program_ = decltype(p.program_)(clCreateProgramWithSource(get(), 1, &text, &length, &rc));
  if (rc != CL_SUCCESS) return makeError("clCreateProgramWithSource failed: {}", errorName(rc));
  const std::string opts(options);
  rc = clBuildProgram(p.get(), 1, &device_.id, opts.c_str(), nullptr, nullptr);
  p.log_ = buildLog(p.get(), device_.id);
  if (rc != CL_SUCCESS)
    return makeError("OpenCL build failed on '{}' ({}{}{}):\n{}", device_.name, errorName(rc),
                     opts.empty() ? "" : ", options: ", opts,
                     p.log_.empty() ? "(no build log)" : p.log_);
  p.build_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  logger().debug("opencl: built a {}-byte program in {:.1f} ms on '{}'", source.size(), p.build_ms_,
                 device_.name);
  return p;
}

Expected<Kernel> Program::createKernel(const std::string& name) const {
  cl_int rc = CL_SUCCESS;
  Kernel k;
  k.kernel_ = decltype(k.kernel_)(clCreateKernel(get(), name.c_str(), &rc));
  if (rc == CL_SUCCESS) {
    k.name_ = name;
    return k;
  }
  std::string names;
  size_t size = 0;
  if (clGetProgramInfo(get(), CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &size) == CL_SUCCESS &&
      size > 0) {
    names.resize(size);
    if (clGetProgramInfo(get(), CL_PROGRAM_KERNEL_NAMES, size, names.data(), nullptr) == CL_SUCCESS)
      names.resize(strnlen(names.data(), size));
    else
      names.clear();
  }
  return makeError("clCreateKernel(\"{}\") failed: {} (the program has: {})", name, errorName(rc),
                   names.empty() ? "no kernels" : names);
}

Status Kernel::setArgLocked(unsigned index, const KernelArg& arg) {
  if (cl_int rc = clSetKernelArg(get(), index, arg.size(), arg.value()); rc != CL_SUCCESS)
    return makeError("kernel {}: setting argument {} ({} bytes) failed: {}", name_, index,
                     arg.size(), errorName(rc));
  return Status::success();
}

Status Kernel::setArg(unsigned index, const KernelArg& arg) {
  std::lock_guard lock(*mutex_);
  return setArgLocked(index, arg);
}

// --- Buffers
// --------------------------------------------------------------------------------------

Expected<Buffer> Context::createBuffer(std::size_t bytes, Access access,
                                       const void* initial, bool hostAccessible) const {
  cl_mem_flags flags = access == Access::kReadOnly    ? CL_MEM_READ_ONLY
                       : access == Access::kWriteOnly ? CL_MEM_WRITE_ONLY
                                                      : CL_MEM_READ_WRITE;
  if (initial) flags |= CL_MEM_COPY_HOST_PTR;
  if (hostAccessible) flags |= CL_MEM_ALLOC_HOST_PTR;
  cl_int rc = CL_SUCCESS;
  Buffer b;
  // A zero-byte buffer is invalid in OpenCL; allocate one byte so empty tensors still have a
  // handle.
  b.mem_ = decltype(b.mem_)(
      clCreateBuffer(get(), flags, bytes ? bytes : 1, const_cast<void*>(initial), &rc));
  if (rc != CL_SUCCESS)
    return makeError("clCreateBuffer({} bytes) on '{}' failed: {} (max allocation {} bytes)", bytes,
                     device_.name, errorName(rc), device_.max_allocation_bytes);
  b.bytes_ = bytes;
  return b;
}

Status Context::write(const Buffer& buffer, const void* src, std::size_t bytes,
                      std::size_t offset) const {
  if (offset + bytes > buffer.bytes())
    return makeError("OpenCL write of {} bytes at offset {} overruns a {}-byte buffer", bytes,
                     offset, buffer.bytes());
  if (bytes == 0) return Status::success();
  if (cl_int rc = clEnqueueWriteBuffer(queue(), buffer.get(), CL_TRUE, offset, bytes, src, 0,
                                       nullptr, nullptr);
      rc != CL_SUCCESS)
    return makeError("clEnqueueWriteBuffer failed: {}", errorName(rc));
  return Status::success();
}

Status Context::read(const Buffer& buffer, void* dst, std::size_t bytes, std::size_t offset) const {
  if (offset + bytes > buffer.bytes())
    return makeError("OpenCL read of {} bytes at offset {} overruns a {}-byte buffer", bytes,
                     offset, buffer.bytes());
  if (bytes == 0) return Status::success();
  if (cl_int rc = clEnqueueReadBuffer(queue(), buffer.get(), CL_TRUE, offset, bytes, dst, 0,
                                      nullptr, nullptr);
      rc != CL_SUCCESS)
    return makeError("clEnqueueReadBuffer failed: {}", errorName(rc));
  return Status::success();
}

// --- Launches
// -------------------------------------------------------------------------------------

Status Context::enqueueLocked(Kernel& kernel, NDRange global, NDRange local) const {
  if (global.dims == 0)
    return makeError("kernel {}: the global size has no dimensions", kernel.name());
  if (local.dims != 0) {
    // OpenCL 1.2 rejects a global size that is not a multiple of the local size; say which.
    if (local.dims != global.dims)
      return makeError("kernel {}: global {} and local {} differ in dimensions", kernel.name(),
                       describe(global), describe(local));
    for (cl_uint i = 0; i < global.dims; ++i)
      if (local.sizes[i] == 0 || global.sizes[i] % local.sizes[i] != 0)
        return makeError(
            "kernel {}: global size {} is not a multiple of local size {} (OpenCL 1.2)",
            kernel.name(), describe(global), describe(local));
  }
  cl_int rc = clEnqueueNDRangeKernel(queue(), kernel.get(), global.dims, nullptr, global.sizes,
                                     local.dims ? local.sizes : nullptr, 0, nullptr, nullptr);
  if (rc != CL_SUCCESS)
    return makeError("kernel {}: clEnqueueNDRangeKernel(global {}, local {}) failed: {}",
                     kernel.name(), describe(global), describe(local), errorName(rc));
  return Status::success();
}

Status Context::enqueue(Kernel& kernel, NDRange global, NDRange local) const {
  std::lock_guard lock(*kernel.mutex_);
  return enqueueLocked(kernel, global, local);
}

Status Context::launch(Kernel& kernel, std::initializer_list<KernelArg> args, NDRange global,
                       NDRange local) const {
  std::lock_guard lock(*kernel.mutex_);
  unsigned index = 0;
  for (const KernelArg& arg : args) SMELT_CHECK_OK(kernel.setArgLocked(index++, arg));
  return enqueueLocked(kernel, global, local);
}

Status Context::finish() const {
  if (cl_int rc = clFinish(queue()); rc != CL_SUCCESS)
    return makeError("clFinish failed: {}", errorName(rc));
  return Status::success();
}

}  // namespace smelt::opencl

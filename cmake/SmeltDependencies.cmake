# Finds smelt's dependencies. Required: fmt, spdlog (and doctest for tests). Optional, behind options
# so a GPU machine without them can still build the CUDA path: LLVM 16 and ONNX. Detected when present:
# the CUDA toolkit (headers only: NVRTC and the driver are dlopen'ed at run time), OpenCL and HIP.

find_package(fmt 9 REQUIRED CONFIG)
find_package(spdlog 1.10 REQUIRED CONFIG)
find_package(Threads REQUIRED)
# JSON output of `smelt inspect` (header only; Debian nlohmann-json3-dev).
find_package(nlohmann_json 3 REQUIRED CONFIG)

set(SMELT_HAVE_LLVM OFF)
if(SMELT_WITH_LLVM)
  # Pin 16: Debian also installs LLVM 14 and 15 with the same layout.
  find_package(LLVM 16 CONFIG HINTS /usr/lib/llvm-16/lib/cmake/llvm)
  if(LLVM_FOUND)
    set(SMELT_HAVE_LLVM ON)
  else()
    message(WARNING "SMELT_WITH_LLVM is ON but LLVM 16 was not found; the LLVM backend is disabled")
  endif()
endif()

set(SMELT_HAVE_ONNX OFF)
if(SMELT_WITH_ONNX)
  find_package(Protobuf)
  find_package(ONNX CONFIG)
  if(ONNX_FOUND AND Protobuf_FOUND)
    set(SMELT_HAVE_ONNX ON)
  else()
    message(WARNING "SMELT_WITH_ONNX is ON but ONNX/protobuf were not found; ONNX import is disabled")
  endif()
endif()

find_package(CUDAToolkit QUIET)
set(SMELT_HAVE_CUDA_TOOLKIT ${CUDAToolkit_FOUND})
find_package(OpenCL QUIET)
set(SMELT_HAVE_OPENCL ${OpenCL_FOUND})
find_path(SMELT_HIPRTC_INCLUDE_DIR hip/hiprtc.h)
if(SMELT_HIPRTC_INCLUDE_DIR)
  set(SMELT_HAVE_HIP ON)
else()
  set(SMELT_HAVE_HIP OFF)
endif()

if(SMELT_BUILD_TESTS)
  find_package(doctest 2.4 REQUIRED CONFIG)
endif()

# Shared warning flags for smelt's own targets. GCC 12 reports -Wmaybe-uninitialized false positives
# inside std::variant copies (the Attribute type) at -O2; the sanitizer build checks the real thing.
# Op declarations are designated initializers that leave facets they lack (gradient, decompose) to
# their defaults on purpose, so -Wmissing-field-initializers is off.
add_library(smelt_warnings INTERFACE)
target_compile_options(smelt_warnings INTERFACE -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare
                       -Wno-missing-field-initializers $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)

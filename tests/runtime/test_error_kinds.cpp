// Real device faults are classified from the drivers' own error codes (ErrorKind): out of memory, which
// freeing the pool may cure; a lost or poisoned device (a CUDA sticky error, an OpenCL device gone or a
// command failed while running, a HIP fault), which only a reset or another device cures; anything else,
// an ordinary error. The recovery tests inject these codes at the driver calls; here each code's kind is
// checked against the vendors' documented values, so a real fault takes the path an injected one does.
#include "runtime/cuda/cuda_driver.h"
#include "runtime/hip/hip_device.h"
#ifdef SMELT_HAVE_OPENCL
#include "runtime/opencl/opencl_device.h"
#endif

#include <doctest/doctest.h>

#include <tuple>
#include <utility>
#include <vector>

using namespace smelt;

namespace {

using Expectations = std::vector<std::pair<int, ErrorKind>>;

}  // namespace

TEST_CASE("error kinds: CUDA's out of memory and sticky errors, from their CUresult codes") {
#if SMELT_TEST_CUDA_TOOLKIT
  const Expectations cases = {
      {2, ErrorKind::kOutOfMemory},    // CUDA_ERROR_OUT_OF_MEMORY
      {700, ErrorKind::kDeviceLost},   // CUDA_ERROR_ILLEGAL_ADDRESS
      {702, ErrorKind::kDeviceLost},   // CUDA_ERROR_LAUNCH_TIMEOUT
      {709, ErrorKind::kDeviceLost},   // CUDA_ERROR_CONTEXT_IS_DESTROYED
      {710, ErrorKind::kDeviceLost},   // CUDA_ERROR_ASSERT
      {714, ErrorKind::kDeviceLost},   // CUDA_ERROR_HARDWARE_STACK_ERROR
      {715, ErrorKind::kDeviceLost},   // CUDA_ERROR_ILLEGAL_INSTRUCTION
      {716, ErrorKind::kDeviceLost},   // CUDA_ERROR_MISALIGNED_ADDRESS
      {717, ErrorKind::kDeviceLost},   // CUDA_ERROR_INVALID_ADDRESS_SPACE
      {718, ErrorKind::kDeviceLost},   // CUDA_ERROR_INVALID_PC
      {719, ErrorKind::kDeviceLost},   // CUDA_ERROR_LAUNCH_FAILED
      {214, ErrorKind::kDeviceLost},   // CUDA_ERROR_ECC_UNCORRECTABLE
      {46, ErrorKind::kDeviceLost},    // CUDA_ERROR_DEVICE_UNAVAILABLE
      {1, ErrorKind::kGeneric},        // CUDA_ERROR_INVALID_VALUE: the caller's mistake
      {200, ErrorKind::kGeneric},      // CUDA_ERROR_INVALID_IMAGE
      {701, ErrorKind::kGeneric},      // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: a launch too big, not a fault
      {600, ErrorKind::kGeneric},      // CUDA_ERROR_NOT_READY
  };
  for (const auto& c : cases) {  // not bound: clang 14 cannot capture structured bindings (CAPTURE)
    CAPTURE(c.first);
    CHECK(cuda::errorKindOf(c.first) == c.second);
  }
#else
  CHECK(cuda::errorKindOf(2) == ErrorKind::kGeneric);  // no driver support built: nothing is classified
#endif
}

TEST_CASE("error kinds: OpenCL's allocation failures and lost devices, from their cl_int codes") {
#ifdef SMELT_HAVE_OPENCL
  const std::vector<std::tuple<int, bool, ErrorKind>> cases = {
      {-4, false, ErrorKind::kOutOfMemory},  // CL_MEM_OBJECT_ALLOCATION_FAILURE
      {-6, false, ErrorKind::kOutOfMemory},  // CL_OUT_OF_HOST_MEMORY
      {-5, true, ErrorKind::kOutOfMemory},   // CL_OUT_OF_RESOURCES while allocating
      {-5, false, ErrorKind::kDeviceLost},   // CL_OUT_OF_RESOURCES while running: a kernel that faulted
      {-2, false, ErrorKind::kDeviceLost},   // CL_DEVICE_NOT_AVAILABLE
      {-1, false, ErrorKind::kDeviceLost},   // CL_DEVICE_NOT_FOUND
      {-14, false, ErrorKind::kDeviceLost},  // CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST
      {-30, false, ErrorKind::kGeneric},     // CL_INVALID_VALUE
      {-11, false, ErrorKind::kGeneric},     // CL_BUILD_PROGRAM_FAILURE
      {-54, false, ErrorKind::kGeneric},     // CL_INVALID_WORK_GROUP_SIZE
  };
  for (const auto& c : cases) {
    CAPTURE(std::get<0>(c));
    CAPTURE(std::get<1>(c));
    CHECK(openClErrorKind(std::get<0>(c), std::get<1>(c)) == std::get<2>(c));
  }
#else
  MESSAGE("built without OpenCL");
#endif
}

TEST_CASE("error kinds: HIP's out of memory and context-poisoning errors, from their hipError_t codes") {
  const Expectations cases = {
      {2, ErrorKind::kOutOfMemory},   // hipErrorOutOfMemory
      {700, ErrorKind::kDeviceLost},  // hipErrorIllegalAddress
      {702, ErrorKind::kDeviceLost},  // hipErrorLaunchTimeOut
      {709, ErrorKind::kDeviceLost},  // hipErrorContextIsDestroyed
      {710, ErrorKind::kDeviceLost},  // hipErrorAssert
      {719, ErrorKind::kDeviceLost},  // hipErrorLaunchFailure
      {214, ErrorKind::kDeviceLost},  // hipErrorECCNotCorrectable
      {100, ErrorKind::kDeviceLost},  // hipErrorNoDevice: the GPU went away
      {1, ErrorKind::kGeneric},       // hipErrorInvalidValue
      {701, ErrorKind::kGeneric},     // hipErrorLaunchOutOfResources
      {600, ErrorKind::kGeneric},     // hipErrorNotReady
  };
  for (const auto& c : cases) {
    CAPTURE(c.first);
    CHECK(hipErrorKind(c.first) == c.second);
  }
}

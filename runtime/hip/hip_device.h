// An AMD GPU as a Device, through the HIP runtime (libamdhip64) opened at run time in a private
// link-map namespace (dlmopen): its LLVM-based code-object loader then cannot clash with PoCL's or
// smelt's LLVM (../shared/TOOLCHAIN.md, "All backends in one process"). Kernels load from AMD code
// objects that HIPRTC compiled in its helper process (codegen/hip/hiprtc_compiler.h).
#pragma once

#include "runtime/device/device.h"

namespace smelt {

/// Number of HIP devices; an error saying why there are none usable (no runtime, no GPU).
Expected<int> hipDeviceCount();
/// What a hipError_t means for recovery: kOutOfMemory, kDeviceLost for the errors that poison the device's
/// context (a faulting kernel, a lost device: only hipDeviceReset helps), else kGeneric.
ErrorKind hipErrorKind(int code);
/// HIP device `ordinal`, one per process.
Expected<std::shared_ptr<Device>> hipDevice(int ordinal = 0);

}  // namespace smelt

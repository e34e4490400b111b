// HIP dialect of the C-family renderer (codegen/c_renderer.h), for HIPRTC: HIP kernels are CUDA C
// (extern "C" __global__, blockIdx/threadIdx, expf, __float_as_uint all come with HIPRTC's preamble),
// so this is the CUDA renderer under another name. No hip_fp16.h: it does not compile under HIPRTC
// 5.2, and f16/bf16 use the renderer's own conversions anyway.
//   HipRenderer r;
//   SMELT_TRY(std::string source, r.renderSource(kernels, symbols));
//   SMELT_TRY(auto co, hip::compileHip(source, {.arch = "gfx90a"}));
#pragma once

#include "codegen/cuda/cuda_renderer.h"

namespace smelt::codegen {

/// See the file comment.
class HipRenderer final : public CudaRenderer {
 public:
  std::string_view backend() const override { return "hip"; }
  // A wavefront is 64 lanes on CDNA (gfx90a) and 32 on RDNA by default: the device's own warpSize.
  std::string warpLanes() const override { return "warpSize"; }
  std::string shuffleDown(const std::string& x, const std::string& delta, const std::string& width) const override {
    return "__shfl_down(" + x + ", " + delta + ", " + width + ")";
  }
};

}  // namespace smelt::codegen

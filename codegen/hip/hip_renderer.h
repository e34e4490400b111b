// HIP dialect of the C-family renderer (codegen/c_renderer.h), for HIPRTC: HIP kernels are CUDA C
// (extern "C" __global__, blockIdx/threadIdx, expf, __float_as_uint all come with HIPRTC's preamble),
// so this is the CUDA renderer under another name, but for its warps and its f16 conversions: clang's
// _Float16 (the hardware's v_cvt instructions; no hip_fp16.h, which does not compile under HIPRTC 5.2),
// bf16 through the prelude's software rounding.
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
  std::string preludeHeader() const override {
    return R"(#define SMELT_HW_F16 1
static __device__ inline float smelt_h2f(unsigned int h) {
  return (float)__builtin_bit_cast(_Float16, (unsigned short)h);
}
static __device__ inline unsigned int smelt_f2h(float f) { return __builtin_bit_cast(unsigned short, (_Float16)f); }
)";
  }
};

}  // namespace smelt::codegen

// CUDA C dialect of the C-family renderer (codegen/c_renderer.h), for NVRTC: extern "C" __global__
// kernels, one thread per outer point (blockIdx.x * blockDim.x + threadIdx.x, bounds-checked), CUDA's
// float math functions (expf, ...). f16 and bf16 convert with the cvt instructions (inline PTX; bf16
// rounding from sm_80, the prelude's software one before), so no cuda_fp16.h is needed and the source
// compiles without the CUDA headers.
//   CudaRenderer r;
//   SMELT_TRY(std::string source, r.renderSource(kernels, symbols));
//   SMELT_TRY(auto ptx, cuda::compileCuda(source, {.arch = "compute_90"}));
#pragma once

#include "codegen/c_renderer.h"

namespace smelt::codegen {

/// See the file comment. HipRenderer (codegen/hip) differs only in its name.
class CudaRenderer : public CRenderer {
 public:
  std::string_view backend() const override { return "cuda"; }
  std::string kernelPrefix() const override { return "extern \"C\" __global__ void"; }
  std::string helperPrefix() const override { return "static __device__ inline"; }
  std::string threadIndex() const override { return "(long long)blockIdx.x * blockDim.x + threadIdx.x"; }
  std::string blockIndex() const override { return "(long long)blockIdx.x"; }
  std::string threadInBlock() const override { return "(long long)threadIdx.x"; }
  std::string blockBarrier() const override { return "__syncthreads();"; }
  std::string sharedQualifier() const override { return "__shared__ "; }
  std::string restrictQualifier() const override { return "__restrict__ "; }
  std::string warpLanes() const override { return "32"; }
  std::string unrollPragma() const override { return "#pragma unroll"; }
  std::string shuffleDown(const std::string& x, const std::string& delta, const std::string& width) const override {
    return "__shfl_down_sync(0xffffffffu, " + x + ", " + delta + ", " + width + ")";
  }
  std::string typeName(DType type) const override;
  std::string int64Suffix() const override { return "LL"; }
  std::string floatToBits(const std::string& x, bool isDouble) const override;
  std::string bitsToFloat(const std::string& x, bool isDouble) const override;
  std::string mathFunction(std::string_view base, bool isDouble) const override;
  std::string preludeHeader() const override;
};

}  // namespace smelt::codegen

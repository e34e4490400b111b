// cuDNN 9's convolutions for the CUDA executable, loaded with dlopen (libcudnn.so.9 from the loader's
// path, the CUDA toolkit or the pip wheels: nvidia_libraries.h), never linked: a conv2d, its data
// gradient (smelt's conv_transpose2d) and its weight gradient, NCHW, grouped and dilated, in f32 (TF32
// only when asked), f64, f16 and bf16 (f32 accumulation). The algorithm is the fastest deterministic
// one as cuDNN times them, chosen once per shape. By default only f16 and bf16 convolutions run here
// (cudnnPreferred); f32 and f64 ones, those without cuDNN, and windows cuDNN cannot express (padding
// that is not the same on both sides of an axis) run as layout kernels around cuBLAS
// (runtime/exec/device_convolution.cpp).
//   CudnnConvolution conv{...};
//   SMELT_TRY(size_t workspace, cudnnWorkspace(context, conv));
//   SMELT_CHECK_OK(cudnnConvolve(context, stream, conv, {x, w}, y, scratch, workspace));
#pragma once

#include "ir/dtype.h"
#include "ir/support/expected.h"
#include "runtime/cuda/cuda_driver.h"

#include <cstdint>
#include <string>

namespace smelt::cuda {

/// Whether cuDNN loads (and SMELT_CUDNN is not 0).
bool cudnnAvailable();
/// Whether convolutions of `dtype` should run on cuDNN rather than as im2col + cuBLAS: f16 and bf16,
/// or every dtype with SMELT_CUDNN=1. In f32 cuDNN lost to im2col + cuBLAS on ResNet-18's step on an
/// H200 in every run (5.6-6.5 ms against 4.7-5.0, batch 16 of 64x64 images; layer 4's 3x3
/// convolutions 0.168 ms against under 0.03: docs/gpu_check.md).
bool cudnnPreferred(DType dtype);
/// "cuDNN 9.13.0 (/usr/local/cuda/lib64/libcudnn.so.9)", or why it is not available.
std::string cudnnDescription();

/// One convolution, described as the forward conv2d it belongs to: input x [n, c, h, w], filter
/// [o, c/groups, kh, kw], output y [n, o, oh, ow], the same padding on both sides of each axis.
struct CudnnConvolution {
  /// Forward: y from x and the filter. BackwardData: x from y and the filter (smelt's
  /// conv_transpose2d of y). BackwardFilter: the filter from x and y (conv2d_weight_grad).
  enum Kind { Forward, BackwardData, BackwardFilter } kind = Forward;
  DType dtype = DType::f32;
  bool tf32 = false;
  int64_t n = 0, c = 0, h = 0, w = 0, o = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int64_t padH = 0, padW = 0, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1, groups = 1;
};

/// Whether cuDNN's symmetric padding gives `conv`'s output size (a window padded more on one side of
/// an axis than cuDNN's pad would cover differs; no GPU or library needed).
bool cudnnExpresses(const CudnnConvolution& conv);

/// The workspace bytes `conv` needs (choosing its algorithm, cached per shape); an error when cuDNN
/// is missing or cannot run it.
Expected<size_t> cudnnWorkspace(Context& context, const CudnnConvolution& conv);

/// Runs `conv` on `stream` (a CUstream) in `context`. The two operands, in the op's order: Forward
/// (x, filter), BackwardData (y, filter), BackwardFilter (x, y); `result` is what the kind computes
/// (overwritten). Addresses are CUdeviceptrs; `workspace` holds at least cudnnWorkspace's bytes.
Status cudnnConvolve(Context& context, void* stream, const CudnnConvolution& conv, std::uint64_t first,
                     std::uint64_t second, std::uint64_t result, std::uint64_t workspace, size_t workspaceBytes);

}  // namespace smelt::cuda

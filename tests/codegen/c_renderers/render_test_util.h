// Shared by the C-family renderer tests: the kernels of every op's IR example (per dtype, after the
// default pipeline) and hand-built kernels over edge values (integer wrap, division by 0 and -1,
// shifts past the width, float specials, every cast) with their inputs.
#pragma once

#include "codegen/kernel.h"
#include "ir/graph.h"
#include "ir/tensor.h"

#include <string>
#include <vector>

namespace smelt::testing {

/// The kernels one example graph compiles to (default pipeline, nodes that lower).
struct ExampleKernels {
  std::string op;
  DType dtype = DType::f32;
  std::vector<codegen::Kernel> kernels;
};
/// Every op's example in every dtype it accepts (constant excluded); `dtypes` empty: all. Lowered and shaped as
/// a GPU backend's executable shapes them (kGpuLoweringKernelPipeline, then kGpuKernelPipeline: rows mapped to
/// blocks, float4 loads), so these are the kernels NVRTC and HIPRTC are given.
std::vector<ExampleKernels> exampleKernels(const std::vector<DType>& dtypes = {});

/// Kernels a GPU backend maps to blocks of threads (codegen/map_to_blocks.h), mapped: every reducing
/// op in every dtype over rows of 700, softmax, log_softmax and layer_norm with their gradients,
/// batch_norm_train's statistics (nests of partial loops), and a full reduction feeding element loops.
/// Each holds only its mapped kernels (at least one).
std::vector<ExampleKernels> blockKernels();

/// The layout kernels around a convolution's GEMM on a device (codegen/conv_kernels.h: im2col, col2im,
/// the swap of leading axes) of a strided, padded window, in f32, f64, f16 and bf16, after the GPU
/// kernel pipeline.
std::vector<ExampleKernels> convolutionLayoutKernels();

/// A hand-built kernel, its buffers (inputs filled, outputs zero) and how to compare each output.
struct EdgeKernel {
  codegen::Kernel kernel;
  std::vector<Tensor> buffers;
  /// Per buffer: 0 = exact, else the relative (and absolute) tolerance; inputs are ignored.
  std::vector<double> tolerance;
  /// Per buffer: what the output computes ("div", "cast to u8"), for messages.
  std::vector<std::string> what;
};
/// For every dtype: all binary ops on all pairs of edge values, all unary ops and every cast of the
/// edge values; plus a loop swapping two carried values and a loop that never runs.
std::vector<EdgeKernel> edgeKernels();

/// Empty when `actual` matches the kernel interpreter's result on `edge` (run here), else which
/// output, element and inputs differ. `actual` holds the backend's buffers after the run.
std::string compareWithInterpreter(const EdgeKernel& edge, const std::vector<Tensor>& actual);

}  // namespace smelt::testing

// f32/f64 matmul, gemm and convolutions through a vendor library (the CPU's BLAS, CLBlast, cuBLAS;
// runtime/cpu/gemm_run.h runs the CPU's, runtime/exec/device_convolution.cpp a device's convolutions): which nodes qualify
// (a lone product, or an epilogue kernel whose anchor reads two of the kernel's operands as they are),
// how the product maps onto row-major GEMM calls (batched, or one call when a shared right-hand side
// lets the batch fold into M; a convolution as W times its input's im2col columns, per image and
// group), and where the product lands. The rest of the kernel (bias, activation, residual, gemm's
// beta * c) runs after it as a generated epilogue (lowerEpilogue).
//   if (auto plan = planGemm(node)) { runGemm(*plan, operandPointers, product); epilogue(...); }
#pragma once

#include "ir/graph.h"

#include <optional>

namespace smelt {

/// A conv2d's sizes (NCHW input, OIHW weights, padding top/left as the op's first two).
struct ConvGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t o = 0, oh = 0, ow = 0;
  int64_t kh = 0, kw = 0;
  int64_t strideH = 1, strideW = 1, padTop = 0, padLeft = 0, dilationH = 1, dilationW = 1;
  int64_t groups = 1;
  /// conv2d, or the transpose (c, h, w describe its input and o, oh, ow its output, with the weight
  /// [c, o/groups, kh, kw]; the window's stride, padding and dilation apply to the output), or conv2d's
  /// weight gradient (from the conv2d's input [n, c, h, w] and output gradient [n, o, oh, ow]).
  enum Kind { Forward, Transposed, WeightGrad } kind = Forward;
  /// 1x1, stride 1, no padding: the input image is its own column matrix.
  bool direct() const;
};

/// A bias and activation a vendor GEMM applies as it writes its product (cuBLASLt's BIAS, RELU_BIAS and GELU_BIAS
/// epilogues), in place of a generated epilogue kernel after it.
struct VendorEpilogue {
  enum class Activation { kNone, kRelu, kGeluTanh };
  Activation activation = Activation::kNone;
  /// The node's operand holding the bias: [n] or [1, n] of the product's dtype, one value per column.
  size_t bias = 0;
};

struct GemmPlan {
  const Node* anchor = nullptr;  // the matmul, gemm or conv2d: the node itself or a member of its body
  DType dtype = DType::f32;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;  // elements between batch items (0: shared)
  size_t operandA = 0, operandB = 0;              // the node's operands holding a and b
  /// The node's result the product is written into (its own value, or one of its type the epilogue
  /// then overwrites element by element); -1 when none fits and the product needs its own buffer.
  int result = -1;
  /// False when the product is the node's only result: nothing runs after the GEMM.
  bool epilogue = true;
  /// Set for conv2d, whose column matrix (`columnElements` of the dtype) needs a buffer of its own,
  /// and for conv_transpose2d: one product W^T X of every image at once ([o*kh*kw, n*h*w]; X the
  /// input with images and channels swapped), scattered into the output (col2im); `columnElements`
  /// holds X and that product; and for conv2d_weight_grad: dy [o, n*oh*ow] times the im2col matrix
  /// transposed (built as [n*oh*ow, c*kh*kw] on the CPU, used transposed on devices), straight into
  /// [o, c/groups*kh*kw].
  std::optional<ConvGeometry> conv;
  int64_t columnElements = 0;
  /// b is transposed into the columns buffer (k x n) first and multiplied untransposed: oneDNN's
  /// sgemm with a transposed B ran 30-60% slower than without (see preferUntransposedB).
  bool transposeB = false;
  /// f32 products may round their inputs to TF32 (CompileOptions::tf32; cuBLAS and cuDNN only).
  bool tf32 = false;
  /// The bias and activation the vendor's GEMM applies itself (vendorEpilogueOf; a backend sets it, and clears
  /// `epilogue`, where its library takes it).
  std::optional<VendorEpilogue> vendorEpilogue;
  /// A convolution the backend runs itself (cuDNN), with `columnElements` as its workspace, instead
  /// of layout kernels around a GEMM (runtime/exec/device_convolution.cpp).
  bool nativeConvolution = false;
};

/// The whole epilogue of `node` as a VendorEpilogue, or nothing (the generated epilogue kernel then runs): `plan`
/// (planGemm's for `node`, a fused epilogue kernel) is one product, not batched and not a convolution, written
/// straight into the node's only result, and all the kernel does after it is add a bias along the product's
/// columns (an operand [n] or [1, n], or gemm's c with beta 1), then relu, gelu {approximate = "tanh"} or nothing.
std::optional<VendorEpilogue> vendorEpilogueOf(const Node& node, const GemmPlan& plan);

/// The GEMM plan for `node`, or nothing when the node does not qualify (a dtype the library lacks,
/// vectors, partly broadcast batches, empty dims, an anchor reading a view). `available` says which
/// dtypes the library covers (blas::available, opencl::clblastAvailable).
std::optional<GemmPlan> planGemm(const Node& node, bool (*available)(DType));

}  // namespace smelt

// Convolutions on a device's BLAS (CLBlast, cuBLAS): each kind as generated layout kernels around one
// batched GEMM per group, on buffers in the step's scratch region (GemmPlan::columnElements of them):
//   conv2d              im2col x -> columns [c*kh*kw, n*oh*ow]; W_g x columns_g -> [o, n*oh*ow];
//                       swapped to NCHW (one image: straight into the product, and a 1x1 window
//                       reads the image itself as its columns)
//   conv_transpose2d    x swapped to [c, n*h*w] (one image: x itself); W_g^T x_g -> [o*kh*kw, n*h*w];
//                       col2im -> the product
//   conv2d_weight_grad  im2col x -> columns; dy swapped to [o, n*oh*ow] (one image: dy itself);
//                       dy_g x columns_g^T -> the product [o, c/groups*kh*kw]
// The node's epilogue (bias, activation, residual) runs after it as for any product.
#include "codegen/conv_kernels.h"
#include "runtime/exec/compiled_graph_impl.h"

namespace smelt {

namespace {

codegen::Im2colShape windowOf(const ConvGeometry& g) {
  return codegen::Im2colShape{g.n,  g.c,       g.h,       g.w,      g.oh,      g.ow,        g.kh,
                              g.kw, g.strideH, g.strideW, g.padTop, g.padLeft, g.dilationH, g.dilationW};
}

}  // namespace

Status CompiledGraph::Impl::planDeviceConvolution(Step& step, const std::string& symbolPrefix) {
  const GemmPlan& plan = *step.product;
  const ConvGeometry& g = *plan.conv;
  DeviceConvolution conv;
  auto add = [&](Expected<codegen::Kernel> kernel, ConvPlace in, ConvPlace out,
                 std::vector<DeviceConvolution::Helper>& into) -> Status {
    if (!kernel) return kernel.error();
    DeviceConvolution::Helper h{.in = in, .out = out};
    SMELT_TRY(h.kernel, addKernel(std::move(*kernel), symbolPrefix, h.shape, h.symbol));
    into.push_back(std::move(h));
    return Status::success();
  };
  GemmPlan& gemm = conv.gemm;
  gemm.anchor = plan.anchor;
  gemm.dtype = plan.dtype;
  gemm.m = plan.m;
  gemm.n = plan.n;
  gemm.k = plan.k;
  gemm.batch = g.groups;
  gemm.operandA = 0;
  gemm.operandB = 1;
  gemm.tf32 = plan.tf32;
  const int64_t taps = g.kh * g.kw;
  switch (g.kind) {
    case ConvGeometry::Forward: {
      // The image is its own column matrix only when there is one, under a 1x1 window.
      const bool im2col = g.n > 1 || !g.direct();
      if (im2col)
        SMELT_CHECK_OK(
            add(codegen::im2colKernel(windowOf(g), plan.dtype), ConvPlace::kFirst, ConvPlace::kColumns, conv.before));
      conv.a = ConvPlace::kSecond;
      conv.b = im2col ? ConvPlace::kColumns : ConvPlace::kFirst;
      if (g.n > 1) {
        conv.c = ConvPlace::kSecondScratch;
        conv.secondScratch = g.c * taps * gemm.n;
        SMELT_CHECK_OK(add(codegen::swapLeadingAxesKernel(g.o, g.n, g.oh * g.ow, plan.dtype), ConvPlace::kSecondScratch,
                           ConvPlace::kProduct, conv.after));
      }
      break;
    }
    case ConvGeometry::Transposed: {
      if (g.n > 1) {
        SMELT_CHECK_OK(add(codegen::swapLeadingAxesKernel(g.n, g.c, g.h * g.w, plan.dtype), ConvPlace::kFirst,
                           ConvPlace::kColumns, conv.before));
        conv.secondScratch = g.c * gemm.n;
      }
      gemm.transA = true;  // the group's weight rows [c/groups, o/groups*kh*kw]
      conv.a = ConvPlace::kSecond;
      conv.b = g.n > 1 ? ConvPlace::kColumns : ConvPlace::kFirst;
      conv.c = ConvPlace::kSecondScratch;
      // The product's rows (o, i, j) and columns (n, y, x) over the input are im2col's columns of the
      // output (its image) under the same window.
      codegen::Im2colShape window = windowOf(g);
      window.c = g.o;
      std::swap(window.h, window.oh);
      std::swap(window.w, window.ow);
      SMELT_CHECK_OK(
          add(codegen::col2imKernel(window, plan.dtype), ConvPlace::kSecondScratch, ConvPlace::kProduct, conv.after));
      break;
    }
    case ConvGeometry::WeightGrad: {
      const bool im2col = g.n > 1 || !g.direct();
      if (im2col)
        SMELT_CHECK_OK(
            add(codegen::im2colKernel(windowOf(g), plan.dtype), ConvPlace::kFirst, ConvPlace::kColumns, conv.before));
      if (g.n > 1) {
        conv.secondScratch = g.c * taps * gemm.k;
        SMELT_CHECK_OK(add(codegen::swapLeadingAxesKernel(g.n, g.o, g.oh * g.ow, plan.dtype), ConvPlace::kSecond,
                           ConvPlace::kSecondScratch, conv.before));
      }
      gemm.transB = true;  // the group's rows of the columns [c/groups*kh*kw, n*oh*ow]
      conv.a = g.n > 1 ? ConvPlace::kSecondScratch : ConvPlace::kSecond;
      conv.b = im2col ? ConvPlace::kColumns : ConvPlace::kFirst;
      conv.c = ConvPlace::kProduct;
      break;
    }
  }
  gemm.strideA = gemm.m * gemm.k;
  gemm.strideB = gemm.k * gemm.n;
  gemm.strideC = gemm.m * gemm.n;
  step.conv = std::move(conv);
  return Status::success();
}

Status CompiledGraph::Impl::runDeviceConvolution(Step& step, const ProductBuffers& buffers) {
  DeviceConvolution& conv = *step.conv;
  const GemmPlan& plan = *step.product;
  const auto element = static_cast<int64_t>(dtypeSize(plan.dtype));
  auto at = [&](ConvPlace place) {
    KernelBufferArg arg;
    switch (place) {
      case ConvPlace::kFirst: arg = buffers.operands[plan.operandA]; break;
      case ConvPlace::kSecond: arg = buffers.operands[plan.operandB]; break;
      case ConvPlace::kColumns: arg = buffers.scratch; break;
      case ConvPlace::kSecondScratch:
        arg = buffers.scratch;
        arg.byteOffset += conv.secondScratch * element;
        break;
      case ConvPlace::kProduct: arg = buffers.product; break;  // its own scratch slot has no element size
    }
    arg.elementBytes = element;
    return arg;
  };
  auto launch = [&](DeviceConvolution::Helper& h) {
    h.launch->setBuffer(0, at(h.in));
    h.launch->setBuffer(1, at(h.out));
    return h.launch->launch(*stream);
  };
  for (DeviceConvolution::Helper& h : conv.before) SMELT_CHECK_OK(launch(h));
  const KernelBufferArg operands[2] = {at(conv.a), at(conv.b)};
  SMELT_CHECK_OK(backend->runProduct(conv.gemm, ProductBuffers{operands, at(conv.c), {}}, *stream));
  for (DeviceConvolution::Helper& h : conv.after) SMELT_CHECK_OK(launch(h));
  return Status::success();
}

}  // namespace smelt

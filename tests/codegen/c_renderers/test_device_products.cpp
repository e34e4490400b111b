// Products on every device but the CPU, on the device's vendor library where it loads (cuBLAS on
// CUDA, CLBlast on OpenCL) and generated kernels elsewhere: matmul, batched and broadcast matmul,
// gemm with transposes and alpha, and a product with a bias-and-relu epilogue, in f32 and f64 (and f16
// and bf16 where the library takes them), each against the reference interpreter on random inputs.
#include "runtime/cuda/cublas.h"
#include "tests/codegen/c_renderers/device_check.h"
#include "tests/support/gpu_required.h"
#include "tests/support/random_tensors.h"

#ifdef SMELT_HAVE_OPENCL
#include "runtime/opencl/clblast.h"
#endif

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace smelt;

namespace {

/// Whether `device` has a vendor library for products of `dtype`.
bool vendorCovers(const DeviceDescription& device, DType dtype) {
  if (device.kind == DeviceKind::kCuda) return cuda::cublasAvailable(dtype);
#ifdef SMELT_HAVE_OPENCL
  if (device.kind == DeviceKind::kOpenCl)
    return opencl::clblastAvailable(dtype) && (dtype != DType::f64 || device.fp64);
#endif
  return false;
}

Graph products(const std::string& t) {
  return testing::parseOrFail(fmt::format(R"(graph @products(%a: {0}[48,64], %b: {0}[64,40], %bias: {0}[40],
    %x: {0}[3,24,32], %y: {0}[3,32,16], %w: {0}[32,20], %c: {0}[40,64]) {{
  %0 = matmul(%a, %b) : {0}[48,40]
  %1 = add(%0, %bias) : {0}[48,40]
  %z = constant() {{value = dense<{0}[]> [0]}} : {0}[]
  %2 = max(%1, %z) : {0}[48,40]
  %3 = matmul(%x, %y) : {0}[3,24,16]
  %4 = matmul(%x, %w) : {0}[3,24,20]
  %5 = gemm(%a, %c) {{alpha = 0.5, trans_b = 1}} : {0}[48,40]
  return relu = %2, batched = %3, shared = %4, gemm = %5
}})",
                                          t));
}

/// Convolutions as im2col + GEMM on the device's BLAS: several images with a bias and relu, strided,
/// padded, dilated and grouped, one image, a 1x1 convolution of one image (no im2col), and a residual
/// add, and a cast of a product (no result has the product's type: it lands in a slot of its own). The
/// inputs are scaled to a quarter, so that two stacked f32 convolutions of 36 and 54 taps stay within
/// the f32 tolerance of the reference's double sums.
Graph convolutions(const std::string& t) {
  return testing::parseOrFail(fmt::format(R"(graph @convolutions(%x: {0}[3,4,9,10], %w: {0}[6,4,3,3], %b: {0}[6],
    %wg: {0}[6,2,3,2], %one: {0}[1,4,9,10], %w1: {0}[5,4,1,1], %wr: {0}[6,6,3,3]) {{
  %0 = conv2d(%x, %w, %b) {{padding = [1, 1, 1, 1]}} : {0}[3,6,9,10]
  %z = constant() {{value = dense<{0}[]> [0]}} : {0}[]
  %1 = max(%0, %z) : {0}[3,6,9,10]
  %2 = conv2d(%x, %wg) {{stride = [2, 1], padding = [2, 1, 0, 1], dilation = [2, 3], groups = 2}} : {0}[3,6,4,9]
  %3 = conv2d(%one, %w) {{stride = [2, 2]}} : {0}[1,6,4,4]
  %4 = conv2d(%one, %w1) : {0}[1,5,9,10]
  %a = conv2d(%x, %w) {{padding = [1, 1, 1, 1]}} : {0}[3,6,9,10]
  %ra = max(%a, %z) : {0}[3,6,9,10]
  %5 = conv2d(%ra, %wr) {{padding = [1, 1, 1, 1]}} : {0}[3,6,9,10]
  %6 = add(%5, %ra) : {0}[3,6,9,10]
  %tx = tanh(%x) : {0}[3,4,9,10]
  %7 = conv2d(%tx, %w) {{padding = [1, 1, 1, 1]}} : {0}[3,6,9,10]
  %8 = cast(%7) {{to = "f16"}} : f16[3,6,9,10]
  return relu = %1, grouped = %2, one_image = %3, pointwise = %4, residual = %6, cast = %8
}})",
                                          t));
}

/// A convolution's gradients as layout kernels around a GEMM: transposed convolutions (several
/// images with a bias, stride, uneven padding, output padding and groups; one dilated image) and
/// weight gradients (several images, strided, padded and grouped; one image under a 1x1 window, which
/// reads the image as its columns; one dilated image).
Graph convolutionGradients(const std::string& t) {
  return testing::parseOrFail(fmt::format(R"(graph @gradients(%x: {0}[3,4,5,6], %w: {0}[4,3,3,3], %b: {0}[6],
    %x1: {0}[1,4,5,6], %w1: {0}[4,2,2,3], %i: {0}[3,4,9,10], %dy: {0}[3,6,5,10], %i1: {0}[1,4,9,10],
    %dp: {0}[1,5,9,10], %dd: {0}[1,6,9,10]) {{
  %0 = conv_transpose2d(%x, %w, %b) {{groups = 2, output_padding = [1, 0], padding = [1, 0, 1, 1], stride = [2, 2]}} : {0}[3,6,10,12]
  %1 = conv_transpose2d(%x1, %w1) {{dilation = [2, 1]}} : {0}[1,2,7,8]
  %2 = conv2d_weight_grad(%i, %dy) {{groups = 2, kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 1]}} : {0}[6,2,3,3]
  %3 = conv2d_weight_grad(%i1, %dp) {{kernel = [1, 1]}} : {0}[5,4,1,1]
  %4 = conv2d_weight_grad(%i1, %dd) {{dilation = [2, 2], kernel = [3, 3], padding = [2, 2, 2, 2]}} : {0}[6,4,3,3]
  return transposed = %0, dilated = %1, weights = %2, pointwise = %3, dilated_weights = %4
}})",
                                          t));
}

/// Random feeds for `graph` scaled to a quarter (see convolutions()).
TensorMap quarterFeeds(const Graph& graph) {
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  for (auto& [name, tensor] : feeds) {
    for (int64_t i = 0; i < tensor.numel(); ++i) tensor.setDouble(i, tensor.getDouble(i) * 0.25);
  }
  return feeds;
}

}  // namespace

TEST_CASE("device products: matmul, batches, gemm and epilogues on the vendor library, against the reference") {
  for (const DeviceDescription& device : testing::nonCpuDevices()) {
    if (device.kind == DeviceKind::kCuda && !cuda::cublasAvailable(DType::f32)) {
      SMELT_SKIP_WITHOUT_GPU("cuBLAS: " + cuda::cublasDescription());
    }
    std::vector<std::string> dtypes = {"f32", "f64"};
    if (device.kind == DeviceKind::kCuda) dtypes = {"f32", "f64", "f16", "bf16"};
    for (const std::string& t : dtypes) {
      const DType dtype = *parseDType(t);
      if (dtype == DType::f64 && !device.fp64) continue;
      std::vector<Graph> graphs;
      graphs.push_back(products(t));
      testing::checkOnDevice(
          device, graphs, {fmt::format("products in {}", t)}, [&](const std::string& what, const Executable& exe) {
            // Four products; the relu's epilogue runs as a kernel after its product.
            if (vendorCovers(device, dtype)) {
              CHECK_MESSAGE(exe.report().blas >= 4, what, ": ", exe.report().blas, " products on the vendor library");
            }
          });
    }
  }
}

TEST_CASE("device products: convolutions and their gradients on the vendor library, against the reference") {
  for (const DeviceDescription& device : testing::nonCpuDevices()) {
    // On CUDA f16 runs on cuDNN (cuda::cudnnPreferred), f32 and f64 as im2col + cuBLAS.
    std::vector<std::string> dtypes = {"f32", "f64"};
    if (device.kind == DeviceKind::kCuda) dtypes.push_back("f16");
    for (const std::string& t : dtypes) {
      const DType dtype = *parseDType(t);
      if (dtype == DType::f64 && !device.fp64) continue;
      struct Case {
        Graph graph;
        int64_t products;
      };
      Case cases[] = {{convolutions(t), 4}, {convolutionGradients(t), 5}};
      for (Case& c : cases) {
        std::vector<Graph> graphs;
        std::string name = fmt::format("{} in {}", c.graph.name(), t);
        TensorMap feeds = quarterFeeds(c.graph);
        graphs.push_back(std::move(c.graph));
        testing::checkOnDevice(device, graphs, {name},
                               [&](const std::string& what, const Executable& exe) {
                                 if (vendorCovers(device, dtype)) {
                                   CHECK_MESSAGE(exe.report().blas >= c.products, what, ": ", exe.report().blas,
                                                 " convolutions on the vendor library");
                                 }
                               },
                               {feeds});
      }
    }
  }
}

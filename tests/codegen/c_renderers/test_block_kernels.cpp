// Block-mapped kernels (codegen/map_to_blocks.h) on every device but the CPU
// (PoCL here, whose work-groups, local memory and barriers are real; CUDA on a
// GPU host, scripts/gpu_check.sh): row reductions of many lengths (shorter and
// longer than a block, powers of two and not), every reducing op in every
// dtype, NaN and infinities through the combines, the normalizations and their
// gradients, and a full reduction feeding several element loops in one kernel
// (Adam's update after a clip by the global norm), each against the reference
// interpreter on fresh random inputs.
#include "autodiff/gradient_tape.h"
#include "tests/codegen/c_renderers/device_check.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <limits>

using namespace smelt;

namespace {

std::vector<DeviceDescription> devices() { return testing::nonCpuDevices(); }

/// Compiles every graph for `device` and checks each against the reference on `given` (random when
/// absent); requires that at least `mappedAtLeast` of its kernels run as blocks.
void checkOn(const DeviceDescription& device, const std::vector<Graph>& graphs, const std::vector<std::string>& names,
             int mappedAtLeast = 1, const std::vector<TensorMap>& given = {}) {
  testing::checkOnDevice(
      device, graphs, names,
      [&](const std::string& what, const Executable& exe) {
        CHECK_MESSAGE(exe.report().blockKernels >= mappedAtLeast, what, ": ", exe.report().blockKernels,
                      " block-mapped kernels\n", exe.source());
      },
      given);
}

}  // namespace

TEST_CASE(
    "block kernels on devices: softmax, log_softmax and row sums over "
    "rows of 64 to 4096") {
  for (const DeviceDescription& device : devices()) {
    std::vector<Graph> graphs;
    std::vector<std::string> names;
    for (int64_t n : {64, 100, 255, 256, 257, 1000, 4096}) {
      graphs.push_back(testing::parseOrFail(fmt::format(R"(graph @t(%x: f32[3,{0}]) {{
  %0 = softmax(%x) {{axis = 1}} : f32[3,{0}]
  %1 = log_softmax(%x) {{axis = 1}} : f32[3,{0}]
  %2 = reduce_sum(%x) {{axes = [1]}} : f32[3]
  return a = %0, b = %1, c = %2
}})",
                                                        n)));
      names.push_back(fmt::format("rows of {}", n));
    }
    checkOn(device, graphs, names, 2);
  }
}

TEST_CASE("block kernels on devices: every reducing op in every dtype it takes") {
  for (const DeviceDescription& device : devices()) {
    std::vector<Graph> graphs;
    std::vector<std::string> names;
    const std::vector<std::pair<std::string, std::vector<std::string>>> ops = {
        {"reduce_sum", {"f32", "f64", "f16", "bf16", "i32", "i64", "u8"}},
        {"reduce_max", {"f32", "f64", "f16", "i32", "i64", "u8"}},
        {"reduce_min", {"f32", "f64", "bf16", "i32", "i64"}},
        {"reduce_prod", {"f32", "f64", "i64"}},
        {"reduce_mean", {"f32", "f64", "f16"}},
        {"reduce_variance", {"f32", "f64"}},
        {"reduce_stddev", {"f32"}},
        {"reduce_logsumexp", {"f32", "f64"}}};
    for (const auto& [op, dtypes] : ops) {
      for (const std::string& t : dtypes) {
        if (t == "f64" && !device.fp64) continue;
        // reduce_prod of 200 random values over/underflows: a short row (but
        // still a block) keeps it finite.
        const int64_t n = op == "reduce_prod" ? 64 : 700;
        graphs.push_back(testing::parseOrFail(fmt::format(R"(graph @t(%x: {1}[5,{2}]) {{
  %0 = {0}(%x) {{axes = [1]}} : {1}[5]
  return y = %0
}})",
                                                          op, t, n)));
        names.push_back(op + " " + t);
      }
    }
    checkOn(device, graphs, names, 1);
  }
}

TEST_CASE(
    "block kernels on devices: NaN and infinities pass through the "
    "block's combines as through a loop") {
  for (const DeviceDescription& device : devices()) {
    Graph graph = testing::parseOrFail(R"(graph @t(%x: f32[4,500]) {
  %0 = reduce_max(%x) {axes = [1]} : f32[4]
  %1 = reduce_min(%x) {axes = [1]} : f32[4]
  %2 = reduce_sum(%x) {axes = [1]} : f32[4]
  %3 = softmax(%x) {axis = 1} : f32[4,500]
  return a = %0, b = %1, c = %2, d = %3
})");
    Tensor x = testing::randomTensor({DType::f32, {4, 500}}, testing::testSeed());
    // Row 0: a NaN late in the row (another thread's partial); row 1: +inf; row
    // 2: -inf; row 3: plain.
    x.setDouble(0 * 500 + 437, std::numeric_limits<double>::quiet_NaN());
    x.setDouble(1 * 500 + 3, std::numeric_limits<double>::infinity());
    x.setDouble(2 * 500 + 301, -std::numeric_limits<double>::infinity());
    std::vector<Graph> graphs;
    graphs.push_back(std::move(graph));
    checkOn(device, graphs, {"specials"}, 1, {TensorMap{{"x", x}}});
  }
}

TEST_CASE(
    "block kernels on devices: layer_norm, softmax and their gradients; "
    "a clipped Adam update in one kernel") {
  for (const DeviceDescription& device : devices()) {
    Graph g = testing::parseOrFail(
        R"(graph @t(%x: f32[6,384], %w: f32[384], %b: f32[384], %t: f32[6,384]) {
  %0 = layer_norm(%x, %w, %b) {axis = 1, epsilon = 1e-5} : f32[6,384]
  %1 = softmax(%0) {axis = 1} : f32[6,384]
  %2 = mul(%1, %t) : f32[6,384]
  %3 = reduce_sum(%2) : f32[]
  return loss = %3
})");
    std::vector<std::string> wrt = {"x", "w", "b"};
    auto grads = gradientOfOutputs(g, wrt);
    REQUIRE_MESSAGE(grads.ok(), (grads.ok() ? "" : grads.error().message()));
    for (size_t i = 0; i < wrt.size(); ++i) g.addOutput(wrt[i] + ".grad", (*grads)[i]);
    // The global norm's sum, then three loops over the same elements, each
    // after a barrier.
    Graph adam = testing::parseOrFail(
        R"(graph @t(%g: f32[24,6], %m: f32[24,6], %v: f32[24,6], %p: f32[24,6], %s: f32[]) {
  %0 = mul(%g, %g) : f32[24,6]
  %1 = reduce_sum(%0) : f32[]
  %2 = add(%1, %s) : f32[]
  %3 = sqrt(%2) : f32[]
  %c1 = constant() {value = dense<f32[]> [1]} : f32[]
  %4 = div(%c1, %3) : f32[]
  %5 = min(%4, %c1) : f32[]
  %6 = mul(%g, %5) : f32[24,6]
  %c9 = constant() {value = dense<f32[]> [0.9]} : f32[]
  %7 = mul(%m, %c9) : f32[24,6]
  %8 = add(%7, %6) : f32[24,6]
  %9 = mul(%6, %6) : f32[24,6]
  %vv = mul(%v, %v) : f32[24,6]
  %10 = add(%vv, %9) : f32[24,6]
  %11 = sqrt(%10) : f32[24,6]
  %12 = div(%8, %11) : f32[24,6]
  %13 = sub(%p, %12) : f32[24,6]
  return scale = %5, m = %8, v = %10, p = %13
})");
    // Two stored element loops and a sum in one kernel over domain [] (ONNX
    // NegativeLogLikelihoodLoss's ignore_index mask): PoCL dropped the second
    // loop's stores while block kernels began with a bounds check's return.
    Graph mask = testing::parseOrFail(R"(graph @t(%t: i64[3,6,6]) {
  %0 = constant() {value = dense<i64[]> [1]} : i64[]
  %1 = eq(%t, %0) : bool[3,6,6]
  %2 = constant() {value = dense<i64[]> [0]} : i64[]
  %3 = where(%1, %2, %t) : i64[3,6,6]
  %4 = constant() {value = dense<f32[]> [0]} : f32[]
  %5 = constant() {value = dense<f32[]> [1]} : f32[]
  %6 = where(%1, %4, %5) : f32[3,6,6]
  %7 = reduce_sum(%6) : f32[]
  return a = %3, b = %6, c = %7
})");
    Tensor t = testing::randomTensor({DType::i64, {3, 6, 6}}, testing::testSeed());
    for (int64_t i = 0; i < t.numel(); ++i) t.setDouble(i, static_cast<double>((i * 7 + testing::testSeed()) % 5));
    std::vector<Graph> graphs;
    graphs.push_back(std::move(g));
    graphs.push_back(std::move(adam));
    checkOn(device, graphs, {"layer_norm, softmax and gradients", "clipped Adam"}, 1);
    std::vector<Graph> masks;
    masks.push_back(std::move(mask));
    checkOn(device, masks, {"ignore_index mask"}, 1, {TensorMap{{"t", t}}});
  }
}

TEST_CASE(
    "block kernels on devices: rows of whole blocks stay in registers between the sweeps (layer_norm, softmax, "
    "their gradients)") {
  for (const DeviceDescription& device : devices()) {
    std::vector<Graph> graphs;
    std::vector<std::string> names;
    for (int64_t n : {1024, 2048}) {
      Graph g = testing::parseOrFail(fmt::format(
          R"(graph @t(%x: f32[4,{0}], %w: f32[{0}], %b: f32[{0}], %t: f32[4,{0}]) {{
  %0 = layer_norm(%x, %w, %b) {{axis = 1, epsilon = 1e-5}} : f32[4,{0}]
  %1 = softmax(%x) {{axis = 1}} : f32[4,{0}]
  %2 = log_softmax(%0) {{axis = 1}} : f32[4,{0}]
  %3 = mul(%2, %t) : f32[4,{0}]
  %4 = reduce_sum(%3) : f32[]
  return y = %0, s = %1, loss = %4
}})",
          n));
      std::vector<std::string> wrt = {"x", "w", "b"};
      auto grads = gradientOfOutputs(g, wrt);
      REQUIRE_MESSAGE(grads.ok(), (grads.ok() ? "" : grads.error().message()));
      for (size_t i = 0; i < wrt.size(); ++i) g.addOutput(wrt[i] + ".grad", (*grads)[i]);
      graphs.push_back(std::move(g));
      names.push_back(fmt::format("rows of {}", n));
    }
    testing::checkOnDevice(device, graphs, names, [&](const std::string& what, const Executable& exe) {
      // codegen/row_cache.h: the first sweep of a row fills smelt_row0, the later ones read it.
      CHECK_MESSAGE(exe.source().find("smelt_row0[") != std::string::npos, what, ": no row kept in registers\n",
                    exe.source());
    });
  }
}

TEST_CASE("block kernels on devices: a large reduction into one result runs in two stages, the first across blocks") {
  for (const DeviceDescription& device : devices()) {
    // split-reductions (passes/split_reductions.cpp): 256 rows of 4096 squares, then the 256 partials.
    std::vector<Graph> graphs;
    graphs.push_back(testing::parseOrFail(R"(graph @t(%g: f32[1024,1024], %x: f64[3,65536]) {
  %0 = mul(%g, %g) : f32[1024,1024]
  %1 = reduce_sum(%0) : f32[]
  %2 = sqrt(%1) : f32[]
  %3 = reduce_max(%x) {axes = [1], keepdims = 1} : f64[3,1]
  %4 = reduce_mean(%x) {axes = [1]} : f64[3]
  return norm = %2, max = %3, mean = %4
})"));
    checkOn(device, graphs, {"global norm and long rows"}, 3);
  }
}

TEST_CASE("device kernels: pointers are restrict only where no two buffers can share memory") {
  for (const DeviceDescription& device : devices()) {
    // Distinct inputs and a result of its own: restrict.
    Graph distinct = testing::parseOrFail(R"(graph @t(%x: f32[300], %y: f32[300]) {
  %0 = add(%x, %y) : f32[300]
  %1 = tanh(%0) : f32[300]
  return z = %1
})");
    // On a vendor library, tanh reads the product where it writes its own result: memory is shared.
    Graph shared = testing::parseOrFail(R"(graph @t(%x: f32[16,32], %w: f32[32,24], %v: f32[24,8]) {
  %0 = matmul(%x, %w) : f32[16,24]
  %1 = tanh(%0) : f32[16,24]
  %2 = matmul(%1, %v) : f32[16,8]
  return z = %2
})");
    auto a = Executable::compile(distinct, {.device = device.id, .fallback = false});
    REQUIRE_MESSAGE(a.ok(), (a.ok() ? "" : a.error().message()));
    CHECK_MESSAGE((*a)->source().find("restrict b0") != std::string::npos, (*a)->source());
    CHECK_MESSAGE((*a)->source().find("restrict b2") != std::string::npos, (*a)->source());
    auto b = Executable::compile(shared, {.device = device.id, .fallback = false});
    REQUIRE_MESSAGE(b.ok(), (b.ok() ? "" : b.error().message()));
    const std::string& source = (*b)->source();
    const size_t tanh = source.find("from tanh");
    REQUIRE(tanh != std::string::npos);
    const std::string declaration = source.substr(tanh, source.find('{', tanh) - tanh);
    if ((*b)->report().blas > 0) {
      CHECK_MESSAGE(declaration.find("restrict") == std::string::npos, source);
    } else {  // product and tanh computed in one generated kernel: nothing shared
      CHECK_MESSAGE(declaration.find("restrict") != std::string::npos, source);
    }
    std::vector<Graph> graphs;
    graphs.push_back(std::move(distinct));
    graphs.push_back(std::move(shared));
    testing::checkOnDevice(device, graphs, {"distinct", "shared"}, [](const std::string&, const Executable&) {});
  }
}

TEST_CASE("block kernels on devices: batch norm statistics split each image's pixels across the block") {
  // A channel's loop over the images stays sequential in every thread; its loop over the pixels
  // splits (map_to_blocks.h's nests), forward and backward.
  for (const DeviceDescription& device : devices()) {
    Graph g = testing::parseOrFail(
        R"(graph @t(%x: f32[3,8,10,13], %s: f32[8], %b: f32[8], %m: f32[8], %v: f32[8], %t: f32[3,8,10,13]) {
  %y, %nm, %nv = batch_norm_train(%x, %s, %b, %m, %v) {momentum = 0.9} : f32[3,8,10,13], f32[8], f32[8]
  %0 = mul(%y, %t) : f32[3,8,10,13]
  %1 = reduce_sum(%0) : f32[]
  return loss = %1, nm = %nm, nv = %nv
})");
    Graph forward = testing::parseOrFail(
        R"(graph @t(%x: f32[3,8,10,13], %s: f32[8], %b: f32[8], %m: f32[8], %v: f32[8]) {
  %y, %nm, %nv = batch_norm_train(%x, %s, %b, %m, %v) {momentum = 0.9} : f32[3,8,10,13], f32[8], f32[8]
  return y = %y, nm = %nm, nv = %nv
})");
    std::vector<std::string> wrt = {"x", "s", "b"};
    auto grads = gradientOfOutputs(g, wrt);
    REQUIRE_MESSAGE(grads.ok(), (grads.ok() ? "" : grads.error().message()));
    for (size_t i = 0; i < wrt.size(); ++i) g.addOutput(wrt[i] + ".grad", (*grads)[i]);
    std::vector<Graph> graphs;
    graphs.push_back(std::move(forward));
    graphs.push_back(std::move(g));
    checkOn(device, graphs, {"batch_norm_train", "batch_norm_train and its gradients"}, 1);
  }
}

// Example kernels per op and dtype, and the edge-value kernels (see render_test_util.h).
#include "tests/codegen/c_renderers/render_test_util.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "codegen/conv_kernels.h"
#include "codegen/kernel_builder.h"
#include "codegen/kernel_passes.h"
#include "codegen/kernel_interpreter.h"
#include "codegen/lower_kernel.h"
#include "codegen/map_to_blocks.h"
#include "autodiff/gradient_tape.h"
#include "ir/op_registry.h"
#include "passes/pass_manager.h"
#include "tests/support/random_tensors.h"

namespace smelt::testing {

using codegen::Kernel;
using codegen::KernelBuilder;

std::vector<ExampleKernels> exampleKernels(const std::vector<DType>& dtypes) {
  std::vector<ExampleKernels> all;
  for (const OpDef* op : OpRegistry::global().all()) {
    if (op->name == "constant") continue;
    for (DType dtype : op->dtypes.list()) {
      if (!dtypes.empty() && std::find(dtypes.begin(), dtypes.end(), dtype) == dtypes.end()) continue;
      Graph graph = parseOrFail(op->exampleIn(dtype));
      auto pm = PassManager::fromPipeline(kDefaultPipeline, PassManagerOptions{});
      REQUIRE(pm.ok());
      auto ran = pm->run(graph);
      REQUIRE_MESSAGE(ran.ok(), op->name, ": ", (ran.ok() ? "" : ran.error().message()));
      ExampleKernels e{op->name, dtype, {}};
      for (const auto& node : graph.nodes()) {
        if (node->opName() == "constant" || !codegen::canLower(*node)) continue;
        auto kernel = codegen::lowerToKernel(graph, *node, codegen::kGpuLoweringKernelPipeline);
        REQUIRE_MESSAGE(kernel.ok(), op->name, ": ", (kernel.ok() ? "" : kernel.error().message()));
        auto shaped = codegen::runKernelPasses(*kernel, codegen::kGpuKernelPipeline);
        REQUIRE_MESSAGE(shaped.ok(), op->name, ": ", (shaped.ok() ? "" : shaped.error().message()));
        e.kernels.push_back(std::move(*kernel));
      }
      all.push_back(std::move(e));
    }
  }
  return all;
}

namespace {

/// The kernels of `graph` after the default pipeline that mapToBlocks maps.
std::vector<Kernel> mappedKernels(Graph& graph, const std::string& what) {
  auto pm = PassManager::fromPipeline(kDefaultPipeline, PassManagerOptions{});
  REQUIRE(pm.ok());
  auto ran = pm->run(graph);
  REQUIRE_MESSAGE(ran.ok(), what, ": ", (ran.ok() ? "" : ran.error().message()));
  std::vector<Kernel> kernels;
  for (const auto& node : graph.nodes()) {
    if (node->opName() == "constant" || !codegen::canLower(*node)) continue;
    auto kernel = codegen::lowerToKernel(graph, *node, codegen::kGpuLoweringKernelPipeline);
    REQUIRE_MESSAGE(kernel.ok(), what, ": ", (kernel.ok() ? "" : kernel.error().message()));
    if (codegen::mapToBlocks(*kernel)) kernels.push_back(std::move(*kernel));
  }
  REQUIRE_MESSAGE(!kernels.empty(), what, ": no kernel maps to blocks");
  return kernels;
}

}  // namespace

std::vector<ExampleKernels> blockKernels() {
  std::vector<ExampleKernels> all;
  for (const OpDef* op : OpRegistry::global().all()) {
    if (!op->name.starts_with("reduce_")) continue;
    for (DType dtype : op->dtypes.list()) {
      Graph graph = parseOrFail(fmt::format("graph @t(%x: {0}[5,700]) {{\n  %0 = {1}(%x) {{axes = [1]}} : {0}[5]\n"
                                            "  return y = %0\n}}",
                                            dtypeName(dtype), op->name));
      all.push_back({op->name, dtype, mappedKernels(graph, op->name)});
    }
  }
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    Graph graph = parseOrFail(substituteDType(R"(graph @t(%x: $T[6,1000], %w: $T[1000], %b: $T[1000], %t: $T[6,1000]) {
  %0 = layer_norm(%x, %w, %b) {axis = 1, epsilon = 1e-5} : $T[6,1000]
  %1 = softmax(%0) {axis = 1} : $T[6,1000]
  %2 = log_softmax(%x) {axis = 1} : $T[6,1000]
  %3 = mul(%1, %t) : $T[6,1000]
  %4 = add(%3, %2) : $T[6,1000]
  %5 = reduce_sum(%4) : $T[]
  return loss = %5
})",
                                         dtypeName(dtype)));
    std::vector<std::string> wrt = {"x", "w", "b"};
    auto grads = gradientOfOutputs(graph, wrt);
    REQUIRE_MESSAGE(grads.ok(), (grads.ok() ? "" : grads.error().message()));
    for (size_t i = 0; i < wrt.size(); ++i) graph.addOutput(wrt[i] + ".grad", (*grads)[i]);
    all.push_back({"normalizations", dtype, mappedKernels(graph, "normalizations and their gradients")});
    // Batch norm's statistics: nests whose inner loops keep per-thread partials (map_to_blocks.h).
    Graph bn = parseOrFail(substituteDType(R"(graph @t(%x: $T[3,8,10,13], %s: $T[8], %b: $T[8], %m: $T[8], %v: $T[8]) {
  %y, %nm, %nv = batch_norm_train(%x, %s, %b, %m, %v) {momentum = 0.9} : $T[3,8,10,13], $T[8], $T[8]
  return y = %y, nm = %nm, nv = %nv
})",
                                      dtypeName(dtype)));
    all.push_back({"batch_norm_train", dtype, mappedKernels(bn, "batch_norm_train")});
  }
  return all;
}

std::vector<ExampleKernels> convolutionLayoutKernels() {
  std::vector<ExampleKernels> all;
  const codegen::Im2colShape window{.n = 2, .c = 3, .h = 9, .w = 10, .oh = 5, .ow = 10, .kh = 3, .kw = 3,
                                    .strideH = 2, .padTop = 1, .padLeft = 1};
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    ExampleKernels e{"convolution_layouts", dtype, {}};
    for (Expected<Kernel> k : {codegen::im2colKernel(window, dtype), codegen::col2imKernel(window, dtype),
                               codegen::swapLeadingAxesKernel(4, 3, 20, dtype)}) {
      REQUIRE_MESSAGE(k.ok(), (k.ok() ? "" : k.error().message()));
      auto passes = codegen::runKernelPasses(*k, codegen::kGpuKernelPipeline);
      REQUIRE_MESSAGE(passes.ok(), (passes.ok() ? "" : passes.error().message()));
      e.kernels.push_back(std::move(*k));
    }
    all.push_back(std::move(e));
  }
  return all;
}

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Values that stress rounding, overflow and the cast rule: signed zeros, halves (ties), f16's
/// largest and subnormal values, f32 denormals, NaN, infinities, +-2^63, 2^64 and between.
const std::vector<double> kFloatEdges = {0.0,    -0.0,    1.0,     -1.0,    0.5,   -0.5,   1.5,   2.5,    -2.5, 3.0,
                                         6e-8,   1e-6,    65504.0, 65520.0, 1e5,   3e38,   1e-40, kNan,   kInf, -kInf,
                                         0x1p63, -0x1p63, 0x1p64,  1.2e19,  255.5, -129.5, 1e30,  100.25, 7.0,  0.1};

/// Integers near 0, near shift widths, and at both ends of `t` (wrapped to t by Tensor::setInt).
std::vector<int64_t> intEdges(DType t) {
  if (t == DType::boolean) return {0, 1};
  int bits = static_cast<int>(dtypeSize(t) * 8);
  int64_t min = isSignedInt(t) ? (bits == 64 ? INT64_MIN : -(int64_t{1} << (bits - 1))) : 0;
  int64_t max = isSignedInt(t) ? (bits == 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1)
                               : (bits == 64 ? -1 : (int64_t{1} << bits) - 1);
  return {0, 1, -1, 2, -2, 3, 7, 8, 15, 16, 31, 32, 63, 64, 65, 100, min, min + 1, max, max - 1};
}

int64_t edgeCount(DType t) {
  return isFloat(t) ? static_cast<int64_t>(kFloatEdges.size()) : static_cast<int64_t>(intEdges(t).size());
}

void setEdge(Tensor& t, int64_t i, DType d, int64_t which) {
  if (isFloat(d))
    t.setDouble(i, kFloatEdges[static_cast<size_t>(which)]);
  else
    t.setInt(i, intEdges(d)[static_cast<size_t>(which)]);
}

/// Tolerance for transcendentals (OpenCL's and CUDA's bounds are a few ulp, erf and pow 16) and for
/// f16/bf16 results computed in float where the reference rounds from double.
double approximate(DType t) {
  switch (t) {
    case DType::f16:
      return 2e-3;
    case DType::bf16:
      return 1.6e-2;
    case DType::f32:
      return 4e-6;
    default:
      return 1e-13;
  }
}

struct Builder {
  EdgeKernel edge;
  KernelBuilder b;
  explicit Builder(std::string name, std::vector<int64_t> domain) : b(edge.kernel) {
    edge.kernel.name = std::move(name);
    edge.kernel.domain = std::move(domain);
    edge.kernel.provenance = {"edge values (tests/codegen/c_renderers)"};
  }
  int input(DType t, int64_t n, std::string what) {
    edge.kernel.buffers.push_back({fmt::format("p{}", edge.buffers.size()), t, n, false});
    edge.buffers.emplace_back(TensorType{t, Shape{n}});
    edge.tolerance.push_back(0);
    edge.what.push_back(std::move(what));
    return static_cast<int>(edge.buffers.size()) - 1;
  }
  void output(KValue offset, KValue v, double tolerance, std::string what) {
    int buffer = static_cast<int>(edge.buffers.size());
    int64_t n = edge.kernel.domainSize();
    edge.kernel.buffers.push_back({fmt::format("r{}", buffer), v.dtype, n, true});
    edge.buffers.emplace_back(TensorType{v.dtype, Shape{n}});
    edge.tolerance.push_back(tolerance);
    edge.what.push_back(std::move(what));
    b.store(buffer, offset, v);
  }
  EdgeKernel done() {
    REQUIRE_MESSAGE(b.status().ok(), edge.kernel.name, ": ", (b.status().ok() ? "" : b.status().error().message()));
    return std::move(edge);
  }
};

constexpr KBinary kBinaries[] = {KBinary::Add, KBinary::Sub, KBinary::Mul, KBinary::Div, KBinary::Rem,
                                 KBinary::Min, KBinary::Max, KBinary::Pow, KBinary::And, KBinary::Or,
                                 KBinary::Xor, KBinary::Shl, KBinary::Shr, KBinary::Lt,  KBinary::Le,
                                 KBinary::Gt,  KBinary::Ge,  KBinary::Eq,  KBinary::Ne};
constexpr KUnary kUnaries[] = {KUnary::Neg,   KUnary::Abs,       KUnary::Exp,   KUnary::Expm1,   KUnary::Log,
                               KUnary::Log1p, KUnary::Sqrt,      KUnary::Rsqrt, KUnary::Sin,     KUnary::Cos,
                               KUnary::Tan,   KUnary::Tanh,      KUnary::Erf,   KUnary::Sigmoid, KUnary::Floor,
                               KUnary::Ceil,  KUnary::RoundEven, KUnary::Not,   KUnary::IsNan};

bool exactUnary(KUnary op) {
  return op == KUnary::Neg || op == KUnary::Abs || op == KUnary::Sqrt || op == KUnary::Floor || op == KUnary::Ceil ||
         op == KUnary::RoundEven || op == KUnary::Not || op == KUnary::IsNan;
}

/// Every binary op of `t` on every pair of edge values.
EdgeKernel binaryKernel(DType t) {
  int64_t v = edgeCount(t), n = v * v;
  Builder k(fmt::format("binary_{}", dtypeName(t)), {n});
  int a = k.input(t, n, "a"), c = k.input(t, n, "b");
  for (int64_t i = 0; i < n; ++i) {
    setEdge(k.edge.buffers[static_cast<size_t>(a)], i, t, i / v);
    setEdge(k.edge.buffers[static_cast<size_t>(c)], i, t, i % v);
  }
  KValue p = k.b.outer(0);
  KValue x = k.b.load(a, p), y = k.b.load(c, p);
  for (KBinary op : kBinaries) {
    bool logical =
        op == KBinary::And || op == KBinary::Or || op == KBinary::Xor || op == KBinary::Shl || op == KBinary::Shr;
    if (isFloat(t) && logical) continue;
    bool exact = !isFloat(t) || op != KBinary::Pow;
    k.output(p, k.b.binary(op, x, y), exact ? 0 : approximate(t), std::string(kBinaryName(op)));
  }
  return k.done();
}

/// Every unary op of `t` on every edge value.
EdgeKernel unaryKernel(DType t) {
  int64_t n = edgeCount(t);
  Builder k(fmt::format("unary_{}", dtypeName(t)), {n});
  int a = k.input(t, n, "a");
  for (int64_t i = 0; i < n; ++i) setEdge(k.edge.buffers[static_cast<size_t>(a)], i, t, i);
  KValue p = k.b.outer(0);
  KValue x = k.b.load(a, p);
  for (KUnary op : kUnaries) {
    bool intOp = op == KUnary::Neg || op == KUnary::Abs || op == KUnary::Not || op == KUnary::IsNan;
    if (isFloat(t) ? op == KUnary::Not : !intOp) continue;
    k.output(p, k.b.unary(op, x), exactUnary(op) ? 0 : approximate(t), std::string(kUnaryName(op)));
  }
  return k.done();
}

/// Every cast of `t`'s edge values.
EdgeKernel castKernel(DType t) {
  int64_t n = edgeCount(t);
  Builder k(fmt::format("cast_{}", dtypeName(t)), {n});
  int a = k.input(t, n, "a");
  for (int64_t i = 0; i < n; ++i) setEdge(k.edge.buffers[static_cast<size_t>(a)], i, t, i);
  KValue p = k.b.outer(0);
  KValue x = k.b.load(a, p);
  for (DType to : kAllDTypes) {
    if (to != t) k.output(p, k.b.cast(x, to), 0, fmt::format("cast to {}", dtypeName(to)));
  }
  return k.done();
}

/// Loops: two carried values swapped every iteration (the C loop must read both before writing
/// either), a Fibonacci step (next = a carried value and a sum), and a loop that never runs.
EdgeKernel loopKernel() {
  Builder k("loops", {4, 3});
  KValue row = k.b.outer(0), col = k.b.outer(1);
  KValue p = k.b.add(k.b.mul(row, k.b.index(3)), col);
  KValue a = k.b.cast(p, DType::i32), c = k.b.add(a, k.b.intConstant(100, DType::i32));
  auto swapped = k.b.loop(5, {a, c}, [&](KValue, std::span<const KValue> carried) {
    return std::vector<KValue>{carried[1], carried[0]};
  });
  auto fib = k.b.loop(10, {a, c}, [&](KValue i, std::span<const KValue> carried) {
    KValue step = k.b.add(carried[0], k.b.cast(i, DType::i32));
    return std::vector<KValue>{carried[1], k.b.add(step, carried[1])};
  });
  auto never = k.b.loop(0, {a}, [&](KValue, std::span<const KValue> carried) {
    return std::vector<KValue>{k.b.add(carried[0], carried[0])};
  });
  k.output(p, swapped[0], 0, "swap first");
  k.output(p, swapped[1], 0, "swap second");
  k.output(p, fib[1], 0, "fibonacci");
  k.output(p, never[0], 0, "zero-trip loop");
  return k.done();
}

std::string element(const Tensor& t, int64_t i) {
  if (isFloat(t.dtype())) return fmt::format("{}", t.getDouble(i));
  if (isUnsignedInt(t.dtype())) return fmt::format("{}", static_cast<uint64_t>(t.getInt(i)));
  return fmt::format("{}", t.getInt(i));
}

}  // namespace

std::vector<EdgeKernel> edgeKernels() {
  std::vector<EdgeKernel> all;
  for (DType t : kAllDTypes) {
    all.push_back(binaryKernel(t));
    all.push_back(unaryKernel(t));
    all.push_back(castKernel(t));
  }
  all.push_back(loopKernel());
  return all;
}

std::string compareWithInterpreter(const EdgeKernel& edge, const std::vector<Tensor>& actual) {
  std::vector<Tensor> expected = edge.buffers;
  std::vector<Tensor*> pointers;
  for (Tensor& t : expected) pointers.push_back(&t);
  Status ran = codegen::interpretKernel(edge.kernel, pointers);
  if (!ran.ok()) return "the interpreter failed: " + ran.error().message();
  const codegen::Kernel& k = edge.kernel;
  for (size_t b = 0; b < k.buffers.size(); ++b) {
    if (!k.buffers[b].output) continue;
    const Tensor& want = expected[b];
    const Tensor& got = actual[b];
    DType t = want.dtype();
    double tol = edge.tolerance[b];
    for (int64_t i = 0; i < want.numel(); ++i) {
      bool same;
      if (isFloat(t)) {
        double x = got.getDouble(i), y = want.getDouble(i);
        same = (std::isnan(x) && std::isnan(y)) || x == y ||
               (tol > 0 && std::isfinite(x) && std::isfinite(y) && std::fabs(x - y) <= tol * (1 + std::fabs(y)));
      } else {
        same = got.getInt(i) == want.getInt(i);
      }
      if (!same) {
        std::string inputs;
        for (size_t in = 0; in < k.buffers.size(); ++in) {
          if (!k.buffers[in].output) inputs += fmt::format(" {}", element(edge.buffers[in], i));
        }
        return fmt::format("kernel @{} output '{}' ({}) at {} (inputs{}): got {}, expected {}", k.name, edge.what[b],
                           dtypeName(t), i, inputs, element(got, i), element(want, i));
      }
    }
  }
  return "";
}

}  // namespace smelt::testing

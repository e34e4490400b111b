// Kernel and graph ops: rbf_kernel (the Gaussian kernel matrix between two point sets) and graph_conv
// (a graph convolution layer over a dense adjacency matrix, optionally symmetrically normalized).
//   %k = rbf_kernel(%x, %y) {gamma = 0.5} : f32[8,6]
//   %h = graph_conv(%x, %adj, %w, %b) {normalize = "symmetric"} : f32[8,16]
#include "ir/builder.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

#include <cmath>

namespace smelt {

namespace {
using namespace ops;

Expected<std::vector<TensorType>> inferRbfKernel(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kFloat));
  SMELT_CHECK_OK(expectSameDType(call, 0, 1));
  SMELT_CHECK_OK(expectRank(call, 0, 2));
  SMELT_CHECK_OK(expectRank(call, 1, 2));
  const TensorType& x = call.operand(0);
  const TensorType& y = call.operand(1);
  if (x.shape[1] != y.shape[1]) {
    return call.error("{} has {} features but {} has {}", operandName(call, 0), x.shape[1], operandName(call, 1),
                      y.shape[1]);
  }
  double gamma = call.getFloat("gamma");
  if (!std::isfinite(gamma)) return call.error("attribute 'gamma' must be finite, got {}", gamma);
  return single(TensorType{x.dtype, {x.shape[0], y.shape[0]}});
}

Expected<std::vector<Tensor>> referenceRbfKernel(const OpCall& call, std::span<const Tensor> in) {
  double gamma = call.getFloat("gamma");
  int64_t n = in[0].shape()[0], m = in[1].shape()[0], d = in[0].shape()[1];
  std::vector<double> x = in[0].toDoubles();
  std::vector<double> y = in[1].toDoubles();
  std::vector<double> out(static_cast<size_t>(n * m));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      // The direct squared distance, not |x|^2 + |y|^2 - 2xy, which cancels badly for near points.
      double dist2 = 0;
      for (int64_t k = 0; k < d; ++k) {
        double diff = x[i * d + k] - y[j * d + k];
        dist2 += diff * diff;
      }
      out[i * m + j] = std::exp(-gamma * dist2);
    }
  }
  return std::vector<Tensor>{Tensor::fromDoubles(call.results()[0], out)};
}

Expected<std::vector<TensorType>> inferGraphConv(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kFloat));
  for (size_t i = 1; i < call.numOperands(); ++i) SMELT_CHECK_OK(expectSameDType(call, 0, i));
  SMELT_CHECK_OK(expectRank(call, 0, 2));
  SMELT_CHECK_OK(expectRank(call, 1, 2));
  SMELT_CHECK_OK(expectRank(call, 2, 2));
  const TensorType& x = call.operand(0);
  const TensorType& adj = call.operand(1);
  const TensorType& w = call.operand(2);
  int64_t n = x.shape[0];
  if (adj.shape[0] != n || adj.shape[1] != n) {
    return call.error("{} must be [{},{}] for {} nodes, got {}", operandName(call, 1), n, n, n, adj.toString());
  }
  if (w.shape[0] != x.shape[1]) {
    return call.error("{} has {} input features but {} has {}", operandName(call, 2), w.shape[0],
                      operandName(call, 0), x.shape[1]);
  }
  if (call.numOperands() == 4) {
    const TensorType& b = call.operand(3);
    if (b.rank() != 1 || b.shape[0] != w.shape[1]) {
      return call.error("{} must be [{}], got {}", operandName(call, 3), w.shape[1], b.toString());
    }
  }
  const std::string& normalize = call.getString("normalize");
  if (normalize != "none" && normalize != "symmetric") {
    return call.error("attribute 'normalize' must be \"none\" or \"symmetric\", got \"{}\"", normalize);
  }
  return single(TensorType{x.dtype, {n, w.shape[1]}});
}

Expected<std::vector<Tensor>> referenceGraphConv(const OpCall& call, std::span<const Tensor> in) {
  int64_t n = in[0].shape()[0], f = in[0].shape()[1], o = in[2].shape()[1];
  std::vector<double> x = in[0].toDoubles();
  std::vector<double> adj = in[1].toDoubles();
  std::vector<double> w = in[2].toDoubles();
  if (call.getString("normalize") == "symmetric") {
    // D^-1/2 A D^-1/2 with D the row sums; a node without edges gets 0, not inf, so its row and
    // column stay zero.
    std::vector<double> scale(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      double degree = 0;
      for (int64_t j = 0; j < n; ++j) degree += adj[i * n + j];
      scale[i] = degree == 0 ? 0.0 : 1.0 / std::sqrt(degree);
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) adj[i * n + j] *= scale[i] * scale[j];
    }
  }
  // x @ w first: [N,O] is usually smaller than [N,F], so the N x N product is cheaper.
  std::vector<double> xw(static_cast<size_t>(n * o), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < f; ++k) {
      for (int64_t j = 0; j < o; ++j) xw[i * o + j] += x[i * f + k] * w[k * o + j];
    }
  }
  std::vector<double> out(static_cast<size_t>(n * o), 0.0);
  if (in.size() == 4) {
    std::vector<double> b = in[3].toDoubles();
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < o; ++j) out[i * o + j] = b[j];
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t j = 0; j < o; ++j) out[i * o + j] += adj[i * n + k] * xw[k * o + j];
    }
  }
  return std::vector<Tensor>{Tensor::fromDoubles(call.results()[0], out)};
}

// exp(-gamma * sum_k (x[:,None,k] - y[None,:,k])^2): the direct difference, as the reference computes
// it, so gradients see no cancellation either.
std::vector<Value*> decomposeRbfKernel(Builder& b, const Node& node) {
  double gamma = std::get<double>(node.attrs().find("gamma")->second);
  Value* x = b.op("unsqueeze", {node.operand(0)}, {{"axes", std::vector<int64_t>{1}}});  // [N,1,D]
  Value* y = b.op("unsqueeze", {node.operand(1)}, {{"axes", std::vector<int64_t>{0}}});  // [1,M,D]
  Value* diff = b.sub(x, y);
  Value* dist2 = b.reduceSum(b.mul(diff, diff), {2}, false);
  return {b.exp(b.mul(b.scalarLike(-gamma, dist2), dist2))};
}

// adj' @ (x @ w) + b, with adj' = adj * s[:,None] * s[None,:] and s = rsqrt(row sums) (0 for a zero row)
// when normalize is "symmetric". The rsqrt reads 1 on zero rows so no inf meets the where's zero
// gradient (0 * inf would make the adjacency's gradient NaN); the mask then gives those rows 0.
std::vector<Value*> decomposeGraphConv(Builder& b, const Node& node) {
  Value* adj = node.operand(1);
  Value* xw = b.op("matmul", {node.operand(0), node.operand(2)});
  if (std::get<std::string>(node.attrs().find("normalize")->second) == "symmetric") {
    Value* degree = b.reduceSum(adj, {1}, false);
    Value* isolated = b.op("eq", {degree, b.scalarLike(0.0, adj)});
    Value* safe = b.where(isolated, b.scalarLike(1.0, adj), degree);
    Value* scale = b.where(isolated, b.scalarLike(0.0, adj), b.rsqrt(safe));
    Value* outer = b.mul(b.op("unsqueeze", {scale}, {{"axes", std::vector<int64_t>{1}}}),
                         b.op("unsqueeze", {scale}, {{"axes", std::vector<int64_t>{0}}}));
    adj = b.mul(adj, outer);
  }
  Value* out = b.op("matmul", {adj, xw});
  if (node.numOperands() == 4) out = b.add(out, node.operand(3));
  return {out};
}

}  // namespace

void registerGraphOps(OpRegistry& registry) {
  registry.add(OpDef{
      .name = "rbf_kernel",
      .summary = "Gaussian kernel matrix exp(-gamma*|x_i - y_j|^2) of x[N,D] and y[M,D], result [N,M].",
      .operands = {{"x"}, {"y"}},
      .attrs = {{"gamma", AttrKind::Float, Attribute{1.0}}},
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kFloat,
      .infer = inferRbfKernel,
      .reference = referenceRbfKernel,
      .example = R"(graph @t(%x: $T[4,3], %y: $T[5,3]) {
  %0 = rbf_kernel(%x, %y) {gamma = 0.5} : $T[4,5]
  return r = %0
})",
      .decompose = decomposeRbfKernel,
  });
  registry.add(OpDef{
      .name = "graph_conv",
      .summary = "Graph convolution A@(x@w)+b over a dense adjacency, optionally D^-1/2 A D^-1/2.",
      .operands = {{"x"}, {"adj"}, {"weight"}, {"bias", Arity::Optional}},
      .attrs = {{"normalize", AttrKind::String, Attribute{std::string("none")}}},
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kFloat,
      .infer = inferGraphConv,
      .reference = referenceGraphConv,
      // A 0/1 adjacency with a self-loop and an isolated node, so the normalized form is finite; %q
      // weights its edges by m^2, so the normalization is differentiated with respect to the adjacency
      // too (isolated node included), and %3 takes a signed adjacency unnormalized.
      .example = R"(graph @t(%x: $T[4,3], %w: $T[3,2], %b: $T[2], %m: $T[4,4]) {
  %a = constant() {value = dense<$T[4,4]> [0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0]} : $T[4,4]
  %0 = graph_conv(%x, %a, %w, %b) {normalize = "symmetric"} : $T[4,2]
  %1 = graph_conv(%x, %a, %w) : $T[4,2]
  %p = mul(%m, %m) : $T[4,4]
  %q = mul(%p, %a) : $T[4,4]
  %2 = graph_conv(%x, %q, %w, %b) {normalize = "symmetric"} : $T[4,2]
  %3 = graph_conv(%x, %m, %w) : $T[4,2]
  return r = %0, s = %1, t = %2, u = %3
})",
      .decompose = decomposeGraphConv,
  });
}

}  // namespace smelt

// Which products a vendor library computes, and how (see gemm_plan.h).
#include "runtime/exec/gemm_plan.h"

#include "ir/window2d.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace smelt {

namespace {

/// Attribute `name` of `node` (nodes hold every attribute, defaults filled in when they were added).
template <typename T>
const T& attr(const Node& node, const char* name) {
  return std::get<T>(node.attrs().at(name));
}

/// The anchor of `node` and, for each of the anchor's first two operands, the node operand it is.
struct Anchor {
  const Node* node = nullptr;
  size_t a = 0, b = 0;
};

std::optional<Anchor> findAnchor(const Node& node) {
  auto isAnchor = [](const Node& n) { return n.op().product.has_value(); };
  if (isAnchor(node)) return Anchor{&node, 0, 1};
  if (node.opName() != "fused" || attr<std::string>(node, "kind") != "epilogue") return std::nullopt;
  const Graph* body = std::get<GraphRef>(node.attrs().at("body")).get();
  if (!body) return std::nullopt;
  const Node* anchor = nullptr;
  for (const auto& n : body->nodes()) {
    if (isAnchor(*n)) {
      if (anchor) return std::nullopt;  // one anchor per epilogue kernel
      anchor = n.get();
    }
  }
  if (!anchor) return std::nullopt;
  // a and b must be body inputs (the kernel's operands as they are), not views computed in the body.
  const auto& inputs = body->inputs();
  auto operandIndex = [&](const Value* v) -> std::optional<size_t> {
    auto it = std::find(inputs.begin(), inputs.end(), v);
    if (it == inputs.end()) return std::nullopt;
    return static_cast<size_t>(it - inputs.begin());
  };
  auto a = operandIndex(anchor->operand(0));
  auto b = operandIndex(anchor->operand(1));
  if (!a || !b) return std::nullopt;
  return Anchor{anchor, *a, *b};
}

/// The node result the product can be written into (see GemmPlan::result), and whether anything
/// runs after the GEMM.
void chooseResult(const Node& node, const Node& anchor, GemmPlan& plan) {
  const Value* product = anchor.result(0);
  const ProductFacet& facet = *anchor.op().product;
  bool hasC = facet.addend >= 0 && anchor.numOperands() > static_cast<size_t>(facet.addend) &&
              (facet.kind != ProductFacet::Kind::Gemm || attr<double>(anchor, "beta") != 0);
  std::vector<const Value*> results;
  if (&node == &anchor) {
    results.push_back(product);
  } else {
    for (const GraphOutput& o : std::get<GraphRef>(node.attrs().at("body"))->outputs()) results.push_back(o.value);
  }
  plan.epilogue = hasC || results.size() != 1 || results[0] != product;
  for (size_t r = 0; r < results.size(); ++r) {
    if (results[r] == product) plan.result = static_cast<int>(r);
  }
  for (size_t r = 0; r < results.size() && plan.result < 0; ++r) {
    if (results[r]->type() == product->type()) plan.result = static_cast<int>(r);
  }
}

}  // namespace

std::optional<GemmPlan> planGemm(const Node& node, bool (*available)(DType)) {
  std::optional<Anchor> found = findAnchor(node);
  if (!found) return std::nullopt;
  const Node& anchor = *found->node;
  DType dtype = anchor.result(0)->dtype();
  if (!available(dtype) || anchor.operand(0)->dtype() != dtype ||
      anchor.operand(1)->dtype() != dtype) {
    return std::nullopt;
  }
  const Shape& a = anchor.operand(0)->shape();
  const Shape& b = anchor.operand(1)->shape();
  const Shape& out = anchor.result(0)->shape();
  GemmPlan plan;
  plan.anchor = &anchor;
  plan.dtype = dtype;
  plan.operandA = found->a;
  plan.operandB = found->b;
  using Kind = ProductFacet::Kind;
  const Kind kind = anchor.op().product->kind;
  if (kind == Kind::Conv || kind == Kind::ConvTranspose || kind == Kind::ConvWeightGrad) {
    if (a.size() != 4 || b.size() != 4 || out.size() != 4) return std::nullopt;
    std::optional<Window2d> win = Window2d::fromAttrs(anchor.attrs(), b[2], b[3]);
    if (!win) return std::nullopt;
    ConvGeometry g{a[0], a[1], a[2], a[3], out[1], out[2], out[3], b[2], b[3], win->stride[0], win->stride[1],
                   win->padBegin[0], win->padBegin[1], win->dilation[0], win->dilation[1], attr<int64_t>(anchor, "groups")};
    if (kind == Kind::ConvTranspose) g.kind = ConvGeometry::Transposed;
    if (kind == Kind::ConvWeightGrad) {
      // b is dy [n, o, oh, ow]; the result is the weight's shape [o, c/groups, kh, kw].
      g.kind = ConvGeometry::WeightGrad;
      g.o = b[1];
      g.oh = b[2];
      g.ow = b[3];
      g.kh = out[2];
      g.kw = out[3];
    }
    if (g.groups < 1 || g.c % g.groups != 0 || g.o % g.groups != 0) return std::nullopt;
    if (g.kind == ConvGeometry::WeightGrad) {
      // Per group: dy_g [o/groups, n*oh*ow] times the group's columns of im2row [n*oh*ow, c*kh*kw].
      plan.m = g.o / g.groups;
      plan.n = g.c / g.groups * g.kh * g.kw;
      plan.k = g.n * g.oh * g.ow;
      plan.columnElements = g.c * g.kh * g.kw * plan.k + (g.n > 1 ? g.o * plan.k : 0);
    } else if (g.kind == ConvGeometry::Transposed) {
      // Per group: W_g^T [o/groups*kh*kw, c/groups] times X_g [c/groups, n*h*w].
      plan.m = g.o / g.groups * g.kh * g.kw;
      plan.n = g.n * g.h * g.w;
      plan.k = g.c / g.groups;
      plan.columnElements = (g.n > 1 ? g.c * plan.n : 0) + g.o * g.kh * g.kw * plan.n;
    } else if (g.n == 1) {
      // Per group: W_g [o/groups, c/groups*kh*kw] times the image's columns [c/groups*kh*kw, oh*ow].
      plan.m = g.o / g.groups;
      plan.n = g.oh * g.ow;
      plan.k = g.c / g.groups * g.kh * g.kw;
      plan.columnElements = g.direct() ? 0 : g.c * g.kh * g.kw * g.oh * g.ow;
    } else {
      // Every image at once, per group: W_g times columns [c/groups*kh*kw, n*oh*ow] into [o, n*oh*ow],
      // then reordered to NCHW. One large product instead of one per image: the small images of deep
      // layers (4x4, 2x2) made products a few columns wide, and the weight gradients' (whose "images"
      // are channels and whose outputs are the kernel's 3x3) nine columns wide.
      plan.m = g.o / g.groups;
      plan.n = g.n * g.oh * g.ow;
      plan.k = g.c / g.groups * g.kh * g.kw;
      plan.columnElements = g.c * g.kh * g.kw * plan.n + g.o * plan.n;
    }
    plan.conv = g;
  } else if (kind == Kind::Gemm) {
    if (a.size() != 2 || b.size() != 2) return std::nullopt;
    plan.transA = attr<int64_t>(anchor, "trans_a") != 0;
    plan.transB = attr<int64_t>(anchor, "trans_b") != 0;
    plan.alpha = attr<double>(anchor, "alpha");
    plan.m = out[0];
    plan.n = out[1];
    plan.k = plan.transA ? a[0] : a[1];
  } else {
    // matmul: both operands at least matrices; each one's batch is the result's or a single matrix.
    if (a.size() < 2 || b.size() < 2) return std::nullopt;
    plan.m = a[a.size() - 2];
    plan.k = a.back();
    plan.n = b.back();
    Shape outBatch(out.begin(), out.end() - 2);
    plan.batch = numElements(outBatch);
    auto strideOf = [&](const Shape& s) -> std::optional<int64_t> {
      Shape batch(s.begin(), s.end() - 2);
      int64_t items = numElements(batch);
      if (items == 1) return 0;
      Shape padded(outBatch.size() - batch.size(), 1);
      padded.insert(padded.end(), batch.begin(), batch.end());
      if (padded != outBatch) return std::nullopt;
      return s[s.size() - 2] * s.back();
    };
    auto sa = strideOf(a), sb = strideOf(b);
    if (!sa || !sb) return std::nullopt;
    plan.strideA = *sa;
    plan.strideB = *sb;
    plan.strideC = plan.m * plan.n;
    if (plan.batch > 1 && plan.strideB == 0 && plan.strideA != 0) {
      // A shared right-hand side: the batch is more rows of one product ([batch*m, k] x [k, n]).
      plan.m *= plan.batch;
      plan.batch = 1;
    }
  }
  if (plan.m == 0 || plan.n == 0 || plan.k == 0) return std::nullopt;
  chooseResult(node, anchor, plan);
  return plan;
}

bool ConvGeometry::direct() const {
  return kh == 1 && kw == 1 && strideH == 1 && strideW == 1 && padTop == 0 && padLeft == 0 && oh == h && ow == w;
}

std::optional<VendorEpilogue> vendorEpilogueOf(const Node& node, const GemmPlan& plan) {
  using Activation = VendorEpilogue::Activation;
  if (!plan.anchor || plan.conv || plan.batch != 1 || !plan.epilogue || plan.result != 0 || node.opName() != "fused" ||
      node.results().size() != 1) {
    return std::nullopt;
  }
  const Graph* body = std::get<GraphRef>(node.attrs().at("body")).get();
  const Node& anchor = *plan.anchor;
  if (!body || body->outputs().size() != 1) return std::nullopt;
  const auto& inputs = body->inputs();
  // A bias: a body input (the node's operand as it is) of [n] or [1, n] in the product's dtype.
  auto biasOperand = [&](const Value* v) -> std::optional<size_t> {
    const Shape& shape = v->shape();
    const bool fits = shape == Shape{plan.n} || shape == Shape{1, plan.n};
    auto it = std::find(inputs.begin(), inputs.end(), v);
    if (!fits || v->dtype() != plan.dtype || it == inputs.end()) return std::nullopt;
    return static_cast<size_t>(it - inputs.begin());
  };
  VendorEpilogue epilogue;
  std::optional<size_t> bias;
  const ProductFacet& facet = *anchor.op().product;
  if (facet.addend >= 0 && anchor.numOperands() > static_cast<size_t>(facet.addend)) {
    // gemm's c is the bias when beta is 1 (beta 0 ignores it); a matmul's addend never is.
    if (facet.kind != ProductFacet::Kind::Gemm) return std::nullopt;
    const double beta = attr<double>(anchor, "beta");
    if (beta != 0) {
      if (beta != 1) return std::nullopt;
      bias = biasOperand(anchor.operand(static_cast<size_t>(facet.addend)));
      if (!bias) return std::nullopt;
    }
  }
  // The rest of the body is a chain, each value read once by the next: the bias added, then one activation.
  const Value* current = anchor.result(0);
  for (const auto& n : body->nodes()) {
    if (n.get() == &anchor) continue;
    if (current->users().size() != 1 || current->users()[0] != n.get()) return std::nullopt;
    if (n->opName() == "add" && !bias && epilogue.activation == Activation::kNone) {
      const Value* other = n->operand(0) == current ? n->operand(1) : n->operand(0);
      bias = biasOperand(other);
      if (!bias || n->result()->type() != current->type()) return std::nullopt;
    } else if (n->opName() == "relu" && bias && epilogue.activation == Activation::kNone) {
      epilogue.activation = Activation::kRelu;
    } else if (n->opName() == "gelu" && bias && epilogue.activation == Activation::kNone &&
               attr<std::string>(*n, "approximate") == "tanh") {
      epilogue.activation = Activation::kGeluTanh;
    } else {
      return std::nullopt;
    }
    current = n->result();
  }
  if (!bias || body->outputs()[0].value != current) return std::nullopt;
  epilogue.bias = *bias;
  return epilogue;
}

}  // namespace smelt

// canonicalize: exact algebraic rewrites, one pattern row each, applied until none fires:
//   %1 = mul(%x, %one) : f32[4]                 (%one a constant of ones)
//   %2 = neg(%1) : f32[4]             ->        return y = %x
//   %3 = neg(%2) : f32[4]
//   return y = %3
// Every rewrite gives the same result bits as the reference interpreter for every input (NaN and
// signed zero included), so float rewrites that are only "mathematically" equal (x+0.0, x*0, x-x,
// log(exp x)) are left out; docs/passes.md lists them and why. Replaced nodes are left dead for dce.
#include "ir/builder.h"
#include "passes/passes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>

namespace smelt {
namespace {

/// The largest zeros tensor a rewrite materializes as a plain constant; larger ones are expanded.
constexpr int64_t kMaxConstantElements = int64_t{1} << 16;
/// The most operands one concat keeps; more are split into a tree of concats.
constexpr size_t kMaxConcatOperands = 32;

const std::vector<int64_t>& ints(const Node& node, std::string_view attr) {
  return std::get<std::vector<int64_t>>(node.attrs().find(attr)->second);
}

bool isView(const Node* node) {
  if (!node) return false;
  const std::string& op = node->opName();
  return op == "reshape" || op == "flatten" || op == "squeeze" || op == "unsqueeze";
}

/// The transpose node producing `v` when it swaps the two dims of a 2-D tensor, else null.
const Node* transposed2d(const Value* v) {
  const Node* p = v->producer();
  if (!p || p->opName() != "transpose" || v->type().rank() != 2) return nullptr;
  return ints(*p, "perm") == std::vector<int64_t>{1, 0} ? p : nullptr;
}

/// The single value every element of `v` holds, when `v` is a constant (possibly broadcast or
/// reshaped) whose elements are all bitwise equal. Signed zeros stay distinct (signbit).
std::optional<double> splatValue(const Value* v) {
  while (v->producer() && (v->producer()->opName() == "expand" || isView(v->producer()))) v = v->producer()->operand(0);
  const Node* producer = v->producer();
  if (!producer || producer->opName() != "constant") return std::nullopt;
  const Tensor& t = std::get<Tensor>(producer->attrs().find("value")->second);
  if (t.numel() == 0) return std::nullopt;
  size_t width = t.byteSize() / static_cast<size_t>(t.numel());
  for (int64_t i = 1; i < t.numel(); ++i)
    if (std::memcmp(t.raw(), t.raw() + i * width, width) != 0) return std::nullopt;
  return t.getDouble(0);
}

bool isOne(const Value* v) { return splatValue(v) == 1.0; }
/// Any zero (+0 or -0; integers have only one).
bool isZero(const Value* v) { return splatValue(v) == 0.0; }
bool isPositiveZero(const Value* v) {
  auto s = splatValue(v);
  return s && *s == 0.0 && !std::signbit(*s);
}
bool isNegativeZero(const Value* v) {
  auto s = splatValue(v);
  return s && *s == 0.0 && std::signbit(*s);
}

/// Where rewrites emit their replacements: right before the node they replace.
struct Rewriter {
  Graph& graph;
  Node& node;
  // Replacements keep the replaced node's provenance ("grad of matmul %3", an ONNX node name).
  Builder b{graph, node.sourceName().empty() ? std::string("canonicalize") : node.sourceName()};

  Value* x(size_t i = 0) const { return node.operand(i); }
  const TensorType& resultType() const { return node.result()->type(); }
  /// `v` when it can stand for the node's result as is: broadcasting must not change shape or dtype.
  Value* ifSameType(Value* v) const { return v->type() == resultType() ? v : nullptr; }
  bool integer() const { return isInteger(resultType().dtype); }
  /// Zeros of the result type: a constant when small, otherwise a scalar expanded.
  Value* zeros() {
    if (resultType().numel() <= kMaxConstantElements) return graph.constant(Tensor(resultType()));
    return b.full(0.0, resultType());
  }
};

using RewriteFn = Value* (*)(Rewriter& r);

/// One algebraic rewrite: the op it matches, what it does, and the rewrite (null: no match).
struct Pattern {
  std::string_view op;
  std::string_view rule;
  RewriteFn rewrite;
};

/// Resolves a transpose's perm (empty reverses; negative entries count from the end).
std::vector<int64_t> permOf(const Node& node) {
  int64_t rank = node.operand(0)->type().rank();
  std::vector<int64_t> perm = ints(node, "perm");
  if (perm.empty()) {
    perm.resize(static_cast<size_t>(rank));
    std::iota(perm.rbegin(), perm.rend(), int64_t{0});
  }
  for (int64_t& p : perm) p = p < 0 ? p + rank : p;
  return perm;
}

bool isIdentityPerm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// The rows. Each comment is the rewrite; integer-only rows say why floats are excluded.
const Pattern kPatterns[] = {
    // x*1 -> x, 1*x -> x (exact: multiplying by one in double and rounding back returns x)
    {"mul", "x*1 -> x", [](Rewriter& r) { return isOne(r.x(1)) ? r.ifSameType(r.x(0)) : nullptr; }},
    {"mul", "1*x -> x", [](Rewriter& r) { return isOne(r.x(0)) ? r.ifSameType(r.x(1)) : nullptr; }},
    // x*0 -> 0, 0*x -> 0 for integers only (floats: NaN*0 and inf*0 are NaN, -x*0 is -0)
    {"mul", "x*0 -> 0 (integers)",
     [](Rewriter& r) { return r.integer() && (isZero(r.x(0)) || isZero(r.x(1))) ? r.zeros() : nullptr; }},
    // x+0 -> x, 0+x -> x: any zero for integers, only -0 for floats (-0 + +0 is +0)
    {"add", "x+0 -> x",
     [](Rewriter& r) {
       return (r.integer() ? isZero(r.x(1)) : isNegativeZero(r.x(1))) ? r.ifSameType(r.x(0)) : nullptr;
     }},
    {"add", "0+x -> x",
     [](Rewriter& r) {
       return (r.integer() ? isZero(r.x(0)) : isNegativeZero(r.x(0))) ? r.ifSameType(r.x(1)) : nullptr;
     }},
    // x-0 -> x: any zero for integers, only +0 for floats (-0 - -0 is +0)
    {"sub", "x-0 -> x",
     [](Rewriter& r) {
       return (r.integer() ? isZero(r.x(1)) : isPositiveZero(r.x(1))) ? r.ifSameType(r.x(0)) : nullptr;
     }},
    // x-x -> 0 for integers only (floats: inf-inf and NaN-NaN are NaN)
    {"sub", "x-x -> 0 (integers)", [](Rewriter& r) { return r.integer() && r.x(0) == r.x(1) ? r.zeros() : nullptr; }},
    // x/1 -> x
    {"div", "x/1 -> x", [](Rewriter& r) { return isOne(r.x(1)) ? r.ifSameType(r.x(0)) : nullptr; }},
    // neg(neg x) -> x (sign flips twice; integers wrap back, INT_MIN included)
    {"neg", "neg(neg x) -> x",
     [](Rewriter& r) -> Value* {
       const Node* inner = r.x()->producer();
       return inner && inner->opName() == "neg" ? inner->operand(0) : nullptr;
     }},
    // transpose(x) with the identity perm -> x
    {"transpose", "transpose(x, identity) -> x",
     [](Rewriter& r) { return isIdentityPerm(permOf(r.node)) ? r.x() : nullptr; }},
    // transpose(transpose(x, p), q) -> transpose(x, p∘q), or x when that is the identity
    {"transpose", "transpose(transpose x) -> transpose x",
     [](Rewriter& r) -> Value* {
       const Node* inner = r.x()->producer();
       if (!inner || inner->opName() != "transpose") return nullptr;
       std::vector<int64_t> p = permOf(*inner), q = permOf(r.node), composed;
       for (int64_t j : q) composed.push_back(p[static_cast<size_t>(j)]);  // dim j reads x's p[q[j]]
       if (isIdentityPerm(composed)) return inner->operand(0);
       return r.b.transpose(inner->operand(0), composed);
     }},
    // matmul(transpose a, b) -> gemm(a, b) {trans_a = 1}, and likewise for b (2-D only): the backward
    // of every linear layer transposes its operands, and gemm reads them transposed in place of a
    // transpose kernel. Exact: gemm with alpha 1 and no c accumulates in the same order as matmul.
    {"matmul", "matmul(transpose a, b) -> gemm(a, b) {trans}",
     [](Rewriter& r) -> Value* {
       const Node* ta = transposed2d(r.x(0));
       const Node* tb = transposed2d(r.x(1));
       if ((!ta && !tb) || r.x(0)->type().rank() != 2 || r.x(1)->type().rank() != 2) return nullptr;
       return r.b.op("gemm", {ta ? ta->operand(0) : r.x(0), tb ? tb->operand(0) : r.x(1)},
                     {{"trans_a", int64_t{ta != nullptr}}, {"trans_b", int64_t{tb != nullptr}}});
     }},
    // gemm(transpose a, b) {trans_a = t} -> gemm(a, b) {trans_a = 1 - t}, and likewise for b
    {"gemm", "gemm(transpose a) -> gemm(a) {trans flipped}",
     [](Rewriter& r) -> Value* {
       const Node* ta = transposed2d(r.x(0));
       const Node* tb = transposed2d(r.x(1));
       if (!ta && !tb) return nullptr;
       AttrMap attrs = r.node.attrs();
       std::vector<Value*> operands = r.node.operands();
       if (ta) {
         operands[0] = ta->operand(0);
         attrs["trans_a"] = 1 - std::get<int64_t>(attrs.at("trans_a"));
       }
       if (tb) {
         operands[1] = tb->operand(0);
         attrs["trans_b"] = 1 - std::get<int64_t>(attrs.at("trans_b"));
       }
       return r.b.op("gemm", std::move(operands), std::move(attrs));
     }},
    // reshape/flatten/squeeze/unsqueeze to x's own shape -> x (row-major: same bytes)
    {"reshape", "reshape(x) to x's shape -> x", [](Rewriter& r) { return r.ifSameType(r.x()); }},
    {"flatten", "flatten(x) to x's shape -> x", [](Rewriter& r) { return r.ifSameType(r.x()); }},
    {"squeeze", "squeeze(x) to x's shape -> x", [](Rewriter& r) { return r.ifSameType(r.x()); }},
    {"unsqueeze", "unsqueeze(x) to x's shape -> x", [](Rewriter& r) { return r.ifSameType(r.x()); }},
    // view(view x) -> reshape x: chains of reshape/flatten/squeeze/unsqueeze only relabel dims, so a
    // cancelling squeeze/unsqueeze pair becomes a same-shape reshape, which the rows above remove
    {"reshape", "reshape(view x) -> reshape x",
     [](Rewriter& r) { return isView(r.x()->producer()) ? r.b.reshape(r.x()->producer()->operand(0), r.resultType().shape) : nullptr; }},
    {"flatten", "flatten(view x) -> reshape x",
     [](Rewriter& r) { return isView(r.x()->producer()) ? r.b.reshape(r.x()->producer()->operand(0), r.resultType().shape) : nullptr; }},
    {"squeeze", "squeeze(view x) -> reshape x",
     [](Rewriter& r) { return isView(r.x()->producer()) ? r.b.reshape(r.x()->producer()->operand(0), r.resultType().shape) : nullptr; }},
    {"unsqueeze", "unsqueeze(view x) -> reshape x",
     [](Rewriter& r) { return isView(r.x()->producer()) ? r.b.reshape(r.x()->producer()->operand(0), r.resultType().shape) : nullptr; }},
    // expand(x) to x's own shape -> x
    {"expand", "expand(x) to x's shape -> x", [](Rewriter& r) { return r.ifSameType(r.x()); }},
    // cast(x) to x's dtype -> x
    {"cast", "cast(x) to x's dtype -> x", [](Rewriter& r) { return r.ifSameType(r.x()); }},
    // concat(x) -> x
    {"concat", "concat(x) -> x", [](Rewriter& r) { return r.node.numOperands() == 1 ? r.x() : nullptr; }},
    // A concat of many operands becomes a tree of concats of at most kMaxConcatOperands each: one
    // kernel selects among its operands per element, so a 5,000-way concat was a 5,000-deep chain that
    // took LLVM seconds to compile and read every operand for every element.
    {"concat", "concat of more than 32 operands -> concat of concats of at most 32",
     [](Rewriter& r) -> Value* {
       size_t n = r.node.numOperands();
       if (n <= kMaxConcatOperands) return nullptr;
       int64_t axis = std::get<int64_t>(r.node.attrs().find("axis")->second);
       std::vector<Value*> groups;
       for (size_t i = 0; i < n; i += kMaxConcatOperands) {
         std::vector<Value*> part(r.node.operands().begin() + static_cast<std::ptrdiff_t>(i),
                                  r.node.operands().begin() + static_cast<std::ptrdiff_t>(std::min(n, i + kMaxConcatOperands)));
         groups.push_back(part.size() == 1 ? part[0] : r.b.op("concat", part, {{"axis", axis}}));
       }
       return r.b.op("concat", groups, {{"axis", axis}});
     }},
    // slice(x) keeping every element in order -> x: same shape with positive steps is the identity
    {"slice", "slice(x) whole -> x",
     [](Rewriter& r) -> Value* {
       const auto& steps = ints(r.node, "steps");
       bool forward = std::all_of(steps.begin(), steps.end(), [](int64_t s) { return s > 0; });
       return forward ? r.ifSameType(r.x()) : nullptr;
     }},
    // pad(x) with all pads 0 -> x (any mode)
    {"pad", "pad(x, 0) -> x",
     [](Rewriter& r) {
       const auto& pads = ints(r.node, "pads");
       bool none = std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
       return none ? r.ifSameType(r.x()) : nullptr;
     }},
};

/// True when `v` is used by a node or is a graph output.
bool isLive(const Graph& graph, const Value* v) {
  if (!v->users().empty()) return true;
  return std::any_of(graph.outputs().begin(), graph.outputs().end(),
                     [&](const GraphOutput& out) { return out.value == v; });
}

/// Applies the pattern rows until none fires.
class Canonicalize final : public Pass {
 public:
  std::string_view name() const override { return "canonicalize"; }
  std::string_view summary() const override { return "exact algebraic simplifications (x*1 -> x, ...)"; }

  Expected<bool> run(Graph& graph, PassContext& context) override {
    bool changed = false;
    // Every row removes a node or replaces two with one, so sweeps end; the cap guards a bad row.
    for (int sweep = 0; sweep < 64; ++sweep) {
      bool fired = false;
      std::vector<Node*> order;
      for (const auto& node : graph.nodes()) order.push_back(node.get());
      for (Node* node : order) {
        // Replaced nodes stay (dead) until dce; skipping them keeps the sweep from refiring on them.
        if (node->results().size() != 1 || !isLive(graph, node->result())) continue;
        for (const Pattern& pattern : kPatterns) {
          if (pattern.op != node->opName()) continue;
          graph.setInsertionPoint(node);
          Rewriter rewriter{graph, *node};
          Value* replacement = pattern.rewrite(rewriter);
          graph.clearInsertionPoint();
          if (!rewriter.b.ok()) return Error(graph.labelOf(*node) + ": canonicalize '" + std::string(pattern.rule) +
                                             "' failed: " + rewriter.b.status().error().message());
          if (!replacement || replacement == node->result()) continue;
          graph.replaceAllUsesWith(node->result(), replacement);
          context.count(pattern.rule);
          fired = true;
          break;
        }
      }
      if (!fired) break;
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createCanonicalize() { return std::make_unique<Canonicalize>(); }

}  // namespace smelt

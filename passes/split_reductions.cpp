// split-reductions: a reduction of many elements into few results runs in two deterministic stages,
// so its first stage has enough independent rows to fill a GPU's SMs (or a CPU's threads) instead of
// one block (one thread) walking everything. The reduced axes must be the trailing ones (a full
// reduction, or rows of a few long rows), viewed as [G, K/G] chunks, reduced per chunk, and the G
// partials reduced again:
//   %0 = reduce_sum(%x) : f32[]            ->   %0 = reshape(%g) {shape = [256, 4096]} : f32[256,4096]
//     (x: f32[1048576] = mul(%g, %g))            %1 = reshape(%g) {shape = [256, 4096]} : f32[256,4096]
//                                                %2 = mul(%0, %1) : f32[256,4096]
//                                                %3 = reduce_sum(%2) {axes = [1]} : f32[256]
//                                                %4 = reduce_sum(%3) {axes = [0]} : f32[]
// The view moves up through the elementwise ops that feed the reduction alone (their operands of the
// same shape are viewed instead, scalars stay), so fusion still computes the squares inside the first
// stage's kernel, reading the operands through a free view. Splitting applies when each result reduces
// at least kMinRow elements into at most kMaxResults results, K divides into G power-of-two chunks of at
// least kMinChunk, and G is at least 4. Sums, products, maxima and minima of every dtype split (integers
// stay exact: they wrap alike in any order); means of floats split (equal chunks: the mean of the
// chunks' means). Or the leading ones (columns: a bias gradient over a huge batch), viewed as [G, K/G,
// kept...], so the first stage runs G * (kept) column walks of K/G rows instead of (kept) walks of K:
//   %0 = reduce_sum(%x) {axes = [0]} : f32[16]  ->  %0 = reshape(%x) {shape = [128, 1024, 16]}
//     (x: f32[131072,16])                            %1 = reduce_sum(%0) {axes = [1]} : f32[128,16]
//                                                    %2 = reduce_sum(%1) {axes = [0]} : f32[16]
// The order of the additions changes, which is why it is a pass of its own: the graph before and after
// computes the same to within rounding, and the same on every run.
#include "ir/builder.h"
#include "passes/passes.h"

#include <algorithm>
#include <bit>
#include <unordered_map>

namespace smelt {

namespace {

/// A result reducing fewer elements than this is left alone: one block (thread) is quick enough.
constexpr int64_t kMinRow = int64_t{1} << 15;
/// Reductions with more results than this already have parallel rows.
constexpr int64_t kMaxResults = 1024;
/// The first stage aims at this many rows (two per SM of a 132-SM GPU)...
constexpr int64_t kTargetRows = 256;
/// ...each of at least this many elements.
constexpr int64_t kMinChunk = 4096;
/// A column reduction's first stage aims at this many column walks (a thread each on a GPU)...
constexpr int64_t kTargetColumns = 32768;
/// ...each of at least this many rows.
constexpr int64_t kMinColumnChunk = 256;
/// Elementwise producers a view moves through, at most (a longer chain keeps its view at this depth).
constexpr int kMaxSinkDepth = 16;

bool splittable(const Node& node) {
  const std::string& name = node.opName();
  if (name != "reduce_sum" && name != "reduce_prod" && name != "reduce_max" && name != "reduce_min" &&
      name != "reduce_mean") {
    return false;
  }
  const DType dtype = node.operand(0)->type().dtype;
  if (name == "reduce_mean") return dtype == DType::f32 || dtype == DType::f64;
  // f16/bf16 partials would be rounded to 16 bits between the stages.
  return dtype != DType::f16 && dtype != DType::bf16;
}

/// The reduced axes, sorted (an empty `axes` reduces all).
std::vector<int64_t> reducedAxes(const Node& node) {
  const int64_t rank = node.operand(0)->type().rank();
  std::vector<int64_t> axes;
  if (auto it = node.attrs().find("axes"); it != node.attrs().end()) axes = std::get<std::vector<int64_t>>(it->second);
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  return axes;
}

class SplitReductions final : public Pass {
 public:
  std::string_view name() const override { return "split-reductions"; }
  std::string_view summary() const override {
    return "Reductions of many elements into few results run in two stages over chunks";
  }
  Expected<bool> run(Graph& graph, PassContext& context) override {
    std::vector<Node*> candidates;
    for (const auto& node : graph.nodes()) {
      if (splittable(*node)) candidates.push_back(node.get());
    }
    bool changed = false;
    for (Node* node : candidates) {
      const Shape& shape = node->operand(0)->shape();
      const std::vector<int64_t> axes = reducedAxes(*node);
      const auto rank = static_cast<int64_t>(shape.size());
      // Trailing axes ([kept..., reduced...]) or leading ones ([reduced..., kept...]).
      const auto reduced = static_cast<int64_t>(axes.size());
      const int64_t kept = rank - reduced;
      bool trailing = true, leading = kept > 0;
      for (int64_t i = 0; i < reduced; ++i) {
        trailing = trailing && axes[static_cast<size_t>(i)] == kept + i;
        leading = leading && axes[static_cast<size_t>(i)] == i;
      }
      if ((!trailing && !leading) || axes.empty()) continue;
      int64_t results = 1, row = 1;
      for (int64_t d = 0; d < rank; ++d) {
        const bool isReduced = trailing ? d >= kept : d < reduced;
        (isReduced ? row : results) *= shape[static_cast<size_t>(d)];
      }
      if (row < kMinRow || results > kMaxResults || results == 0) continue;
      const int64_t target = trailing ? kTargetRows : kTargetColumns;
      const int64_t minChunk = trailing ? kMinChunk : kMinColumnChunk;
      int64_t parts = static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>((target + results - 1) / results)));
      while (parts > 1 && (row / parts < minChunk || row % parts != 0)) parts /= 2;
      if (parts < 4) continue;

      if (!viewable(graph, node->operand(0), 0)) continue;

      std::string label = graph.labelOf(*node);
      Builder b(graph, node->sourceName());
      graph.setInsertionPoint(node);
      // [kept..., G, K/G] (or [G, K/G, kept...]); with keepdims, 1 per reduced axis but one before
      // G, so that the second stage, keeping its axis, ends in the result's shape.
      const int64_t keepdims = node->result()->shape().size() == shape.size() ? 1 : 0;
      Shape chunked;
      if (trailing) chunked.assign(shape.begin(), shape.begin() + kept);
      if (keepdims) chunked.insert(chunked.end(), axes.size() - 1, 1);
      const auto chunks = static_cast<int64_t>(chunked.size());  // G's axis; K/G's is the next
      chunked.push_back(parts);
      chunked.push_back(row / parts);
      if (leading) chunked.insert(chunked.end(), shape.begin() + reduced, shape.end());
      views_.clear();
      Value* x = viewed(b, node->operand(0), chunked, 0);
      const std::string& op = node->opName();
      Value* partials = b.op(op, {x}, {{"axes", std::vector<int64_t>{chunks + 1}}, {"keepdims", int64_t{0}}});
      Value* total = b.op(op, {partials}, {{"axes", std::vector<int64_t>{chunks}}, {"keepdims", keepdims}});
      if (total->shape() != node->result()->shape()) {
        return makeError("splitting {}: the stages give {} instead of {}", label, total->type().toString(),
                         node->result()->type().toString());
      }
      graph.clearInsertionPoint();
      if (!b.ok()) return b.status().error().withContext(fmt::format("splitting {}", label));
      graph.replaceAllUsesWith(node->result(), total);
      context.count(fmt::format("{} split", op));
      changed = true;
    }
    if (changed) graph.removeDeadNodes();
    return changed;
  }

 private:
  /// Whether `v` is computed by an op that fusion would put in the reduction's kernel (an elementwise
  /// op or an expand that nothing else reads).
  static bool fusesIn(const Graph& graph, const Value* v) {
    const Node* producer = v->producer();
    if (!producer || producer->results().size() != 1 || v->users().size() != 1 || isGraphOutput(graph, v)) return false;
    return producer->op().fusion == FusionKind::Elementwise || producer->op().fusion == FusionKind::Broadcast;
  }
  /// Elementwise ops whose operands all have their result's shape (or are scalars): a view moves
  /// through them.
  static bool sinksThrough(const Node& producer) {
    if (producer.op().fusion != FusionKind::Elementwise) return false;
    for (const Value* o : producer.operands()) {
      if (o->shape() != producer.result()->shape() && !o->shape().empty()) return false;
    }
    return true;
  }
  /// Whether every view `viewed` makes of `v` lands on a value a kernel loads. A view of a value the
  /// reduction's kernel would compute (an elementwise op with a broadcast operand) would split the
  /// kernel in two and write that value out: then the reduction is left whole.
  static bool viewable(const Graph& graph, const Value* v, int depth) {
    if (!fusesIn(graph, v)) return true;
    if (depth >= kMaxSinkDepth || !sinksThrough(*v->producer())) return false;
    for (const Value* o : v->producer()->operands()) {
      if (!o->shape().empty() && !viewable(graph, o, depth + 1)) return false;
    }
    return true;
  }

  /// `v` viewed as `shape` (same element count and order): a reshape of `v`, or, when fusion would
  /// compute `v` in the reduction's kernel, its op rebuilt on views of its operands (see viewable).
  Value* viewed(Builder& b, Value* v, const Shape& shape, int depth) {
    if (auto it = views_.find(v); it != views_.end()) return it->second;  // mul(%g, %g): one view of g
    if (fusesIn(b.graph(), v)) {
      Node* producer = v->producer();
      std::vector<Value*> operands;
      for (Value* o : producer->operands()) operands.push_back(o->shape().empty() ? o : viewed(b, o, shape, depth + 1));
      return views_[v] = b.op(producer->opName(), std::move(operands), producer->attrs());
    }
    return views_[v] = b.reshape(v, shape);
  }

  static bool isGraphOutput(const Graph& graph, const Value* v) {
    for (const GraphOutput& o : graph.outputs()) {
      if (o.value == v) return true;
    }
    return false;
  }

  std::unordered_map<const Value*, Value*> views_;
};

}  // namespace

std::unique_ptr<Pass> createSplitReductions() { return std::make_unique<SplitReductions>(); }

}  // namespace smelt

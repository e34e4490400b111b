// fuse: outlines each fusion group (fusion_groups.h) into one `fused` node whose body holds the group's
// ops, so the graph lists kernels. Groups are then scheduled in dependency order, each kernel where its
// earliest member was as far as dependencies allow.
//   %0 = mul(%x, %x) : f32[8]           ->   %0 = fused(%x) {kind = "loop"} : f32[8] body = graph @fused(%p0: f32[8]) {
//   %1 = exp(%0) : f32[8]                       %0 = mul(%p0, %p0) : f32[8]
//   return y = %1                               %1 = exp(%0) : f32[8]
//                                               return r0 = %1
//                                             }
// Scalar constants are copied into the bodies that use them; other constants are operands.
#include "passes/fuse.h"

#include "ir/support/byte_count.h"
#include "passes/passes.h"
#include "passes/rematerialize.h"

#include <optional>
#include <queue>
#include <unordered_set>

namespace smelt {

namespace {

bool isScalarConstant(const Value* v) {
  return v->producer() && v->producer()->opName() == "constant" && v->type().numel() == 1;
}

class Outliner {
 public:
  Outliner(const Graph& graph, const FusionPlan& plan) : graph_(graph), plan_(plan), out_(graph.name()) {}

  Expected<Graph> run() {
    for (const GraphOutput& o : graph_.outputs()) graphOutputs_.insert(o.value);
    for (Value* v : graph_.inputs()) map_[v] = out_.addInput(v->name(), v->type());
    for (Value* v : graph_.parameters()) map_[v] = out_.addParameterLike(*v);
    SMELT_TRY(std::vector<size_t> order, schedule());
    size_t groups = plan_.groups.size();
    for (size_t unit : order) {
      if (unit < groups) {
        SMELT_CHECK_OK(emitGroup(plan_.groups[unit]));
      } else {
        SMELT_CHECK_OK(emitNode(*graph_.nodes()[unit - groups]));
      }
    }
    for (const GraphOutput& o : graph_.outputs()) out_.addOutput(o.name, map_.at(o.value));
    out_.removeDeadNodes();
    return std::move(out_);
  }

  /// Fills the maps of FusedGraph (valid after run()).
  void describeOrigins(FusedGraph& fused) const {
    for (const auto& [source, value] : map_) {
      if (value->kind() == ValueKind::Result) fused.sourceOf[value] = source;
    }
    for (const auto& [source, node] : kernels_) fused.kernelOf[source] = node;
  }

 private:
  size_t unitOf(const Node* node, const std::unordered_map<const Node*, size_t>& positions) const {
    auto it = plan_.groupOf.find(node);
    return it != plan_.groupOf.end() ? it->second : plan_.groups.size() + positions.at(node);
  }

  /// Units (groups, then lone nodes) in dependency order; among ready units the one whose first node
  /// came earliest goes first, so the schedule stays close to the original order.
  Expected<std::vector<size_t>> schedule() const {
    size_t groups = plan_.groups.size();
    size_t units = groups + graph_.numNodes();
    std::unordered_map<const Node*, size_t> positions;
    for (size_t i = 0; i < graph_.numNodes(); ++i) positions[graph_.nodes()[i].get()] = i;
    std::vector<size_t> firstPosition(units, SIZE_MAX), pending(units, 0);
    std::vector<char> exists(units, 0);
    std::vector<std::vector<size_t>> successors(units);
    std::unordered_set<uint64_t> edges;
    for (size_t i = 0; i < graph_.numNodes(); ++i) {
      const Node* node = graph_.nodes()[i].get();
      size_t u = unitOf(node, positions);
      exists[u] = 1;
      firstPosition[u] = std::min(firstPosition[u], i);
      for (const Value* o : node->operands()) {
        if (!o->producer()) continue;
        size_t p = unitOf(o->producer(), positions);
        if (p == u || !edges.insert(static_cast<uint64_t>(p) * units + u).second) continue;
        successors[p].push_back(u);
        ++pending[u];
      }
    }
    // A constant goes where its first reader goes, not where it was built: the optimizer's constants come
    // at the end of a training graph, and a weight gradient's kernel (its update in the epilogue) waiting
    // for one ran after the whole backward pass, keeping every activation it reads alive to the end.
    for (size_t i = 0; i < graph_.numNodes(); ++i) {
      const Node* node = graph_.nodes()[i].get();
      if (node->opName() != "constant") continue;
      size_t c = unitOf(node, positions);
      for (const Value* r : node->results()) {
        for (const Node* user : r->users()) {
          firstPosition[c] = std::min(firstPosition[c], firstPosition[unitOf(user, positions)]);
        }
      }
    }
    using Entry = std::pair<size_t, size_t>;  // (first position, unit)
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
    size_t total = 0;
    for (size_t u = 0; u < units; ++u) {
      if (!exists[u]) continue;
      ++total;
      if (pending[u] == 0) ready.push({firstPosition[u], u});
    }
    std::vector<size_t> order;
    while (!ready.empty()) {
      size_t u = ready.top().second;
      ready.pop();
      order.push_back(u);
      for (size_t s : successors[u]) {
        if (--pending[s] == 0) ready.push({firstPosition[s], s});
      }
    }
    // The planner never merges across a path through another kernel, so this is a bug, not bad input.
    if (order.size() != total) return makeError("fusion groups form a cycle ({} of {} kernels scheduled)", order.size(), total);
    return order;
  }

  Status emitNode(const Node& node) {
    std::vector<Value*> operands;
    for (const Value* o : node.operands()) operands.push_back(map_.at(o));
    SMELT_TRY(Node * copy, out_.addNode(node.opName(), std::move(operands), node.attrs(), node.sourceName()));
    for (size_t i = 0; i < node.results().size(); ++i) map_[node.result(i)] = copy->result(i);
    kernels_[&node] = copy;
    return Status::success();
  }

  Status emitGroup(const FusionGroup& group) {
    std::unordered_set<const Node*> members(group.members.begin(), group.members.end());
    auto body = std::make_shared<Graph>("fused");
    std::unordered_map<const Value*, Value*> inner;
    std::vector<Value*> operands;
    for (const Node* m : group.members) {
      std::vector<Value*> args;
      for (const Value* o : m->operands()) {
        auto it = inner.find(o);
        if (it == inner.end()) {
          Value* v = nullptr;
          if (isScalarConstant(o)) {
            const Node& c = *o->producer();
            SMELT_TRY(Node * copy, body->addNode("constant", {}, c.attrs(), c.sourceName()));
            v = copy->result();
          } else {
            v = body->addInput(fmt::format("p{}", operands.size()), o->type());
          }
          if (v->kind() == ValueKind::Input) operands.push_back(map_.at(o));
          it = inner.emplace(o, v).first;
        }
        args.push_back(it->second);
      }
      SMELT_TRY(Node * copy, body->addNode(m->opName(), std::move(args), m->attrs(), m->sourceName()));
      for (size_t i = 0; i < m->results().size(); ++i) inner[m->result(i)] = copy->result(i);
    }
    // Results leave the kernel when something outside reads them or the graph returns them.
    std::vector<const Value*> escaping;
    for (const Node* m : group.members) {
      for (const Value* r : m->results()) {
        bool used = graphOutputs_.count(r) > 0;
        for (const Node* user : r->users()) used = used || !members.count(user);
        if (used) {
          body->addOutput(fmt::format("r{}", escaping.size()), inner.at(r));
          escaping.push_back(r);
        }
      }
    }
    if (escaping.empty()) return Status::success();  // a dead group; dce would have removed it
    AttrMap attrs{{"kind", std::string(kernelKindName(group.kind))}, {"body", GraphRef(std::move(body))}};
    SMELT_TRY(Node * fused, out_.addNode("fused", std::move(operands), std::move(attrs)));
    for (size_t i = 0; i < escaping.size(); ++i) map_[escaping[i]] = fused->result(i);
    for (const Node* m : group.members) kernels_[m] = fused;
    return Status::success();
  }

  const Graph& graph_;
  const FusionPlan& plan_;
  Graph out_;
  std::unordered_map<const Value*, Value*> map_;
  std::unordered_set<const Value*> graphOutputs_;
  std::unordered_map<const Node*, const Node*> kernels_;
};

int64_t countKernelNodes(const Graph& graph) {
  int64_t kernels = 0;
  for (const auto& node : graph.nodes()) kernels += node->opName() != "constant";
  return kernels;
}

class Fuse final : public Pass {
 public:
  std::string_view name() const override { return "fuse"; }
  std::string_view summary() const override {
    return "Groups elementwise chains, reductions with their producers and consumers, and matmul/conv "
           "epilogues into fused kernels; with memory-budget=BYTES, first recomputes forward values in the "
           "backward pass until the planned peak fits (rematerialize.h)";
  }
  Status setOption(std::string_view key, std::string_view value) override {
    if (key != "memory-budget") return Pass::setOption(key, value);
    SMELT_TRY(int64_t bytes, parseByteCount(value));
    budget_ = bytes;
    return Status::success();
  }
  Expected<bool> run(Graph& graph, PassContext& context) override {
    if (budget_) {
      SMELT_TRY(RematReport report, fuseWithinBudget(graph, *budget_));
      context.count("peak bytes before", report.peakBefore);
      context.count("peak bytes", report.peakAfter);
      context.count("recomputed nodes", report.recomputedNodes);
      context.count("recomputed flops", report.recomputedFlops);
      return true;
    }
    // Dead ops would otherwise be grouped into kernel bodies, where nothing removes them.
    bool removed = graph.removeDeadNodes() > 0;
    FusionPlan plan = planFusion(graph);
    if (plan.groups.empty()) return removed;
    int64_t before = countKernelNodes(graph);
    SMELT_TRY(Graph fused, Outliner(graph, plan).run());
    graph = std::move(fused);
    context.count("kernels before", before);
    context.count("kernels after", countKernelNodes(graph));
    context.count("fused kernels", static_cast<int64_t>(plan.groups.size()));
    return true;
  }

 private:
  std::optional<int64_t> budget_;
};

}  // namespace

Expected<FusedGraph> fuseGraph(const Graph& graph, const FusionOptions& options) {
  FusionPlan plan = planFusion(graph, options);
  Outliner outliner(graph, plan);
  SMELT_TRY(Graph fusedGraph, outliner.run());
  FusedGraph fused{std::move(fusedGraph), {}, {}};
  outliner.describeOrigins(fused);
  return fused;
}

std::unique_ptr<Pass> createFuse() { return std::make_unique<Fuse>(); }

}  // namespace smelt

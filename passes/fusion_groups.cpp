// Fusion analysis (see fusion_groups.h): start with one group per fusible node, then merge groups along
// producer-consumer edges while the merged group still has one domain, every op in it computes at the
// full or reduced level of that domain, and no path leaves and re-enters it.
#include "passes/fusion_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_set>

namespace smelt {

std::string_view kernelKindName(KernelKind kind) {
  switch (kind) {
    case KernelKind::Loop: return "loop";
    case KernelKind::Reduce: return "reduce";
    case KernelKind::Epilogue: return "epilogue";
  }
  return "?";
}

namespace {

/// What a node can be inside a kernel.
enum class Role {
  None,       // runs alone: constants, opaque ops, data movement that is not a view
  Pointwise,  // elementwise ops: one result element from the operands' elements at the same index
  Broadcast,  // expand
  View,       // reshape, flatten, squeeze, unsqueeze, transpose, slice: an indexed load of an operand
  Reduction,  // reduce_* and the global pools
  Anchor,     // an op with a product facet (matmul, gemm, conv): the head of an epilogue kernel
};

bool isOneOf(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The role an op declares in its registry entry (OpDef::fusion, OpDef::product).
Role roleOf(const Node& node) {
  const std::string& name = node.opName();
  if (name == "constant" || name == "fused") return Role::None;
  if (node.op().product) return Role::Anchor;
  switch (node.op().fusion) {
    case FusionKind::Elementwise: return Role::Pointwise;
    case FusionKind::Broadcast: return Role::Broadcast;
    case FusionKind::View: return Role::View;
    case FusionKind::Reduction:
      if (name.starts_with("reduce_") || name == "global_avg_pool2d" || name == "global_max_pool2d") {
        return Role::Reduction;
      }
      return Role::None;
    default: return Role::None;
  }
}

/// The reduced axes of a Reduction node, sorted and non-negative (an empty `axes` reduces all).
std::vector<int64_t> reducedAxes(const Node& node) {
  int64_t rank = node.operand(0)->type().rank();
  if (node.opName().starts_with("global_")) return {2, 3};
  std::vector<int64_t> axes;
  auto it = node.attrs().find("axes");
  if (it != node.attrs().end()) {
    for (int64_t a : std::get<std::vector<int64_t>>(it->second)) axes.push_back(a < 0 ? a + rank : a);
  }
  if (axes.empty()) {
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

bool isReduced(const std::vector<int64_t>& axes, size_t d) {
  return std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
}

/// S with the reduced axes kept as 1s, and dropped.
Shape keptShape(const KernelDomain& domain) {
  Shape s = domain.shape;
  for (int64_t a : domain.axes) s[static_cast<size_t>(a)] = 1;
  return s;
}
Shape droppedShape(const KernelDomain& domain) {
  Shape s;
  for (size_t d = 0; d < domain.shape.size(); ++d) {
    if (!isReduced(domain.axes, d)) s.push_back(domain.shape[d]);
  }
  return s;
}

bool isReducedLevel(const KernelDomain& domain, const Shape& shape) {
  return !domain.axes.empty() && (shape == keptShape(domain) || shape == droppedShape(domain));
}

/// True when a value of `shape` read by a full-level op broadcasts along exactly the reduced axes
/// (numpy rules, right-aligned): it is a reduced-level value read once per row, not a value that would
/// have to be recomputed or gathered across rows.
bool broadcastsAlongReducedAxes(const KernelDomain& domain, const Shape& shape) {
  const Shape& s = domain.shape;
  if (shape.size() > s.size()) return false;
  size_t pad = s.size() - shape.size();
  for (size_t d = 0; d < s.size(); ++d) {
    int64_t extent = d < pad ? 1 : shape[d - pad];
    if (extent == s[d]) continue;
    if (extent != 1 || !isReduced(domain.axes, d)) return false;
  }
  return true;
}

/// True when `shape` broadcasts into `target` by numpy rules (right-aligned, each dim equal or 1).
bool broadcastsInto(const Shape& shape, const Shape& target) {
  if (shape.size() > target.size()) return false;
  size_t pad = target.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != 1 && shape[d] != target[d + pad]) return false;
  }
  return true;
}

/// Views that keep elements in row-major order (they only relabel dims).
bool preservesOrder(const Node& node) {
  return isOneOf(node.opName(), {"reshape", "flatten", "squeeze", "unsqueeze"});
}

struct Group {
  KernelKind kind = KernelKind::Loop;
  KernelDomain domain;
  const Node* anchor = nullptr;
  std::vector<const Node*> members;
  bool alive = true;
};

/// The most buffers a fused kernel reads. Devices bound a kernel's parameters (OpenCL guarantees
/// 1 KiB, 128 pointers; CUDA 4 KiB), and a kernel selecting among many operands per element (a
/// concat tree) would otherwise merge back into one deep chain.
constexpr size_t kMaxKernelOperands = 64;

size_t externalOperands(const Group& g) {
  std::unordered_set<const Node*> inside(g.members.begin(), g.members.end());
  std::unordered_set<const Value*> read;
  for (const Node* m : g.members) {
    for (const Value* o : m->operands()) {
      if (!o->producer() || !inside.count(o->producer())) read.insert(o);
    }
  }
  return read.size();
}

bool onlyViews(const Group& g) {
  for (const Node* m : g.members) {
    Role role = roleOf(*m);
    if (role != Role::View && role != Role::Broadcast) return false;
  }
  return true;
}

/// The domain of two groups together, or none when they cannot share a kernel.
std::optional<Group> mergedShape(const Group& a, const Group& b) {
  Group g;
  // Views and expands alone are loads: they join any kernel whose domain their shape broadcasts into
  // (membersFit then checks they read only the kernel's operands and nothing outside needs them).
  for (auto [views, other] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    if (views->kind == KernelKind::Loop && onlyViews(*views) && !onlyViews(*other) &&
        broadcastsInto(views->domain.shape, other->domain.shape)) {
      g.kind = other->kind;
      g.domain = other->domain;
      g.anchor = other->anchor;
      return g;
    }
  }
  if (a.kind == KernelKind::Epilogue || b.kind == KernelKind::Epilogue) {
    const Group& epi = a.kind == KernelKind::Epilogue ? a : b;
    const Group& other = a.kind == KernelKind::Epilogue ? b : a;
    if (other.kind != KernelKind::Loop || other.domain.shape != epi.domain.shape) return std::nullopt;
    g.kind = KernelKind::Epilogue;
    g.domain = epi.domain;
    g.anchor = epi.anchor;
    return g;
  }
  if (a.domain.shape == b.domain.shape) {
    if (a.kind == KernelKind::Reduce && b.kind == KernelKind::Reduce && a.domain.axes != b.domain.axes) return std::nullopt;
    g.kind = a.kind == KernelKind::Reduce || b.kind == KernelKind::Reduce ? KernelKind::Reduce : KernelKind::Loop;
    g.domain = a.kind == KernelKind::Reduce ? a.domain : b.domain;
    return g;
  }
  // A loop at the reduced level of a reduction joins it: its ops then run once per row.
  const Group* reduce = a.kind == KernelKind::Reduce ? &a : b.kind == KernelKind::Reduce ? &b : nullptr;
  const Group* loop = reduce == &a ? &b : &a;
  if (!reduce || loop->kind != KernelKind::Loop || !isReducedLevel(reduce->domain, loop->domain.shape)) {
    return std::nullopt;
  }
  // Not after a reduction down columns (its innermost axis kept, as bias and weight-norm gradients
  // reduce): such a kernel walks memory a row apart per step, and the CPU's column tiling, which makes
  // it walk rows, needs each sum to go straight to an output. A loop joined at the reduced level (an
  // optimizer's update of the bias) would consume the sums in the kernel; as a kernel of its own it
  // costs one small launch.
  const KernelDomain& d = reduce->domain;
  if (!d.shape.empty() && !isReduced(d.axes, d.shape.size() - 1)) return std::nullopt;
  g.kind = KernelKind::Reduce;
  g.domain = reduce->domain;
  return g;
}

class Planner {
 public:
  Planner(const Graph& graph, const FusionOptions& options) : graph_(graph), options_(options) {
    for (size_t i = 0; i < graph.numNodes(); ++i) positions_[graph.nodes()[i].get()] = i;
    for (const GraphOutput& o : graph.outputs()) outputs_.insert(o.value);
  }

  FusionPlan run() {
    for (const auto& node : graph_.nodes()) addSingleton(*node);
    // Reductions take their elementwise producers first, so a sum of squares squares inside the
    // reduction instead of in a matmul's epilogue that writes the squares out; epilogues take what is
    // left. Within a phase, merging can enable more merges (a loop at the reduced level joins once its
    // reduction is in), so sweep the edges until nothing changes (each change removes a group).
    for (bool epilogues : {false, true}) {
      bool changed = true;
      while (changed) {
        changed = false;
        for (const auto& node : graph_.nodes()) {
          for (const Value* operand : node->operands()) {
            const Node* producer = operand->producer();
            if (producer && tryMerge(*producer, *node, epilogues)) changed = true;
          }
        }
      }
    }
    FusionPlan plan;
    for (Group& g : groups_) {
      if (!g.alive || g.members.size() < 2) continue;
      std::sort(g.members.begin(), g.members.end(),
                [](const Node* x, const Node* y) { return x->number() < y->number(); });
      for (const Node* m : g.members) plan.groupOf[m] = plan.groups.size();
      plan.groups.push_back({g.kind, g.domain, g.anchor, g.members});
    }
    return plan;
  }

 private:
  void addSingleton(const Node& node) {
    Role role = roleOf(node);
    if (role == Role::None) return;
    Group g;
    g.members = {&node};
    switch (role) {
      case Role::Reduction:
        g.kind = KernelKind::Reduce;
        g.domain = {node.operand(0)->shape(), reducedAxes(node)};
        break;
      case Role::Anchor:
        g.kind = KernelKind::Epilogue;
        g.domain = {node.result(0)->shape(), {}};
        g.anchor = &node;
        break;
      default:
        g.kind = KernelKind::Loop;
        g.domain = {node.result(0)->shape(), {}};
        break;
    }
    groupOf_[&node] = groups_.size();
    groups_.push_back(std::move(g));
  }

  bool tryMerge(const Node& producer, const Node& consumer, bool epilogues) {
    auto pi = groupOf_.find(&producer);
    auto ci = groupOf_.find(&consumer);
    if (pi == groupOf_.end() || ci == groupOf_.end() || pi->second == ci->second) return false;
    size_t a = pi->second, b = ci->second;
    bool involvesEpilogue = groups_[a].kind == KernelKind::Epilogue || groups_[b].kind == KernelKind::Epilogue;
    if (involvesEpilogue && !epilogues) return false;
    std::optional<Group> merged = mergedShape(groups_[a], groups_[b]);
    if (!merged) return false;
    merged->members = groups_[a].members;
    merged->members.insert(merged->members.end(), groups_[b].members.begin(), groups_[b].members.end());
    if (!keepsRecomputationLate(merged->members)) return false;
    if (waitsForComputedValues(groups_[a], groups_[b])) return false;
    if (!membersFit(*merged) || externalOperands(*merged) > kMaxKernelOperands || wouldCycle(a, b)) return false;
    for (const Node* m : groups_[b].members) groupOf_[m] = a;
    groups_[b].alive = false;
    groups_[b].members.clear();
    groups_[a] = std::move(*merged);
    return true;
  }

  /// True when `producer` reads only the graph's inputs, parameters and constants, other kernels read its
  /// results too, and `consumer` reads a value computed after it (in the graph's order): merged, it would wait
  /// for that value, and its other readers with it (a training step's check of its labels, which every update
  /// reads, merged into the update of a bias with as many elements as the batch, held every weight update to
  /// the end of the backward pass).
  bool waitsForComputedValues(const Group& producer, const Group& consumer) const {
    size_t last = 0;
    for (const Node* m : producer.members) last = std::max(last, positionOf(m));
    std::unordered_set<const Node*> inProducer(producer.members.begin(), producer.members.end());
    std::unordered_set<const Node*> inConsumer(consumer.members.begin(), consumer.members.end());
    auto computedOutside = [&](const Value* v, const std::unordered_set<const Node*>& inside) {
      const Node* p = v->producer();
      return p && !inside.count(p) && !inProducer.count(p) && p->opName() != "constant";
    };
    for (const Node* m : producer.members) {
      for (const Value* o : m->operands()) {
        if (computedOutside(o, inProducer)) return false;
      }
    }
    bool shared = false;
    for (const Node* m : producer.members) {
      for (const Value* r : m->results()) {
        for (const Node* user : r->users()) shared = shared || (!inProducer.count(user) && !inConsumer.count(user));
      }
    }
    if (!shared) return false;
    for (const Node* m : consumer.members) {
      for (const Value* o : m->operands()) {
        if (computedOutside(o, inConsumer) && positionOf(o->producer()) > last) return true;
      }
    }
    return false;
  }

  /// No member is placed before the recomputation of a recomputed member (FusionOptions::recomputedAt).
  bool keepsRecomputationLate(const std::vector<const Node*>& members) const {
    if (options_.recomputedAt.empty()) return true;
    size_t earliest = SIZE_MAX, latestStart = 0;
    for (const Node* m : members) {
      earliest = std::min(earliest, positionOf(m));
      if (auto it = options_.recomputedAt.find(m); it != options_.recomputedAt.end()) {
        latestStart = std::max(latestStart, it->second);
      }
    }
    return earliest >= latestStart;
  }

  /// Every member computes at the full or reduced level of the merged domain and reads values of the
  /// group only in ways that need no recomputation.
  bool membersFit(const Group& g) const {
    std::unordered_set<const Node*> inside(g.members.begin(), g.members.end());
    auto internal = [&](const Value* v) { return v->producer() && inside.count(v->producer()); };
    // A view or expand of the kernel's operands is an indexed load: free, at any shape that broadcasts
    // into the domain, as long as nothing outside needs it stored.
    auto isLoad = [&](const Node* n) {
      Role role = roleOf(*n);
      if (role != Role::View && role != Role::Broadcast) return false;
      for (const Value* o : n->operands()) {
        if (internal(o)) return false;
      }
      return true;
    };
    auto loaded = [&](const Value* v) { return internal(v) && isLoad(v->producer()); };
    const Shape& full = g.domain.shape;
    for (const Node* m : g.members) {
      Role role = roleOf(*m);
      if (role == Role::Anchor) {
        if (m != g.anchor) return false;
        for (const Value* o : m->operands()) {
          if (internal(o)) return false;  // an epilogue kernel runs its anchor first
        }
        continue;
      }
      if (role == Role::Reduction) {
        if (m->operand(0)->shape() != full || reducedAxes(*m) != g.domain.axes) return false;
        continue;
      }
      if (isLoad(m)) {
        for (const Value* r : m->results()) {
          if (r->shape() == full || isReducedLevel(g.domain, r->shape())) continue;
          if (!broadcastsInto(r->shape(), full) || escapes(*r, inside)) return false;
        }
        continue;
      }
      bool fullLevel = true;
      for (const Value* r : m->results()) {
        if (r->shape() == full) continue;
        if (!isReducedLevel(g.domain, r->shape())) return false;
        fullLevel = false;
      }
      // An epilogue kernel applies its ops to the anchor's result: full level only.
      if (!fullLevel && g.kind == KernelKind::Epilogue) return false;
      for (const Value* o : m->operands()) {
        if (!internal(o)) continue;
        if (loaded(o)) {
          if (!broadcastsInto(o->shape(), m->result(0)->shape())) return false;
          continue;
        }
        if (role == Role::View) {
          // Inside a kernel a view of computed values is free only when it relabels the dims of a
          // row's values without moving them (kept 1s <-> dropped): transposes and slices would read
          // other rows.
          if (fullLevel || !isReducedLevel(g.domain, o->shape()) || !preservesOrder(*m)) return false;
          continue;
        }
        if (fullLevel) {
          if (o->shape() != full && !broadcastsAlongReducedAxes(g.domain, o->shape())) return false;
        } else if (o->shape() != m->result(0)->shape()) {
          return false;
        }
      }
    }
    return true;
  }

  /// True when something outside `inside` reads `v` or the graph returns it.
  bool escapes(const Value& v, const std::unordered_set<const Node*>& inside) const {
    if (outputs_.count(&v)) return true;
    for (const Node* user : v.users()) {
      if (!inside.count(user)) return true;
    }
    return false;
  }

  /// True when some path from group a or b leaves both and reaches a or b again: merging would then
  /// make the kernel both feed and consume another kernel.
  bool wouldCycle(size_t a, size_t b) const {
    // Units are groups, then ungrouped nodes (slots past the groups).
    std::vector<char> seen(groups_.size() + graph_.numNodes(), 0);
    std::vector<size_t> stack;
    auto forEachSuccessor = [&](size_t unit, auto&& visit) {
      auto visitUsers = [&](const Node* m) {
        for (const Value* r : m->results()) {
          for (const Node* user : r->users()) {
            size_t s = unitOf(user);
            if (s != unit) visit(s);
          }
        }
      };
      if (unit < groups_.size()) {
        for (const Node* m : groups_[unit].members) visitUsers(m);
      } else {
        visitUsers(graph_.nodes()[unit - groups_.size()].get());
      }
    };
    // Direct edges between a and b are the merge itself; paths through other units are what count.
    auto start = [&](size_t s) {
      if (s == a || s == b || seen[s]) return;
      seen[s] = 1;
      stack.push_back(s);
    };
    forEachSuccessor(a, start);
    forEachSuccessor(b, start);
    bool cycle = false;
    while (!stack.empty() && !cycle) {
      size_t unit = stack.back();
      stack.pop_back();
      forEachSuccessor(unit, [&](size_t s) {
        if (s == a || s == b) cycle = true;
        else if (!seen[s]) {
          seen[s] = 1;
          stack.push_back(s);
        }
      });
    }
    return cycle;
  }

  /// The node's group, or a slot of its own past the groups for ungrouped nodes.
  size_t unitOf(const Node* node) const {
    auto it = groupOf_.find(node);
    if (it != groupOf_.end()) return it->second;
    return groups_.size() + positionOf(node);
  }

  size_t positionOf(const Node* node) const { return positions_.at(node); }

  const Graph& graph_;
  const FusionOptions& options_;
  std::vector<Group> groups_;
  std::unordered_map<const Node*, size_t> groupOf_;
  std::unordered_map<const Node*, size_t> positions_;
  std::unordered_set<const Value*> outputs_;
};

}  // namespace

FusionPlan planFusion(const Graph& graph, const FusionOptions& options) { return Planner(graph, options).run(); }

KernelSummary describeKernel(const Node& fused) {
  KernelSummary summary;
  if (fused.opName() != "fused") {
    // A lone op is a kernel of one op: a reduction over its input's domain, a matmul/conv (or other
    // opaque op) as an epilogue kernel with nothing after it, anything else a loop over its result.
    summary.ops = 1;
    if (roleOf(fused) == Role::Reduction) {
      summary.kind = KernelKind::Reduce;
      summary.domain = {fused.operand(0)->shape(), reducedAxes(fused)};
      return summary;
    }
    if (fused.op().fusion == FusionKind::Reduction) summary.kind = KernelKind::Reduce;
    else if (fused.op().fusion == FusionKind::Opaque) summary.kind = KernelKind::Epilogue;
    if (!fused.results().empty()) summary.domain.shape = fused.result(0)->shape();
    return summary;
  }
  auto bodyIt = fused.attrs().find("body");
  auto kindIt = fused.attrs().find("kind");
  if (bodyIt == fused.attrs().end() || kindIt == fused.attrs().end()) return summary;
  const GraphRef& body = std::get<GraphRef>(bodyIt->second);
  const std::string& kind = std::get<std::string>(kindIt->second);
  summary.kind = kind == "reduce" ? KernelKind::Reduce : kind == "epilogue" ? KernelKind::Epilogue : KernelKind::Loop;
  if (!body) return summary;
  for (const auto& node : body->nodes()) {
    if (node->opName() == "constant") continue;
    ++summary.ops;
    Role role = roleOf(*node);
    if (role == Role::Reduction && summary.domain.shape.empty() && summary.domain.axes.empty()) {
      summary.domain = {node->operand(0)->shape(), reducedAxes(*node)};
    } else if (role == Role::Anchor && summary.kind == KernelKind::Epilogue) {
      summary.domain = {node->result(0)->shape(), {}};
    }
  }
  if (summary.kind == KernelKind::Loop) {
    // The shape every full-level result has: the largest output.
    for (const GraphOutput& out : body->outputs()) {
      if (out.value->type().numel() >= TensorType{DType::f32, summary.domain.shape}.numel()) {
        summary.domain.shape = out.value->shape();
      }
    }
  }
  if (summary.kind != KernelKind::Reduce) return summary;
  // Stage of a value: how many dependent reductions it comes after. A reduction over inputs of stage k
  // runs in sweep k + 1; full-level results of stage k are written in sweep k + 1.
  std::unordered_map<const Value*, int64_t> stage;
  auto stageOf = [&](const Value* v) {
    auto it = stage.find(v);
    return it == stage.end() ? int64_t{0} : it->second;
  };
  int64_t sweeps = 0;
  for (const auto& node : body->nodes()) {
    int64_t s = 0;
    for (const Value* o : node->operands()) s = std::max(s, stageOf(o));
    if (roleOf(*node) == Role::Reduction) {
      sweeps = std::max(sweeps, s + 1);
      s += 1;
    }
    for (const Value* r : node->results()) stage[r] = s;
  }
  for (const GraphOutput& out : body->outputs()) {
    if (out.value->shape() == summary.domain.shape) sweeps = std::max(sweeps, stageOf(out.value) + 1);
  }
  summary.sweeps = std::max<int64_t>(sweeps, 1);
  return summary;
}

std::vector<std::string> kernelProvenance(const Graph& graph, const Node& node) {
  std::vector<std::string> from{graph.labelOf(node)};
  if (node.opName() != "fused") return from;
  const GraphRef& body = std::get<GraphRef>(node.attrs().at("body"));
  if (!body) return from;
  for (const auto& n : body->nodes()) {
    if (n->opName() == "constant") continue;
    std::string p = fmt::format("{} %{}", n->opName(), n->number());
    if (!n->sourceName().empty()) p += fmt::format(" ({})", n->sourceName());
    from.push_back(std::move(p));
  }
  return from;
}

}  // namespace smelt

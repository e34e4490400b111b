// Rematerialization to a memory budget (see rematerialize.h for the idea and the choice).
#include "passes/rematerialize.h"

#include "ir/support/byte_count.h"
#include "passes/fuse.h"
#include "passes/plan_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace smelt {

namespace {

// A recomputation pulls at most this many nodes back (elementwise chains are short; a longer one
// would recompute most of a layer stack through views and casts).
constexpr size_t kMaxChainNodes = 32;
// Candidates tried per step before giving up, and values considered at the peak (the largest).
constexpr size_t kTriesPerStep = 6;
constexpr size_t kValuesAtPeak = 48;
// Fused graphs evaluated in all: each is a fusion and a memory plan of the whole graph.
constexpr int kMaxEvaluations = 800;
// Buffers named in the error when no plan fits.
constexpr size_t kBuffersInError = 8;

int64_t alignedBytes(const Value* v) {
  int64_t bytes = static_cast<int64_t>(v->type().byteSize());
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

int64_t flopsOfNode(const Graph& graph, const Node& node) {
  std::vector<TensorType> operandTypes, resultTypes;
  for (const Value* o : node.operands()) operandTypes.push_back(o->type());
  for (const Value* r : node.results()) resultTypes.push_back(r->type());
  return flopsOf(OpCall(node.op(), graph.labelOf(node), operandTypes, node.attrs(), resultTypes));
}

// Whether a node may run twice with the same result: a kernel op (dropout is one: its mask is a hash
// of its seed and the element's index), never a collective.
bool recomputable(const Node& node) {
  return node.op().lower && !node.op().collective && node.opName() != "constant" && node.opName() != "fused";
}

// Elementwise, broadcast and data-movement ops: recomputing them costs about what storing did.
bool cheap(const Node& node) {
  switch (node.op().fusion) {
    case FusionKind::Elementwise:
    case FusionKind::Broadcast:
    case FusionKind::Injective:
    case FusionKind::View:
      return !node.op().product;
    default:
      return false;
  }
}

/// A fused graph of the current source graph, its memory plan, and the plan's live bytes over time.
struct Evaluation {
  FusedGraph fused;
  MemoryPlan plan;
  std::unordered_map<const Node*, int64_t> position;       // fused node -> schedule index
  std::unordered_map<const Value*, const Value*> fusedOf;  // source value -> fused result
  std::vector<int64_t> live;                               // bytes live at each schedule index
  int64_t peakAt = 0;                                      // an index where `live` is largest
  int64_t excess = 0;                                      // sum over indices of live bytes above the budget

  int64_t kernelPosition(const Node* source) const {
    auto kernel = fused.kernelOf.find(source);
    if (kernel == fused.kernelOf.end()) return -1;
    auto it = position.find(kernel->second);
    return it == position.end() ? -1 : it->second;
  }
  /// A lower peak of live bytes first; at the same peak (two points of the schedule at it), fewer bytes above
  /// the budget over the schedule; then a smaller arena (placement).
  bool betterThan(const Evaluation& other) const {
    int64_t mine = live[static_cast<size_t>(peakAt)], theirs = other.live[static_cast<size_t>(other.peakAt)];
    if (mine != theirs) return mine < theirs;
    return excess != other.excess ? excess < other.excess : plan.peakBytes < other.plan.peakBytes;
  }
};

Expected<Evaluation> evaluate(const Graph& graph, const FusionOptions& options, int64_t budget) {
  SMELT_TRY(FusedGraph fused, fuseGraph(graph, options));
  Evaluation e{std::move(fused), {}, {}, {}, {}, 0, 0};
  const Graph& g = e.fused.graph;
  e.plan = planMemory(g);
  for (size_t i = 0; i < g.numNodes(); ++i) e.position[g.nodes()[i].get()] = static_cast<int64_t>(i);
  for (const auto& [fusedValue, source] : e.fused.sourceOf) e.fusedOf[source] = fusedValue;
  std::vector<int64_t> delta(g.numNodes() + 1, 0);
  for (const BufferAssignment& b : e.plan.buffers) {
    // A result written in place over its operand takes no bytes of its own at its producer.
    int64_t begin = b.inPlaceOf ? b.begin + 1 : b.begin;
    if (begin > b.end) continue;
    int64_t bytes = (b.size + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    delta[static_cast<size_t>(begin)] += bytes;
    delta[static_cast<size_t>(b.end) + 1] -= bytes;
  }
  e.live.resize(g.numNodes());
  int64_t running = 0;
  for (size_t i = 0; i < g.numNodes(); ++i) {
    running += delta[i];
    e.live[i] = running;
    if (running > e.live[static_cast<size_t>(e.peakAt)]) e.peakAt = static_cast<int64_t>(i);
    e.excess += std::max<int64_t>(0, running - budget);
  }
  return e;
}

/// One value to recompute: its producer and the cheap producers pulled back with it.
struct Candidate {
  const Value* value = nullptr;
  std::vector<const Node*> chain;  // source nodes, in schedule order
  std::vector<Node*> lateUsers;    // the readers after the peak, which read the recomputation
  int64_t freed = 0;               // bytes the peak loses
  int64_t flops = 0;
};

class Rematerializer {
 public:
  Rematerializer(Graph& graph, int64_t budget) : graph_(graph), budget_(budget) {}

  Expected<RematReport> run() {
    graph_.removeDeadNodes();
    SMELT_TRY(Evaluation current, evaluate(graph_, {}, budget_));
    RematReport report;
    report.budget = budget_;
    report.peakBefore = peakWithoutRecompute_ = current.plan.peakBytes;
    int evaluations = 1;
    std::unordered_set<const Value*> refused;  // values of graph_ whose recomputation did not help
    while (current.plan.peakBytes > budget_ && evaluations < kMaxEvaluations) {
      std::vector<Candidate> candidates = findCandidates(current, refused);
      bool improved = false;
      for (size_t i = 0; i < candidates.size() && i < kTriesPerStep && evaluations < kMaxEvaluations; ++i) {
        std::unordered_map<const Node*, int> trialChains;
        SMELT_TRY(std::optional<Graph> trial, recompute(candidates[i], trialChains));
        if (!trial) {
          refused.insert(candidates[i].value);
          continue;
        }
        Expected<Evaluation> next = evaluate(*trial, optionsFor(*trial, trialChains), budget_);
        ++evaluations;
        if (!next) return next.error();
        if (!next->betterThan(current)) {
          refused.insert(candidates[i].value);
          continue;
        }
        graph_ = std::move(*trial);
        chains_ = std::move(trialChains);
        current = std::move(*next);
        refused.clear();  // the old graph's values; the landscape changed anyway
        improved = true;
        break;
      }
      if (!improved) break;
    }
    if (current.plan.peakBytes > budget_) return noPlanFits(current);
    for (const auto& node : graph_.nodes()) {
      if (!chains_.count(node.get())) continue;
      ++report.recomputedNodes;
      report.recomputedFlops += flopsOfNode(graph_, *node);
    }
    for (const auto& node : current.fused.graph.nodes()) {
      if (node->opName() == "fused") {
        const Graph& body = *std::get<GraphRef>(node->attrs().at("body"));
        for (const auto& inner : body.nodes()) report.flops += flopsOfNode(body, *inner);
      } else {
        report.flops += flopsOfNode(current.fused.graph, *node);
      }
    }
    report.peakAfter = current.plan.peakBytes;
    report.lowerBoundAfter = current.plan.lowerBoundBytes;
    graph_ = std::move(current.fused.graph);
    return report;
  }

 private:
  /// Recomputed nodes of `graph` (in `chains`) with the position of their recomputation's first node.
  static FusionOptions optionsFor(const Graph& graph, const std::unordered_map<const Node*, int>& chains) {
    FusionOptions options;
    std::unordered_map<int, size_t> start;
    std::vector<std::pair<const Node*, int>> marked;
    for (size_t i = 0; i < graph.numNodes(); ++i) {
      auto it = chains.find(graph.nodes()[i].get());
      if (it == chains.end()) continue;
      start.emplace(it->second, i);  // the first node of each chain in schedule order
      marked.emplace_back(it->first, it->second);
    }
    for (const auto& [node, chain] : marked) options.recomputedAt[node] = start.at(chain);
    return options;
  }

  /// Whether the plan has `source`'s value at hand at the peak: inputs, parameters, constants, graph
  /// outputs (the caller's tensors), and buffers live at the peak.
  static bool availableAtPeak(const Evaluation& e, const Value* source) {
    if (source->kind() != ValueKind::Result || source->producer()->opName() == "constant") return true;
    auto f = e.fusedOf.find(source);
    if (f == e.fusedOf.end()) return false;  // inside a fused kernel: never stored
    const BufferAssignment* b = e.plan.find(f->second);
    return !b || (b->begin <= e.peakAt && e.peakAt <= b->end);
  }

  std::vector<Candidate> findCandidates(const Evaluation& e, const std::unordered_set<const Value*>& refused) const {
    std::vector<const BufferAssignment*> atPeak;
    for (const BufferAssignment& b : e.plan.buffers) {
      if (b.begin < e.peakAt && e.peakAt < b.end) atPeak.push_back(&b);
    }
    std::sort(atPeak.begin(), atPeak.end(), [](auto* a, auto* b) { return a->size > b->size; });
    if (atPeak.size() > kValuesAtPeak) atPeak.resize(kValuesAtPeak);
    std::vector<Candidate> candidates;
    for (const BufferAssignment* b : atPeak) {
      auto s = e.fused.sourceOf.find(b->value);
      if (s == e.fused.sourceOf.end() || refused.count(s->second)) continue;
      if (std::optional<Candidate> c = candidateFor(e, s->second)) candidates.push_back(std::move(*c));
    }
    // Fewest FLOPs per byte freed first; views and casts of stored values cost nothing.
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return static_cast<double>(a.flops + 1) / static_cast<double>(a.freed) <
             static_cast<double>(b.flops + 1) / static_cast<double>(b.freed);
    });
    return candidates;
  }

  std::optional<Candidate> candidateFor(const Evaluation& e, const Value* value) const {
    const Node* producer = value->producer();
    if (!producer || !recomputable(*producer) || e.kernelPosition(producer) >= e.peakAt) return std::nullopt;
    Candidate c;
    c.value = value;
    for (Node* user : value->users()) {
      int64_t at = e.kernelPosition(user);
      if (at == e.peakAt) return std::nullopt;  // read at the peak itself
      if (at > e.peakAt && std::find(c.lateUsers.begin(), c.lateUsers.end(), user) == c.lateUsers.end()) {
        c.lateUsers.push_back(user);
      }
    }
    if (c.lateUsers.empty()) return std::nullopt;
    // Pull back through producers of operands the peak does not hold: cheap ones, and one product (a
    // layer recomputed whole: its matmul or conv with its epilogue); hold the rest longer.
    std::unordered_set<const Node*> inChain{producer};
    std::unordered_set<const Value*> held;
    std::vector<const Node*> work{producer};
    int64_t heldBytes = 0;
    int products = producer->op().product ? 1 : 0;
    while (!work.empty()) {
      const Node* node = work.back();
      work.pop_back();
      for (const Value* operand : node->operands()) {
        if (availableAtPeak(e, operand) || inChain.count(operand->producer()) || held.count(operand)) continue;
        const Node* p = operand->producer();
        bool layer = p->op().product && products == 0;
        if (recomputable(*p) && (cheap(*p) || layer) && inChain.size() < kMaxChainNodes) {
          products += layer ? 1 : 0;
          inChain.insert(p);
          work.push_back(p);
        } else {
          held.insert(operand);
          heldBytes += alignedBytes(operand);
        }
      }
    }
    c.freed = alignedBytes(value) - heldBytes;
    if (c.freed <= 0) return std::nullopt;
    std::unordered_map<const Node*, size_t> position;
    for (size_t i = 0; i < graph_.numNodes(); ++i) position[graph_.nodes()[i].get()] = i;
    c.chain.assign(inChain.begin(), inChain.end());
    std::sort(c.chain.begin(), c.chain.end(),
              [&](const Node* a, const Node* b) { return position.at(a) < position.at(b); });
    for (const Node* n : c.chain) c.flops += flopsOfNode(graph_, *n);
    return c;
  }

  /// A copy of graph_ with `c` applied: its chain cloned right before the first late reader, and the
  /// late readers reading the clone; `chains` gets the copy's recomputed nodes. Nothing when a late
  /// reader comes before a value the chain reads (fusion scheduled it late; the source order has it
  /// early).
  Expected<std::optional<Graph>> recompute(const Candidate& c, std::unordered_map<const Node*, int>& chains) {
    std::unordered_map<const Node*, size_t> position;
    for (size_t i = 0; i < graph_.numNodes(); ++i) position[graph_.nodes()[i].get()] = i;
    const Node* site = *std::min_element(c.lateUsers.begin(), c.lateUsers.end(),
                                         [&](const Node* a, const Node* b) { return position.at(a) < position.at(b); });
    for (const Node* n : c.chain) {
      for (const Value* o : n->operands()) {
        if (o->producer() && position.at(o->producer()) >= position.at(site)) return std::optional<Graph>();
      }
    }
    Graph copy = graph_.clone();
    auto inCopy = [&](const Value* v) -> Value* {
      if (v->kind() == ValueKind::Input) {
        auto it = std::find(graph_.inputs().begin(), graph_.inputs().end(), v);
        return copy.inputs()[static_cast<size_t>(it - graph_.inputs().begin())];
      }
      if (v->kind() == ValueKind::Parameter) {
        auto it = std::find(graph_.parameters().begin(), graph_.parameters().end(), v);
        return copy.parameters()[static_cast<size_t>(it - graph_.parameters().begin())];
      }
      return copy.nodes()[position.at(v->producer())]->result(static_cast<size_t>(v->resultIndex()));
    };
    auto nodeInCopy = [&](const Node* n) { return copy.nodes()[position.at(n)].get(); };
    chains.clear();
    int nextChain = 0;
    for (const auto& [node, chain] : chains_) {
      if (!position.count(node)) continue;  // removed as dead by an earlier recomputation
      chains[nodeInCopy(node)] = chain;
      nextChain = std::max(nextChain, chain + 1);
    }
    // Resolved before inserting: the clones shift the copy's node indices.
    std::vector<Node*> lateUsers;
    for (Node* user : c.lateUsers) lateUsers.push_back(nodeInCopy(user));
    Value* original = inCopy(c.value);
    copy.setInsertionPoint(nodeInCopy(site));
    std::unordered_map<const Value*, Value*> clones;
    for (const Node* n : c.chain) {
      std::vector<Value*> operands;
      for (const Value* o : n->operands()) {
        auto it = clones.find(o);
        operands.push_back(it != clones.end() ? it->second : inCopy(o));
      }
      Expected<Node*> clone = copy.addNode(n->opName(), std::move(operands), n->attrs(), n->sourceName());
      if (!clone) {
        copy.clearInsertionPoint();
        return clone.error();
      }
      chains[*clone] = nextChain;
      for (size_t i = 0; i < n->results().size(); ++i) clones[n->result(i)] = (*clone)->result(i);
    }
    copy.clearInsertionPoint();
    for (Node* user : lateUsers) copy.replaceUsesIn(user, original, clones.at(c.value));
    // What only the late readers read (a mask computed in the forward pass for the backward) is dead
    // now; left in, fusion would compute it inside a forward kernel for nothing.
    copy.removeDeadNodes();
    std::unordered_set<const Node*> alive;
    for (const auto& node : copy.nodes()) alive.insert(node.get());
    std::erase_if(chains, [&](const auto& entry) { return !alive.count(entry.first); });
    return std::optional<Graph>(std::move(copy));
  }

  Error noPlanFits(const Evaluation& e) const {
    std::vector<const BufferAssignment*> atPeak;
    for (const BufferAssignment& b : e.plan.buffers) {
      if (b.begin <= e.peakAt && e.peakAt <= b.end) atPeak.push_back(&b);
    }
    std::sort(atPeak.begin(), atPeak.end(), [](auto* a, auto* b) { return a->size > b->size; });
    std::string listing;
    for (size_t i = 0; i < atPeak.size() && i < kBuffersInError; ++i) {
      const Value* fusedValue = atPeak[i]->value;
      auto s = e.fused.sourceOf.find(fusedValue);
      const Value* source = s != e.fused.sourceOf.end() ? s->second : nullptr;
      std::string node = source && source->producer() ? graph_.labelOf(*source->producer())
                                                      : e.fused.graph.labelOf(*fusedValue->producer());
      listing += fmt::format("\n  {} {}: {}", fusedValue->type().toString(), node, formatByteCount(atPeak[i]->size));
    }
    return makeError(
        "memory budget {}: no plan found fits; the smallest found needs {} (fused, without recomputation: {}). "
        "Largest of the {} buffers live at its peak (kernel {} of {}):{}",
        formatByteCount(budget_), formatByteCount(e.plan.peakBytes), formatByteCount(peakWithoutRecompute_),
        atPeak.size(), e.peakAt, e.fused.graph.numNodes(), listing);
  }

  Graph& graph_;
  int64_t budget_;
  int64_t peakWithoutRecompute_ = 0;
  /// Recomputed nodes of graph_ -> which recomputation (chain) they belong to.
  std::unordered_map<const Node*, int> chains_;
};

}  // namespace

Expected<RematReport> fuseWithinBudget(Graph& graph, int64_t budget) {
  if (budget <= 0) return makeError("memory budget {}: must be positive", budget);
  Graph original = graph.clone();
  Rematerializer remat(graph, budget);
  Expected<RematReport> report = remat.run();
  if (!report) graph = std::move(original);
  return report;
}

}  // namespace smelt

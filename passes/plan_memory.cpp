// plan-memory: lays out every intermediate result in one arena over the graph's node order. The graph
// does not change; the plan goes to the statistics (and to callers of planMemory, such as `smelt
// inspect`).
//   %0 = exp(%x) : f32[256]      %0 -> [0, 1024)
//   %1 = neg(%0) : f32[256]      %1 -> [0, 1024)     in place: %0 dies here
//   %2 = mul(%1, %x) : f32[256]  %2 -> [0, 1024)     in place: %1 dies here
//   return y = %2                plan-memory.peak bytes = 1024
#include "passes/plan_memory.h"

#include "ir/contiguous_views.h"

#include "passes/passes.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <functional>
#include <random>
#include <unordered_set>

namespace smelt {

namespace {

// Randomized placement orders tried when the fixed ones miss the lower bound.
constexpr int kRandomTrials = 64;

int64_t alignUp(int64_t bytes) { return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

// Constants are baked into the executable like parameters; inputs, parameters and graph outputs belong
// to the caller (kernels write outputs straight into the caller's tensors).
bool inArena(const Value* value, const std::unordered_set<const Value*>& outputs) {
  return value->kind() == ValueKind::Result && value->producer()->opName() != "constant" &&
         value->type().byteSize() > 0 && !outputs.count(value);
}

std::unordered_set<const Value*> outputValues(const Graph& graph) {
  std::unordered_set<const Value*> outputs;
  for (const GraphOutput& o : graph.outputs()) outputs.insert(o.value);
  return outputs;
}

// One arena buffer: a result, plus the results written in place over it.
struct Group {
  int64_t size = 0;  // aligned
  int64_t begin = 0;
  int64_t end = 0;
  int64_t offset = 0;
};

bool livesOverlap(int64_t aBegin, int64_t aEnd, int64_t bBegin, int64_t bEnd) { return aBegin <= bEnd && bBegin <= aEnd; }

// Places groups in `order`, each where it overlaps no placed group live at the same time: at the
// lowest such offset, or (bestFit) in the smallest gap it fits, else on top. Returns the arena size;
// writes the offsets into `offsets`.
int64_t placeInOrder(const std::vector<Group>& groups, const std::vector<size_t>& order, bool bestFit,
                     std::vector<int64_t>& offsets) {
  offsets.assign(groups.size(), 0);
  std::vector<size_t> placed;
  std::vector<size_t> conflicts;
  int64_t peak = 0;
  for (size_t g : order) {
    const Group& group = groups[g];
    conflicts.clear();
    for (size_t p : placed) {
      if (livesOverlap(group.begin, group.end, groups[p].begin, groups[p].end)) conflicts.push_back(p);
    }
    std::sort(conflicts.begin(), conflicts.end(), [&](size_t a, size_t b) { return offsets[a] < offsets[b]; });
    int64_t candidate = 0, top = 0, bestGap = -1, bestOffset = -1;
    for (size_t p : conflicts) {
      int64_t gap = offsets[p] - top;
      if (gap >= group.size && (!bestFit || bestGap < 0 || gap < bestGap)) {
        bestGap = gap;
        bestOffset = top;
        if (!bestFit) break;  // the lowest gap that fits
      }
      top = std::max(top, offsets[p] + groups[p].size);
    }
    candidate = bestOffset >= 0 ? bestOffset : top;
    offsets[g] = candidate;
    peak = std::max(peak, candidate + group.size);
    placed.push_back(g);
  }
  return peak;
}

}  // namespace

const BufferAssignment* MemoryPlan::find(const Value* value) const {
  auto it = index_.find(value);
  return it == index_.end() ? nullptr : &buffers[it->second];
}

// True when `node` reads `operand` only at the index it writes each result element to, so a result may
// overwrite it in place: elementwise ops, and fused loop/epilogue kernels whose body reads the operand
// only through elementwise ops of its own shape (not through a view, a reduction or the matmul/conv of
// an epilogue, which read other indices).
bool readsOnlyAtWrittenIndex(const Node& node, const Value* operand) {
  // A collective's result element is a function of its operand's element at that index on every rank (a
  // started all-reduce sums in place in its result: over its dying operand, that saves a copy of the bucket).
  if (node.op().fusion == FusionKind::Elementwise || node.op().collective) return true;
  // A reshape reads element i (row-major) for its element i: over its dying operand it is the same bytes, and the
  // executable skips it (a gradient flattened into its bucket, a layer's output into the next's rows).
  if (node.opName() == "reshape") return true;
  if (node.opName() != "fused") return false;
  const std::string& kind = std::get<std::string>(node.attrs().at("kind"));
  const GraphRef& body = std::get<GraphRef>(node.attrs().at("body"));
  if ((kind != "loop" && kind != "epilogue") || !body) return false;
  for (size_t i = 0; i < node.numOperands(); ++i) {
    if (node.operand(i) != operand) continue;
    const Value* input = body->inputs()[i];
    for (const Node* user : input->users()) {
      if (user->op().fusion != FusionKind::Elementwise) return false;
      for (const Value* r : user->results()) {
        if (r->shape() != input->shape()) return false;
      }
    }
  }
  return true;
}

namespace {

/// A group laid inside another (a view): its parent group and the byte offset there.
struct ChildOf {
  int64_t parent = -1;
  int64_t offset = 0;
};

/// The aligned bytes live at each node of the schedule, kept up to date as views change the groups' lives, so
/// that a view is taken only while the most bytes live at once stays within a budget.
class LiveBytes {
 public:
  LiveBytes(const std::vector<Group>& groups, int64_t numNodes, int64_t budget)
      : live_(static_cast<size_t>(numNodes), 0), budget_(budget) {
    for (const Group& g : groups) add(g.begin, g.end, g.size);
  }
  /// Whether adding each (begin, end, bytes) of `changes` keeps every node within the budget; if so, adds them.
  bool tryChange(const std::vector<std::array<int64_t, 3>>& changes) {
    if (budget_ == std::numeric_limits<int64_t>::max()) return true;
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = -1;
    for (const auto& [begin, end, bytes] : changes) {
      if (begin <= end) lo = std::min(lo, begin), hi = std::max(hi, end);
    }
    if (hi < 0) return true;
    std::vector<int64_t> after(live_.begin() + lo, live_.begin() + hi + 1);
    for (const auto& [begin, end, bytes] : changes) {
      for (int64_t t = begin; t <= end; ++t) after[static_cast<size_t>(t - lo)] += bytes;
    }
    if (*std::max_element(after.begin(), after.end()) > budget_) return false;
    std::copy(after.begin(), after.end(), live_.begin() + lo);
    return true;
  }

 private:
  void add(int64_t begin, int64_t end, int64_t bytes) {
    for (int64_t t = begin; t <= end; ++t) live_[static_cast<size_t>(t)] += bytes;
  }
  std::vector<int64_t> live_;
  int64_t budget_;
};

/// Lays the operands of contiguous concats inside their result and the results of contiguous slices inside their
/// operand, where the groups allow it (see views in plan_memory.h) and the bytes live at once stay within
/// `budget`: sets childOf, extends the parents' lifetimes, marks the buffers. Views are taken in node order (a
/// concat's operands all or none). Returns whether any view was made.
bool findViews(const Graph& graph, MemoryPlan& plan, const std::unordered_map<const Value*, size_t>& index,
               std::vector<Group>& groups, const std::vector<size_t>& groupOf, std::vector<ChildOf>& childOf,
               int64_t budget) {
  std::vector<char> isParent(groups.size(), 0);
  std::vector<size_t> members(groups.size(), 0);
  for (size_t g : groupOf) ++members[g];
  auto unattached = [&](size_t g) { return childOf[g].parent < 0 && !isParent[g]; };
  LiveBytes live(groups, static_cast<int64_t>(graph.numNodes()), budget);
  bool any = false;
  for (int64_t i = 0; i < static_cast<int64_t>(graph.numNodes()); ++i) {
    const Node& node = *graph.nodes()[static_cast<size_t>(i)];
    if (concatIsContiguous(node)) {
      auto result = index.find(node.result());
      if (result == index.end()) continue;
      const size_t parent = groupOf[result->second];
      if (childOf[parent].parent >= 0) continue;
      // Each operand's group (its producer's buffer, and what was written in place before it) dies here and
      // takes its place in the result: the producers write straight into the concat's bytes.
      std::vector<std::pair<size_t, int64_t>> kids;
      std::vector<size_t> buffers;
      int64_t prefix = 0;
      bool ok = true;
      for (const Value* operand : node.operands()) {
        const auto bytes = static_cast<int64_t>(operand->type().byteSize());
        if (bytes == 0) continue;
        auto it = index.find(operand);
        if (it == index.end() || prefix % kArenaAlignment) {
          ok = false;
          break;
        }
        const size_t g = groupOf[it->second];
        bool repeated = std::any_of(kids.begin(), kids.end(), [&](const auto& k) { return k.first == g; });
        if (!unattached(g) || g == parent || repeated || groups[g].end != i) {
          ok = false;
          break;
        }
        kids.emplace_back(g, prefix);
        buffers.push_back(it->second);
        prefix += bytes;
      }
      if (!ok || kids.empty()) continue;
      // The result's bytes are taken from the first operand's birth; each operand's own bytes are freed.
      std::vector<std::array<int64_t, 3>> changes;
      int64_t begin = groups[parent].begin;
      for (const auto& [g, offset] : kids) {
        begin = std::min(begin, groups[g].begin);
        changes.push_back({groups[g].begin, groups[g].end, -groups[g].size});
      }
      changes.push_back({begin, groups[parent].begin - 1, groups[parent].size});
      if (!live.tryChange(changes)) continue;
      for (size_t k = 0; k < kids.size(); ++k) {
        childOf[kids[k].first] = {static_cast<int64_t>(parent), kids[k].second};
        groups[parent].begin = std::min(groups[parent].begin, groups[kids[k].first].begin);
        plan.buffers[buffers[k]].viewOf = node.result();
        plan.buffers[buffers[k]].viewOffset = kids[k].second;
        ++plan.views;
      }
      isParent[parent] = 1;
      any = true;
    } else if (std::optional<int64_t> start = contiguousSliceStart(node)) {
      auto operand = index.find(node.operand(0));
      auto result = index.find(node.result());
      if (operand == index.end() || result == index.end()) continue;
      const size_t parent = groupOf[operand->second], g = groupOf[result->second];
      const int64_t offset = *start * static_cast<int64_t>(dtypeSize(node.result()->dtype()));
      // The slice's bytes are read in place, and never written: a result written over them in place (a group
      // of more than the slice's result) would change what the operand's other readers see.
      if (!unattached(g) || members[g] != 1 || childOf[parent].parent >= 0 || offset % kArenaAlignment) continue;
      // The operand's bytes stay until the slice's last reader; the slice's own are freed.
      if (!live.tryChange({{groups[g].begin, groups[g].end, -groups[g].size},
                           {groups[parent].end + 1, groups[g].end, groups[parent].size}})) {
        continue;
      }
      childOf[g] = {static_cast<int64_t>(parent), offset};
      groups[parent].end = std::max(groups[parent].end, groups[g].end);
      isParent[parent] = 1;
      plan.buffers[result->second].viewOf = node.operand(0);
      plan.buffers[result->second].viewOffset = offset;
      ++plan.views;
      any = true;
    }
  }
  return any;
}

}  // namespace

MemoryPlan planMemoryWith(const Graph& graph, bool views, int64_t viewBudget) {
  MemoryPlan plan;
  const int64_t numNodes = static_cast<int64_t>(graph.numNodes());
  std::unordered_map<const Node*, int64_t> position;
  for (int64_t i = 0; i < numNodes; ++i) position[graph.nodes()[i].get()] = i;

  // Liveness: from the producer to the last user.
  const std::unordered_set<const Value*> outputs = outputValues(graph);
  for (int64_t i = 0; i < numNodes; ++i) {
    for (const Value* result : graph.nodes()[i]->results()) {
      if (!inArena(result, outputs)) continue;
      plan.index_[result] = plan.buffers.size();
      plan.buffers.push_back({.value = result, .size = static_cast<int64_t>(result->type().byteSize()), .begin = i, .end = i});
    }
  }
  for (int64_t i = 0; i < numNodes; ++i) {
    for (const Value* operand : graph.nodes()[i]->operands()) {
      if (auto it = plan.index_.find(operand); it != plan.index_.end()) {
        plan.buffers[it->second].end = std::max(plan.buffers[it->second].end, i);
      }
    }
  }

  // In place: a result may take over the buffer of an operand of its size and dtype that dies at this
  // node when the kernel reads that operand only at the index it writes (elementwise kernels and fused
  // loop/epilogue kernels read element i before writing element i).
  std::vector<size_t> groupOf(plan.buffers.size());
  std::vector<Group> groups;
  std::unordered_set<const Value*> donated;
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    BufferAssignment& buffer = plan.buffers[b];
    const Node& node = *buffer.value->producer();
    {
      for (const Value* operand : node.operands()) {
        auto it = plan.index_.find(operand);
        if (it == plan.index_.end() || donated.count(operand) || !readsOnlyAtWrittenIndex(node, operand)) continue;
        const BufferAssignment& source = plan.buffers[it->second];
        if (source.end != buffer.begin || operand->dtype() != buffer.value->dtype() || source.size != buffer.size) {
          continue;
        }
        donated.insert(operand);
        buffer.inPlaceOf = operand;
        groupOf[b] = groupOf[it->second];
        groups[groupOf[b]].end = std::max(groups[groupOf[b]].end, buffer.end);
        ++plan.inPlaceReuses;
        break;
      }
    }
    if (buffer.inPlaceOf) continue;
    groupOf[b] = groups.size();
    groups.push_back({.size = alignUp(buffer.size), .begin = buffer.begin, .end = buffer.end});
  }
  std::vector<ChildOf> childOf(groups.size());
  if (views) findViews(graph, plan, plan.index_, groups, groupOf, childOf, viewBudget);
  // A view takes no bytes of its own: placed with its parent.
  for (size_t g = 0; g < groups.size(); ++g) {
    if (childOf[g].parent >= 0) groups[g].size = 0;
  }
  plan.numBuffers = static_cast<int64_t>(
      std::count_if(childOf.begin(), childOf.end(), [](const ChildOf& c) { return c.parent < 0; }));

  // Lower bound: the most aligned bytes live at one step.
  std::vector<int64_t> delta(numNodes + 2, 0);
  for (const Group& group : groups) {
    delta[group.begin] += group.size;
    delta[group.end + 1] -= group.size;
  }
  int64_t live = 0;
  for (int64_t d : delta) plan.lowerBoundBytes = std::max(plan.lowerBoundBytes, live += d);

  // Offsets: greedy placement in a few orders, keeping the smallest arena. Largest first is the
  // classic; the others win on graphs where long-lived small buffers fragment the arena.
  auto lifetime = [&](const Group& g) { return g.end - g.begin + 1; };
  std::vector<std::function<bool(const Group&, const Group&)>> orders = {
      [](const Group& a, const Group& b) { return a.size != b.size ? a.size > b.size : a.begin < b.begin; },
      [&](const Group& a, const Group& b) {
        return lifetime(a) != lifetime(b) ? lifetime(a) > lifetime(b) : a.size > b.size;
      },
      [&](const Group& a, const Group& b) {
        double ka = static_cast<double>(a.size) * lifetime(a), kb = static_cast<double>(b.size) * lifetime(b);
        return ka != kb ? ka > kb : a.begin < b.begin;
      },
      [](const Group& a, const Group& b) { return a.begin != b.begin ? a.begin < b.begin : a.size > b.size; },
  };
  std::vector<int64_t> best;
  plan.peakBytes = -1;
  for (bool bestFit : {false, true}) {
    for (const auto& less : orders) {
      if (plan.peakBytes == plan.lowerBoundBytes) break;  // optimal already
      std::vector<size_t> order(groups.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return less(groups[a], groups[b]); });
      std::vector<int64_t> offsets;
      int64_t peak = placeInOrder(groups, order, bestFit, offsets);
      if (plan.peakBytes < 0 || peak < plan.peakBytes) {
        plan.peakBytes = peak;
        best = std::move(offsets);
      }
    }
  }
  // Still above the bound: largest first with sizes jittered at random (fixed seed: plans are
  // deterministic), which escapes the fragmentation one fixed order runs into.
  std::mt19937 random(12345);
  std::lognormal_distribution<double> jitter(0.0, 0.4);
  for (int trial = 0; trial < kRandomTrials && plan.peakBytes > plan.lowerBoundBytes; ++trial) {
    std::vector<double> key(groups.size());
    for (size_t i = 0; i < groups.size(); ++i) key[i] = static_cast<double>(groups[i].size) * jitter(random);
    std::vector<size_t> order(groups.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key[a] > key[b]; });
    std::vector<int64_t> offsets;
    int64_t peak = placeInOrder(groups, order, trial % 2 == 1, offsets);
    if (peak < plan.peakBytes) {
      plan.peakBytes = peak;
      best = std::move(offsets);
    }
  }
  plan.peakBytes = std::max<int64_t>(plan.peakBytes, 0);
  if (best.empty()) best.assign(groups.size(), 0);
  // Views at their parent's offset (a parent is never a view itself).
  for (size_t g = 0; g < groups.size(); ++g) {
    if (childOf[g].parent >= 0) best[g] = best[static_cast<size_t>(childOf[g].parent)] + childOf[g].offset;
  }
  for (size_t b = 0; b < plan.buffers.size(); ++b) plan.buffers[b].offset = best[groupOf[b]];
  return plan;
}

MemoryPlan planMemory(const Graph& graph) {
  MemoryPlan plain = planMemoryWith(graph, false);
  // Views save the copies of concats and slices; they lengthen their parents' lives, so they are taken only
  // while the bytes live at once stay within the plan without them (each view alone: one that would raise the
  // peak, such as a gradient bucket whose first gradient is produced long before its last, leaves the others),
  // and the plan with them is kept only when its peak does not grow. Within the plain plan's peak first; where
  // the offsets then fit worse, within its lower bound. (Graphs without a contiguous concat or slice plan once.)
  const bool candidates = std::any_of(graph.nodes().begin(), graph.nodes().end(), [](const auto& n) {
    return concatIsContiguous(*n) || (n->opName() == "slice" && contiguousSliceStart(*n));
  });
  if (!candidates) return plain;
  for (int64_t budget : {plain.peakBytes, plain.lowerBoundBytes}) {
    MemoryPlan viewed = planMemoryWith(graph, true, budget);
    if (viewed.views == 0) break;
    if (viewed.peakBytes <= plain.peakBytes) return viewed;
    if (budget == plain.lowerBoundBytes) break;
  }
  return plain;
}

bool runsAsView(const Node& node, const MemoryPlan& plan) {
  // A reshape whose result lies where its operand does (written in place over it, or both placed in one
  // concat's bytes): the same bytes, element i for element i.
  if (node.opName() == "reshape") {
    const BufferAssignment *result = plan.find(node.result()), *operand = plan.find(node.operand(0));
    return result && operand && result->offset == operand->offset;
  }
  if (node.opName() == "slice") {
    const BufferAssignment* result = plan.find(node.result());
    return result && result->viewOf == node.operand(0);
  }
  if (node.opName() != "concat" || !plan.find(node.result())) return false;
  for (const Value* operand : node.operands()) {
    if (operand->type().byteSize() == 0) continue;
    const BufferAssignment* b = plan.find(operand);
    if (!b || b->viewOf != node.result()) return false;
  }
  return true;
}

Status checkMemoryPlan(const Graph& graph, const MemoryPlan& plan) {
  // Lifetimes again, from the graph alone.
  const int64_t numNodes = static_cast<int64_t>(graph.numNodes());
  std::unordered_map<const Value*, std::pair<int64_t, int64_t>> life;
  const std::unordered_set<const Value*> outputs = outputValues(graph);
  for (int64_t i = 0; i < numNodes; ++i) {
    const Node& node = *graph.nodes()[i];
    for (const Value* operand : node.operands()) {
      if (auto it = life.find(operand); it != life.end()) it->second.second = i;
    }
    for (const Value* result : node.results()) {
      if (inArena(result, outputs)) life[result] = {i, i};
    }
  }
  if (plan.buffers.size() != life.size()) {
    return makeError("memory plan has {} buffers, the graph has {} arena values", plan.buffers.size(), life.size());
  }
  struct Entry {
    const BufferAssignment* buffer;
    int64_t begin, end;
  };
  std::vector<Entry> entries;
  for (const auto& [value, lifetime] : life) {
    const BufferAssignment* buffer = plan.find(value);
    std::string label = graph.labelOf(*value->producer());
    if (!buffer) return makeError("{}: result has no buffer in the memory plan", label);
    if (buffer->size != static_cast<int64_t>(value->type().byteSize()) || buffer->offset % kArenaAlignment ||
        buffer->offset < 0 || buffer->offset + alignUp(buffer->size) > plan.peakBytes) {
      return makeError("{}: buffer [{}, +{}) does not fit {} in a {}-byte arena", label, buffer->offset, buffer->size,
                       value->type().toString(), plan.peakBytes);
    }
    entries.push_back({buffer, lifetime.first, lifetime.second});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  // Views: each in-place chain's first buffer, and the chain a view's chain lies inside.
  auto root = [&](const BufferAssignment* b) {
    while (b->inPlaceOf) b = plan.find(b->inPlaceOf);
    return b;
  };
  std::unordered_map<const BufferAssignment*, const BufferAssignment*> insideOf;
  for (const BufferAssignment& b : plan.buffers) {
    if (!b.viewOf) continue;
    const BufferAssignment* parent = plan.find(b.viewOf);
    if (!parent) return makeError("{}: a view of a value with no buffer", graph.labelOf(*b.value->producer()));
    if (b.offset != parent->offset + b.viewOffset || b.viewOffset < 0 || b.viewOffset + b.size > parent->size) {
      return makeError("{}: view [{}, +{}) is not at +{} inside its parent's [{}, +{})",
                       graph.labelOf(*b.value->producer()), b.offset, b.size, b.viewOffset, parent->offset,
                       parent->size);
    }
    insideOf[root(&b)] = root(parent);
  }
  auto up = [&](const BufferAssignment* r) -> const BufferAssignment* {
    auto it = insideOf.find(r);
    return it == insideOf.end() ? nullptr : it->second;
  };
  // Whether x's chain lies inside y's (directly or through other views).
  auto inside = [&](const BufferAssignment* x, const BufferAssignment* y) {
    for (const BufferAssignment* r = up(root(x)); r; r = up(r)) {
      if (r == root(y)) return true;
    }
    return false;
  };
  auto viewRelated = [&](const BufferAssignment* x, const BufferAssignment* y) {
    return !insideOf.empty() && (inside(x, y) || inside(y, x));
  };
  // Sweep in schedule order: only entries starting before `a` ends can overlap it in time.
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& a = entries[i];
    for (size_t j = i + 1; j < entries.size() && entries[j].begin <= a.end; ++j) {
      const Entry& b = entries[j];
      int64_t aOff = a.buffer->offset, bOff = b.buffer->offset;
      if (aOff >= bOff + alignUp(b.buffer->size) || bOff >= aOff + alignUp(a.buffer->size)) continue;
      // Allowed: one lies inside the other's bytes as a view (or inside what was written in place over it).
      if (viewRelated(a.buffer, b.buffer)) continue;
      // Allowed: b written in place over a, which dies at b's elementwise producer.
      const Node* producer = b.buffer->value->producer();
      bool inPlace = b.buffer->inPlaceOf == a.buffer->value && a.end == b.begin &&
                     readsOnlyAtWrittenIndex(*producer, a.buffer->value) && aOff == bOff &&
                     std::find(producer->operands().begin(), producer->operands().end(), a.buffer->value) !=
                         producer->operands().end();
      if (!inPlace) {
        return makeError("{} (live {}..{}) and {} (live {}..{}) overlap in the arena: [{}, +{}) and [{}, +{})",
                         graph.labelOf(*a.buffer->value->producer()), a.begin, a.end, graph.labelOf(*producer),
                         b.begin, b.end, aOff, a.buffer->size, bOff, b.buffer->size);
      }
    }
  }
  return Status::success();
}

namespace {

class PlanMemory final : public Pass {
 public:
  std::string_view name() const override { return "plan-memory"; }
  std::string_view summary() const override {
    return "Plans one arena for all intermediate results (liveness, in-place reuse); changes nothing";
  }
  Expected<bool> run(Graph& graph, PassContext& context) override {
    MemoryPlan plan = planMemory(graph);
    context.count("peak bytes", plan.peakBytes);
    context.count("lower bound bytes", plan.lowerBoundBytes);
    context.count("buffers", plan.numBuffers);
    context.count("in-place reuses", plan.inPlaceReuses);
    return false;
  }
};

}  // namespace

std::unique_ptr<Pass> createPlanMemory() { return std::make_unique<PlanMemory>(); }

}  // namespace smelt

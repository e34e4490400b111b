// mapToBlocks (see map_to_blocks.h).
#include "codegen/map_to_blocks.h"

#include "codegen/kernel_walk.h"

#include <algorithm>
#include <cstdlib>
#include <bit>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace smelt::codegen {

namespace {

bool combinable(KBinary op) {
  switch (op) {
    case KBinary::Add:
    case KBinary::Mul:
    case KBinary::Min:
    case KBinary::Max:
    case KBinary::And:
    case KBinary::Or: return true;
    default: return false;
  }
}

/// How each value moves per iteration of one loop: 0 (independent of the index), a known number of
/// elements, or unknown (nonlinear, data-dependent). Values defined outside the loop are absent: 0.
class Strides {
 public:
  Strides(const KLoop& loop, const std::unordered_map<int32_t, int64_t>& constants) : constants_(constants) {
    of_[loop.index] = 1;
    walk(loop.body);
  }
  /// The stride of `id`, or nothing when unknown.
  std::optional<int64_t> of(int32_t id) const {
    auto it = of_.find(id);
    return it == of_.end() ? std::optional<int64_t>(0) : it->second;
  }

 private:
  void set(int32_t id, std::optional<int64_t> stride) {
    if (!stride || *stride != 0) of_[id] = stride;
  }
  void walk(const KBlock& block) {
    for (const KStmt& s : block.stmts) {
      if (const auto* i = std::get_if<KInst>(&s)) {
        inst(*i);
      } else if (const auto* l = std::get_if<LoopPtr>(&s)) {
        walk((*l)->body);
        // What a nested loop carries is data, never an index this analysis can follow.
        for (size_t k = 0; k < (*l)->carried.size(); ++k) {
          bool moves = !of((*l)->init[k]) || *of((*l)->init[k]) != 0 || !of((*l)->next[k]) || *of((*l)->next[k]) != 0;
          if (moves) {
            set((*l)->carried[k], std::nullopt);
            set((*l)->results[k], std::nullopt);
          }
        }
      }
    }
  }
  void inst(const KInst& i) {
    auto sa = i.a >= 0 ? of(i.a) : std::optional<int64_t>(0);
    auto sb = i.b >= 0 ? of(i.b) : std::optional<int64_t>(0);
    auto sc = i.c >= 0 ? of(i.c) : std::optional<int64_t>(0);
    const bool still = sa && *sa == 0 && sb && *sb == 0 && sc && *sc == 0;
    if (still) return;  // independent of the index
    if (i.kind == KInstKind::Binary && !isFloat(i.dtype)) {
      auto constant = [&](int32_t id) -> std::optional<int64_t> {
        auto it = constants_.find(id);
        return it == constants_.end() ? std::nullopt : std::optional<int64_t>(it->second);
      };
      if (i.binary == KBinary::Add && sa && sb) return set(i.result, *sa + *sb);
      if (i.binary == KBinary::Sub && sa && sb) return set(i.result, *sa - *sb);
      if (i.binary == KBinary::Mul && sa && constant(i.b)) return set(i.result, *sa * *constant(i.b));
      if (i.binary == KBinary::Mul && sb && constant(i.a)) return set(i.result, *sb * *constant(i.a));
    }
    if (i.kind == KInstKind::Cast && !isFloat(i.dtype) && sa) return set(i.result, sa);
    set(i.result, std::nullopt);
  }

  const std::unordered_map<int32_t, int64_t>& constants_;
  std::unordered_map<int32_t, std::optional<int64_t>> of_;
};

void collectConstants(const KBlock& block, std::unordered_map<int32_t, int64_t>& out) {
  for (const KStmt& s : block.stmts) {
    if (const auto* i = std::get_if<KInst>(&s)) {
      if (i->kind == KInstKind::Const && !isFloat(i->dtype)) out[i->result] = i->ibits;
    } else if (const auto* l = std::get_if<LoopPtr>(&s)) {
      collectConstants((*l)->body, out);
    }
  }
}

struct Access {
  int32_t buffer;
  int32_t offset;
  bool store;
};

void collectAccesses(const KBlock& block, std::vector<Access>& out) {
  for (const KStmt& s : block.stmts) {
    if (const auto* i = std::get_if<KInst>(&s)) {
      if (i->kind == KInstKind::Load) out.push_back({static_cast<int32_t>(i->ibits), i->a, false});
    } else if (const auto* st = std::get_if<KStore>(&s)) {
      out.push_back({st->buffer, st->offset, true});
    } else {
      collectAccesses(std::get<LoopPtr>(s)->body, out);
    }
  }
}

/// The combining operations of `loop`'s carried values, or nothing when the loop cannot be split.
std::optional<std::vector<KBinary>> splitLoop(const Kernel& kernel, const KLoop& loop,
                                              const std::unordered_map<int32_t, int64_t>& constants) {
  // Every carried value: next = carried OP x, with x independent of it, and read nowhere else.
  std::unordered_map<int32_t, int> uses = useCounts(loop.body);
  std::vector<KBinary> combine;
  for (size_t k = 0; k < loop.carried.size(); ++k) {
    const KInst* update = nullptr;
    for (const KStmt& s : loop.body.stmts) {
      const auto* i = std::get_if<KInst>(&s);
      if (i && i->result == loop.next[k]) update = i;
    }
    if (!update || update->kind != KInstKind::Binary || !combinable(update->binary)) return std::nullopt;
    const int32_t other = update->a == loop.carried[k] ? update->b : update->b == loop.carried[k] ? update->a : -1;
    if (other < 0 || other == loop.carried[k]) return std::nullopt;
    if (std::find(loop.carried.begin(), loop.carried.end(), other) != loop.carried.end()) return std::nullopt;
    if (uses[loop.carried[k]] != 1 || uses[loop.next[k]] != 0) return std::nullopt;
    combine.push_back(update->binary);
  }
  // Memory: coalesced offsets (0 or 1 element per iteration), stores at offsets that move, and no
  // buffer read and written at two different offsets (another thread's iteration may have written).
  Strides strides(loop, constants);
  std::vector<Access> accesses;
  collectAccesses(loop.body, accesses);
  std::unordered_map<int32_t, std::unordered_set<int32_t>> offsets;
  std::unordered_set<int32_t> written;
  for (const Access& a : accesses) {
    std::optional<int64_t> stride = strides.of(a.offset);
    if (!stride || (*stride != 0 && *stride != 1)) return std::nullopt;
    if (a.store && *stride == 0) return std::nullopt;
    offsets[memoryOf(kernel, a.buffer)].insert(a.offset);
    if (a.store) written.insert(memoryOf(kernel, a.buffer));
  }
  for (int32_t b : written) {
    if (offsets[b].size() != 1) return std::nullopt;
  }
  return combine;
}

/// What mapToBlocks does to one loop: split it, combining its carried values after it; split it,
/// leaving them per-thread partials (KLoop::partial); or run it whole in every thread and combine its
/// carried values (those partials) after it.
struct Split {
  enum Mode { kSplit, kPartial, kCombineOnly };
  LoopPtr loop;
  std::vector<KBinary> combine;
  Mode mode = kSplit;
  /// How many times the loop runs per point: the extent of the sequential loop around it in a nest.
  int64_t repeats = 1;
};

/// Whether every value `outer` carries only accumulates through one inner loop (init of the inner
/// carried value, the inner result its next) and every inner carried value is such a link: then the
/// inner loops can leave their partials per thread and `outer` combine them once, instead of a block
/// combine per outer iteration. The combining operations per outer carried value, or nothing.
std::optional<std::vector<KBinary>> chainedCombine(const KLoop& outer, const std::vector<Split>& inner) {
  std::unordered_map<int32_t, int> uses = useCounts(outer.body);
  std::vector<KBinary> combine;
  size_t links = 0;
  for (size_t k = 0; k < outer.carried.size(); ++k) {
    std::optional<KBinary> op;
    for (const Split& split : inner) {
      for (size_t j = 0; j < split.loop->carried.size(); ++j) {
        if (split.loop->init[j] == outer.carried[k] && split.loop->results[j] == outer.next[k]) op = split.combine[j];
      }
    }
    if (!op || uses[outer.carried[k]] != 1 || uses[outer.next[k]] != 0) return std::nullopt;
    combine.push_back(*op);
    ++links;
  }
  size_t innerCarried = 0;
  for (const Split& split : inner) innerCarried += split.loop->carried.size();
  if (links != innerCarried) return std::nullopt;
  return combine;
}

/// The inner loops of `outer` split, it staying sequential in every thread, or nothing. Its body may
/// hold only loops that split and instructions that are not loads (so every thread computes the same
/// values: the outer index, the combined totals of the inner loops), and every store in them must land
/// on its own element for each pair of indices (the store moves at least an inner loop's extent per
/// outer iteration): a thread then never touches what another thread wrote in an earlier iteration.
std::optional<std::vector<Split>> splitNest(const Kernel& kernel, const LoopPtr& outerLoop,
                                            const std::unordered_map<int32_t, int64_t>& constants) {
  const KLoop& outer = *outerLoop;
  std::vector<Split> splits;
  Strides outerStrides(outer, constants);
  for (const KStmt& s : outer.body.stmts) {
    if (std::holds_alternative<KStore>(s)) return std::nullopt;
    if (const auto* i = std::get_if<KInst>(&s)) {
      if (i->kind == KInstKind::Load) return std::nullopt;
      continue;
    }
    const LoopPtr& inner = std::get<LoopPtr>(s);
    std::optional<std::vector<KBinary>> combine = splitLoop(kernel, *inner, constants);
    if (!combine) return std::nullopt;
    std::vector<Access> accesses;
    collectAccesses(inner->body, accesses);
    for (const Access& a : accesses) {
      std::optional<int64_t> stride = outerStrides.of(a.offset);
      if (a.store && (!stride || std::abs(*stride) < inner->extent)) return std::nullopt;
    }
    splits.push_back({inner, std::move(*combine), Split::kSplit, outer.extent});
  }
  if (splits.empty()) return std::nullopt;
  if (!outer.carried.empty()) {
    if (std::optional<std::vector<KBinary>> combine = chainedCombine(outer, splits)) {
      for (Split& split : splits) {
        split.mode = Split::kPartial;
        split.combine.clear();
      }
      splits.push_back({outerLoop, std::move(*combine), Split::kCombineOnly});
    }
  }
  return splits;
}

}  // namespace

bool mapToBlocks(Kernel& kernel, int32_t maxThreads) {
  // A block per point: the grid's first dimension holds at most 2^31 - 1 blocks.
  if (kernel.blockThreads > 0 || kernel.domainSize() > std::numeric_limits<int32_t>::max()) return false;
  std::unordered_map<int32_t, int64_t> constants;
  collectConstants(kernel.body, constants);
  // Each top-level loop splits itself, or (a nest whose outer loop strides across rows: a batch norm's
  // loop over the images around its loop over a channel's pixels) the loops in it.
  std::vector<Split> splits;
  for (const KStmt& s : kernel.body.stmts) {
    const auto* l = std::get_if<LoopPtr>(&s);
    if (!l) continue;
    if (std::optional<std::vector<KBinary>> combine = splitLoop(kernel, **l, constants)) {
      splits.push_back({*l, std::move(*combine)});
    } else if (std::optional<std::vector<Split>> nest = splitNest(kernel, *l, constants)) {
      splits.insert(splits.end(), nest->begin(), nest->end());
    } else {
      return false;
    }
  }
  // Worth a block: a long row, or a nest whose short rows add up to one (a batch norm over 16 images of
  // 4x4 pixels: 256 elements per channel, which one thread per channel walks 256 loads deep; on an
  // H200 such kernels took 0.45 ms where their 2x2-pixel neighbours took 0.03).
  int64_t longest = 0, work = 0;
  for (const Split& split : splits) {
    if (split.mode == Split::kCombineOnly) continue;
    longest = std::max(longest, split.loop->extent);
    work = std::max(work, split.loop->extent * split.repeats);
  }
  if (longest < kMinBlockRow && (longest < kMinNestRow || work < kMinBlockRow)) return false;
  for (Split& split : splits) {
    split.loop->split = split.mode != Split::kCombineOnly;
    split.loop->partial = split.mode == Split::kPartial;
    split.loop->combine = std::move(split.combine);
  }
  kernel.blockThreads = static_cast<int32_t>(
      std::clamp<int64_t>(static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(longest))), 32, maxThreads));
  return true;
}

}  // namespace smelt::codegen

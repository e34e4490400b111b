// See reuse_through_output.h. Matching is structural: the instructions directly in each loop's body are
// numbered by what they compute from the loop index and from values defined outside the loop, so the
// same number in two loops means the same value at the same iteration.
#include "codegen/reuse_through_output.h"

#include "codegen/kernel_walk.h"

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace smelt::codegen {

namespace {

bool costly(const KInst& i) {
  if (i.kind == KInstKind::Binary) return i.binary == KBinary::Div || i.binary == KBinary::Pow;
  if (i.kind != KInstKind::Unary) return false;
  switch (i.unary) {
    case KUnary::Exp: case KUnary::Expm1: case KUnary::Log: case KUnary::Log1p: case KUnary::Sqrt:
    case KUnary::Rsqrt: case KUnary::Sin: case KUnary::Cos: case KUnary::Tan: case KUnary::Tanh:
    case KUnary::Erf: case KUnary::Sigmoid:
      return true;
    default:
      return false;
  }
}

bool commutative(KBinary op) {
  return op == KBinary::Add || op == KBinary::Mul || op == KBinary::Min || op == KBinary::Max ||
         op == KBinary::And || op == KBinary::Or || op == KBinary::Xor || op == KBinary::Eq || op == KBinary::Ne;
}

constexpr int64_t kIndexNumber = -1;

/// Numbers of one loop body's top-level instructions; numbers >= 0 come from the shared interning.
struct LoopNumbers {
  std::unordered_map<int32_t, int64_t> ofValue;  // instruction result -> number
  std::map<int64_t, int32_t> valueOf;            // number -> first instruction result with it
  std::unordered_map<int32_t, int> costlyOps;    // instruction result -> costly ops in its expression
  std::unordered_set<int32_t> varies;            // results that depend on the loop index
};

class Numbering {
 public:
  LoopNumbers number(const KLoop& loop) {
    LoopNumbers n;
    auto operand = [&](int32_t v) -> int64_t {
      if (v < 0) return -2;
      if (v == loop.index) return kIndexNumber;
      auto it = n.ofValue.find(v);
      // Any other value (from outside, carried, or from a nested loop) stands for itself: distinct ids
      // never match across loops, shared outside values do.
      return it != n.ofValue.end() ? it->second : -10 - static_cast<int64_t>(v);
    };
    for (const KStmt& s : loop.body.stmts) {
      const KInst* i = std::get_if<KInst>(&s);
      if (!i) continue;
      int64_t a = operand(i->a), b = operand(i->b), c = operand(i->c);
      if (i->kind == KInstKind::Binary && commutative(i->binary) && b < a) std::swap(a, b);
      Key key{static_cast<int>(i->kind), static_cast<int>(i->dtype), static_cast<int>(i->unary),
              static_cast<int>(i->binary), i->ibits, std::bit_cast<uint64_t>(i->fbits), a, b, c};
      auto [it, fresh] = interned_.try_emplace(key, static_cast<int64_t>(interned_.size()));
      n.ofValue[i->result] = it->second;
      n.valueOf.try_emplace(it->second, i->result);
      int ops = costly(*i) ? 1 : 0;
      bool varies = false;
      for (int32_t o : {i->a, i->b, i->c}) {
        if (o < 0) continue;
        if (auto c2 = n.costlyOps.find(o); c2 != n.costlyOps.end()) ops += c2->second;
        varies = varies || o == loop.index || n.varies.contains(o);
      }
      n.costlyOps[i->result] = ops;
      if (varies) n.varies.insert(i->result);
    }
    return n;
  }

 private:
  using Key = std::tuple<int, int, int, int, int64_t, uint64_t, int64_t, int64_t, int64_t>;
  std::map<Key, int64_t> interned_;
};

/// True when, with `replaced` read from the output instead, a load of `buffers` is still needed by
/// loop `loop`'s body (conservative for nested loops: any load in them counts).
bool stillLoads(const KLoop& loop, int32_t replaced, const std::unordered_set<int64_t>& buffers) {
  std::unordered_set<int32_t> needed(loop.next.begin(), loop.next.end());
  for (const KStmt& s : loop.body.stmts) {
    if (std::holds_alternative<KInst>(s)) continue;
    forEachUse(s, [&](int32_t v) { needed.insert(v); });
    if (const LoopPtr* l = std::get_if<LoopPtr>(&s); l && loadsAny((*l)->body, buffers)) return true;
  }
  for (auto it = loop.body.stmts.rbegin(); it != loop.body.stmts.rend(); ++it) {
    const KInst* i = std::get_if<KInst>(&*it);
    if (!i || !needed.contains(i->result) || i->result == replaced) continue;
    if (i->kind == KInstKind::Load && buffers.contains(i->ibits)) return true;
    for (int32_t o : {i->a, i->b, i->c}) {
      if (o >= 0) needed.insert(o);
    }
  }
  return false;
}

struct Rewrite {
  size_t earlier = 0;        // the reduction loop's position in the block
  int32_t earlierValue = -1;  // the value there
  int32_t earlierOffset = -1;
  int32_t laterValue = -1;    // its twin in the final sweep
  const KStore* store = nullptr;
};

std::optional<Rewrite> findRewrite(const Kernel& kernel, const KBlock& block, size_t later) {
  const KLoop& l3 = *std::get<LoopPtr>(block.stmts[later]);
  for (const KStmt& s : l3.body.stmts) {
    const KStore* st = std::get_if<KStore>(&s);
    if (!st || !kernel.buffers[static_cast<size_t>(st->buffer)].output) continue;
    const KBuffer& out = kernel.buffers[static_cast<size_t>(st->buffer)];
    std::unordered_set<int64_t> aliasable = inputsSharingMemoryWith(kernel, st->buffer);
    for (size_t k = later + 1; k < block.stmts.size(); ++k) {
      if (loadsAny(block.stmts[k], aliasable)) return std::nullopt;
    }
    for (size_t earlier = later; earlier-- > 0;) {
      const LoopPtr* lp = std::get_if<LoopPtr>(&block.stmts[earlier]);
      if (!lp) {
        if (loadsAny(block.stmts[earlier], aliasable)) return std::nullopt;
        continue;
      }
      const KLoop& l2 = **lp;
      if (l2.extent != l3.extent || hasStore(l2.body)) {
        if (loadsAny(l2.body, aliasable)) return std::nullopt;
        continue;
      }
      Numbering numbering;
      LoopNumbers n2 = numbering.number(l2), n3 = numbering.number(l3);
      int32_t offset2 = -1;
      if (st->offset == l3.index) {
        offset2 = l2.index;
      } else if (auto o = n3.ofValue.find(st->offset); o != n3.ofValue.end()) {
        if (auto t = n2.valueOf.find(o->second); t != n2.valueOf.end()) offset2 = t->second;
      }
      if (offset2 >= 0) {
        Rewrite best;
        int bestOps = 0;
        // The load takes the twin's place, so the twin must come after the offset it loads at.
        bool offsetDefined = st->offset == l3.index;
        for (const KStmt& s3 : l3.body.stmts) {
          const KInst* i = std::get_if<KInst>(&s3);
          if (i && i->result == st->offset) offsetDefined = true;
          if (!i || !offsetDefined || i->dtype != out.dtype || !n3.varies.contains(i->result)) continue;
          int ops = n3.costlyOps.at(i->result);
          auto twin = n2.valueOf.find(n3.ofValue.at(i->result));
          if (ops == 0 || ops < bestOps || twin == n2.valueOf.end()) continue;
          best = {earlier, twin->second, offset2, i->result, st};
          bestOps = ops;
        }
        if (bestOps > 0 && !stillLoads(l3, best.laterValue, aliasable)) return best;
      }
      if (loadsAny(l2.body, aliasable)) return std::nullopt;
    }
  }
  return std::nullopt;
}

bool rewriteBlock(Kernel& kernel, KBlock& block) {
  bool changed = false;
  for (size_t later = 0; later < block.stmts.size(); ++later) {
    LoopPtr* lp = std::get_if<LoopPtr>(&block.stmts[later]);
    if (!lp) continue;
    changed |= rewriteBlock(kernel, (*lp)->body);
    std::optional<Rewrite> r = findRewrite(kernel, block, later);
    if (!r) continue;
    KLoop& l2 = *std::get<LoopPtr>(block.stmts[r->earlier]);
    KLoop& l3 = **lp;
    const KStore store = *r->store;
    l2.body.stmts.push_back(KStore{.buffer = store.buffer, .offset = r->earlierOffset, .value = r->earlierValue});
    auto loaded = static_cast<int32_t>(kernel.types.size());
    kernel.types.push_back(kernel.buffers[static_cast<size_t>(store.buffer)].dtype);
    auto at = std::find_if(l3.body.stmts.begin(), l3.body.stmts.end(), [&](const KStmt& s) {
      const KInst* i = std::get_if<KInst>(&s);
      return i && i->result == r->laterValue;
    });
    *at = KInst{.kind = KInstKind::Load, .dtype = kernel.types[static_cast<size_t>(loaded)], .result = loaded,
                .a = store.offset, .ibits = store.buffer};
    const std::unordered_map<int32_t, int32_t> map{{r->laterValue, loaded}};
    renameBlock(l3.body, map);
    for (int32_t& v : l3.next) v = renamed(v, map);
    changed = true;
  }
  return changed;
}

}  // namespace

bool reuseThroughOutput(Kernel& kernel) {
  if (!rewriteBlock(kernel, kernel.body)) return false;
  removeDeadInstructions(kernel);
  return true;
}

}  // namespace smelt::codegen

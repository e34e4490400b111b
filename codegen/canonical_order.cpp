// See canonical_order.h.
#include "codegen/canonical_order.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <tuple>
#include <unordered_map>

#include "codegen/kernel_walk.h"

namespace smelt::codegen {

namespace {

/// A hash of what each value computes, independent of ids and emission order: an instruction's kind,
/// dtype, operation and constant bits with its operands' hashes; a loop's values by the loop's place
/// in the walk and their role.
class StructuralHashes {
 public:
  explicit StructuralHashes(const KBlock& body) { walk(body); }
  uint64_t of(int32_t v) const { return hashes_.at(v); }

 private:
  static uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
  }
  void walk(const KBlock& block) {
    for (const KStmt& s : block.stmts) {
      if (const KInst* i = std::get_if<KInst>(&s)) {
        uint64_t h = mix(mix(mix(static_cast<uint64_t>(i->kind), static_cast<uint64_t>(i->dtype)),
                             mix(static_cast<uint64_t>(i->unary), static_cast<uint64_t>(i->binary))),
                         mix(static_cast<uint64_t>(i->ibits), std::bit_cast<uint64_t>(i->fbits)));
        uint64_t operands[3] = {};
        for (int k = 0; k < 3; ++k) {
          const int32_t o = k == 0 ? i->a : k == 1 ? i->b : i->c;
          operands[k] = o >= 0 ? hashes_.at(o) : 0;
        }
        // Commutative operands in either order hash alike, so their order can follow the hash.
        if (i->kind == KInstKind::Binary && isCommutative(i->binary) && operands[1] < operands[0]) {
          std::swap(operands[0], operands[1]);
        }
        for (uint64_t o : operands) h = mix(h, o);
        hashes_[i->result] = h;
      } else if (const LoopPtr* lp = std::get_if<LoopPtr>(&s)) {
        const KLoop& l = **lp;
        const uint64_t loop = mix(0x4c4f4f50ULL, loops_++);
        hashes_[l.index] = mix(loop, 1);
        for (size_t k = 0; k < l.carried.size(); ++k) hashes_[l.carried[k]] = mix(mix(loop, 2), k);
        walk(l.body);
        for (size_t k = 0; k < l.results.size(); ++k) hashes_[l.results[k]] = mix(mix(loop, 3), k);
      }
    }
  }
  std::unordered_map<int32_t, uint64_t> hashes_;
  uint64_t loops_ = 0;
};

/// Commutative operands in the order of their hashes (the builder orders them by id, which follows
/// emission order).
bool orderOperands(KBlock& block, const StructuralHashes& hashes) {
  bool changed = false;
  for (KStmt& s : block.stmts) {
    if (KInst* i = std::get_if<KInst>(&s)) {
      if (i->kind == KInstKind::Binary && isCommutative(i->binary) && hashes.of(i->b) < hashes.of(i->a)) {
        std::swap(i->a, i->b);
        changed = true;
      }
    } else if (LoopPtr* l = std::get_if<LoopPtr>(&s)) {
      changed = orderOperands((*l)->body, hashes) || changed;
    }
  }
  return changed;
}

/// Reorders the instructions of block[begin, end) (no stores or loops among them) depth-first from
/// their readers: the block's later statements, then `trailing` (an enclosing loop's nexts).
bool orderSegment(KBlock& block, size_t begin, size_t end, const std::vector<int32_t>& trailing) {
  std::unordered_map<int32_t, size_t> position;  // value -> its instruction's index in the block
  for (size_t k = begin; k < end; ++k) position[std::get<KInst>(block.stmts[k]).result] = k;
  std::vector<size_t> order;
  std::vector<bool> placed(end - begin, false);
  // Explicit stack: a chain of thousands of instructions must not overflow the call stack.
  auto visit = [&](int32_t root) {
    std::vector<std::pair<size_t, int>> stack;  // (instruction, operands visited)
    auto push = [&](int32_t v) {
      auto it = position.find(v);
      if (it == position.end() || placed[it->second - begin]) return;
      placed[it->second - begin] = true;  // marked on entry: SSA has no cycles within a segment
      stack.emplace_back(it->second, 0);
    };
    push(root);
    while (!stack.empty()) {
      auto& [k, next] = stack.back();
      const KInst& inst = std::get<KInst>(block.stmts[k]);
      const int32_t operands[3] = {inst.a, inst.b, inst.c};
      if (next < 3) {
        const int32_t operand = operands[next++];
        if (operand >= 0) push(operand);
        continue;
      }
      order.push_back(k);
      stack.pop_back();
    }
  };
  // The outer indices and run-time sizes first, by dimension and element (renderers read them as the
  // kernel's prologue), then the rest as their readers need them.
  std::vector<size_t> prologue;
  for (size_t k = begin; k < end; ++k) {
    const KInst& inst = std::get<KInst>(block.stmts[k]);
    if (inst.kind == KInstKind::Outer || inst.kind == KInstKind::Param) prologue.push_back(k);
  }
  std::stable_sort(prologue.begin(), prologue.end(), [&](size_t x, size_t y) {
    const KInst& a = std::get<KInst>(block.stmts[x]);
    const KInst& b = std::get<KInst>(block.stmts[y]);
    return std::tuple(a.kind != KInstKind::Outer, a.ibits, a.dtype) <
           std::tuple(b.kind != KInstKind::Outer, b.ibits, b.dtype);
  });
  for (size_t k : prologue) visit(std::get<KInst>(block.stmts[k]).result);
  for (size_t k = end; k < block.stmts.size(); ++k) forEachUse(block.stmts[k], visit);
  for (int32_t v : trailing) visit(v);
  for (size_t k = begin; k < end; ++k) visit(std::get<KInst>(block.stmts[k]).result);  // what nothing reads
  bool changed = false;
  std::vector<KStmt> reordered;
  reordered.reserve(end - begin);
  for (size_t i = 0; i < order.size(); ++i) {
    changed = changed || order[i] != begin + i;
    reordered.push_back(std::move(block.stmts[order[i]]));
  }
  for (size_t i = 0; i < reordered.size(); ++i) block.stmts[begin + i] = std::move(reordered[i]);
  return changed;
}

/// Moves each instruction of the block down to the run of instructions just before the first store or
/// loop that reads it (directly or through other instructions), so that an offset computed before a
/// reduction loop in one build and after it in another sits in one place; a load never moves past a
/// statement that stores, and the outer indices and run-time sizes stay first. Returns whether any moved.
bool sinkToFirstReader(KBlock& block) {
  const size_t n = block.stmts.size();
  std::vector<size_t> segment(n);  // an instruction's run: the number of stores and loops before it
  std::vector<bool> stores;        // per store or loop: whether it writes memory
  for (size_t k = 0; k < n; ++k) {
    segment[k] = stores.size();
    if (std::holds_alternative<KStore>(block.stmts[k])) {
      stores.push_back(true);
    } else if (const LoopPtr* l = std::get_if<LoopPtr>(&block.stmts[k])) {
      stores.push_back(hasStore((*l)->body));
    }
  }
  const size_t last = stores.size();
  std::unordered_map<int32_t, size_t> target;  // value -> the latest run it may move to
  for (size_t k = 0; k < n; ++k) {
    if (const KInst* i = std::get_if<KInst>(&block.stmts[k])) {
      target[i->result] = last;
    }
  }
  auto bound = [&](int32_t v, size_t run) {
    if (auto it = target.find(v); it != target.end()) it->second = std::min(it->second, run);
  };
  for (size_t k = 0; k < n; ++k) {
    if (!std::holds_alternative<KInst>(block.stmts[k]))
      forEachUse(block.stmts[k], [&](int32_t v) { bound(v, segment[k]); });
  }
  bool moved = false;
  for (size_t k = n; k-- > 0;) {  // readers before what they read
    const KInst* i = std::get_if<KInst>(&block.stmts[k]);
    if (!i) continue;
    size_t& run = target[i->result];
    if (i->kind == KInstKind::Outer || i->kind == KInstKind::Param) {
      run = segment[k];  // the prologue stays where the lowering put it: first
    } else if (i->kind == KInstKind::Load) {
      size_t limit = segment[k];
      while (limit < last && !stores[limit]) ++limit;
      run = std::min(run, limit);
    }
    run = std::max(run, segment[k]);
    moved = moved || run != segment[k];
    for (int32_t o : {i->a, i->b, i->c}) {
      if (o >= 0) bound(o, run);
    }
  }
  if (!moved) return false;
  std::vector<std::vector<KStmt>> runs(last + 1);
  std::vector<KStmt> barriers;
  for (size_t k = 0; k < n; ++k) {
    if (const KInst* i = std::get_if<KInst>(&block.stmts[k])) {
      runs[target[i->result]].push_back(std::move(block.stmts[k]));
    } else {
      barriers.push_back(std::move(block.stmts[k]));
    }
  }
  block.stmts.clear();
  for (size_t r = 0; r <= last; ++r) {
    for (KStmt& s : runs[r]) block.stmts.push_back(std::move(s));
    if (r < last) block.stmts.push_back(std::move(barriers[r]));
  }
  return true;
}

bool orderBlock(KBlock& block, const std::vector<int32_t>& trailing) {
  bool changed = false;
  for (KStmt& s : block.stmts) {
    if (LoopPtr* l = std::get_if<LoopPtr>(&s)) changed = orderBlock((*l)->body, (*l)->next) || changed;
  }
  changed = sinkToFirstReader(block) || changed;
  for (size_t begin = 0; begin < block.stmts.size();) {
    size_t end = begin;
    while (end < block.stmts.size() && std::holds_alternative<KInst>(block.stmts[end])) ++end;
    if (end > begin) changed = orderSegment(block, begin, end, trailing) || changed;
    begin = end + 1;
  }
  return changed;
}

/// New numbers in order of definition: an instruction's result; a loop's index, carried values, body,
/// then results.
void numberDefinitions(const KBlock& block, std::unordered_map<int32_t, int32_t>& number) {
  auto define = [&](int32_t v) { number.emplace(v, static_cast<int32_t>(number.size())); };
  for (const KStmt& s : block.stmts) {
    if (const KInst* i = std::get_if<KInst>(&s)) {
      define(i->result);
    } else if (const LoopPtr* lp = std::get_if<LoopPtr>(&s)) {
      const KLoop& l = **lp;
      define(l.index);
      for (int32_t v : l.carried) define(v);
      numberDefinitions(l.body, number);
      for (int32_t v : l.results) define(v);
    }
  }
}

void renumber(KBlock& block, const std::unordered_map<int32_t, int32_t>& number) {
  auto to = [&](int32_t& v) {
    if (v >= 0) v = number.at(v);
  };
  for (KStmt& s : block.stmts) {
    if (KInst* i = std::get_if<KInst>(&s)) {
      for (int32_t* v : {&i->result, &i->a, &i->b, &i->c}) to(*v);
    } else if (KStore* st = std::get_if<KStore>(&s)) {
      to(st->offset);
      to(st->value);
    } else {
      KLoop& l = *std::get<LoopPtr>(s);
      to(l.index);
      to(l.extentValue);
      for (auto* list : {&l.init, &l.carried, &l.next, &l.results}) {
        for (int32_t& v : *list) to(v);
      }
      renumber(l.body, number);
    }
  }
}

}  // namespace

bool canonicalOrder(Kernel& kernel) {
  bool changed = orderOperands(kernel.body, StructuralHashes(kernel.body));
  changed = orderBlock(kernel.body, {}) || changed;
  std::unordered_map<int32_t, int32_t> number;
  numberDefinitions(kernel.body, number);
  std::vector<DType> types(number.size());
  for (auto [from, to] : number) {
    types[static_cast<size_t>(to)] = kernel.types[static_cast<size_t>(from)];
    changed = changed || from != to;
  }
  changed = changed || types.size() != kernel.types.size();
  renumber(kernel.body, number);
  kernel.types = std::move(types);
  return changed;
}

}  // namespace smelt::codegen

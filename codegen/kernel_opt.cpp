// fuse-loops, hoist-reciprocals and cse (see kernel_opt.h).
#include "codegen/kernel_opt.h"

#include "codegen/kernel_walk.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace smelt::codegen {

namespace {

/// Tries to merge loop `j` into loop `i` (same extent, `j` independent of `i`); the statements between
/// them that do not depend on loop i move before it.
bool tryMerge(KBlock& block, size_t i, size_t j) {
  KLoop& li = *std::get<LoopPtr>(block.stmts[i]);
  KLoop& lj = *std::get<LoopPtr>(block.stmts[j]);
  if (li.extent != lj.extent || hasStore(li.body) || hasStore(lj.body)) return false;
  std::unordered_set<int32_t> dependent(li.results.begin(), li.results.end());
  std::vector<bool> moves(j, false);
  for (size_t k = i + 1; k < j; ++k) {
    bool uses = false;
    forEachUse(block.stmts[k], [&](int32_t v) { uses = uses || dependent.count(v); });
    if (uses || std::holds_alternative<KStore>(block.stmts[k])) {
      forEachDef(block.stmts[k], [&](int32_t v) { dependent.insert(v); });
    } else {
      moves[k] = true;
    }
  }
  bool independent = true;
  forEachUse(block.stmts[j], [&](int32_t v) { independent = independent && !dependent.count(v); });
  if (!independent) return false;
  // Merge j's body into i's, its index renamed to i's.
  renameBlock(lj.body, {{lj.index, li.index}});
  for (int32_t& v : lj.next) v = v == lj.index ? li.index : v;
  for (KStmt& s : lj.body.stmts) li.body.stmts.push_back(std::move(s));
  li.init.insert(li.init.end(), lj.init.begin(), lj.init.end());
  li.carried.insert(li.carried.end(), lj.carried.begin(), lj.carried.end());
  li.next.insert(li.next.end(), lj.next.begin(), lj.next.end());
  li.results.insert(li.results.end(), lj.results.begin(), lj.results.end());
  // Reorder: [before i] [independent stmts between] [merged loop] [dependent stmts between] [after j].
  std::vector<KStmt> stmts;
  for (size_t k = 0; k < i; ++k) stmts.push_back(std::move(block.stmts[k]));
  for (size_t k = i + 1; k < j; ++k) {
    if (moves[k]) stmts.push_back(std::move(block.stmts[k]));
  }
  stmts.push_back(std::move(block.stmts[i]));
  for (size_t k = i + 1; k < j; ++k) {
    if (!moves[k]) stmts.push_back(std::move(block.stmts[k]));
  }
  for (size_t k = j + 1; k < block.stmts.size(); ++k) stmts.push_back(std::move(block.stmts[k]));
  block.stmts = std::move(stmts);
  return true;
}

bool fuseLoops(KBlock& block) {
  bool merged = true, any = false;
  while (merged) {
    merged = false;
    for (size_t i = 0; i < block.stmts.size() && !merged; ++i) {
      if (!std::holds_alternative<LoopPtr>(block.stmts[i])) continue;
      for (size_t j = i + 1; j < block.stmts.size() && !merged; ++j) {
        if (std::holds_alternative<LoopPtr>(block.stmts[j])) merged = tryMerge(block, i, j);
      }
    }
    any = any || merged;
  }
  for (KStmt& s : block.stmts) {
    if (LoopPtr* l = std::get_if<LoopPtr>(&s)) any = fuseLoops((*l)->body) || any;
  }
  return any;
}

using Key = std::tuple<int, int, int32_t, int32_t, int32_t, int, int, int64_t, uint64_t>;

Key keyOf(const KInst& i) {
  return Key{static_cast<int>(i.kind), static_cast<int>(i.dtype), i.a, i.b, i.c, static_cast<int>(i.unary),
             static_cast<int>(i.binary), i.ibits, std::bit_cast<uint64_t>(i.fbits)};
}

/// Shares a loop's twin carried values: two that start from one value and whose updates are the same
/// instruction once the second is read as the first (layer_norm's mean and the mean inside its
/// variance: two sums of one row). By induction they are equal in every iteration, so the second's
/// uses, in the body and after the loop (through `map`), move to the first and the loop carries one.
void shareCarried(KLoop& l, std::unordered_map<int32_t, int32_t>& map) {
  auto defOf = [&](int32_t value) -> const KInst* {
    for (const KStmt& s : l.body.stmts) {
      const KInst* inst = std::get_if<KInst>(&s);
      if (inst && inst->result == value) return inst;
    }
    return nullptr;
  };
  for (size_t i = 0; i < l.carried.size(); ++i) {
    for (size_t j = i + 1; j < l.carried.size();) {
      const KInst* di = defOf(l.next[i]);
      const KInst* dj = defOf(l.next[j]);
      bool twins = l.init[i] == l.init[j] && di && dj && di != dj;
      if (twins) {
        std::unordered_map<int32_t, int32_t> asFirst{{l.carried[j], l.carried[i]}};
        KInst a = *di, b = *dj;
        for (KInst* x : {&a, &b}) {
          for (int32_t* o : {&x->a, &x->b, &x->c}) *o = renamed(*o, asFirst);
          // Sums and products are the same whichever side the carried value is on.
          const bool commutes =
              x->kind == KInstKind::Binary && (x->binary == KBinary::Add || x->binary == KBinary::Mul);
          if (commutes && x->a > x->b) std::swap(x->a, x->b);
        }
        twins = keyOf(a) == keyOf(b);
      }
      if (!twins) {
        ++j;
        continue;
      }
      // The twin's update goes: its uses now read the first's.
      const int32_t twinUpdate = l.next[j];
      std::erase_if(l.body.stmts, [&](const KStmt& s) {
        const KInst* inst = std::get_if<KInst>(&s);
        return inst && inst->result == twinUpdate;
      });
      std::unordered_map<int32_t, int32_t> inBody{{l.carried[j], l.carried[i]}, {twinUpdate, l.next[i]}};
      renameBlock(l.body, inBody);
      for (int32_t& v : l.next) v = renamed(v, inBody);
      map[l.results[j]] = l.results[i];
      for (std::vector<int32_t>* list : {&l.init, &l.carried, &l.next, &l.results}) list->erase(list->begin() + j);
      if (l.combine.size() > j) l.combine.erase(l.combine.begin() + j);
    }
  }
}

/// Shares identical instructions: a later twin's uses move to the first, in scope order.
void cseBlock(KBlock& block, std::vector<std::map<Key, int32_t>>& scopes, std::unordered_map<int32_t, int32_t>& map) {
  scopes.emplace_back();
  std::vector<KStmt> kept;
  for (KStmt& s : block.stmts) {
    renameStmt(s, map);
    if (KInst* i = std::get_if<KInst>(&s)) {
      // Loads are pure here: the one buffer a kernel both stores and loads is an output that
      // reuseThroughOutput stores to in one loop and loads from, once per element, in a later one.
      Key key = keyOf(*i);
      int32_t found = -1;
      for (auto it = scopes.rbegin(); it != scopes.rend() && found < 0; ++it) {
        if (auto f = it->find(key); f != it->end()) found = f->second;
      }
      if (found >= 0) {
        map[i->result] = found;
        continue;
      }
      scopes.back().emplace(key, i->result);
    } else if (LoopPtr* l = std::get_if<LoopPtr>(&s)) {
      cseBlock((*l)->body, scopes, map);
      for (int32_t& v : (*l)->next) v = renamed(v, map);
      shareCarried(**l, map);
    }
    kept.push_back(std::move(s));
  }
  block.stmts = std::move(kept);
  scopes.pop_back();
}

/// Values whose exact rounding matters: read by floor, ceil, round or a cast to an integer (floor(a / b)
/// at an exact quotient must not become floor(1.9999999)), or by a remainder.
std::unordered_set<int32_t> roundingSensitive(const Kernel& kernel) {
  std::unordered_set<int32_t> sensitive;
  std::function<void(const KBlock&)> walk = [&](const KBlock& b) {
    for (const KStmt& s : b.stmts) {
      if (const KInst* i = std::get_if<KInst>(&s)) {
        bool rounds = (i->kind == KInstKind::Unary &&
                       (i->unary == KUnary::Floor || i->unary == KUnary::Ceil || i->unary == KUnary::RoundEven)) ||
                      (i->kind == KInstKind::Cast && !isFloat(i->dtype)) ||
                      (i->kind == KInstKind::Binary && i->binary == KBinary::Rem);
        if (rounds) {
          for (int32_t o : {i->a, i->b}) {
            if (o >= 0) sensitive.insert(o);
          }
        }
      } else if (const LoopPtr* l = std::get_if<LoopPtr>(&s)) {
        walk((*l)->body);
      }
    }
  };
  walk(kernel.body);
  return sensitive;
}

/// Rewrites `a / d` inside `loop` (any depth) with `d` defined outside it into `a * r`, and returns the
/// new `r = 1 / d` instructions to place before the loop (one per divisor).
void reciprocalsOf(Kernel& kernel, KBlock& body, const std::unordered_set<int32_t>& outside,
                   const std::unordered_set<int32_t>& sensitive, std::map<int32_t, int32_t>& reciprocal,
                   std::vector<KStmt>& before) {
  for (KStmt& s : body.stmts) {
    if (KInst* i = std::get_if<KInst>(&s)) {
      bool wide = i->dtype == DType::f32 || i->dtype == DType::f64;  // 1/d in f16 would round twice
      if (i->kind != KInstKind::Binary || i->binary != KBinary::Div || !wide ||
          !outside.contains(i->b) || sensitive.contains(i->result)) {
        continue;
      }
      auto [it, fresh] = reciprocal.try_emplace(i->b, -1);
      if (fresh) {
        auto one = static_cast<int32_t>(kernel.types.size());
        kernel.types.push_back(i->dtype);
        before.push_back(KInst{.kind = KInstKind::Const, .dtype = i->dtype, .result = one, .fbits = 1.0});
        it->second = static_cast<int32_t>(kernel.types.size());
        kernel.types.push_back(i->dtype);
        before.push_back(KInst{.kind = KInstKind::Binary, .dtype = i->dtype, .result = it->second, .a = one, .b = i->b,
                               .binary = KBinary::Div});
      }
      i->binary = KBinary::Mul;
      i->b = it->second;
    } else if (LoopPtr* l = std::get_if<LoopPtr>(&s)) {
      reciprocalsOf(kernel, (*l)->body, outside, sensitive, reciprocal, before);
    }
  }
}

/// `defined`: the values defined before `block` runs, in it or around it (a copy: a loop body's values
/// stay inside it). Outer loops first, so a reciprocal goes before the outermost loop it can.
void hoistReciprocalsIn(Kernel& kernel, KBlock& block, std::unordered_set<int32_t> defined,
                        const std::unordered_set<int32_t>& sensitive) {
  std::vector<KStmt> out;
  for (KStmt& s : block.stmts) {
    if (LoopPtr* l = std::get_if<LoopPtr>(&s)) {
      std::map<int32_t, int32_t> reciprocal;
      std::vector<KStmt> before;
      reciprocalsOf(kernel, (*l)->body, defined, sensitive, reciprocal, before);
      for (KStmt& b : before) {
        defined.insert(std::get<KInst>(b).result);
        out.push_back(std::move(b));
      }
      std::unordered_set<int32_t> inside = defined;
      inside.insert((*l)->index);
      inside.insert((*l)->carried.begin(), (*l)->carried.end());
      hoistReciprocalsIn(kernel, (*l)->body, std::move(inside), sensitive);
      defined.insert((*l)->results.begin(), (*l)->results.end());
    } else {
      forEachDef(s, [&](int32_t v) { defined.insert(v); });
    }
    out.push_back(std::move(s));
  }
  block.stmts = std::move(out);
}

}  // namespace

bool fuseSiblingLoops(Kernel& kernel) { return fuseLoops(kernel.body); }

bool hoistReciprocals(Kernel& kernel) {
  const size_t before = kernel.types.size();
  hoistReciprocalsIn(kernel, kernel.body, {}, roundingSensitive(kernel));
  return kernel.types.size() != before;  // each hoisted reciprocal is a new value
}

bool shareInstructions(Kernel& kernel) {
  std::vector<std::map<Key, int32_t>> scopes;
  std::unordered_map<int32_t, int32_t> map;
  cseBlock(kernel.body, scopes, map);
  return !map.empty();
}

}  // namespace smelt::codegen

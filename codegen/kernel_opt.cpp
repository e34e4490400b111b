// Kernel-level clean-up after lowering: sibling loops over the same extent that do not depend on each
// other become one loop (layer_norm's mean and variance read x in one sweep, not two), and identical
// instructions that end up in one block are shared again.
//   %a = loop %i < 8 carry(...) { x = load b0[i]; ... }        %a, %b = loop %i < 8 carry(..., ...) {
//   %b = loop %j < 8 carry(...) { x = load b0[j]; ... }   ->      x = load b0[i]; ...; ...
//                                                               }
#include "codegen/kernel_opt.h"

#include <bit>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace smelt::codegen {

namespace {

using LoopPtr = std::shared_ptr<KLoop>;

void forEachUse(const KStmt& s, const std::function<void(int32_t)>& f);

void forEachUseInBlock(const KBlock& b, const std::function<void(int32_t)>& f) {
  for (const KStmt& s : b.stmts) forEachUse(s, f);
}

// Every value a statement reads, loop bodies included.
void forEachUse(const KStmt& s, const std::function<void(int32_t)>& f) {
  if (const KInst* i = std::get_if<KInst>(&s)) {
    for (int32_t o : {i->a, i->b, i->c}) {
      if (o >= 0) f(o);
    }
  } else if (const KStore* st = std::get_if<KStore>(&s)) {
    f(st->offset);
    f(st->value);
  } else {
    const KLoop& l = *std::get<LoopPtr>(s);
    for (int32_t v : l.init) f(v);
    for (int32_t v : l.next) f(v);
    forEachUseInBlock(l.body, f);
  }
}

// Every value a statement defines, loop bodies included.
void forEachDef(const KStmt& s, const std::function<void(int32_t)>& f) {
  if (const KInst* i = std::get_if<KInst>(&s)) {
    f(i->result);
  } else if (const LoopPtr* lp = std::get_if<LoopPtr>(&s)) {
    const KLoop& l = **lp;
    f(l.index);
    for (int32_t v : l.carried) f(v);
    for (int32_t v : l.results) f(v);
    for (const KStmt& inner : l.body.stmts) forEachDef(inner, f);
  }
}

bool hasStore(const KBlock& b) {
  for (const KStmt& s : b.stmts) {
    if (std::holds_alternative<KStore>(s)) return true;
    if (const LoopPtr* l = std::get_if<LoopPtr>(&s); l && hasStore((*l)->body)) return true;
  }
  return false;
}

void renameBlock(KBlock& b, const std::unordered_map<int32_t, int32_t>& map);

int32_t renamed(int32_t v, const std::unordered_map<int32_t, int32_t>& map) {
  auto it = map.find(v);
  return it == map.end() ? v : it->second;
}

void renameStmt(KStmt& s, const std::unordered_map<int32_t, int32_t>& map) {
  if (KInst* i = std::get_if<KInst>(&s)) {
    for (int32_t* o : {&i->a, &i->b, &i->c}) {
      if (*o >= 0) *o = renamed(*o, map);
    }
  } else if (KStore* st = std::get_if<KStore>(&s)) {
    st->offset = renamed(st->offset, map);
    st->value = renamed(st->value, map);
  } else {
    KLoop& l = *std::get<LoopPtr>(s);
    for (int32_t& v : l.init) v = renamed(v, map);
    for (int32_t& v : l.next) v = renamed(v, map);
    renameBlock(l.body, map);
  }
}

void renameBlock(KBlock& b, const std::unordered_map<int32_t, int32_t>& map) {
  for (KStmt& s : b.stmts) renameStmt(s, map);
}

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

void fuseLoops(KBlock& block) {
  bool merged = true;
  while (merged) {
    merged = false;
    for (size_t i = 0; i < block.stmts.size() && !merged; ++i) {
      if (!std::holds_alternative<LoopPtr>(block.stmts[i])) continue;
      for (size_t j = i + 1; j < block.stmts.size() && !merged; ++j) {
        if (std::holds_alternative<LoopPtr>(block.stmts[j])) merged = tryMerge(block, i, j);
      }
    }
  }
  for (KStmt& s : block.stmts) {
    if (LoopPtr* l = std::get_if<LoopPtr>(&s)) fuseLoops((*l)->body);
  }
}

using Key = std::tuple<int, int, int32_t, int32_t, int32_t, int, int, int64_t, uint64_t>;

/// Shares identical instructions: a later twin's uses move to the first, in scope order.
void cseBlock(KBlock& block, std::vector<std::map<Key, int32_t>>& scopes, std::unordered_map<int32_t, int32_t>& map) {
  scopes.emplace_back();
  std::vector<KStmt> kept;
  for (KStmt& s : block.stmts) {
    renameStmt(s, map);
    if (KInst* i = std::get_if<KInst>(&s)) {
      // Loads are pure here: kernels never store to a buffer they read within one body.
      Key key{static_cast<int>(i->kind), static_cast<int>(i->dtype), i->a, i->b, i->c, static_cast<int>(i->unary),
              static_cast<int>(i->binary), i->ibits, std::bit_cast<uint64_t>(i->fbits)};
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
    }
    kept.push_back(std::move(s));
  }
  block.stmts = std::move(kept);
  scopes.pop_back();
}

}  // namespace

void optimizeKernel(Kernel& kernel) {
  fuseLoops(kernel.body);
  std::vector<std::map<Key, int32_t>> scopes;
  std::unordered_map<int32_t, int32_t> map;
  cseBlock(kernel.body, scopes, map);
}

}  // namespace smelt::codegen

// See kernel_walk.h.
#include "codegen/kernel_walk.h"

#include <unordered_set>

namespace smelt::codegen {

void forEachUseInBlock(const KBlock& b, const std::function<void(int32_t)>& f) {
  for (const KStmt& s : b.stmts) forEachUse(s, f);
}

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
    if (l.extentValue >= 0) f(l.extentValue);
    for (int32_t v : l.init) f(v);
    forEachUseInBlock(l.body, f);
    for (int32_t v : l.next) f(v);
  }
}

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
    if (l.extentValue >= 0) l.extentValue = renamed(l.extentValue, map);
    for (int32_t& v : l.init) v = renamed(v, map);
    for (int32_t& v : l.next) v = renamed(v, map);
    renameBlock(l.body, map);
  }
}

void renameBlock(KBlock& b, const std::unordered_map<int32_t, int32_t>& map) {
  for (KStmt& s : b.stmts) renameStmt(s, map);
}

bool loadsAny(const KStmt& s, const std::unordered_set<int64_t>& buffers) {
  if (const KInst* i = std::get_if<KInst>(&s)) return i->kind == KInstKind::Load && buffers.contains(i->ibits);
  if (const LoopPtr* l = std::get_if<LoopPtr>(&s)) return loadsAny((*l)->body, buffers);
  return false;
}

bool loadsAny(const KBlock& b, const std::unordered_set<int64_t>& buffers) {
  for (const KStmt& s : b.stmts) {
    if (loadsAny(s, buffers)) return true;
  }
  return false;
}

int32_t memoryOf(const Kernel& kernel, int32_t buffer) {
  for (int32_t same = buffer; same >= 0; same = kernel.buffers[static_cast<size_t>(same)].sameAs) buffer = same;
  return buffer;
}

std::unordered_set<int64_t> inputsSharingMemoryWith(const Kernel& kernel, int32_t buffer) {
  const KBuffer& out = kernel.buffers[static_cast<size_t>(buffer)];
  std::unordered_set<int64_t> inputs;
  if (kernel.disjointBuffers) return inputs;
  for (size_t b = 0; b < kernel.buffers.size(); ++b) {
    const KBuffer& in = kernel.buffers[b];
    if (!in.output && in.dtype == out.dtype && in.numel == out.numel) inputs.insert(static_cast<int64_t>(b));
  }
  return inputs;
}

std::unordered_map<int32_t, int> useCounts(const KBlock& b) {
  std::unordered_map<int32_t, int> uses;
  forEachUseInBlock(b, [&](int32_t v) { ++uses[v]; });
  return uses;
}

namespace {

bool dropUnused(KBlock& b, const std::unordered_map<int32_t, int>& uses) {
  bool dropped = false;
  std::vector<KStmt> kept;
  for (KStmt& s : b.stmts) {
    if (const KInst* i = std::get_if<KInst>(&s); i && !uses.contains(i->result)) {
      dropped = true;
      continue;
    }
    if (LoopPtr* l = std::get_if<LoopPtr>(&s)) dropped |= dropUnused((*l)->body, uses);
    kept.push_back(std::move(s));
  }
  b.stmts = std::move(kept);
  return dropped;
}

}  // namespace

void removeDeadInstructions(Kernel& kernel) {
  for (bool dropped = true; dropped;) {
    dropped = dropUnused(kernel.body, useCounts(kernel.body));
  }
}

}  // namespace smelt::codegen

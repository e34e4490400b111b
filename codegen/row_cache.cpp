#include "codegen/row_cache.h"

#include "codegen/kernel_walk.h"

#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

namespace smelt::codegen {
namespace {

/// A load of a sweep: where in the kernel's top level its loop is, and where in the loop's body it is.
struct Sweep {
  size_t topIndex = 0;
  size_t bodyIndex = 0;
  const KLoop* loop = nullptr;
  const KInst* load = nullptr;
};

/// What a cacheable load reads: its buffer, the offset added to the loop index (-1: none) and the
/// loop's extent. Two sweeps' loads with one key read the same elements in the same threads.
using Key = std::tuple<int64_t, int32_t, int64_t>;

/// Iterations per thread of a split loop whose elements each thread visits the same way in every
/// sweep of its extent, or 0.
int64_t iterationsPerThread(const Kernel& k, const KLoop& l) {
  if (!l.split || l.partial || l.extentValue >= 0 || l.extent <= 0 || l.extent % k.blockThreads != 0) return 0;
  return l.extent / k.blockThreads;
}

/// The value added to the loop's index to make `offset`, -1 when the offset is the index itself, or
/// nullopt when the offset is not of that form (or adds something computed inside the loop).
std::optional<int32_t> rowOffset(const KLoop& l, int32_t offset,
                                 const std::unordered_map<int32_t, const KInst*>& bodyDefs) {
  if (offset == l.index) return -1;
  auto def = bodyDefs.find(offset);
  if (def == bodyDefs.end() || def->second == nullptr) return std::nullopt;  // outside, or from an inner loop
  const KInst& add = *def->second;
  if (add.kind != KInstKind::Binary || add.binary != KBinary::Add) return std::nullopt;
  int32_t other = add.a == l.index ? add.b : add.b == l.index ? add.a : -2;
  if (other == -2 || bodyDefs.count(other) != 0) return std::nullopt;
  for (int32_t c : l.carried) {
    if (c == other) return std::nullopt;
  }
  return other;
}

/// Whether a store to `stored` may change what a load of `loaded` reads.
bool mayOverwrite(const Kernel& k, int32_t stored, int32_t loaded) {
  if (memoryOf(k, stored) == memoryOf(k, loaded)) return true;
  return inputsSharingMemoryWith(k, stored).count(loaded) != 0;
}

/// Whether `s` (loop bodies included) stores where a load of `loaded` reads.
bool storesOver(const Kernel& k, const KStmt& s, int32_t loaded) {
  if (const KStore* st = std::get_if<KStore>(&s)) return mayOverwrite(k, st->buffer, loaded);
  if (const auto* l = std::get_if<std::shared_ptr<KLoop>>(&s)) {
    for (const KStmt& inner : (*l)->body.stmts) {
      if (storesOver(k, inner, loaded)) return true;
    }
  }
  return false;
}

/// Whether `later`'s load reads what `first`'s read: no store to that memory from the first sweep
/// through the later one, up to its load.
bool unchangedBetween(const Kernel& k, const Sweep& first, const Sweep& later) {
  const int32_t buffer = static_cast<int32_t>(first.load->ibits);
  for (size_t i = first.topIndex; i < later.topIndex; ++i) {
    if (storesOver(k, k.body.stmts[i], buffer)) return false;
  }
  for (size_t j = 0; j < later.bodyIndex; ++j) {
    if (storesOver(k, later.loop->body.stmts[j], buffer)) return false;
  }
  return true;
}

int64_t wordsOf(DType t) { return dtypeSize(t) > 4 ? 2 : 1; }

}  // namespace

RowCachePlan planRowCaches(const Kernel& k) {
  RowCachePlan plan;
  if (k.blockThreads <= 0 || k.pointsPerThread > 1) return plan;
  std::map<Key, std::vector<Sweep>> byKey;
  std::vector<Key> order;  // keys in the order of their first load, so arrays number the same every time
  for (size_t i = 0; i < k.body.stmts.size(); ++i) {
    const auto* loop = std::get_if<std::shared_ptr<KLoop>>(&k.body.stmts[i]);
    if (!loop || iterationsPerThread(k, **loop) == 0) continue;
    const KLoop& l = **loop;
    std::unordered_map<int32_t, const KInst*> bodyDefs;
    for (const KStmt& s : l.body.stmts) {
      if (const KInst* in = std::get_if<KInst>(&s)) bodyDefs[in->result] = in;
      else forEachDef(s, [&](int32_t v) { bodyDefs[v] = nullptr; });
    }
    std::set<Key> seen;  // the first load of a key in this sweep stands for the sweep
    for (size_t j = 0; j < l.body.stmts.size(); ++j) {
      const KInst* in = std::get_if<KInst>(&l.body.stmts[j]);
      if (!in || in->kind != KInstKind::Load) continue;
      std::optional<int32_t> offset = rowOffset(l, in->a, bodyDefs);
      if (!offset) continue;
      Key key{in->ibits, *offset, l.extent};
      if (!seen.insert(key).second) continue;
      std::vector<Sweep>& sweeps = byKey[key];
      if (sweeps.empty()) order.push_back(key);
      sweeps.push_back({i, j, &l, in});
    }
  }
  int64_t words = 0;
  for (const Key& key : order) {
    // The sweeps that read what the first one loaded: up to the first store that may change it.
    std::vector<Sweep> sweeps = byKey[key];
    size_t reading = 1;
    while (reading < sweeps.size() && unchangedBetween(k, sweeps.front(), sweeps[reading])) ++reading;
    sweeps.resize(reading);
    if (sweeps.size() < 2) continue;
    const int64_t length = iterationsPerThread(k, *sweeps.front().loop);
    const DType dtype = sweeps.front().load->dtype;
    if (words + length * wordsOf(dtype) > kMaxRowCacheWords) continue;
    words += length * wordsOf(dtype);
    plan.loads[sweeps.front().load] = {plan.arrays.size(), true};
    for (size_t s = 1; s < sweeps.size(); ++s) plan.loads[sweeps[s].load] = {plan.arrays.size(), false};
    plan.arrays.push_back({dtype, length, sweeps.front().loop});
  }
  return plan;
}

}  // namespace smelt::codegen

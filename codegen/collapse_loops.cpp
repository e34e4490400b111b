// collapseNestedLoops (see collapse_loops.h).
#include "codegen/collapse_loops.h"

#include "codegen/kernel_walk.h"

#include <unordered_map>
#include <unordered_set>

namespace smelt::codegen {

namespace {

/// Value id -> its defining instruction, for the constants the pattern checks.
class Constants {
 public:
  explicit Constants(const Kernel& kernel) { collect(kernel.body); }
  bool is(int32_t id, int64_t value) const {
    auto it = values_.find(id);
    return it != values_.end() && it->second == value;
  }

 private:
  void collect(const KBlock& block) {
    for (const KStmt& s : block.stmts) {
      if (const auto* i = std::get_if<KInst>(&s)) {
        if (i->kind == KInstKind::Const && !isFloat(i->dtype)) values_[i->result] = i->ibits;
      } else if (const auto* l = std::get_if<LoopPtr>(&s)) {
        collect((*l)->body);
      }
    }
  }
  std::unordered_map<int32_t, int64_t> values_;
};

bool isBinary(const KStmt& s, KBinary op) {
  const auto* i = std::get_if<KInst>(&s);
  return i && i->kind == KInstKind::Binary && i->binary == op;
}

/// Collapses `outer` (statement `at` of `block`) with the loop its body ends in, if the pattern holds.
bool tryCollapse(KBlock& block, size_t at, const Constants& constants) {
  KLoop& outer = *std::get<LoopPtr>(block.stmts[at]);
  if (outer.body.stmts.empty() || !std::holds_alternative<LoopPtr>(outer.body.stmts.back())) return false;
  KLoop& inner = *std::get<LoopPtr>(outer.body.stmts.back());
  // The nest carries its values straight through: the outer loop's carried values start the inner
  // loop, whose results are the outer loop's next values.
  if (inner.init != outer.carried || outer.next != inner.results) return false;
  size_t before = outer.body.stmts.size() - 1;
  for (size_t s = 0; s < before; ++s) {
    if (!std::holds_alternative<KInst>(outer.body.stmts[s])) return false;
  }
  std::unordered_map<int32_t, int> uses = useCounts(outer.body);
  for (int32_t c : outer.carried) {
    if (uses[c] != 1) return false;  // read only as the inner loop's initial value
  }
  // The outer index appears only as `outer * extent(inner)` instructions before the inner loop.
  std::unordered_set<int32_t> scaled;
  for (size_t s = 0; s < before; ++s) {
    const KInst& i = std::get<KInst>(outer.body.stmts[s]);
    bool readsIndex = i.a == outer.index || i.b == outer.index || i.c == outer.index;
    if (!readsIndex) continue;
    bool scales = isBinary(outer.body.stmts[s], KBinary::Mul) &&
                  ((i.a == outer.index && constants.is(i.b, inner.extent)) ||
                   (i.b == outer.index && constants.is(i.a, inner.extent)));
    if (!scales) return false;
    scaled.insert(i.result);
  }
  // Each scaled index and the inner index appear only in `inner + scaled` at the top of the inner
  // loop's body: those sums are the collapsed index.
  std::vector<size_t> sums;
  int innerUses = 0;
  std::unordered_map<int32_t, int> scaledUses;
  for (size_t s = 0; s < inner.body.stmts.size(); ++s) {
    const auto* i = std::get_if<KInst>(&inner.body.stmts[s]);
    if (!i || !isBinary(inner.body.stmts[s], KBinary::Add)) continue;
    bool sum = (i->a == inner.index && scaled.count(i->b)) || (i->b == inner.index && scaled.count(i->a));
    if (!sum) continue;
    sums.push_back(s);
    ++innerUses;
    ++scaledUses[i->a == inner.index ? i->b : i->a];
  }
  if (sums.empty() || uses[inner.index] != innerUses || uses[outer.index] != static_cast<int>(scaled.size())) return false;
  for (int32_t m : scaled) {
    if (uses[m] != scaledUses[m]) return false;
  }
  // Rewrite: the collapsed loop takes the first sum's id as its index; the other sums are renamed to it.
  int32_t index = std::get<KInst>(inner.body.stmts[sums[0]]).result;
  std::unordered_map<int32_t, int32_t> rename;
  for (size_t s : sums) rename[std::get<KInst>(inner.body.stmts[s]).result] = index;
  rename.erase(index);
  auto collapsed = std::make_shared<KLoop>();
  collapsed->index = index;
  collapsed->extent = outer.extent * inner.extent;
  collapsed->init = outer.init;
  collapsed->carried = inner.carried;
  collapsed->next = inner.next;
  collapsed->results = outer.results;
  std::unordered_set<size_t> dropped(sums.begin(), sums.end());
  for (size_t s = 0; s < inner.body.stmts.size(); ++s) {
    if (!dropped.count(s)) collapsed->body.stmts.push_back(std::move(inner.body.stmts[s]));
  }
  renameBlock(collapsed->body, rename);
  for (int32_t& n : collapsed->next) n = renamed(n, rename);
  // The outer body's other instructions do not depend on either index: they go before the loop.
  std::vector<KStmt> hoisted;
  for (size_t s = 0; s < before; ++s) {
    const KInst& i = std::get<KInst>(outer.body.stmts[s]);
    if (!scaled.count(i.result)) hoisted.push_back(std::move(outer.body.stmts[s]));
  }
  block.stmts[at] = collapsed;
  block.stmts.insert(block.stmts.begin() + static_cast<std::ptrdiff_t>(at), std::make_move_iterator(hoisted.begin()),
                     std::make_move_iterator(hoisted.end()));
  return true;
}

int collapseBlock(KBlock& block, const Constants& constants) {
  int collapsed = 0;
  for (size_t s = 0; s < block.stmts.size(); ++s) {
    if (!std::holds_alternative<LoopPtr>(block.stmts[s])) continue;
    while (tryCollapse(block, s, constants)) {
      ++collapsed;
      while (!std::holds_alternative<LoopPtr>(block.stmts[s])) ++s;  // past the hoisted instructions
    }
    collapsed += collapseBlock(std::get<LoopPtr>(block.stmts[s])->body, constants);
  }
  return collapsed;
}

}  // namespace

int collapseNestedLoops(Kernel& kernel) {
  Constants constants(kernel);
  int total = 0;
  // Inner pairs first: an outer loop may collapse with a loop that has just become one.
  for (int n = collapseBlock(kernel.body, constants); n > 0; n = collapseBlock(kernel.body, constants)) total += n;
  return total;
}

}  // namespace smelt::codegen

// See tile_columns.h.
#include "codegen/tile_columns.h"

#include "codegen/kernel_walk.h"

#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace smelt::codegen {

namespace {

/// Integer offsets as functions of the point p and one loop's index r, evaluated at given p and r (to
/// recognize the kernel's shape only: the rewrite is correct for any offsets, as points are independent).
class OffsetEvaluator {
 public:
  OffsetEvaluator(const std::unordered_map<int32_t, const KInst*>& defs, int32_t outer)
      : defs_(defs), outer_(outer) {}

  std::optional<int64_t> at(int32_t v, int32_t loopIndex, int64_t p, int64_t r, int depth = 0) const {
    if (v == outer_) return p;
    if (v == loopIndex) return r;
    auto it = defs_.find(v);
    if (it == defs_.end() || depth > 64) return std::nullopt;
    const KInst& i = *it->second;
    if (isFloat(i.dtype)) return std::nullopt;
    if (i.kind == KInstKind::Const) return i.ibits;
    if (i.kind == KInstKind::Cast) return at(i.a, loopIndex, p, r, depth + 1);
    if (i.kind != KInstKind::Binary) return std::nullopt;
    auto a = at(i.a, loopIndex, p, r, depth + 1), b = at(i.b, loopIndex, p, r, depth + 1);
    if (!a || !b) return std::nullopt;
    switch (i.binary) {
      case KBinary::Add: return *a + *b;
      case KBinary::Sub: return *a - *b;
      case KBinary::Mul: return *a * *b;
      case KBinary::Div: return *b != 0 ? std::optional<int64_t>(*a / *b) : std::nullopt;
      case KBinary::Rem: return *b != 0 ? std::optional<int64_t>(*a % *b) : std::nullopt;
      default: return std::nullopt;
    }
  }

 private:
  const std::unordered_map<int32_t, const KInst*>& defs_;
  int32_t outer_;
};

struct Homes {
  std::vector<int32_t> buffer;  // per carried value: the output holding it between rows
};

class Tiler {
 public:
  explicit Tiler(Kernel& kernel) : k_(kernel) {}

  bool run() {
    if (k_.domain.size() != 1) return false;
    const int64_t columns = k_.domain[0];
    for (int64_t t : {64, 32, 16, 8}) {
      if (columns % t == 0 && columns / t >= 8) {
        tile_ = t;
        break;
      }
    }
    if (tile_ == 0 || !analyze()) return false;
    rebuild();
    k_.domain[0] = columns / tile_;
    removeDeadInstructions(k_);
    return true;
  }

 private:
  bool analyze() {
    std::unordered_map<int32_t, int> uses = useCounts(k_.body);
    bool anyLoop = false, walksColumn = false;
    for (const KStmt& s : k_.body.stmts) {
      if (const KInst* i = std::get_if<KInst>(&s)) {
        defs_[i->result] = i;
        if (i->kind == KInstKind::Outer) outer_ = i->result;
        bool dependent = i->kind == KInstKind::Outer;
        for (int32_t o : {i->a, i->b, i->c}) dependent = dependent || (o >= 0 && pointDependent_.contains(o));
        if (dependent) pointDependent_.insert(i->result);
      } else if (const LoopPtr* lp = std::get_if<LoopPtr>(&s)) {
        anyLoop = true;
        for (const KStmt& inner : (*lp)->body.stmts) {
          if (std::holds_alternative<LoopPtr>(inner)) return false;
          if (const KInst* i = std::get_if<KInst>(&inner)) defs_[i->result] = i;
        }
      }
    }
    if (!anyLoop || outer_ < 0) return false;
    // Every access inside a loop: at p + f(r) (a column) or independent of p; one at least moves with r.
    OffsetEvaluator eval(defs_, outer_);
    for (const KStmt& s : k_.body.stmts) {
      const LoopPtr* lp = std::get_if<LoopPtr>(&s);
      if (!lp) continue;
      const KLoop& loop = **lp;
      for (const KStmt& inner : loop.body.stmts) {
        int32_t offset = -1;
        if (const KInst* i = std::get_if<KInst>(&inner); i && i->kind == KInstKind::Load) offset = i->a;
        if (const KStore* st = std::get_if<KStore>(&inner)) offset = st->offset;
        if (offset < 0) continue;
        auto o00 = eval.at(offset, loop.index, 0, 0), o10 = eval.at(offset, loop.index, 1, 0);
        auto o01 = eval.at(offset, loop.index, 0, 1);
        if (!o00 || !o10 || !o01) return false;
        int64_t dp = *o10 - *o00, dr = *o01 - *o00;
        if (dp != 0 && dp != 1) return false;
        walksColumn = walksColumn || (dp == 1 && dr != 0 && dr != 1 && dr != -1);
      }
    }
    if (!walksColumn) return false;
    // Each carried value's home: the output it is stored to, unchanged, at the point's own index.
    for (const KStmt& s : k_.body.stmts) {
      const LoopPtr* lp = std::get_if<LoopPtr>(&s);
      if (!lp) continue;
      const KLoop& loop = **lp;
      Homes homes;
      for (int32_t result : loop.results) {
        int32_t buffer = -1;
        if (uses[result] == 1) {
          for (const KStmt& t : k_.body.stmts) {
            const KStore* st = std::get_if<KStore>(&t);
            if (st && st->value == result && st->offset == outer_ &&
                k_.buffers[static_cast<size_t>(st->buffer)].dtype == k_.types[static_cast<size_t>(result)]) {
              buffer = st->buffer;
              homeStores_.insert(&t);
            }
          }
        }
        if (buffer < 0) return false;
        homes.buffer.push_back(buffer);
      }
      homes_[&loop] = homes;
    }
    // A home is written before the point's last statement: no input it might share memory with (one of
    // its dtype and size, written in place) may be read.
    std::unordered_set<int64_t> risky;
    for (const auto& [loop, homes] : homes_) {
      for (int32_t h : homes.buffer) risky.merge(inputsSharingMemoryWith(k_, h));
    }
    return !loadsAny(k_.body, risky);
  }

  int32_t fresh(DType t) {
    k_.types.push_back(t);
    return static_cast<int32_t>(k_.types.size() - 1);
  }

  /// A loop over the tile's columns: its index, `pt = q * T + t`, and the point-dependent top-level
  /// values `roots` need, cloned in (their uses renamed through `map`).
  std::shared_ptr<KLoop> columnLoop(const std::vector<int32_t>& roots, std::unordered_map<int32_t, int32_t>& map) {
    auto loop = std::make_shared<KLoop>();
    loop->index = fresh(DType::i64);
    loop->extent = tile_;
    int32_t pt = fresh(DType::i64);
    loop->body.stmts.push_back(
        KInst{.kind = KInstKind::Binary, .dtype = DType::i64, .result = pt, .a = tileStart_, .b = loop->index,
              .binary = KBinary::Add});
    map[outer_] = pt;
    std::unordered_set<int32_t> needed;
    std::function<void(int32_t)> need = [&](int32_t v) {
      if (v < 0 || v == outer_ || !pointDependent_.contains(v) || !needed.insert(v).second) return;
      const KInst& i = *defs_.at(v);
      for (int32_t o : {i.a, i.b, i.c}) need(o);
    };
    for (int32_t r : roots) need(r);
    for (const KStmt& s : k_.body.stmts) {  // in program order, so operands come first
      const KInst* i = std::get_if<KInst>(&s);
      if (!i || !needed.contains(i->result)) continue;
      KInst clone = *i;
      clone.result = fresh(i->dtype);
      for (int32_t* o : {&clone.a, &clone.b, &clone.c}) {
        if (*o >= 0) *o = renamed(*o, map);
      }
      map[i->result] = clone.result;
      loop->body.stmts.push_back(clone);
    }
    return loop;
  }

  void rebuild() {
    std::vector<KStmt> out;
    // Point-independent instructions stay where they are, first; the tile's first column after them.
    for (const KStmt& s : k_.body.stmts) {
      const KInst* i = std::get_if<KInst>(&s);
      if (i && (!pointDependent_.contains(i->result) || i->result == outer_)) out.push_back(s);
    }
    int32_t width = fresh(DType::i64);
    out.push_back(KInst{.kind = KInstKind::Const, .dtype = DType::i64, .result = width, .ibits = tile_});
    tileStart_ = fresh(DType::i64);
    out.push_back(KInst{.kind = KInstKind::Binary, .dtype = DType::i64, .result = tileStart_, .a = outer_,
                        .b = width, .binary = KBinary::Mul});
    for (KStmt& s : k_.body.stmts) {
      if (std::holds_alternative<KInst>(s) || homeStores_.contains(&s)) continue;
      if (KStore* st = std::get_if<KStore>(&s)) {
        std::unordered_map<int32_t, int32_t> map;
        auto loop = columnLoop({st->offset, st->value}, map);
        renameStmt(s, map);
        loop->body.stmts.push_back(s);
        out.push_back(loop);
        continue;
      }
      KLoop& rows = *std::get<LoopPtr>(s);
      std::vector<int32_t> roots;
      forEachUseInBlock(rows.body, [&](int32_t v) { roots.push_back(v); });
      roots.insert(roots.end(), rows.next.begin(), rows.next.end());
      const Homes& homes = homes_.at(&rows);
      if (!rows.carried.empty()) {
        std::unordered_map<int32_t, int32_t> map;
        auto init = columnLoop(rows.init, map);
        int32_t pt = map.at(outer_);
        for (size_t c = 0; c < rows.init.size(); ++c) {
          init->body.stmts.push_back(KStore{.buffer = homes.buffer[c], .offset = pt, .value = renamed(rows.init[c], map)});
        }
        out.push_back(init);
      }
      std::unordered_map<int32_t, int32_t> map;
      auto columns = columnLoop(roots, map);
      int32_t pt = map.at(outer_);
      for (size_t c = 0; c < rows.carried.size(); ++c) {
        int32_t acc = fresh(k_.types[static_cast<size_t>(rows.carried[c])]);
        columns->body.stmts.push_back(KInst{.kind = KInstKind::Load, .dtype = k_.types[static_cast<size_t>(acc)],
                                            .result = acc, .a = pt, .ibits = homes.buffer[c]});
        map[rows.carried[c]] = acc;
      }
      renameBlock(rows.body, map);
      for (KStmt& inner : rows.body.stmts) columns->body.stmts.push_back(std::move(inner));
      for (size_t c = 0; c < rows.next.size(); ++c) {
        columns->body.stmts.push_back(KStore{.buffer = homes.buffer[c], .offset = pt, .value = renamed(rows.next[c], map)});
      }
      auto outerRows = std::make_shared<KLoop>();
      outerRows->index = rows.index;
      outerRows->extent = rows.extent;
      outerRows->body.stmts.push_back(columns);
      out.push_back(outerRows);
    }
    k_.body.stmts = std::move(out);
  }

  Kernel& k_;
  int64_t tile_ = 0;
  int32_t outer_ = -1, tileStart_ = -1;
  std::unordered_map<int32_t, const KInst*> defs_;
  std::unordered_set<int32_t> pointDependent_;
  std::unordered_set<const KStmt*> homeStores_;
  std::unordered_map<const KLoop*, Homes> homes_;
};

}  // namespace

bool tileColumns(Kernel& kernel) { return Tiler(kernel).run(); }

}  // namespace smelt::codegen

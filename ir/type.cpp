// Shapes, tensor types and broadcasting.
#include "ir/type.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <unordered_map>

namespace smelt {

namespace {

/// A monomial: a count times symbols, each symbol a plain one's id, sorted by name (with repeats).
struct Monomial {
  int64_t count = 1;
  std::vector<int64_t> symbols;
};

/// The interned symbols, process-wide (never shrinks: symbols and their products are few). A plain
/// symbol's monomial is {1, {its own id}}; a product's names its factors.
struct Symbols {
  std::mutex mutex;
  std::vector<std::string> names;
  std::vector<Monomial> monomials;
  std::unordered_map<std::string, int64_t> ids;
};
Symbols& symbols() {
  static auto* s = new Symbols();
  return *s;
}

/// The id `extent` encodes, or -1. Takes the lock.
int64_t symbolId(int64_t extent) {
  if (extent >= 0 || extent < kSymbolBase || (extent - kSymbolBase) % kSymbolStride != 0) return -1;
  int64_t id = (extent - kSymbolBase) / kSymbolStride;
  std::lock_guard lock(symbols().mutex);
  return id < static_cast<int64_t>(symbols().names.size()) ? id : -1;
}

/// `extent` as a monomial (a count is {extent, {}}); `extent` is a count or symbolic.
Monomial monomialOf(int64_t extent) {
  int64_t id = symbolId(extent);
  if (id < 0) return {extent, {}};
  std::lock_guard lock(symbols().mutex);
  return symbols().monomials[static_cast<size_t>(id)];
}

/// Interns `name` with monomial `m` (the caller holds the lock) and returns its extent.
int64_t internLocked(Symbols& s, const std::string& name, const Monomial& m) {
  auto [it, added] = s.ids.try_emplace(name, static_cast<int64_t>(s.names.size()));
  if (added) {
    s.names.push_back(name);
    s.monomials.push_back(m);
    if (s.monomials.back().symbols.empty()) s.monomials.back().symbols.push_back(it->second);  // a plain symbol
  }
  return kSymbolBase + it->second * kSymbolStride;
}

/// The extent of `m`: a count when it has no symbols, the symbol itself for 1 times one symbol, or
/// an interned product named "12*N*T".
int64_t extentOf(Monomial m) {
  if (m.symbols.empty() || m.count == 0) return m.count;
  Symbols& s = symbols();
  std::lock_guard lock(s.mutex);
  auto byName = [&](int64_t a, int64_t b) { return s.names[static_cast<size_t>(a)] < s.names[static_cast<size_t>(b)]; };
  std::sort(m.symbols.begin(), m.symbols.end(), byName);
  if (m.count == 1 && m.symbols.size() == 1) return kSymbolBase + m.symbols[0] * kSymbolStride;
  std::string name = m.count == 1 ? "" : std::to_string(m.count);
  for (int64_t id : m.symbols) name += (name.empty() ? "" : "*") + s.names[static_cast<size_t>(id)];
  return internLocked(s, name, m);
}

}  // namespace

std::string extentToString(int64_t d) {
  std::string name = d < 0 ? dimSymbolName(d) : "";
  return name.empty() ? std::to_string(d) : name;
}

bool isValidSymbolName(std::string_view name) {
  if (name.empty() || name.size() > 64 || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
    return false;
  }
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

int64_t dimSymbol(std::string_view name) {
  Symbols& s = symbols();
  std::lock_guard lock(s.mutex);
  return internLocked(s, std::string(name), Monomial{1, {}});
}

bool isSymbolic(int64_t extent) { return symbolId(extent) >= 0; }

bool isPlainSymbol(int64_t extent) {
  Monomial m = monomialOf(extent);
  return m.count == 1 && m.symbols.size() == 1 && extent < 0;
}

std::string dimSymbolName(int64_t extent) {
  int64_t id = symbolId(extent);
  if (id < 0) return "";
  std::lock_guard lock(symbols().mutex);
  return symbols().names[static_cast<size_t>(id)];
}

ExtentFactors extentFactors(int64_t extent) {
  Monomial m = monomialOf(extent);
  ExtentFactors f{m.count, {}};
  std::lock_guard lock(symbols().mutex);
  for (int64_t id : m.symbols) f.symbols.push_back(symbols().names[static_cast<size_t>(id)]);  // in name order
  return f;
}

Expected<int64_t> multiplyExtents(int64_t a, int64_t b) {
  Monomial ma = monomialOf(a), mb = monomialOf(b);
  if (ma.count < 0 || mb.count < 0) {
    return makeError("cannot multiply extents {} and {}: one is negative", extentToString(a), extentToString(b));
  }
  if (mb.count != 0 && ma.count > kMaxElements / mb.count) {
    return makeError("the product of extents {} and {} has too many elements (at most 2^40)", extentToString(a),
                     extentToString(b));
  }
  Monomial m{ma.count * mb.count, ma.symbols};
  m.symbols.insert(m.symbols.end(), mb.symbols.begin(), mb.symbols.end());
  return extentOf(std::move(m));
}

std::optional<int64_t> divideExtents(int64_t a, int64_t b) {
  Monomial ma = monomialOf(a), mb = monomialOf(b);
  if (ma.count < 0 || mb.count <= 0 || ma.count % mb.count != 0) return std::nullopt;
  Monomial q{ma.count / mb.count, ma.symbols};
  for (int64_t id : mb.symbols) {
    auto it = std::find(q.symbols.begin(), q.symbols.end(), id);
    if (it == q.symbols.end()) return std::nullopt;
    q.symbols.erase(it);
  }
  if (q.count == 0 && !q.symbols.empty()) return std::nullopt;  // 0 / N is no monomial of N's
  return extentOf(std::move(q));
}

bool isStatic(std::span<const int64_t> shape) {
  for (int64_t d : shape) {
    if (d < 0) return false;
  }
  return true;
}

int64_t numElements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

std::string shapeToString(std::span<const int64_t> shape) {
  std::vector<std::string> parts;
  for (int64_t d : shape) parts.push_back(extentToString(d));
  return fmt::format("[{}]", fmt::join(parts, ","));
}

std::vector<int64_t> contiguousStrides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

std::string TensorType::toString() const { return std::string(dtypeName(dtype)) + shapeToString(shape); }

bool extentsUnify(int64_t a, int64_t b) {
  if (a == b) return true;
  if (!isSymbolic(a) || !isSymbolic(b)) return false;
  // Monomials keep their symbols in name order, so equal lists are equal symbols: times different
  // counts those never meet.
  return monomialOf(a).symbols != monomialOf(b).symbols;
}

Expected<Shape> broadcastShapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (!extentsUnify(da, db) && da != 1 && db != 1) {
      return makeError("shapes {} and {} do not broadcast (dimension {}: {} vs {})", shapeToString(a),
                       shapeToString(b), i, extentToString(da), extentToString(db));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Status checkShapeLimits(std::span<const int64_t> shape) {
  if (static_cast<int64_t>(shape.size()) > kMaxRank) {
    return makeError("rank {} is above the supported maximum of {}", shape.size(), kMaxRank);
  }
  int64_t n = 1;
  for (int64_t d : shape) {
    if (isSymbolic(d)) d = monomialOf(d).count;
    if (d < -kMaxElements) return makeError("shape {} has an extent computed from a symbolic dimension", shapeToString(shape));
    if (d < 0) return makeError("shape {} has a negative extent", shapeToString(shape));
    if (d > kMaxElements || (d != 0 && n > kMaxElements / d)) {
      return makeError("shape {} has too many elements (at most 2^40)", shapeToString(shape));
    }
    n *= d;
  }
  return Status::success();
}

Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) return makeError("axis {} is out of range for rank {}", axis, rank);
  return a;
}

}  // namespace smelt

// Symbolic extents: interning and arithmetic (see ir/type.h).
//
// Every symbolic extent is a polynomial with integer coefficients over atoms: named symbols ("N") and
// floor quotients ("(H+1)/2", floor((H+1) / 2)), which a convolution's stride makes. Each one is
// interned once, process-wide, under its canonical name, and stands in a Shape as a negative extent
// on the symbol grid (kSymbolBase + id * kSymbolStride), so that equal polynomials are one extent and
// a shape compares with ==. The canonical name is also the text IR's spelling; the parser reads it
// back through the same arithmetic:
//   N          a symbol              12*N*T     a count times symbols (count first, names sorted)
//   N+1, 2*N-3 sums: terms by degree, then by name; the count last
//   (H+1)/2    a floor quotient, its numerator reduced to coefficients in [0, divisor)
#include "ir/type.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace smelt {

namespace {

/// A term: a coefficient times atoms (their ids, in name order, with repeats).
struct Term {
  int64_t coefficient = 1;
  std::vector<int64_t> atoms;
};

/// A sum of terms (each set of atoms once, coefficients nonzero, in canonical order) and a count.
struct Polynomial {
  std::vector<Term> terms;
  int64_t constant = 0;
};

/// One interned extent. An atom's polynomial is 1 times itself.
struct Entry {
  std::string name;
  Polynomial poly;
  bool plain = false;     // a named symbol
  int64_t numerator = 0;  // a floor quotient's: the extent it divides (0 for others)
  int64_t divisor = 0;    // a floor quotient's divisor (>= 2)
};

struct Registry {
  std::mutex mutex;
  std::vector<Entry> entries;
  std::unordered_map<std::string, int64_t> ids;
};
Registry& registry() {
  static auto* r = new Registry();
  return *r;
}

int64_t extentOfId(int64_t id) { return kSymbolBase + id * kSymbolStride; }

/// The id `extent` encodes, or -1 for a count (or any number off the grid).
int64_t idOf(int64_t extent) {
  if (extent >= 0 || extent < kSymbolBase || (extent - kSymbolBase) % kSymbolStride != 0) return -1;
  int64_t id = (extent - kSymbolBase) / kSymbolStride;
  std::lock_guard lock(registry().mutex);
  return id < static_cast<int64_t>(registry().entries.size()) ? id : -1;
}

Entry entryOf(int64_t id) {
  std::lock_guard lock(registry().mutex);
  return registry().entries[static_cast<size_t>(id)];
}

Polynomial polyOf(int64_t extent) {
  int64_t id = idOf(extent);
  if (id < 0) return Polynomial{{}, extent};
  return entryOf(id).poly;
}

// --- canonical names ---------------------------------------------------------------------------

std::string atomName(const Registry& r, int64_t id) { return r.entries[static_cast<size_t>(id)].name; }

/// Terms of higher degree first, then by their atoms' names.
bool termBefore(const Registry& r, const Term& a, const Term& b) {
  if (a.atoms.size() != b.atoms.size()) return a.atoms.size() > b.atoms.size();
  for (size_t i = 0; i < a.atoms.size(); ++i) {
    const std::string &x = atomName(r, a.atoms[i]), &y = atomName(r, b.atoms[i]);
    if (x != y) return x < y;
  }
  return false;
}

std::string termName(const Registry& r, const Term& t, bool first) {
  std::string out = t.coefficient < 0 ? "-" : (first ? "" : "+");
  int64_t magnitude = t.coefficient < 0 ? -t.coefficient : t.coefficient;
  bool lead = true;
  if (magnitude != 1) {
    out += std::to_string(magnitude);
    lead = false;
  }
  for (int64_t id : t.atoms) {
    out += (lead ? "" : "*") + atomName(r, id);
    lead = false;
  }
  return out;
}

std::string polyName(const Registry& r, const Polynomial& p) {
  std::string out;
  for (const Term& t : p.terms) out += termName(r, t, out.empty());
  if (p.constant > 0) out += (out.empty() ? "" : "+") + std::to_string(p.constant);
  if (p.constant < 0) out += std::to_string(p.constant);
  return out;
}

/// Sorts atoms by name, merges equal terms, drops zero ones, and orders the terms. Takes the lock.
void canonicalize(Polynomial& p) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto byName = [&](int64_t a, int64_t b) { return atomName(r, a) < atomName(r, b); };
  for (Term& t : p.terms) std::sort(t.atoms.begin(), t.atoms.end(), byName);
  std::sort(p.terms.begin(), p.terms.end(), [&](const Term& a, const Term& b) { return termBefore(r, a, b); });
  std::vector<Term> merged;
  for (Term& t : p.terms) {
    if (!merged.empty() && merged.back().atoms == t.atoms) {
      merged.back().coefficient += t.coefficient;
    } else {
      merged.push_back(std::move(t));
    }
  }
  for (const Term& t : merged) {
    if (t.atoms.empty()) p.constant += t.coefficient;
  }
  std::erase_if(merged, [](const Term& t) { return t.coefficient == 0 || t.atoms.empty(); });
  p.terms = std::move(merged);
}

/// Interns an entry named `name` (the caller holds the lock); its id.
int64_t internLocked(Registry& r, const std::string& name, Entry entry) {
  auto [it, added] = r.ids.try_emplace(name, static_cast<int64_t>(r.entries.size()));
  if (added) {
    entry.name = name;
    r.entries.push_back(std::move(entry));
  }
  return it->second;
}

/// An atom's entry: the polynomial 1 times itself.
int64_t internAtom(const std::string& name, Entry entry) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  bool known = r.ids.count(name) != 0;
  int64_t id = internLocked(r, name, std::move(entry));
  if (!known) r.entries[static_cast<size_t>(id)].poly = Polynomial{{Term{1, {id}}}, 0};
  return id;
}

/// The extent of `p`: a count when it has no terms, an atom itself, or an interned polynomial.
int64_t extentOf(Polynomial p) {
  canonicalize(p);
  if (p.terms.empty()) return p.constant;
  if (p.constant == 0 && p.terms.size() == 1 && p.terms[0].coefficient == 1 && p.terms[0].atoms.size() == 1) {
    return extentOfId(p.terms[0].atoms[0]);
  }
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::string name = polyName(r, p);
  Entry entry;
  entry.poly = std::move(p);
  return extentOfId(internLocked(r, name, std::move(entry)));
}

// --- arithmetic ------------------------------------------------------------------------------------

/// Whether |v| stays within kMaxElements (coefficients and counts of shapes do; anything larger is an
/// absurd attribute).
bool inRange(__int128 v) { return v <= kMaxElements && v >= -kMaxElements; }

Expected<Polynomial> addPolys(const Polynomial& a, const Polynomial& b, int64_t sign) {
  Polynomial sum = a;
  for (Term t : b.terms) {
    t.coefficient *= sign;
    sum.terms.push_back(std::move(t));
  }
  __int128 constant = static_cast<__int128>(a.constant) + static_cast<__int128>(sign) * b.constant;
  if (!inRange(constant)) return makeError("a sum of extents is above 2^40");
  sum.constant = static_cast<int64_t>(constant);
  for (const Term& t : a.terms) {
    for (const Term& u : b.terms) {
      if (t.atoms == u.atoms && !inRange(static_cast<__int128>(t.coefficient) + u.coefficient)) {
        return makeError("a sum of extents is above 2^40");
      }
    }
  }
  return sum;
}

Expected<Polynomial> multiplyPolys(const Polynomial& a, const Polynomial& b) {
  Polynomial product;
  auto scaled = [](int64_t x, int64_t y) -> Expected<int64_t> {
    __int128 v = static_cast<__int128>(x) * y;
    if (!inRange(v)) return makeError("too many elements (at most 2^40)");
    return static_cast<int64_t>(v);
  };
  for (const Term& t : a.terms) {
    for (const Term& u : b.terms) {
      SMELT_TRY(int64_t c, scaled(t.coefficient, u.coefficient));
      Term m{c, t.atoms};
      m.atoms.insert(m.atoms.end(), u.atoms.begin(), u.atoms.end());
      product.terms.push_back(std::move(m));
    }
    if (b.constant != 0) {
      SMELT_TRY(int64_t c, scaled(t.coefficient, b.constant));
      product.terms.push_back(Term{c, t.atoms});
    }
  }
  if (a.constant != 0) {
    for (const Term& u : b.terms) {
      SMELT_TRY(int64_t c, scaled(a.constant, u.coefficient));
      product.terms.push_back(Term{c, u.atoms});
    }
  }
  SMELT_TRY(product.constant, scaled(a.constant, b.constant));
  return product;
}

int64_t floorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t floorMod(int64_t a, int64_t b) { return a - floorDiv(a, b) * b; }

/// Whether `p` is positive wherever every named symbol is at least 1 and every floor quotient at least 0
/// (its numerators are extents): no term below 0, and a positive count or a positive term of symbols only.
bool provablyPositive(const Polynomial& p) {
  if (p.constant < 0) return false;
  bool positive = p.constant > 0;
  for (const Term& t : p.terms) {
    if (t.coefficient < 0) return false;
    bool symbolsOnly = true;
    for (int64_t id : t.atoms) symbolsOnly = symbolsOnly && entryOf(id).plain;
    positive = positive || symbolsOnly;
  }
  return positive;
}

}  // namespace

// --- the API (ir/type.h) ---------------------------------------------------------------------------

int64_t dimSymbol(std::string_view name) {
  Entry entry;
  entry.plain = true;
  return extentOfId(internAtom(std::string(name), std::move(entry)));
}

bool isSymbolic(int64_t extent) { return idOf(extent) >= 0; }

bool isPlainSymbol(int64_t extent) {
  int64_t id = idOf(extent);
  return id >= 0 && entryOf(id).plain;
}

bool isMonomial(int64_t extent) {
  Polynomial p = polyOf(extent);
  return p.terms.size() <= 1 && (p.terms.empty() || p.constant == 0);
}

std::string dimSymbolName(int64_t extent) {
  int64_t id = idOf(extent);
  return id < 0 ? "" : entryOf(id).name;
}

ExtentFactors extentFactors(int64_t extent) {
  Polynomial p = polyOf(extent);
  if (p.terms.empty()) return {p.constant, {}};
  if (p.terms.size() > 1 || p.constant != 0) return {0, {}};
  ExtentFactors f{p.terms[0].coefficient, {}};
  for (int64_t id : p.terms[0].atoms) f.symbols.push_back(entryOf(id).name);  // in name order
  return f;
}

ExtentSum extentSum(int64_t extent) {
  Polynomial p = polyOf(extent);
  ExtentSum sum{{}, p.constant};
  for (const Term& t : p.terms) {
    ExtentSum::Term term{t.coefficient, {}};
    for (int64_t id : t.atoms) term.atoms.push_back(extentOfId(id));
    sum.terms.push_back(std::move(term));
  }
  return sum;
}

std::optional<FloorQuotient> floorQuotientOf(int64_t extent) {
  int64_t id = idOf(extent);
  if (id < 0) return std::nullopt;
  Entry e = entryOf(id);
  if (e.divisor == 0) return std::nullopt;
  return FloorQuotient{e.numerator, e.divisor};
}

std::vector<std::string> extentSymbols(int64_t extent) {
  std::vector<std::string> names;
  std::vector<int64_t> work{extent};
  while (!work.empty()) {
    Polynomial p = polyOf(work.back());
    work.pop_back();
    for (const Term& t : p.terms) {
      for (int64_t id : t.atoms) {
        Entry e = entryOf(id);
        if (e.plain) {
          if (std::find(names.begin(), names.end(), e.name) == names.end()) names.push_back(e.name);
        } else {
          work.push_back(e.numerator);
        }
      }
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

Expected<int64_t> multiplyExtents(int64_t a, int64_t b) {
  Polynomial pa = polyOf(a), pb = polyOf(b);
  if ((pa.terms.empty() && pa.constant < 0) || (pb.terms.empty() && pb.constant < 0)) {
    return makeError("cannot multiply extents {} and {}: one is negative", extentToString(a), extentToString(b));
  }
  Expected<Polynomial> product = multiplyPolys(pa, pb);
  if (!product.ok()) {
    return makeError("the product of extents {} and {} has too many elements (at most 2^40)", extentToString(a),
                     extentToString(b));
  }
  if (product->terms.empty() && product->constant > kMaxElements) {
    return makeError("the product of extents {} and {} has too many elements (at most 2^40)", extentToString(a),
                     extentToString(b));
  }
  return extentOf(std::move(*product));
}

Expected<int64_t> addExtents(int64_t a, int64_t b) {
  SMELT_TRY(Polynomial sum, addPolys(polyOf(a), polyOf(b), 1));
  return extentOf(std::move(sum));
}

Expected<int64_t> subtractExtents(int64_t a, int64_t b) {
  SMELT_TRY(Polynomial difference, addPolys(polyOf(a), polyOf(b), -1));
  return extentOf(std::move(difference));
}

Expected<int64_t> floorDivideExtent(int64_t a, int64_t divisor) {
  if (divisor < 1) return makeError("cannot divide extent {} by {}", extentToString(a), divisor);
  Polynomial p = polyOf(a);
  if (p.terms.empty()) return floorDiv(p.constant, divisor);
  if (divisor == 1) return a;
  // (divisor * Q + R) / divisor = Q + R / divisor, with R's coefficients in [0, divisor): R / divisor
  // is 0 when R is a count, else one floor quotient (an atom).
  Polynomial quotient, rest;
  for (const Term& t : p.terms) {
    if (int64_t q = floorDiv(t.coefficient, divisor); q != 0) quotient.terms.push_back(Term{q, t.atoms});
    if (int64_t r = floorMod(t.coefficient, divisor); r != 0) rest.terms.push_back(Term{r, t.atoms});
  }
  quotient.constant = floorDiv(p.constant, divisor);
  rest.constant = floorMod(p.constant, divisor);
  if (rest.terms.size() == 1 && rest.terms[0].coefficient == 1 && rest.terms[0].atoms.size() == 1 &&
      entryOf(rest.terms[0].atoms[0]).divisor != 0) {
    // A quotient of a quotient is one quotient: (P/a + c) / d = (P + c*a) / (a*d).
    const Entry inner = entryOf(rest.terms[0].atoms[0]);
    SMELT_TRY(int64_t shifted, addExtents(inner.numerator, rest.constant * inner.divisor));
    if (inner.divisor > kMaxElements / divisor) return makeError("a divisor of extents is above 2^40");
    SMELT_TRY(int64_t nested, floorDivideExtent(shifted, inner.divisor * divisor));
    SMELT_TRY(Polynomial sum, addPolys(quotient, polyOf(nested), 1));
    return extentOf(std::move(sum));
  }
  if (!rest.terms.empty()) {
    int64_t numerator = extentOf(rest);
    Entry entry;
    entry.numerator = numerator;
    entry.divisor = divisor;
    std::string name = "(" + dimSymbolName(numerator) + ")/" + std::to_string(divisor);
    quotient.terms.push_back(Term{1, {internAtom(name, std::move(entry))}});
  }
  return extentOf(std::move(quotient));
}

std::optional<int64_t> divideExtents(int64_t a, int64_t b) {
  if (a == b && a != 0) return 1;
  Polynomial pa = polyOf(a), pb = polyOf(b);
  // The divisor: a positive count, or one term (a count times atoms).
  int64_t count = pb.terms.empty() ? pb.constant : pb.terms[0].coefficient;
  if (count <= 0 || pb.terms.size() > 1 || (!pb.terms.empty() && pb.constant != 0)) return std::nullopt;
  const std::vector<int64_t> atoms = pb.terms.empty() ? std::vector<int64_t>{} : pb.terms[0].atoms;
  if (pa.constant % count != 0 || (!atoms.empty() && pa.constant != 0)) return std::nullopt;
  Polynomial q{{}, atoms.empty() ? pa.constant / count : 0};
  for (const Term& t : pa.terms) {
    if (t.coefficient % count != 0) return std::nullopt;
    Term rest{t.coefficient / count, t.atoms};
    for (int64_t id : atoms) {
      auto it = std::find(rest.atoms.begin(), rest.atoms.end(), id);
      if (it == rest.atoms.end()) return std::nullopt;
      rest.atoms.erase(it);
    }
    if (rest.atoms.empty()) {
      q.constant += rest.coefficient;
    } else {
      q.terms.push_back(std::move(rest));
    }
  }
  if (pa.terms.empty() && pa.constant == 0 && !atoms.empty()) return std::nullopt;  // 0 / N is no extent of N's
  return extentOf(std::move(q));
}

Expected<int64_t> evaluateSymbolicExtent(int64_t extent,
                                         const std::function<std::optional<int64_t>(const std::string&)>& valueOf) {
  int64_t id = idOf(extent);
  if (id < 0) return extent;
  Entry e = entryOf(id);
  auto tooLarge = [&] { return makeError("{} is more than 2^40 at this binding", e.name); };
  if (e.plain) {
    std::optional<int64_t> v = valueOf(e.name);
    if (!v) return makeError("dimension {} is not bound", e.name);
    return *v;
  }
  const std::vector<std::string> symbols = extentSymbols(extent);
  for (const std::string& s : symbols) {
    if (!valueOf(s)) return makeError("dimension {} of {} is not bound", s, e.name);
  }
  if (e.divisor != 0) {
    SMELT_TRY(int64_t n, evaluateSymbolicExtent(e.numerator, valueOf));
    return floorDiv(n, e.divisor);
  }
  __int128 sum = e.poly.constant;
  for (const Term& t : e.poly.terms) {
    __int128 term = t.coefficient;
    for (int64_t atom : t.atoms) {
      SMELT_TRY(int64_t v, evaluateSymbolicExtent(extentOfId(atom), valueOf));
      term *= v;
      if (!inRange(term)) return tooLarge();
    }
    sum += term;
    if (!inRange(sum)) return tooLarge();
  }
  return static_cast<int64_t>(sum);
}

bool extentsMayBeEqual(int64_t a, int64_t b) {
  if (a == b) return true;
  if (!isSymbolic(a) || !isSymbolic(b)) return false;
  // Two extents whose difference is positive (or negative) wherever the symbols are at least 1 never
  // meet: N+1 and N, 2*N and 3*N.
  Expected<Polynomial> difference = addPolys(polyOf(a), polyOf(b), -1);
  if (!difference.ok()) return false;
  canonicalize(*difference);
  if (provablyPositive(*difference)) return false;
  Polynomial negated = *difference;
  negated.constant = -negated.constant;
  for (Term& t : negated.terms) t.coefficient = -t.coefficient;
  return !provablyPositive(negated);
}

namespace {

/// Whether two extents of one symbol agree at no more than two of its sizes 1..256: 3*N and N+2 (only
/// at 1), N and (N)/2 (never). Extents equal at every size, or at a regular share of them (2*((N)/2)
/// and N at every even N, as after a pooling and an upsampling), are not.
bool agreeOnlyBySize(int64_t a, int64_t b) {
  std::vector<std::string> symbols = extentSymbols(a);
  for (std::string& s : extentSymbols(b)) symbols.push_back(std::move(s));
  std::sort(symbols.begin(), symbols.end());
  symbols.erase(std::unique(symbols.begin(), symbols.end()), symbols.end());
  if (symbols.size() != 1) return false;  // H and W agree on a whole diagonal of bindings
  int agreements = 0;
  for (int64_t size = 1; size <= 256 && agreements <= 2; ++size) {
    auto valueOf = [&](const std::string&) { return std::optional<int64_t>(size); };
    Expected<int64_t> va = evaluateSymbolicExtent(a, valueOf);
    Expected<int64_t> vb = evaluateSymbolicExtent(b, valueOf);
    if (!va.ok() || !vb.ok()) return false;
    agreements += *va == *vb ? 1 : 0;
  }
  return agreements <= 2;
}

}  // namespace

bool extentsUnify(int64_t a, int64_t b) {
  if (a == b) return true;
  return extentsMayBeEqual(a, b) && !agreeOnlyBySize(a, b);
}

bool provablyNonnegative(int64_t extent) {
  Polynomial p = polyOf(extent);
  // Nondecreasing in every symbol (no negative coefficient; a floor quotient's numerator has none either),
  // so its least value is at every symbol 1.
  for (const Term& t : p.terms) {
    if (t.coefficient < 0) return false;
  }
  Expected<int64_t> least =
      evaluateSymbolicExtent(extent, [](const std::string&) { return std::optional<int64_t>(1); });
  return least.ok() && *least >= 0;
}

int64_t symbolicCount(int64_t extent) {
  Polynomial p = polyOf(extent);
  if (p.terms.empty()) return p.constant;
  return p.terms.size() == 1 && p.constant == 0 ? p.terms[0].coefficient : 1;
}

}  // namespace smelt

// Binary elementwise ops with numpy broadcasting: one table row each (see elementwise.h).
#include "ir/int_pow.h"
#include "ir/ops/elementwise.h"
#include "ir/ops/register_ops.h"

#include <cmath>
#include <limits>

namespace smelt {

namespace {

// Signed arithmetic goes through uint64 so overflow wraps instead of being undefined behaviour.
int64_t wrapAdd(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
int64_t wrapSub(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
int64_t wrapMul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }

// C++ division truncates toward zero already. x/0 is 0 by contract; INT64_MIN/-1 overflows, and its
// wrapped value is INT64_MIN (= -INT64_MIN mod 2^64). Narrower dtypes arrive sign-extended, so their
// MIN/-1 is an ordinary int64 quotient that the store wraps.
int64_t signedDiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a));
  return a / b;
}

// NaN-propagating min and max (std::fmin/fmax would drop the NaN).
double nanMin(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : (b < a ? b : a); }
double nanMax(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : (b > a ? b : a); }

double truth(bool b) { return b ? 1.0 : 0.0; }

// Gradient sides: from the operands a and b, the result y and dy, before broadcasting is undone.
using V = Value*;

V cmp(Builder& b, const char* op, V lhs, V rhs) { return b.op(op, {lhs, rhs}); }

// torch.maximum/minimum: at a tie each side gets dy/2; otherwise the chosen side gets dy. `loses` is the
// comparison under which this side was not chosen ("lt" for max's lhs). NaN compares false, so both
// sides get dy there, as in PyTorch.
V tieSplit(Builder& b, V a, V bv, V dy, const char* loses) {
  V shared = b.where(cmp(b, "eq", a, bv), b.scale(dy, 0.5), dy);
  return b.where(cmp(b, loses, a, bv), b.scalarLike(0.0, dy), shared);
}

// A row's example with a tie (the same value on both sides) next to the broadcasting application.
std::string tieExample(const std::string& name) {
  return fmt::format(R"(graph @t(%a: $T[2,3], %b: $T[3]) {{
  %0 = {0}(%a, %b) : $T[2,3]
  %1 = {0}(%a, %a) : $T[2,3]
  return r = %0, s = %1
}})",
                     name);
}

}  // namespace

void registerBinaryOps(OpRegistry& registry) {
  using namespace ops;
  using I = int64_t;
  using U = uint64_t;
  const BinaryRow rows[] = {
      {.name = "add",
       .summary = "lhs + rhs",
       .dtypes = dtypes::kNumeric,
       .floatFn = [](double a, double b) { return a + b; },
       .signedFn = wrapAdd,
       .unsignedFn = [](U a, U b) { return a + b; },
       .gradLhs = [](Builder&, V, V, V, V dy) { return dy; },
       .gradRhs = [](Builder&, V, V, V, V dy) { return dy; }},
      {.name = "sub",
       .summary = "lhs - rhs",
       .dtypes = dtypes::kNumeric,
       .floatFn = [](double a, double b) { return a - b; },
       .signedFn = wrapSub,
       .unsignedFn = [](U a, U b) { return a - b; },
       .gradLhs = [](Builder&, V, V, V, V dy) { return dy; },
       .gradRhs = [](Builder& b, V, V, V, V dy) { return b.neg(dy); }},
      {.name = "mul",
       .summary = "lhs * rhs",
       .dtypes = dtypes::kNumeric,
       .floatFn = [](double a, double b) { return a * b; },
       .signedFn = wrapMul,
       .unsignedFn = [](U a, U b) { return a * b; },
       .gradLhs = [](Builder& b, V, V bv, V, V dy) { return b.mul(dy, bv); },
       .gradRhs = [](Builder& b, V a, V, V, V dy) { return b.mul(dy, a); }},
      {.name = "div",
       .summary = "lhs / rhs (integers truncate; x/0 = 0)",
       .dtypes = dtypes::kNumeric,
       .floatFn = [](double a, double b) { return a / b; },
       .signedFn = signedDiv,
       .unsignedFn = [](U a, U b) { return b == 0 ? U{0} : a / b; },
       .gradLhs = [](Builder& b, V, V bv, V, V dy) { return b.div(dy, bv); },
       // -dy*a/b^2 = -dy*y/b.
       .gradRhs = [](Builder& b, V, V bv, V y, V dy) { return b.neg(b.div(b.mul(dy, y), bv)); }},
      {.name = "pow",
       .summary = "lhs ^ rhs (integers: exact, wrapping; a negative exponent truncates 1/a^-b)",
       .dtypes = dtypes::kNumeric,
       .floatFn = [](double a, double b) { return std::pow(a, b); },
       .signedFn = wrappingPowSigned,
       .unsignedFn = wrappingPow,
       // b*a^(b-1)*dy, and 0 where b == 0 (PyTorch: no 0*inf at a == 0).
       .gradLhs = [](Builder& b, V a, V bv, V, V dy) {
         V slope = b.mul(bv, b.op("pow", {a, b.sub(bv, b.scalarLike(1.0, bv))}));
         return b.where(cmp(b, "eq", bv, b.scalarLike(0.0, bv)), b.scalarLike(0.0, dy), b.mul(dy, slope));
       },
       // log(a)*a^b*dy, and 0 where a == 0 and b >= 0 (PyTorch). log sees 1 there instead of 0, which
       // gives the 0 and keeps -inf out of the second-order gradient.
       .gradRhs = [](Builder& b, V a, V bv, V y, V dy) {
         V zeroBase = b.op("and", {cmp(b, "eq", a, b.scalarLike(0.0, a)), cmp(b, "ge", bv, b.scalarLike(0.0, bv))});
         V logA = b.log(b.where(zeroBase, b.scalarLike(1.0, a), a));
         return b.mul(dy, b.mul(y, logA));
       }},
      {.name = "min",
       .summary = "elementwise minimum, NaN propagates",
       .dtypes = dtypes::kNumeric,
       .floatFn = nanMin,
       .signedFn = [](I a, I b) { return b < a ? b : a; },
       .unsignedFn = [](U a, U b) { return b < a ? b : a; },
       // Ties split dy evenly (torch.minimum).
       .gradLhs = [](Builder& b, V a, V bv, V, V dy) { return tieSplit(b, a, bv, dy, "gt"); },
       .gradRhs = [](Builder& b, V a, V bv, V, V dy) { return tieSplit(b, a, bv, dy, "lt"); },
       .example = tieExample("min")},
      {.name = "max",
       .summary = "elementwise maximum, NaN propagates",
       .dtypes = dtypes::kNumeric,
       .floatFn = nanMax,
       .signedFn = [](I a, I b) { return b > a ? b : a; },
       .unsignedFn = [](U a, U b) { return b > a ? b : a; },
       // Ties split dy evenly (torch.maximum).
       .gradLhs = [](Builder& b, V a, V bv, V, V dy) { return tieSplit(b, a, bv, dy, "lt"); },
       .gradRhs = [](Builder& b, V a, V bv, V, V dy) { return tieSplit(b, a, bv, dy, "gt"); },
       .example = tieExample("max")},
      {"eq", "lhs == rhs", dtypes::kAll, true, [](double a, double b) { return truth(a == b); },
       [](I a, I b) { return I{a == b}; }, [](U a, U b) { return U{a == b}; }},
      {"ne", "lhs != rhs", dtypes::kAll, true, [](double a, double b) { return truth(a != b); },
       [](I a, I b) { return I{a != b}; }, [](U a, U b) { return U{a != b}; }},
      {"lt", "lhs < rhs", dtypes::kNumeric, true, [](double a, double b) { return truth(a < b); },
       [](I a, I b) { return I{a < b}; }, [](U a, U b) { return U{a < b}; }},
      {"le", "lhs <= rhs", dtypes::kNumeric, true, [](double a, double b) { return truth(a <= b); },
       [](I a, I b) { return I{a <= b}; }, [](U a, U b) { return U{a <= b}; }},
      {"gt", "lhs > rhs", dtypes::kNumeric, true, [](double a, double b) { return truth(a > b); },
       [](I a, I b) { return I{a > b}; }, [](U a, U b) { return U{a > b}; }},
      {"ge", "lhs >= rhs", dtypes::kNumeric, true, [](double a, double b) { return truth(a >= b); },
       [](I a, I b) { return I{a >= b}; }, [](U a, U b) { return U{a >= b}; }},
      // Logical ops: bool only, so only the unsigned (bool) function is ever used.
      {"and", "logical and", dtypes::kBool, false, [](double a, double b) { return truth(a != 0 && b != 0); },
       nullptr, [](U a, U b) { return U{a != 0 && b != 0}; }},
      {"or", "logical or", dtypes::kBool, false, [](double a, double b) { return truth(a != 0 || b != 0); },
       nullptr, [](U a, U b) { return U{a != 0 || b != 0}; }},
      {"xor", "logical exclusive or", dtypes::kBool, false,
       [](double a, double b) { return truth((a != 0) != (b != 0)); }, nullptr,
       [](U a, U b) { return U{(a != 0) != (b != 0)}; }},
  };
  for (const BinaryRow& row : rows) registry.add(makeBinaryOp(row));
}

}  // namespace smelt

// Binary elementwise ops with numpy broadcasting: one table row each (see elementwise.h).
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

}  // namespace

void registerBinaryOps(OpRegistry& registry) {
  using namespace ops;
  using I = int64_t;
  using U = uint64_t;
  const BinaryRow rows[] = {
      {"add", "lhs + rhs", dtypes::kNumeric, false, [](double a, double b) { return a + b; }, wrapAdd,
       [](U a, U b) { return a + b; }},
      {"sub", "lhs - rhs", dtypes::kNumeric, false, [](double a, double b) { return a - b; }, wrapSub,
       [](U a, U b) { return a - b; }},
      {"mul", "lhs * rhs", dtypes::kNumeric, false, [](double a, double b) { return a * b; }, wrapMul,
       [](U a, U b) { return a * b; }},
      {"div", "lhs / rhs (integers truncate; x/0 = 0)", dtypes::kNumeric, false,
       [](double a, double b) { return a / b; }, signedDiv, [](U a, U b) { return b == 0 ? U{0} : a / b; }},
      // Integers go through double and truncate, as the contract says (no signedFn/unsignedFn).
      {"pow", "lhs ^ rhs", dtypes::kNumeric, false, [](double a, double b) { return std::pow(a, b); }},
      {"min", "elementwise minimum, NaN propagates", dtypes::kNumeric, false, nanMin,
       [](I a, I b) { return b < a ? b : a; }, [](U a, U b) { return b < a ? b : a; }},
      {"max", "elementwise maximum, NaN propagates", dtypes::kNumeric, false, nanMax,
       [](I a, I b) { return b > a ? b : a; }, [](U a, U b) { return b > a ? b : a; }},
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

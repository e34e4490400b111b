// Unary elementwise ops: one table row each (see elementwise.h).
#include "ir/ops/elementwise.h"
#include "ir/ops/register_ops.h"

#include <cmath>

namespace smelt {

namespace {
using namespace ops;

// A row whose function ignores attributes.
std::function<FloatFn1(const OpCall&)> plain(double (*f)(double)) {
  return [f](const OpCall&) -> FloatFn1 { return f; };
}
}  // namespace

void registerUnaryOps(OpRegistry& registry) {
  const UnaryRow rows[] = {
      {"neg", "-x", dtypes::kSignedNumeric, {}, plain([](double x) { return -x; }), [](int64_t x) { return -x; }},
      {"exp", "e^x", dtypes::kFloat, {}, plain([](double x) { return std::exp(x); })},
      {"relu", "max(x, 0)", dtypes::kSignedNumeric, {}, plain([](double x) { return x > 0 ? x : 0.0; }),
       [](int64_t x) { return x > 0 ? x : int64_t{0}; }},
  };
  for (const UnaryRow& row : rows) registry.add(makeUnaryOp(row));
}

}  // namespace smelt

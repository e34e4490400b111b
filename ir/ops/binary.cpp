// Binary elementwise ops with numpy broadcasting: one table row each (see elementwise.h).
#include "ir/ops/elementwise.h"
#include "ir/ops/register_ops.h"

#include <cmath>

namespace smelt {

void registerBinaryOps(OpRegistry& registry) {
  using namespace ops;
  const BinaryRow rows[] = {
      {"add", "lhs + rhs", dtypes::kNumeric, false, [](double a, double b) { return a + b; },
       [](int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); },
       [](uint64_t a, uint64_t b) { return a + b; }},
      {"mul", "lhs * rhs", dtypes::kNumeric, false, [](double a, double b) { return a * b; },
       [](int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); },
       [](uint64_t a, uint64_t b) { return a * b; }},
      {"lt", "lhs < rhs", dtypes::kNumeric, true, [](double a, double b) { return a < b ? 1.0 : 0.0; },
       [](int64_t a, int64_t b) { return int64_t{a < b}; }, [](uint64_t a, uint64_t b) { return uint64_t{a < b}; }},
  };
  for (const BinaryRow& row : rows) registry.add(makeBinaryOp(row));
}

}  // namespace smelt

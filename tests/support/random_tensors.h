// Fresh random test inputs (never zeros) and tolerance-aware comparison, shared by every test binary.
#pragma once

#include "ir/graph.h"
#include "ir/interpreter.h"

#include <cstdint>
#include <string>

namespace smelt::testing {

/// A tensor of `type` with random values: floats uniform in +-[0.25, 2] (sign random), signed
/// integers in +-[1, 5], unsigned in [1, 9], bools random. Never zero, so ops are exercised for real.
Tensor randomTensor(const TensorType& type, uint64_t seed);
/// Random feeds for every graph input.
TensorMap randomFeeds(const Graph& graph, uint64_t seed);
/// A seed that differs per run unless SMELT_TEST_SEED is set (printed by tests on failure).
uint64_t testSeed();
/// Per-dtype tolerances: f16 1e-2, bf16 4e-2, f32 1e-5, f64 1e-12 (relative, plus the same absolute).
double defaultTolerance(DType dtype);
/// Empty when `actual` matches `expected` within `tolerance` (NaNs match NaNs); otherwise a message
/// naming the first mismatching index and values.
std::string compareTensors(const Tensor& actual, const Tensor& expected, double tolerance);
/// Tolerances for compiled backends against the reference on the same graph: f32 computes in f32 (the
/// reference in double, rounded once per op), f16/bf16 in f32 rounded per instruction, transcendentals
/// within a few ulp: f16 2e-2, bf16 8e-2, f32 2e-5, f64 1e-12, integers and bool exact.
double backendTolerance(DType dtype);
/// Parses IR text or fails the current test with the parse error.
Graph parseOrFail(std::string_view text);

}  // namespace smelt::testing

// Test graphs with a symbolic batch: a static graph's leading extent made the symbol B, for checking
// that symbolic inference, once bound, is static inference (tests/runtime, tests/passes).
#pragma once

#include "ir/graph.h"

namespace smelt::testing {

/// Windows of a batch, as Swin partitions it: [N,4,4,C] into four [2,2] windows per image (4*N
/// windows), attention over each window's 4 positions, and back; rows flattened to 16*N.
inline constexpr const char* kBatchWindows = R"(graph @windows(%x: f32[N,4,4,3]) {
  dim N in [1, 64]
  %0 = reshape(%x) {shape = [N, 2, 2, 2, 2, 3]} : f32[N,2,2,2,2,3]
  %1 = transpose(%0) {perm = [0, 1, 3, 2, 4, 5]} : f32[N,2,2,2,2,3]
  %2 = reshape(%1) {shape = [4*N, 4, 3]} : f32[4*N,4,3]
  %3 = transpose(%2) {perm = [0, 2, 1]} : f32[4*N,3,4]
  %4 = matmul(%2, %3) : f32[4*N,4,4]
  %5 = softmax(%4) {axis = 2} : f32[4*N,4,4]
  %6 = matmul(%5, %2) : f32[4*N,4,3]
  %7 = reshape(%6) {shape = [-1, 4, 4, 3]} : f32[N,4,4,3]
  %8 = flatten(%6) {axis = 2} : f32[16*N,3]
  return y = %7, rows = %8
}
)";

/// `graph` with the leading extent `batch` of its inputs made the symbol B (inputs led by another
/// extent keep theirs), every node inferred again: an error where an op's inference refuses it.
Expected<Graph> withSymbolicBatch(const Graph& graph, int64_t batch);

/// Runs `symbolic` and `bound` (it bound by bindDims) on the reference with one set of random feeds drawn
/// from `seed` for the bound graph's inputs, and checks that their outputs are identical.
void checkSymbolicRunsAsBound(const Graph& symbolic, const Graph& bound, uint64_t seed);

/// `t` with every symbol replaced by `n` (a product 4*B by 4n, a sum B+3 by n+3).
TensorType substituteSymbols(TensorType t, int64_t n);

/// Empty when every value of `bound` (inputs, then each node's results, in order) has the type of the
/// same value of `symbolic` with its symbols replaced by `n`; else the first that differs.
std::string compareBoundTypes(const Graph& symbolic, const Graph& bound, int64_t n);

}  // namespace smelt::testing

// Finite-difference gradient checking in f64, shared by the registry-wide and whole-model tests.
#pragma once

#include "ir/graph.h"
#include "ir/interpreter.h"

#include <string>

namespace smelt::testing {

/// The outcome of one check: the worst relative error over the sources, and a description.
struct GradientCheck {
  double worstRelativeError = 0.0;
  std::string report;  // one line per source: "%x: relative error 3e-9 (12 of 12 elements)"
  int64_t skippedAtKinks = 0;
  std::string error;   // non-empty when the check could not run (a build or interpreter error)
};

/// Compares buildGradients against central finite differences for f = sum_i sum(out_i * w_i) with
/// fresh random weights w_i over the graph's floating-point outputs, with respect to every f64 graph
/// input (parameters too when `includeParameters`). At most `maxElements` elements per source are
/// probed (chosen at random). `graph` must have f64 inputs; `feeds` are its inputs.
/// `step` is the relative finite-difference step. A probe whose step straddles a kink (a relu input or
/// a max-pooling tie within `step` of its switch point: the left and right one-sided differences
/// disagree) is skipped and counted; more than two and more than a quarter of a source's probes skipped is an
/// error.
GradientCheck checkGradients(const Graph& graph, const TensorMap& feeds, uint64_t seed, int64_t maxElements = 48,
                             bool includeParameters = false, double step = 1e-5);

/// The same for second order: compares the Hessian-vector product H v, built by differentiating the
/// built gradient again (gradient of <grad f, v>), against central differences of the gradient along v.
GradientCheck checkHessianVectorProducts(const Graph& graph, const TensorMap& feeds, uint64_t seed,
                                         int64_t maxElements = 48);

/// Random f64 feeds for `graph` (see randomTensor); when `positive`, magnitudes only (for ops like log
/// and sqrt whose domain excludes negatives).
TensorMap randomFeedsF64(const Graph& graph, uint64_t seed, bool positive);
/// True when every floating-point output of `graph` on `feeds` is finite.
bool outputsFinite(const Graph& graph, const TensorMap& feeds);

}  // namespace smelt::testing

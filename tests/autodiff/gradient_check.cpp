// Finite-difference gradient checks.
#include "tests/autodiff/gradient_check.h"

#include "autodiff/backward.h"
#include "ir/builder.h"
#include "tests/support/random_tensors.h"

#include <cmath>
#include <random>

namespace smelt::testing {

namespace {

// The scalar objective sum_i sum(out_i * w_i) over the f64 outputs, evaluated by the interpreter. Lower
// precision outputs are left out: their rounding would swamp central differences.
struct Objective {
  const Graph& graph;
  std::vector<Tensor> weights;  // one per graph output (empty tensors for non-float outputs)

  Expected<double> operator()(const TensorMap& feeds) const {
    SMELT_TRY(std::vector<Tensor> outs, interpret(graph, feeds));
    double total = 0;
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i].dtype() != DType::f64) continue;
      for (int64_t j = 0; j < outs[i].numel(); ++j) total += outs[i].getDouble(j) * weights[i].getDouble(j);
    }
    return total;
  }
};

std::vector<Tensor> randomWeights(const Graph& graph, std::mt19937_64& rng) {
  std::vector<Tensor> weights;
  for (const GraphOutput& out : graph.outputs()) {
    if (out.value->dtype() != DType::f64) {
      weights.emplace_back();
      continue;
    }
    weights.push_back(randomTensor(TensorType{DType::f64, out.value->shape()}, rng()));
  }
  return weights;
}

std::vector<Value*> sourcesOf(const Graph& g, bool includeParameters) {
  std::vector<Value*> sources;
  for (Value* v : g.inputs()) {
    if (v->dtype() == DType::f64) sources.push_back(v);
  }
  if (includeParameters) {
    for (Value* v : g.parameters()) {
      if (v->dtype() == DType::f64) sources.push_back(v);
    }
  }
  return sources;
}

// Builds, in a clone of `graph`, the gradient of the objective w.r.t. the sources; returns the clone
// with the gradients as its only outputs (named grad.<source>).
Expected<Graph> gradientGraph(const Graph& graph, const std::vector<Tensor>& weights, bool includeParameters) {
  Graph g = graph.clone();
  std::vector<Value*> targets, seeds;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    Value* out = g.outputs()[i].value;
    if (out->dtype() != DType::f64) continue;
    targets.push_back(out);
    seeds.push_back(g.constant(weights[i].reshaped(out->shape())));
  }
  std::vector<Value*> sources = sourcesOf(g, includeParameters);
  SMELT_TRY(std::vector<Value*> grads, buildGradients(g, targets, seeds, sources));
  g.clearOutputs();
  for (size_t i = 0; i < sources.size(); ++i) g.addOutput("grad." + sources[i]->name(), grads[i]);
  return g;
}

TensorMap withParameters(const Graph& g, TensorMap feeds) {
  for (const Value* p : g.parameters()) {
    if (!feeds.count(p->name())) feeds[p->name()] = p->initialValue();
  }
  return feeds;
}

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// Relative error of `analytic` against `numeric`, absolute when the numeric gradient is ~0.
double relativeError(const std::vector<double>& analytic, const std::vector<double>& numeric) {
  std::vector<double> diff(analytic.size());
  for (size_t i = 0; i < diff.size(); ++i) diff[i] = analytic[i] - numeric[i];
  double n = norm(numeric);
  return n > 1e-6 ? norm(diff) / n : norm(diff);
}

std::vector<int64_t> probeIndices(int64_t numel, int64_t maxElements, std::mt19937_64& rng) {
  std::vector<int64_t> idx(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) idx[static_cast<size_t>(i)] = i;
  std::shuffle(idx.begin(), idx.end(), rng);
  if (numel > maxElements) idx.resize(static_cast<size_t>(maxElements));
  return idx;
}

}  // namespace

TensorMap randomFeedsF64(const Graph& graph, uint64_t seed, bool positive) {
  TensorMap feeds = randomFeeds(graph, seed);
  if (positive) {
    for (auto& [name, t] : feeds) {
      if (!isFloat(t.dtype())) continue;
      for (int64_t i = 0; i < t.numel(); ++i) t.setDouble(i, std::fabs(t.getDouble(i)));
    }
  }
  return feeds;
}

bool outputsFinite(const Graph& graph, const TensorMap& feeds) {
  auto outs = interpret(graph, feeds);
  if (!outs) return false;
  for (const Tensor& t : *outs) {
    if (!isFloat(t.dtype())) continue;
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (!std::isfinite(t.getDouble(i))) return false;
    }
  }
  return true;
}

GradientCheck checkGradients(const Graph& graph, const TensorMap& feeds, uint64_t seed, int64_t maxElements,
                             bool includeParameters, double step) {
  GradientCheck result;
  std::mt19937_64 rng(seed);
  Objective f{graph, randomWeights(graph, rng)};
  auto gg = gradientGraph(graph, f.weights, includeParameters);
  if (!gg) {
    result.error = gg.error().message();
    return result;
  }
  TensorMap all = withParameters(graph, feeds);
  auto analytic = interpret(*gg, all);
  if (!analytic) {
    result.error = "running the gradient graph: " + analytic.error().message();
    return result;
  }
  std::vector<Value*> sources = sourcesOf(graph, includeParameters);
  auto f0 = f(all);
  if (!f0) {
    result.error = "evaluating the objective: " + f0.error().message();
    return result;
  }
  for (size_t s = 0; s < sources.size(); ++s) {
    const std::string& name = sources[s]->name();
    const Tensor& grad = (*analytic)[s];
    std::vector<int64_t> probes = probeIndices(grad.numel(), maxElements, rng);
    std::vector<double> a, n;
    int64_t skipped = 0;
    for (int64_t j : probes) {
      TensorMap plus = all, minus = all;
      double x = all.at(name).getDouble(j);
      double h = step * std::max(1.0, std::fabs(x));
      plus[name].setDouble(j, x + h);
      minus[name].setDouble(j, x - h);
      auto fp = f(plus);
      auto fm = f(minus);
      if (!fp || !fm) {
        result.error = "evaluating the objective: " + (fp ? fm.error() : fp.error()).message();
        return result;
      }
      // On a smooth stretch the one-sided differences agree to O(h * f'') (about 1e-5 here); across a
      // kink they differ by the jump in slope, which no central difference can resolve.
      double left = (*f0 - *fm) / h;
      double right = (*fp - *f0) / h;
      if (std::fabs(left - right) > 1e-3 * (std::fabs(left) + std::fabs(right)) + 1e-3) {
        ++skipped;
        continue;
      }
      a.push_back(grad.getDouble(j));
      n.push_back((*fp - *fm) / (2 * h));
    }
    double err = relativeError(a, n);
    result.worstRelativeError = std::max(result.worstRelativeError, std::isnan(err) ? INFINITY : err);
    result.skippedAtKinks += skipped;
    if (skipped > 2 && skipped * 4 > static_cast<int64_t>(probes.size())) {
      result.error = fmt::format("%{}: {} of {} probes straddle kinks", name, skipped, probes.size());
    }
    result.report += fmt::format("%{}: relative error {:.2e} ({} of {} elements, {} at kinks)\n", name, err,
                                 a.size(), grad.numel(), skipped);
  }
  return result;
}

GradientCheck checkHessianVectorProducts(const Graph& graph, const TensorMap& feeds, uint64_t seed,
                                         int64_t maxElements) {
  GradientCheck result;
  std::mt19937_64 rng(seed);
  std::vector<Tensor> weights = randomWeights(graph, rng);
  auto gg = gradientGraph(graph, weights, false);
  if (!gg) {
    result.error = gg.error().message();
    return result;
  }
  // Direction v per source, and H v as the gradient of sum_s <grad_s, v_s>.
  std::vector<Value*> sources = sourcesOf(*gg, false);
  std::vector<Tensor> directions;
  Graph hvp = gg->clone();
  std::vector<Value*> targets, seeds;
  for (size_t s = 0; s < hvp.outputs().size(); ++s) {
    Value* g = hvp.outputs()[s].value;
    directions.push_back(randomTensor(g->type(), rng()));
    targets.push_back(g);
    seeds.push_back(hvp.constant(directions.back()));
  }
  std::vector<Value*> hvpSources = sourcesOf(hvp, false);
  auto hv = buildGradients(hvp, targets, seeds, hvpSources);
  if (!hv) {
    result.error = "second-order gradient: " + hv.error().message();
    return result;
  }
  hvp.clearOutputs();
  for (size_t s = 0; s < hvpSources.size(); ++s) hvp.addOutput("hvp." + hvpSources[s]->name(), (*hv)[s]);
  auto analytic = interpret(hvp, feeds);
  if (!analytic) {
    result.error = "running the second-order graph: " + analytic.error().message();
    return result;
  }
  // Numeric: (grad(x + h v) - grad(x - h v)) / 2h, probed at a few elements of each source.
  double h = 1e-5;
  TensorMap plus = feeds, minus = feeds;
  for (size_t s = 0; s < sources.size(); ++s) {
    const std::string& name = sources[s]->name();
    for (int64_t j = 0; j < plus[name].numel(); ++j) {
      double x = feeds.at(name).getDouble(j);
      double v = directions[s].getDouble(j);
      plus[name].setDouble(j, x + h * v);
      minus[name].setDouble(j, x - h * v);
    }
  }
  auto gp = interpret(*gg, plus);
  auto gm = interpret(*gg, minus);
  auto g0 = interpret(*gg, feeds);
  if (!gp || !gm || !g0) {
    result.error = "evaluating the gradient: " + (!gp ? gp.error() : !gm ? gm.error() : g0.error()).message();
    return result;
  }
  for (size_t s = 0; s < sources.size(); ++s) {
    std::vector<int64_t> probes = probeIndices((*analytic)[s].numel(), maxElements, rng);
    std::vector<double> a, n;
    int64_t skipped = 0;
    for (int64_t j : probes) {
      // A gradient element that jumps between x - h v and x + h v (a max-pool window whose two largest
      // inputs swap, relu's kink) has no second derivative there: skipped as checkGradients skips kinks.
      double left = ((*g0)[s].getDouble(j) - (*gm)[s].getDouble(j)) / h;
      double right = ((*gp)[s].getDouble(j) - (*g0)[s].getDouble(j)) / h;
      if (std::fabs(left - right) > 1e-3 * (std::fabs(left) + std::fabs(right)) + 1e-3) {
        ++skipped;
        continue;
      }
      a.push_back((*analytic)[s].getDouble(j));
      n.push_back((left + right) / 2);
    }
    double err = relativeError(a, n);
    result.worstRelativeError = std::max(result.worstRelativeError, std::isnan(err) ? INFINITY : err);
    result.skippedAtKinks += skipped;
    if (skipped > 2 && skipped * 4 > static_cast<int64_t>(probes.size())) {
      result.error = fmt::format("%{}: {} of {} probes straddle kinks", sources[s]->name(), skipped, probes.size());
    }
    result.report += fmt::format("%{}: H v relative error {:.2e} ({} elements, {} at kinks)\n", sources[s]->name(),
                                 err, a.size(), skipped);
  }
  return result;
}

}  // namespace smelt::testing

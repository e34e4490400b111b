// Reductions over a set of axes (reduce_sum ... reduce_logsumexp: one row each) and the stable
// softmax / log_softmax along one axis. Floats accumulate in double; integers reduce exactly in 64 bits.
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace smelt {

namespace {
using namespace ops;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// One reduction op. Each function maps the values of one output element's group (in row-major
/// order of the input) to the result; integer rows give exact signed and unsigned versions.
struct ReduceRow {
  std::string name;
  std::string summary;
  DTypeSet dtypes;
  /// Max and min have no value for an empty group, so reducing a size-0 dim is a verifier error.
  bool needsElements = false;
  std::vector<AttrSpec> extraAttrs = {};
  std::function<double(std::span<const double>, const OpCall&)> floatFn;
  std::function<int64_t(std::span<const int64_t>)> signedFn = nullptr;
  std::function<uint64_t(std::span<const uint64_t>)> unsignedFn = nullptr;
};

/// Which dims of `call`'s operand are reduced (empty axes: all), after checking the attributes.
Expected<std::vector<bool>> reducedDims(const OpCall& call) {
  int64_t rank = call.operand(0).rank();
  SMELT_TRY(std::vector<int64_t> axes, normalizeAxes(call, call.getInts("axes"), rank));
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  return reduced;
}

Expected<std::vector<TensorType>> inferReduce(const ReduceRow& row, const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, row.dtypes));
  SMELT_TRY(std::vector<bool> reduced, reducedDims(call));
  SMELT_CHECK_OK(expectFlag(call, "keepdims"));
  int64_t keepdims = call.getInt("keepdims");
  if (call.op().findAttr("correction") && call.getInt("correction") < 0) {
    return call.error("attribute 'correction' must be >= 0, got {}", call.getInt("correction"));
  }
  const Shape& in = call.operand(0).shape;
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d] && in[d] == 0 && row.needsElements) {
      return call.error("cannot reduce dim {} of {}: it has no elements", d, call.operand(0).toString());
    }
    if (!reduced[d]) out.push_back(in[d]);
    else if (keepdims) out.push_back(1);
  }
  return single(TensorType{call.operand(0).dtype, out});
}

/// The input values grouped by the output element they reduce into, each group in row-major order.
template <typename V, typename T>
std::vector<std::vector<V>> groupValues(const Tensor& x, const std::vector<bool>& reduced, int64_t outNumel,
                                        V (*convert)(T)) {
  // Strides of the output over the kept dims; a reduced dim contributes nothing to the output index.
  const Shape& shape = x.shape();
  std::vector<int64_t> outStrides(shape.size(), 0);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (reduced[d]) continue;
    outStrides[d] = stride;
    stride *= shape[d];
  }
  std::vector<std::vector<V>> groups(static_cast<size_t>(outNumel));
  const T* src = x.data<T>();
  int64_t flat = 0;
  forEachIndex(shape, [&](const std::vector<int64_t>& index) {
    int64_t target = 0;
    for (size_t d = 0; d < index.size(); ++d) target += index[d] * outStrides[d];
    groups[static_cast<size_t>(target)].push_back(convert(src[flat++]));
  });
  return groups;
}

Expected<std::vector<Tensor>> referenceReduce(const ReduceRow& row, const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(std::vector<bool> reduced, reducedDims(call));
  const Tensor& x = in[0];
  Tensor out(call.results()[0]);
  dispatchDType(x.dtype(), [&]<typename T>(TypeTag<T>) {
    T* dst = out.data<T>();
    if constexpr (std::is_same_v<T, bool>) {
      return;  // no reduction accepts bool; inference rejected it
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      auto groups = groupValues<int64_t, T>(x, reduced, out.numel(), [](T v) { return static_cast<int64_t>(v); });
      for (size_t i = 0; i < groups.size(); ++i) dst[i] = static_cast<T>(row.signedFn(groups[i]));
    } else if constexpr (std::is_integral_v<T>) {
      auto groups = groupValues<uint64_t, T>(x, reduced, out.numel(), [](T v) { return static_cast<uint64_t>(v); });
      for (size_t i = 0; i < groups.size(); ++i) dst[i] = static_cast<T>(row.unsignedFn(groups[i]));
    } else {
      auto groups = groupValues<double, T>(x, reduced, out.numel(), [](T v) { return toDouble(v); });
      for (size_t i = 0; i < groups.size(); ++i) dst[i] = fromDouble<T>(row.floatFn(groups[i], call));
    }
  });
  return std::vector<Tensor>{std::move(out)};
}

OpDef makeReduceOp(ReduceRow row) {
  OpDef def;
  def.name = row.name;
  def.summary = row.summary;
  def.operands = {{"x"}};
  def.attrs = {{"axes", AttrKind::Ints, std::vector<int64_t>{}}, {"keepdims", AttrKind::Int, int64_t{0}}};
  for (const AttrSpec& a : row.extraAttrs) def.attrs.push_back(a);
  def.fusion = FusionKind::Reduction;
  def.dtypes = row.dtypes;
  def.infer = [row](const OpCall& call) { return inferReduce(row, call); };
  def.reference = [row](const OpCall& call, std::span<const Tensor> in) { return referenceReduce(row, call, in); };
  def.example = fmt::format(R"(graph @t(%x: $T[2,3,4]) {{
  %0 = {0}(%x) {{axes = [0, -1]}} : $T[3]
  %1 = {0}(%x) {{axes = [1], keepdims = 1}} : $T[2,1,4]
  %2 = {0}(%x) : $T[]
  return a = %0, b = %1, c = %2
}})",
                            row.name);
  return def;
}

// --- float group functions (values already in double) ---

double sumOf(std::span<const double> v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

double meanOf(std::span<const double> v) { return v.empty() ? kNaN : sumOf(v) / static_cast<double>(v.size()); }

// NaN wins; otherwise the extreme by `better`.
template <typename Better>
double extremeOf(std::span<const double> v, Better better) {
  double m = v.empty() ? kNaN : v[0];
  for (double x : v) {
    if (std::isnan(x)) return x;
    if (better(x, m)) m = x;
  }
  return m;
}

// Two passes (mean, then squared deviations) to avoid the cancellation of sum(x^2) - n*mean^2.
// A non-positive divisor (n <= correction) gives inf or NaN, as PyTorch does.
double varianceOf(std::span<const double> v, const OpCall& call) {
  double mean = meanOf(v);
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  int64_t dof = std::max<int64_t>(0, static_cast<int64_t>(v.size()) - call.getInt("correction"));
  return ss / static_cast<double>(dof);
}

// log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the max, so exp never overflows.
double logSumExpOf(std::span<const double> v) {
  double m = -kInf;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::max(m, x);
  }
  if (std::isinf(m)) return m;  // all -inf (or empty) gives -inf; any +inf gives +inf
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}

// --- integer group functions: exact, wrapping through uint64 ---

template <typename V>
V sumInt(std::span<const V> v) {
  uint64_t s = 0;
  for (V x : v) s += static_cast<uint64_t>(x);
  return static_cast<V>(s);
}

template <typename V>
V prodInt(std::span<const V> v) {
  uint64_t p = 1;
  for (V x : v) p *= static_cast<uint64_t>(x);
  return static_cast<V>(p);
}

// Truncated mean from a 128-bit sum, exact for any count of 64-bit values; an empty group gives 0
// (integer x/0 = 0, as div does).
template <typename V>
V meanInt(std::span<const V> v) {
  using Wide = std::conditional_t<std::is_signed_v<V>, __int128, unsigned __int128>;
  if (v.empty()) return 0;
  Wide s = 0;
  for (V x : v) s += x;
  return static_cast<V>(s / static_cast<Wide>(v.size()));
}

template <typename V>
V maxInt(std::span<const V> v) {
  return v.empty() ? V{0} : *std::max_element(v.begin(), v.end());
}

template <typename V>
V minInt(std::span<const V> v) {
  return v.empty() ? V{0} : *std::min_element(v.begin(), v.end());
}

// --- softmax and log_softmax along one axis ---

Expected<std::vector<TensorType>> inferSoftmax(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kFloat));
  int64_t axis = call.getInt("axis");
  SMELT_CHECK_OK(normalizeAxes(call, std::span<const int64_t>(&axis, 1), call.operand(0).rank()));
  return single(call.operand(0));
}

template <bool kLog>
Expected<std::vector<Tensor>> referenceSoftmax(const OpCall& call, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  int64_t axisAttr = call.getInt("axis");
  SMELT_TRY(std::vector<int64_t> axes, normalizeAxes(call, std::span<const int64_t>(&axisAttr, 1), x.rank()));
  size_t axis = static_cast<size_t>(axes[0]);
  const Shape& shape = x.shape();
  int64_t outer = numElements(std::span(shape).first(axis));
  int64_t len = shape[axis];
  int64_t inner = numElements(std::span(shape).subspan(axis + 1));
  std::vector<double> v = x.toDoubles();
  Tensor out(x.type());
  std::vector<double> row(static_cast<size_t>(len));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * len + k) * inner + j); };
      // Subtracting the row max keeps exp in (0, 1]; a NaN anywhere makes the row NaN.
      double m = -kInf;
      for (int64_t k = 0; k < len; ++k) m = std::isnan(v[at(k)]) || std::isnan(m) ? kNaN : std::max(m, v[at(k)]);
      double s = 0;
      for (int64_t k = 0; k < len; ++k) s += std::exp(v[at(k)] - m);
      for (int64_t k = 0; k < len; ++k) {
        double shifted = v[at(k)] - m;
        out.setDouble(static_cast<int64_t>(at(k)), kLog ? shifted - std::log(s) : std::exp(shifted) / s);
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

OpDef makeSoftmaxOp(std::string name, std::string summary, ReferenceFn reference) {
  return OpDef{
      .name = name,
      .summary = std::move(summary),
      .operands = {{"x"}},
      .attrs = {{"axis", AttrKind::Int, int64_t{-1}}},
      .fusion = FusionKind::Reduction,
      .dtypes = dtypes::kFloat,
      .infer = inferSoftmax,
      .reference = std::move(reference),
      .example = fmt::format(R"(graph @t(%x: $T[2,3,4]) {{
  %0 = {0}(%x) : $T[2,3,4]
  %1 = {0}(%x) {{axis = 1}} : $T[2,3,4]
  return a = %0, b = %1
}})",
                             name),
  };
}

}  // namespace

void registerReductionOps(OpRegistry& registry) {
  const AttrSpec correction{"correction", AttrKind::Int, int64_t{1}};
  auto floatOnly = [](double (*f)(std::span<const double>)) {
    return [f](std::span<const double> v, const OpCall&) { return f(v); };
  };
  const ReduceRow rows[] = {
      {"reduce_sum", "sum over axes", dtypes::kNumeric, false, {}, floatOnly(sumOf), sumInt<int64_t>, sumInt<uint64_t>},
      {"reduce_prod", "product over axes", dtypes::kNumeric, false, {},
       floatOnly([](std::span<const double> v) {
         double p = 1;
         for (double x : v) p *= x;
         return p;
       }),
       prodInt<int64_t>, prodInt<uint64_t>},
      {"reduce_mean", "mean over axes (integers: truncated)", dtypes::kNumeric, false, {}, floatOnly(meanOf),
       meanInt<int64_t>, meanInt<uint64_t>},
      {"reduce_max", "maximum over axes, NaN propagates", dtypes::kNumeric, true, {},
       floatOnly([](std::span<const double> v) { return extremeOf(v, [](double a, double b) { return a > b; }); }),
       maxInt<int64_t>, maxInt<uint64_t>},
      {"reduce_min", "minimum over axes, NaN propagates", dtypes::kNumeric, true, {},
       floatOnly([](std::span<const double> v) { return extremeOf(v, [](double a, double b) { return a < b; }); }),
       minInt<int64_t>, minInt<uint64_t>},
      {"reduce_variance", "sum((x-mean)^2)/(n-correction)", dtypes::kFloat, false, {correction}, varianceOf},
      {"reduce_stddev", "sqrt of reduce_variance", dtypes::kFloat, false, {correction},
       [](std::span<const double> v, const OpCall& call) { return std::sqrt(varianceOf(v, call)); }},
      {"reduce_logsumexp", "log(sum(exp(x))), computed stably", dtypes::kFloat, false, {}, floatOnly(logSumExpOf)},
  };
  for (const ReduceRow& row : rows) registry.add(makeReduceOp(row));
  registry.add(makeSoftmaxOp("softmax", "e^x / sum(e^x) along axis, stable", referenceSoftmax<false>));
  registry.add(makeSoftmaxOp("log_softmax", "x - logsumexp(x) along axis, stable", referenceSoftmax<true>));
}

}  // namespace smelt

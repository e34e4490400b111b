// Reductions over a set of axes (reduce_sum ... reduce_logsumexp: one row each) and the stable
// softmax / log_softmax along one axis. Floats accumulate in double; integers reduce exactly in 64 bits.
// Gradient rules bring dy (and y) back to x's rank with the reduced dims as 1s, then broadcast.
#include "ir/builder.h"
#include "ir/ops/lower_helpers.h"
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

/// What a reduction's gradient rule works with: the operand, the normalized reduced axes, the count
/// of elements each result reduces, and `kept(v)`: a value of the result's shape (dy, y) reshaped to
/// x's rank with 1s at the reduced dims (a no-op with keepdims = 1), so it broadcasts against x.
/// A symbolic reduced extent (a mean over the batch N) is no number here: `count` is the product of
/// the static ones and `symbolic` lists the others, which symbolicCount() multiplies in at run time.
struct Reduced {
  Value* x = nullptr;
  std::vector<int64_t> axes;
  int64_t count = 1;
  Shape symbolic;
  Shape keptShape;
  Value* kept(Builder& b, Value* v) const { return b.reshape(v, keptShape); }
};

Reduced reducedOf(const GradientContext& c) {
  Reduced r;
  r.x = c.x(0);
  const Shape& shape = r.x->shape();
  int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(shape.size(), c.getInts("axes").empty());
  for (int64_t a : c.getInts("axes")) reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  r.keptShape = shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) continue;
    r.axes.push_back(static_cast<int64_t>(d));
    if (isSymbolic(shape[d])) {
      r.symbolic.push_back(shape[d]);
    } else {
      r.count *= shape[d];
    }
    r.keptShape[d] = 1;
  }
  return r;
}

/// dx from the operand description, the kept dy and the kept y (float dtypes only).
using ReduceGradFn = std::function<Value*(Builder& b, const Reduced& r, Value* dy, Value* y, const GradientContext& c)>;

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
  ReduceGradFn grad = nullptr;
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

// --- kernel lowering (ir/lowering.h): one loop nest over the reduced dims per result element ---

// The reduced axes of a reduction call, sorted (empty `axes`: all dims).
std::vector<int64_t> loweredAxes(const OpCall& call) {
  int64_t rank = call.operand(0).rank();
  std::vector<int64_t> axes;
  for (int64_t a : call.getInts("axes")) axes.push_back(a < 0 ? a + rank : a);
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  std::sort(axes.begin(), axes.end());
  return axes;
}

// Accumulates in f32 for f16/bf16 (the reference accumulates in double; f32 and f64 accumulate in
// their own type here). Max/min propagate NaN; variance takes the mean, then the squares;
// logsumexp takes the max, then the sum of e^(x - max).
Expected<std::vector<KValue>> lowerReduction(const std::string& name, LoweringContext& ctx,
                                             const std::vector<int64_t>& axes, bool keepdims) {
  KernelEmitter& e = ctx.emit();
  const Shape& in = ctx.call().operand(0).shape;
  DType dtype = ctx.call().operand(0).dtype;
  DType acc = accumulatorType(dtype);
  int64_t count = 1;
  for (int64_t a : axes) count *= in[static_cast<size_t>(a)];
  auto element = [&](std::span<const KValue> at) { return e.cast(ctx.operand(0, at), acc); };
  auto fold = [&](std::vector<KValue> init, auto step) {
    return reduceOver(e, in, axes, ctx.index(), keepdims, std::move(init),
                      [&](std::span<const KValue> at, std::span<const KValue> c) { return step(element(at), c); });
  };
  auto one = [&](KValue v) { return std::vector<KValue>{v}; };
  if (name == "reduce_sum" || name == "reduce_mean") {
    KValue sum = fold({e.zero(acc)}, [&](KValue x, std::span<const KValue> c) { return one(e.add(c[0], x)); })[0];
    if (name == "reduce_sum") return one(sum);
    return one(isFloat(acc) ? e.div(sum, e.constant(static_cast<double>(count), acc)) : e.div(sum, e.intConstant(count, acc)));
  }
  if (name == "reduce_prod") {
    return fold({e.one(acc)}, [&](KValue x, std::span<const KValue> c) { return one(e.mul(c[0], x)); });
  }
  if (name == "reduce_max" || name == "reduce_min" || name == "global_max_pool2d") {
    bool isMax = name != "reduce_min";
    KValue init = dispatchDType(acc, [&]<typename T>(TypeTag<T>) -> KValue {
      if constexpr (std::is_floating_point_v<T>) {
        return e.constant(isMax ? -INFINITY : INFINITY, acc);
      } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        T bound = isMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
        return e.intConstant(static_cast<int64_t>(bound), acc);
      } else {
        return e.zero(acc);
      }
    });
    KBinary op = isMax ? KBinary::Max : KBinary::Min;
    return fold({init}, [&](KValue x, std::span<const KValue> c) { return one(e.binary(op, c[0], x)); });
  }
  if (name == "reduce_variance" || name == "reduce_stddev") {
    // Two sweeps, as the reference: the mean, then the sum of (x - mean)^2. Both are plain sums, which
    // vectorize (Welford's one-sweep update divides at every element, a recurrence no vectorizer takes),
    // and a mean the kernel also needs (layer_norm's) is the same loop, merged by the kernel optimizer.
    KValue sum = fold({e.zero(acc)}, [&](KValue x, std::span<const KValue> c) { return one(e.add(c[0], x)); })[0];
    KValue mean = e.div(sum, e.constant(static_cast<double>(count), acc));
    KValue squares = fold({e.zero(acc)}, [&](KValue x, std::span<const KValue> c) {
      KValue d = e.sub(x, mean);
      return one(e.add(c[0], e.mul(d, d)));
    })[0];
    int64_t dof = std::max<int64_t>(0, count - ctx.call().getInt("correction"));
    KValue var = e.div(squares, e.constant(static_cast<double>(dof), acc));
    return one(name == "reduce_variance" ? var : e.unary(KUnary::Sqrt, var));
  }
  if (name == "reduce_logsumexp") {
    // Two sweeps, as the reference: the max, then the sum of exp(x - max), one exp per element (an
    // online running max needs two). An infinite max is the answer itself (x - max would be NaN), and
    // a NaN max stays NaN: m - m is 0 exactly when m is finite.
    KValue m = fold({e.constant(-INFINITY, acc)}, [&](KValue x, std::span<const KValue> c) {
      return one(e.binary(KBinary::Max, c[0], x));
    })[0];
    KValue sum = fold({e.zero(acc)}, [&](KValue x, std::span<const KValue> c) {
      return one(e.add(c[0], e.unary(KUnary::Exp, e.sub(x, m))));
    })[0];
    KValue finite = e.binary(KBinary::Eq, e.sub(m, m), e.zero(acc));
    return one(e.select(finite, e.add(m, e.unary(KUnary::Log, sum)), m));
  }
  if (name == "global_avg_pool2d") {
    KValue sum = fold({e.zero(acc)}, [&](KValue x, std::span<const KValue> c) { return one(e.add(c[0], x)); })[0];
    return one(e.div(sum, e.constant(static_cast<double>(count), acc)));
  }
  return makeError("{}: no kernel lowering", name);
}

OpDef makeReduceOp(ReduceRow row) {
  OpDef def;
  def.name = row.name;
  def.summary = row.summary;
  def.operands = {{"x"}};
  def.attrs = {{"axes", AttrKind::Ints, std::vector<int64_t>{}}, {"keepdims", AttrKind::Int, int64_t{0}}};
  def.symbolicDims = true;
  for (const AttrSpec& a : row.extraAttrs) def.attrs.push_back(a);
  def.fusion = FusionKind::Reduction;
  def.dtypes = row.dtypes;
  def.infer = [row](const OpCall& call) { return inferReduce(row, call); };
  def.reference = [row](const OpCall& call, std::span<const Tensor> in) { return referenceReduce(row, call, in); };
  // Rows with a correction also run it at 0 (population statistics).
  bool corrected = def.findAttr("correction") != nullptr;
  def.example = fmt::format(R"(graph @t(%x: $T[2,3,4]) {{
  %0 = {0}(%x) {{axes = [0, -1]}} : $T[3]
  %1 = {0}(%x) {{axes = [1], keepdims = 1}} : $T[2,1,4]
  %2 = {0}(%x) : $T[]{1}
  return a = %0, b = %1, c = %2{2}
}})",
                            row.name, corrected ? fmt::format("\n  %3 = {}(%x) {{axes = [-2], correction = 0}} : $T[2,4]", row.name) : "",
                            corrected ? ", d = %3" : "");
  def.lower = [name = row.name](LoweringContext& ctx) {
    return lowerReduction(name, ctx, loweredAxes(ctx.call()), ctx.call().getInt("keepdims") == 1);
  };
  if (row.grad) {
    ReduceGradFn grad = row.grad;
    def.gradient = [grad](Builder& b, const GradientContext& c) -> std::vector<Value*> {
      Reduced r = reducedOf(c);
      return {grad(b, r, r.kept(b, c.dy()), r.kept(b, c.y()), c)};
    };
  }
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

// --- gradient rules (dy and y arrive kept: x's rank, 1s at the reduced dims) ---

Value* gradSum(Builder& b, const Reduced& r, Value* dy, Value*, const GradientContext&) {
  return b.expand(dy, r.x->shape());
}

/// The product of the symbolic reduced extents as a scalar like `like`: ones expanded to those extents
/// and summed, which binding the graph's dimensions makes a sum of constants (never the number that
/// stands for a symbol, which is no count).
Value* symbolicCount(Builder& b, const Reduced& r, Value* like) {
  std::vector<int64_t> all(r.symbolic.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  return b.reduceSum(b.expand(b.scalarLike(1.0, like), r.symbolic), all, false);
}

Value* gradMean(Builder& b, const Reduced& r, Value* dy, Value*, const GradientContext&) {
  // count == 0 only when x has no elements, and then so does dx.
  Value* scaled = b.scale(dy, r.count == 0 ? 0.0 : 1.0 / static_cast<double>(r.count));
  if (!r.symbolic.empty()) scaled = b.div(scaled, symbolicCount(b, r, dy));
  return b.expand(scaled, r.x->shape());
}

// PyTorch's amax/amin: dy is split evenly among the elements equal to the extreme. A NaN extreme
// matches nothing, so its group's gradient is NaN (0 * inf), as in PyTorch.
Value* gradExtreme(Builder& b, const Reduced& r, Value* dy, Value* y, const GradientContext&) {
  Value* mask = b.cast(b.op("eq", {r.x, y}), r.x->dtype());
  Value* count = b.reduceSum(mask, r.axes, true);
  return b.mul(mask, b.div(dy, count));
}

// dx_i = dy * (product of the other elements), exact at zeros like PyTorch: with no zero in the group
// it is y / x_i; with one zero, the product of the nonzeros at the zero and 0 elsewhere; with more, 0.
// (Second derivatives at exact zeros treat the 0 branch as constant.)
Value* gradProd(Builder& b, const Reduced& r, Value* dy, Value*, const GradientContext&) {
  Value* x = r.x;
  Value* zero = b.scalarLike(0.0, x);
  Value* one = b.scalarLike(1.0, x);
  Value* isZero = b.op("eq", {x, zero});
  Value* zeros = b.reduceSum(b.cast(isZero, x->dtype()), r.axes, true);
  Value* safe = b.where(isZero, one, x);
  Value* nonzeroProduct = b.op("reduce_prod", {safe}, {{"axes", r.axes}, {"keepdims", int64_t{1}}});
  Value* atZero = b.where(b.op("eq", {zeros, one}), nonzeroProduct, zero);
  Value* elsewhere = b.where(b.op("eq", {zeros, zero}), b.div(nonzeroProduct, safe), zero);
  return b.mul(dy, b.where(isZero, atZero, elsewhere));
}

// x - mean(x) over the reduced dims, and 1 / (n - correction) (inf when n <= correction, as PyTorch).
Value* centered(Builder& b, const Reduced& r) {
  return b.sub(r.x, b.op("reduce_mean", {r.x}, {{"axes", r.axes}, {"keepdims", int64_t{1}}}));
}
/// `dy` times `factor` / (n - correction), n the count each result reduces (with symbolic extents, in
/// the graph: see symbolicCount).
Value* scaleByInverseDof(Builder& b, const Reduced& r, const GradientContext& c, Value* dy, double factor) {
  if (r.symbolic.empty()) {
    return b.scale(dy, factor / static_cast<double>(std::max<int64_t>(0, r.count - c.getInt("correction"))));
  }
  Value* n = b.scale(symbolicCount(b, r, dy), static_cast<double>(r.count));
  Value* dof = b.op("max", {b.sub(n, b.scalarLike(static_cast<double>(c.getInt("correction")), n)),
                            b.scalarLike(0.0, n)});
  return b.div(b.scale(dy, factor), dof);
}

Value* gradVariance(Builder& b, const Reduced& r, Value* dy, Value*, const GradientContext& c) {
  return b.mul(scaleByInverseDof(b, r, c, dy, 2.0), centered(b, r));
}

// PyTorch's std_backward: where the result is 0 (all elements equal) the gradient is 0, not NaN.
Value* gradStddev(Builder& b, const Reduced& r, Value* dy, Value* y, const GradientContext& c) {
  Value* zero = b.scalarLike(0.0, y);
  Value* isZero = b.op("eq", {y, zero});
  // The denominator is made safe so the unused branch has no inf (which would poison second order).
  Value* safe = b.where(isZero, b.scalarLike(1.0, y), y);
  Value* scaled = b.where(isZero, zero, b.div(scaleByInverseDof(b, r, c, dy, 1.0), safe));
  return b.mul(scaled, centered(b, r));
}

Value* gradLogSumExp(Builder& b, const Reduced& r, Value* dy, Value* y, const GradientContext&) {
  return b.mul(dy, b.exp(b.sub(r.x, y)));
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
      .symbolicDims = true,
      .reference = std::move(reference),
      .example = fmt::format(R"(graph @t(%x: $T[2,3,4]) {{
  %0 = {0}(%x) : $T[2,3,4]
  %1 = {0}(%x) {{axis = 1}} : $T[2,3,4]
  return a = %0, b = %1
}})",
                             name),
  };
}

// The shared half of both decompositions, in the reference's (and PyTorch's) own formula: the row max m,
// shifted = x - m and sum = sum(exp(shifted)) along the softmax node's axis, kept. The same formula
// rounds the same way: x - (m + log(sum)) would lose log_softmax's small values near the max to m's
// rounding (a confident prediction's log-probability, -3e-14, came out 3% off). It also keeps the
// reference's NaNs: a row holding +inf, or only -inf, has a NaN shifted value and so a NaN sum, and
// every element of it comes out NaN. Max then sum is two reduction sweeps of one exp per element each.
struct ShiftedRow {
  Value* shifted;
  Value* exps;
  Value* sum;
};

ShiftedRow shiftedRow(Builder& b, Value* x, const Node& node) {
  int64_t axis = std::get<int64_t>(node.attrs().at("axis"));
  if (axis < 0) axis += x->type().rank();
  Value* max = b.op("reduce_max", {x}, {{"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t{1}}});
  Value* shifted = b.sub(x, max);
  Value* exps = b.exp(shifted);
  return {shifted, exps, b.reduceSum(exps, {axis}, true)};
}

}  // namespace

/// The global pools' lowering (pooling.cpp): a reduction over H and W with the dims kept.
LowerFn ops::globalPoolLowering(std::string name) {
  return [name](LoweringContext& ctx) { return lowerReduction(name, ctx, {2, 3}, true); };
}

namespace {

int64_t softmaxAxis(const GradientContext& c) {
  int64_t axis = c.getInt("axis");
  return axis < 0 ? axis + c.x(0)->type().rank() : axis;
}

}  // namespace

void registerReductionOps(OpRegistry& registry) {
  const AttrSpec correction{"correction", AttrKind::Int, int64_t{1}};
  auto floatOnly = [](double (*f)(std::span<const double>)) {
    return [f](std::span<const double> v, const OpCall&) { return f(v); };
  };
  const ReduceRow rows[] = {
      {"reduce_sum", "sum over axes", dtypes::kNumeric, false, {}, floatOnly(sumOf), sumInt<int64_t>, sumInt<uint64_t>,
       gradSum},
      {"reduce_prod", "product over axes", dtypes::kNumeric, false, {},
       floatOnly([](std::span<const double> v) {
         double p = 1;
         for (double x : v) p *= x;
         return p;
       }),
       prodInt<int64_t>, prodInt<uint64_t>, gradProd},
      {"reduce_mean", "mean over axes (integers: truncated)", dtypes::kNumeric, false, {}, floatOnly(meanOf),
       meanInt<int64_t>, meanInt<uint64_t>, gradMean},
      {"reduce_max", "maximum over axes, NaN propagates", dtypes::kNumeric, true, {},
       floatOnly([](std::span<const double> v) { return extremeOf(v, [](double a, double b) { return a > b; }); }),
       maxInt<int64_t>, maxInt<uint64_t>, gradExtreme},
      {"reduce_min", "minimum over axes, NaN propagates", dtypes::kNumeric, true, {},
       floatOnly([](std::span<const double> v) { return extremeOf(v, [](double a, double b) { return a < b; }); }),
       minInt<int64_t>, minInt<uint64_t>, gradExtreme},
      {"reduce_variance", "sum((x-mean)^2)/(n-correction)", dtypes::kFloat, false, {correction}, varianceOf,
       nullptr, nullptr, gradVariance},
      {"reduce_stddev", "sqrt of reduce_variance", dtypes::kFloat, false, {correction},
       [](std::span<const double> v, const OpCall& call) { return std::sqrt(varianceOf(v, call)); }, nullptr, nullptr,
       gradStddev},
      {"reduce_logsumexp", "log(sum(exp(x))), computed stably", dtypes::kFloat, false, {}, floatOnly(logSumExpOf), nullptr,
       nullptr, gradLogSumExp},
  };
  for (const ReduceRow& row : rows) registry.add(makeReduceOp(row));
  OpDef softmax = makeSoftmaxOp("softmax", "e^x / sum(e^x) along axis, stable", referenceSoftmax<false>);
  // dx = y * (dy - sum(dy * y, axis))
  softmax.gradient = [](Builder& b, const GradientContext& c) -> std::vector<Value*> {
    Value* y = c.y();
    return {b.mul(y, b.sub(c.dy(), b.reduceSum(b.mul(c.dy(), y), {softmaxAxis(c)}, true)))};
  };
  // exp(x - max) / sum(exp(x - max)).
  softmax.decompose = [](Builder& b, const Node& node) -> std::vector<Value*> {
    if (node.operand(0)->type().numel() == 0) return {node.operand(0)};  // no row to take a max of
    ShiftedRow row = shiftedRow(b, node.operand(0), node);
    return {b.div(row.exps, row.sum)};
  };
  // 5 per element: max, subtract, exp, sum, divide.
  softmax.flops = [](const OpCall& c) { return 5 * c.operand(0).numel(); };
  registry.add(std::move(softmax));
  OpDef logSoftmax = makeSoftmaxOp("log_softmax", "x - logsumexp(x) along axis, stable", referenceSoftmax<true>);
  // dx = dy - exp(y) * sum(dy, axis)
  logSoftmax.gradient = [](Builder& b, const GradientContext& c) -> std::vector<Value*> {
    return {b.sub(c.dy(), b.mul(b.exp(c.y()), b.reduceSum(c.dy(), {softmaxAxis(c)}, true)))};
  };
  // (x - max) - log(sum(exp(x - max))).
  logSoftmax.decompose = [](Builder& b, const Node& node) -> std::vector<Value*> {
    if (node.operand(0)->type().numel() == 0) return {node.operand(0)};  // no row to take a max of
    ShiftedRow row = shiftedRow(b, node.operand(0), node);
    return {b.sub(row.shifted, b.log(row.sum))};
  };
  // 5 per element: max, subtract, exp, sum, subtract the log.
  logSoftmax.flops = [](const OpCall& c) { return 5 * c.operand(0).numel(); };
  registry.add(std::move(logSoftmax));
}

}  // namespace smelt

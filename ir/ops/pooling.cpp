// Pooling ops on NCHW images: max_pool2d, avg_pool2d (PyTorch/ONNX window rules, ceil_mode) and the
// global pools.   %0 = max_pool2d(%x) {kernel = [3, 3], stride = [2, 2], ceil_mode = 1} : f32[1,2,3,3]
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/ops/lower_helpers.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"
#include "ir/window2d.h"

namespace smelt {

namespace {
using namespace ops;

using PoolWindow = Window2d;

/// Reads and checks kernel, stride (empty = kernel), padding, ceil_mode and, when declared, dilation.
Expected<PoolWindow> readPoolWindow(const OpCall& call, bool hasDilation) {
  SMELT_CHECK_OK(expectIntsInRange(call, "kernel", 2, 1));
  const auto& k = call.getInts("kernel");
  std::vector<int64_t> s = call.getInts("stride");
  if (s.empty()) {
    s = k;
  } else if (s.size() != 2) {
    return call.error("attribute 'stride' must have 2 entries (or none, meaning the kernel), got {}", s.size());
  } else {
    SMELT_CHECK_OK(expectIntsInRange(call, "stride", 2, 1));
  }
  SMELT_CHECK_OK(expectIntsInRange(call, "padding", 4, 0));
  if (hasDilation) SMELT_CHECK_OK(expectIntsInRange(call, "dilation", 2, 1));
  SMELT_CHECK_OK(expectFlag(call, "ceil_mode"));
  return *Window2d::fromAttrs(call.attrs(), k[0], k[1], /*strideDefaultsToKernel=*/true);
}

/// The pooled extent along `axis` (Window2d::outputSize, ceil mode included), or an error naming the axis.
Expected<int64_t> poolOutputSize(const OpCall& call, int axis, int64_t in, const PoolWindow& win) {
  if (isSymbolic(in)) {
    Expected<int64_t> out = win.symbolicOutputSize(axis, in);
    if (!out.ok()) return call.error("{}", out.error().message());
    return *out;
  }
  std::optional<int64_t> out = win.outputSize(axis, in);
  if (!out) {
    return call.error("kernel {} {} with dilation {} does not fit the padded input {} {} (the output would be empty)",
                      kWindowAxisName[axis], win.kernel[axis], win.dilation[axis], kWindowAxisName[axis],
                      static_cast<int64_t>(win.padded(axis, in)));
  }
  return *out;
}

Expected<std::vector<TensorType>> inferPool(const OpCall& call, DTypeSet allowed, bool hasDilation) {
  SMELT_CHECK_OK(expectDType(call, 0, allowed));
  SMELT_CHECK_OK(expectRank(call, 0, 4));
  SMELT_TRY(PoolWindow win, readPoolWindow(call, hasDilation));
  const Shape& x = call.operand(0).shape;
  SMELT_TRY(int64_t oh, poolOutputSize(call, 0, x[2], win));
  SMELT_TRY(int64_t ow, poolOutputSize(call, 1, x[3], win));
  return single(TensorType{call.operand(0).dtype, {x[0], x[1], oh, ow}});
}


/// Max pooling of `planes` planes of [h, w] into [oh, ow], in the storage type V (double for floats,
/// the integer type itself so integers compare exactly). Padding never wins: only input taps count,
/// and a window holding no input tap (possible with large padding) gives `lowest`.
template <typename V>
void maxPoolPlanes(const V* x, V* y, int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow,
                   const PoolWindow& win, V lowest) {
  for (int64_t p = 0; p < planes; ++p) {
    const V* xPlane = x + p * h * w;
    V* yPlane = y + p * oh * ow;
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        V best = lowest;
        bool nan = false;
        // Only the taps that land in the input: the loops stay bounded by the input even when the
        // kernel and padding are huge.
        int64_t offH = i * win.stride[0] - win.padBegin[0];
        int64_t offW = j * win.stride[1] - win.padBegin[1];
        auto [khLo, khHi] = validRange(offH, win.dilation[0], h, win.kernel[0]);
        auto [kwLo, kwHi] = validRange(offW, win.dilation[1], w, win.kernel[1]);
        for (int64_t kh = khLo; kh < khHi; ++kh) {
          int64_t ih = offH + kh * win.dilation[0];
          for (int64_t kw = kwLo; kw < kwHi; ++kw) {
            V v = xPlane[ih * w + offW + kw * win.dilation[1]];
            if constexpr (std::is_floating_point_v<V>) nan = nan || std::isnan(v);
            best = std::max(best, v);
          }
        }
        // NaN propagates, as in PyTorch.
        if constexpr (std::is_floating_point_v<V>) {
          if (nan) best = std::numeric_limits<V>::quiet_NaN();
        }
        yPlane[i * ow + j] = best;
      }
    }
  }
}

Expected<std::vector<Tensor>> referenceMaxPool(const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(PoolWindow win, readPoolWindow(call, true));
  const Tensor& x = in[0];
  const TensorType& type = call.results()[0];
  int64_t planes = type.shape[0] * type.shape[1];
  int64_t h = x.shape()[2], w = x.shape()[3], oh = type.shape[2], ow = type.shape[3];
  if (isFloat(x.dtype())) {
    std::vector<double> xs = x.toDoubles();
    std::vector<double> ys(static_cast<size_t>(type.numel()));
    maxPoolPlanes(xs.data(), ys.data(), planes, h, w, oh, ow, win, -std::numeric_limits<double>::infinity());
    return std::vector<Tensor>{Tensor::fromDoubles(type, ys)};
  }
  Tensor out(type);
  dispatchDType(x.dtype(), [&]<typename T>(TypeTag<T>) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      maxPoolPlanes(x.data<T>(), out.data<T>(), planes, h, w, oh, ow, win, std::numeric_limits<T>::lowest());
    }
  });
  return std::vector<Tensor>{std::move(out)};
}

Expected<std::vector<Tensor>> referenceAvgPool(const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(PoolWindow win, readPoolWindow(call, false));
  bool countPad = call.getInt("count_include_pad") == 1;
  const TensorType& type = call.results()[0];
  int64_t planes = type.shape[0] * type.shape[1];
  int64_t h = in[0].shape()[2], w = in[0].shape()[3], oh = type.shape[2], ow = type.shape[3];
  std::vector<double> x = in[0].toDoubles();
  std::vector<double> y(static_cast<size_t>(type.numel()));
  for (int64_t p = 0; p < planes; ++p) {
    const double* xPlane = &x[static_cast<size_t>(p * h * w)];
    for (int64_t i = 0; i < oh; ++i) {
      // PyTorch/ONNX: the window is first clipped to the padded input (a ceil_mode window may reach
      // past it); that size divides with count_include_pad. Then it is clipped to the input itself.
      int64_t h0 = i * win.stride[0] - win.padBegin[0];
      int64_t h1 = std::min(h0 + win.kernel[0], h + win.padEnd[0]);
      int64_t padRows = h1 - h0;
      h0 = std::max<int64_t>(h0, 0);
      h1 = std::min(h1, h);
      for (int64_t j = 0; j < ow; ++j) {
        int64_t w0 = j * win.stride[1] - win.padBegin[1];
        int64_t w1 = std::min(w0 + win.kernel[1], w + win.padEnd[1]);
        int64_t padCols = w1 - w0;
        w0 = std::max<int64_t>(w0, 0);
        w1 = std::min(w1, w);
        double sum = 0.0;
        for (int64_t r = h0; r < h1; ++r)
          for (int64_t c = w0; c < w1; ++c) sum += xPlane[r * w + c];
        int64_t inside = std::max<int64_t>(h1 - h0, 0) * std::max<int64_t>(w1 - w0, 0);
        // A window entirely in padding has count 0 without count_include_pad: 0/0 = NaN, as ONNX.
        double count = static_cast<double>(countPad ? padRows * padCols : inside);
        y[static_cast<size_t>((p * oh + i) * ow + j)] = sum / count;
      }
    }
  }
  return std::vector<Tensor>{Tensor::fromDoubles(type, y)};
}

// --- max_pool2d_indices and max_pool2d_backward: the max pool's gradient as a gather ------------

/// max_pool2d_backward's input size [H, W] (attribute `input_size`), checked against the window and dy.
Expected<std::vector<TensorType>> inferMaxPoolBackward(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kFloat));
  SMELT_CHECK_OK(expectDType(call, 1, DTypeSet{DType::i64}));
  SMELT_CHECK_OK(expectRank(call, 0, 4));
  SMELT_CHECK_OK(expectRank(call, 1, 4));
  SMELT_TRY(PoolWindow win, readPoolWindow(call, true));
  const auto& size = call.getInts("input_size");
  // A symbolic size (the gradient of a pool over a symbolic image) is checked where it is bound.
  if (size.size() != 2 || (!isSymbolic(size[0]) && !isSymbolic(size[1]))) {
    SMELT_CHECK_OK(expectIntsInRange(call, "input_size", 2, 0));
  }
  const Shape& dy = call.operand(0).shape;
  if (call.operand(1).shape != dy) {
    return call.error("indices {} must have dy's shape {}", call.operand(1).toString(), call.operand(0).toString());
  }
  for (int a = 0; a < 2; ++a) {
    SMELT_TRY(int64_t pooled, poolOutputSize(call, a, size[static_cast<size_t>(a)], win));
    if (pooled != dy[2 + static_cast<size_t>(a)]) {
      return call.error("dy has {} {} {}, max_pool2d of an input {} {} gives {}",
                        extentToString(dy[2 + static_cast<size_t>(a)]), kWindowAxisName[a], "windows",
                        kWindowAxisName[a], extentToString(size[static_cast<size_t>(a)]), extentToString(pooled));
    }
  }
  return single(TensorType{call.operand(0).dtype, {dy[0], dy[1], size[0], size[1]}});
}

/// Per window, the plane index (row * W + column) of its first tap in scan order equal to the window's
/// maximum, or -1 when there is none (the maximum is NaN, or the window holds only padding).
template <typename V>
void firstMaxIndices(const V* x, int64_t* indices, int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow,
                     const PoolWindow& win, V lowest) {
  std::vector<V> maxima(static_cast<size_t>(planes * oh * ow));
  maxPoolPlanes(x, maxima.data(), planes, h, w, oh, ow, win, lowest);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        int64_t at = (p * oh + i) * ow + j, found = -1;
        V best = maxima[static_cast<size_t>(at)];
        for (int64_t kh = 0; kh < win.kernel[0] && found < 0; ++kh) {
          int64_t ih = i * win.stride[0] - win.padBegin[0] + kh * win.dilation[0];
          if (ih < 0 || ih >= h) continue;
          for (int64_t kw = 0; kw < win.kernel[1] && found < 0; ++kw) {
            int64_t iw = j * win.stride[1] - win.padBegin[1] + kw * win.dilation[1];
            if (iw >= 0 && iw < w && x[(p * h + ih) * w + iw] == best) found = ih * w + iw;
          }
        }
        indices[at] = found;
      }
    }
  }
}

Expected<std::vector<Tensor>> referenceMaxPoolIndices(const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(PoolWindow win, readPoolWindow(call, true));
  const Tensor& x = in[0];
  const TensorType& type = call.results()[0];
  int64_t planes = type.shape[0] * type.shape[1];
  int64_t h = x.shape()[2], w = x.shape()[3], oh = type.shape[2], ow = type.shape[3];
  Tensor out(type);
  if (isFloat(x.dtype())) {
    std::vector<double> xs = x.toDoubles();
    firstMaxIndices(xs.data(), out.data<int64_t>(), planes, h, w, oh, ow, win, -std::numeric_limits<double>::infinity());
    return std::vector<Tensor>{std::move(out)};
  }
  dispatchDType(x.dtype(), [&]<typename T>(TypeTag<T>) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      firstMaxIndices(x.data<T>(), out.data<int64_t>(), planes, h, w, oh, ow, win, std::numeric_limits<T>::lowest());
    }
  });
  return std::vector<Tensor>{std::move(out)};
}

/// dx[n, c, r, q] = the sum of dy over the windows that hold (r, q) as a tap and name it as their
/// index, in the windows' row-major order.
Expected<std::vector<Tensor>> referenceMaxPoolBackward(const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(PoolWindow win, readPoolWindow(call, true));
  const TensorType& type = call.results()[0];
  const Shape& ds = call.operand(0).shape;
  int64_t planes = ds[0] * ds[1], oh = ds[2], ow = ds[3], h = type.shape[2], w = type.shape[3];
  std::vector<double> dy = in[0].toDoubles();
  const int64_t* indices = in[1].data<int64_t>();
  std::vector<double> dx(static_cast<size_t>(type.numel()), 0.0);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t r = 0; r < h; ++r) {
      for (int64_t q = 0; q < w; ++q) {
        double sum = 0.0;
        for (int64_t kh = win.kernel[0] - 1; kh >= 0; --kh) {
          int64_t t = r + win.padBegin[0] - kh * win.dilation[0];
          if (t < 0 || t % win.stride[0] != 0 || t / win.stride[0] >= oh) continue;
          for (int64_t kw = win.kernel[1] - 1; kw >= 0; --kw) {
            int64_t u = q + win.padBegin[1] - kw * win.dilation[1];
            if (u < 0 || u % win.stride[1] != 0 || u / win.stride[1] >= ow) continue;
            int64_t at = (p * oh + t / win.stride[0]) * ow + u / win.stride[1];
            if (indices[at] == r * w + q) sum += dy[static_cast<size_t>(at)];
          }
        }
        dx[static_cast<size_t>((p * h + r) * w + q)] = sum;
      }
    }
  }
  return std::vector<Tensor>{Tensor::fromDoubles(type, dx)};
}

// --- kernel lowerings (ir/lowering.h): a loop over the window's taps per output element ---------

/// The window of output element `out` (n, c, i, j): its top-left corner per axis, and tap `k` along
/// `axis` guarded against the input's extent (taps in the padding read a safe element and are skipped).
struct LoweredWindow {
  KernelEmitter& e;
  const PoolWindow& win;
  const Shape& x;
  KValue origin[2];

  LoweredWindow(KernelEmitter& emit, const PoolWindow& w, const Shape& in, std::span<const KValue> out)
      : e(emit), win(w), x(in) {
    for (int a = 0; a < 2; ++a) origin[a] = e.sub(e.mul(out[2 + a], e.index(win.stride[a])), e.index(win.padBegin[a]));
  }
  GuardedIndex tap(int axis, KValue k) const {
    return guardIndex(e, e.add(origin[axis], e.mul(k, e.index(win.dilation[axis]))), x[2 + axis]);
  }
};

// max_pool2d as the reference: the maximum over the taps inside the input, starting from the dtype's
// lowest (-inf for floats: a window of padding only gives it); Max propagates NaN.
Expected<std::vector<KValue>> lowerMaxPool(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  SMELT_TRY(PoolWindow win, readPoolWindow(ctx.call(), true));
  DType dtype = ctx.call().operand(0).dtype;
  std::span<const KValue> out = ctx.index();
  LoweredWindow w(e, win, ctx.call().operand(0).shape, out);
  KValue lowest = dispatchDType(dtype, [&]<typename T>(TypeTag<T>) -> KValue {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return e.intConstant(static_cast<int64_t>(std::numeric_limits<T>::lowest()), dtype);
    } else {
      return e.constant(-std::numeric_limits<double>::infinity(), dtype);
    }
  });
  // An image with no pixels (H or W of 0, padded into an output) has no tap to read.
  if (ctx.call().operand(0).numel() == 0) return std::vector<KValue>{lowest};
  int64_t extents[2] = {win.kernel[0], win.kernel[1]};
  return loopBox(e, extents, {lowest}, [&](std::span<const KValue> k, std::span<const KValue> best) {
    GuardedIndex h = w.tap(0, k[0]), v = w.tap(1, k[1]);
    KValue at[4] = {out[0], out[1], h.index, v.index};
    KValue next = e.binary(KBinary::Max, best[0], ctx.operand(0, at));
    return std::vector<KValue>{e.select(e.logicalAnd(h.inside, v.inside), next, best[0])};
  });
}

// max_pool2d_indices in one sweep over the taps inside the input: the running maximum, its position
// (a strictly greater tap replaces it, so the first of equal maxima stays) and whether a NaN was seen
// (then -1, as the NaN maximum equals no tap). A window of padding only keeps -1.
Expected<std::vector<KValue>> lowerMaxPoolIndices(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  SMELT_TRY(PoolWindow win, readPoolWindow(ctx.call(), true));
  const Shape& x = ctx.call().operand(0).shape;
  DType dtype = ctx.call().operand(0).dtype;
  std::span<const KValue> out = ctx.index();
  LoweredWindow w(e, win, x, out);
  KValue none = e.index(-1);
  if (ctx.call().operand(0).numel() == 0) return std::vector<KValue>{none};
  KValue no = e.intConstant(0, DType::boolean);
  int64_t extents[2] = {win.kernel[0], win.kernel[1]};
  std::vector<KValue> found = loopBox(
      e, extents, {e.zero(dtype), none, no}, [&](std::span<const KValue> k, std::span<const KValue> c) {
        GuardedIndex h = w.tap(0, k[0]), v = w.tap(1, k[1]);
        KValue at[4] = {out[0], out[1], h.index, v.index};
        KValue value = ctx.operand(0, at);
        KValue inside = e.logicalAnd(h.inside, v.inside);
        KValue better = e.logicalAnd(inside, e.binary(KBinary::Or, e.binary(KBinary::Eq, c[1], none),
                                                      e.binary(KBinary::Gt, value, c[0])));
        KValue position = e.add(e.mul(h.index, e.index(x[3])), v.index);
        KValue nan = c[2];
        if (isFloat(dtype)) nan = e.binary(KBinary::Or, nan, e.logicalAnd(inside, e.unary(KUnary::IsNan, value)));
        return std::vector<KValue>{e.select(better, value, c[0]), e.select(better, position, c[1]), nan};
      });
  return std::vector<KValue>{e.select(found[2], none, found[1])};
}

// max_pool2d_backward, gathered: input row r lies in the windows oh with oh*s - pad <= r <=
// oh*s - pad + (k-1)*d, at most ceil(((k-1)*d + 1) / s) of them from the first, ceil((r + pad -
// (k-1)*d) / s); it is a tap of one when the offset r + pad - oh*s is a multiple of d. The window's
// dy counts when its index names (r, q). Windows are taken in row-major order, as the reference does.
Expected<std::vector<KValue>> lowerMaxPoolBackward(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  SMELT_TRY(PoolWindow win, readPoolWindow(ctx.call(), true));
  const Shape& ds = ctx.call().operand(0).shape;
  const Shape& xs = ctx.call().results()[0].shape;
  DType acc = accumulatorType(ctx.call().operand(0).dtype);
  std::span<const KValue> out = ctx.index();
  if (ctx.call().operand(0).numel() == 0) return std::vector<KValue>{e.zero(acc)};
  KValue first[2];
  int64_t extents[2];
  for (int a = 0; a < 2; ++a) {
    int64_t reach = (win.kernel[a] - 1) * win.dilation[a];
    extents[a] = std::min<int64_t>(ds[2 + static_cast<size_t>(a)], reach / win.stride[a] + 1);
    // ceil(t / s) for any sign of t, with division truncating toward zero.
    KValue t = e.sub(e.add(out[2 + a], e.index(win.padBegin[a])), e.index(reach));
    KValue s = e.index(win.stride[a]);
    KValue up = e.div(e.add(t, e.index(win.stride[a] - 1)), s);
    KValue down = e.sub(e.index(0), e.div(e.sub(e.index(0), t), s));
    first[a] = e.select(e.ge(t, e.index(0)), up, down);
  }
  // Window j along `axis` from the first: its index, and whether it exists and holds this row as a tap.
  auto window = [&](int axis, KValue j) {
    KValue o = e.add(first[axis], j);
    GuardedIndex g = guardIndex(e, o, ds[2 + static_cast<size_t>(axis)]);
    KValue offset = e.sub(e.add(out[2 + axis], e.index(win.padBegin[axis])), e.mul(o, e.index(win.stride[axis])));
    KValue tap = e.logicalAnd(e.ge(offset, e.index(0)), e.lt(offset, e.index(win.kernel[axis] * win.dilation[axis])));
    if (win.dilation[axis] > 1) {
      tap = e.logicalAnd(tap, e.binary(KBinary::Eq, e.rem(offset, e.index(win.dilation[axis])), e.index(0)));
    }
    return GuardedIndex{g.index, e.logicalAnd(g.inside, tap)};
  };
  KValue position = e.add(e.mul(out[2], e.index(xs[3])), out[3]);
  return loopBox(e, extents, {e.zero(acc)}, [&](std::span<const KValue> k, std::span<const KValue> sum) {
    GuardedIndex i = window(0, k[0]), j = window(1, k[1]);
    KValue at[4] = {out[0], out[1], i.index, j.index};
    KValue named = e.binary(KBinary::Eq, ctx.operand(1, at), position);
    KValue take = e.logicalAnd(e.logicalAnd(i.inside, j.inside), named);
    return std::vector<KValue>{e.select(take, e.add(sum[0], e.cast(ctx.operand(0, at), acc)), sum[0])};
  });
}

/// dx for one dtype: see hostMaxPoolBackward.
template <typename T>
void scatterMaxPoolGrad(const PoolWindow& win, const Shape& ds, const Shape& xs, char* const* buffers,
                        const ParallelFor& parallel) {
  const T* dy = reinterpret_cast<const T*>(buffers[0]);
  const int64_t* indices = reinterpret_cast<const int64_t*>(buffers[1]);
  T* dx = reinterpret_cast<T*>(buffers[2]);
  int64_t oh = ds[2], ow = ds[3], h = xs[2], w = xs[3], in = h * w, out = oh * ow;
  int64_t reachH = (win.kernel[0] - 1) * win.dilation[0], reachW = (win.kernel[1] - 1) * win.dilation[1];
  parallel(ds[0] * ds[1], [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      T* plane = dx + p * in;
      std::fill(plane, plane + in, T(0));
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t x = 0; x < ow; ++x) {
          int64_t at = p * out + y * ow + x, named = indices[at];
          if (named < 0 || named >= in) continue;
          // Only a tap of this window counts (the reference's rule for any index).
          int64_t t = named / w + win.padBegin[0] - y * win.stride[0];
          int64_t u = named % w + win.padBegin[1] - x * win.stride[1];
          if (t < 0 || t > reachH || t % win.dilation[0] != 0 || u < 0 || u > reachW || u % win.dilation[1] != 0) continue;
          plane[named] += dy[at];
        }
      }
    }
  });
}

// max_pool2d_backward on the CPU as the scatter it is: each plane zeroed, then each window's dy added
// where its index points, windows in row-major order, which is the order the kernel and the reference
// sum an element's windows in (so the same bits as the kernel). The kernel's gather finds each input
// element's candidate windows through divisions that vectorize as gathers: 2.4 ms of a ResNet-18 step.
HostKernel hostMaxPoolBackward(const OpCall& call) {
  DType dtype = call.operand(0).dtype;
  auto win = readPoolWindow(call, true);
  if ((dtype != DType::f32 && dtype != DType::f64) || !win) return {};
  Shape ds = call.operand(0).shape, xs = call.results()[0].shape;
  PoolWindow window = *win;
  return [=](char* const* buffers, const ParallelFor& parallel) {
    if (dtype == DType::f32) return scatterMaxPoolGrad<float>(window, ds, xs, buffers, parallel);
    scatterMaxPoolGrad<double>(window, ds, xs, buffers, parallel);
  };
}

// avg_pool2d as the reference: the sum of the taps inside the input (in f32 for f16/bf16) over the
// window's size, clipped to the padded input (count_include_pad) or to the input itself (0 when the
// window is all padding: 0/0 = NaN, as the reference).
Expected<std::vector<KValue>> lowerAvgPool(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  SMELT_TRY(PoolWindow win, readPoolWindow(ctx.call(), false));
  bool countPad = ctx.call().getInt("count_include_pad") == 1;
  const Shape& x = ctx.call().operand(0).shape;
  DType acc = accumulatorType(ctx.call().operand(0).dtype);
  std::span<const KValue> out = ctx.index();
  LoweredWindow w(e, win, x, out);
  KValue sum = e.zero(acc);
  // An image with no pixels (H or W of 0, padded into an output) has no tap to read: the sum is 0.
  if (ctx.call().operand(0).numel() != 0) {
    int64_t extents[2] = {win.kernel[0], win.kernel[1]};
    sum = loopBox(e, extents, {sum}, [&](std::span<const KValue> k, std::span<const KValue> s) {
      GuardedIndex h = w.tap(0, k[0]), v = w.tap(1, k[1]);
      KValue at[4] = {out[0], out[1], h.index, v.index};
      KValue next = e.add(s[0], e.cast(ctx.operand(0, at), acc));
      return std::vector<KValue>{e.select(e.logicalAnd(h.inside, v.inside), next, s[0])};
    })[0];
  }
  KValue count = e.index(1);
  for (int a = 0; a < 2; ++a) {
    KValue lo = w.origin[a];
    KValue hi = e.binary(KBinary::Min, e.add(lo, e.index(win.kernel[a])), e.index(x[2 + a] + win.padEnd[a]));
    KValue inside = e.sub(e.binary(KBinary::Min, hi, e.index(x[2 + a])), e.binary(KBinary::Max, lo, e.index(0)));
    KValue rows = countPad ? e.sub(hi, lo) : e.binary(KBinary::Max, inside, e.index(0));
    count = e.mul(count, rows);
  }
  return std::vector<KValue>{e.div(sum, e.cast(count, acc))};
}

Expected<std::vector<TensorType>> inferGlobalPool(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kFloat));
  SMELT_CHECK_OK(expectRank(call, 0, 4));
  const Shape& x = call.operand(0).shape;
  if (x[2] == 0 || x[3] == 0) {
    return call.error("input {} has no spatial elements to pool", call.operand(0).toString());
  }
  return single(TensorType{call.operand(0).dtype, {x[0], x[1], 1, 1}});
}

/// A global pool: `combine` folds the H*W values of each plane (in double) into one.
template <typename Combine>
Expected<std::vector<Tensor>> referenceGlobalPool(const OpCall& call, std::span<const Tensor> in, Combine combine) {
  const Shape& s = in[0].shape();
  int64_t planes = s[0] * s[1], size = s[2] * s[3];
  std::vector<double> x = in[0].toDoubles();
  std::vector<double> y(static_cast<size_t>(planes));
  for (int64_t p = 0; p < planes; ++p) y[static_cast<size_t>(p)] = combine(&x[static_cast<size_t>(p * size)], size);
  return std::vector<Tensor>{Tensor::fromDoubles(call.results()[0], y)};
}

double planeMean(const double* v, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += v[i];
  return sum / static_cast<double>(n);
}

double planeMax(const double* v, int64_t n) {
  double best = v[0];
  for (int64_t i = 1; i < n; ++i) {
    if (std::isnan(v[i]) || std::isnan(best)) return std::numeric_limits<double>::quiet_NaN();
    best = std::max(best, v[i]);
  }
  return best;
}

std::vector<AttrSpec> poolAttrs() {
  return {{"kernel", AttrKind::Ints, std::nullopt},
          {"stride", AttrKind::Ints, std::vector<int64_t>{}},
          {"padding", AttrKind::Ints, std::vector<int64_t>{0, 0, 0, 0}},
          {"ceil_mode", AttrKind::Int, int64_t{0}}};
}

// ---- Gradients ----------------------------------------------------------------------------------
// Windowed pools scatter a per-window value back over the window with conv_transpose2d (one group per
// channel, a constant kernel), which is linear in what it scatters and differentiable again.

using Ints = std::vector<int64_t>;

/// A constant tensor of `type` holding `values`.
Value* constantTensor(Builder& b, const TensorType& type, const std::vector<double>& values) {
  return b.op("constant", {}, {{"value", Tensor::fromDoubles(type, values)}});
}

/// The pooling window of a forward node (stride defaults to the kernel; dilation 1 for avg_pool2d).
struct PoolAttrs {
  Ints kernel, stride, padding, dilation;
};

PoolAttrs readPoolAttrs(const GradientContext& c, bool hasDilation) {
  PoolAttrs a{c.getInts("kernel"), c.getInts("stride"), c.getInts("padding"), hasDilation ? c.getInts("dilation") : Ints{1, 1}};
  if (a.stride.empty()) a.stride = a.kernel;
  return a;
}

/// Adds each window's values back onto the input positions it covers: `v` is [N, C*T, OH, OW] (T values
/// per window and channel), `kernel` [C*T, 1, KH, KW] says where in the window each of the T goes.
/// conv_transpose2d with groups = C; its padding and output_padding crop or extend to exactly H x W.
Value* scatterWindows(Builder& b, Value* v, Value* kernel, int64_t channels, const PoolAttrs& win, int64_t h, int64_t w) {
  if (!v) return nullptr;
  const Shape& vs = v->shape();
  int64_t size[2] = {h, w};
  Ints padEnd(2), outPad(2);
  for (int a = 0; a < 2; ++a) {
    int64_t reach = (vs[2 + a] - 1) * win.stride[a] + win.dilation[a] * (win.kernel[a] - 1) + 1 - win.padding[a];
    padEnd[a] = std::max<int64_t>(0, reach - size[a]);
    outPad[a] = std::max<int64_t>(0, size[a] - reach);
  }
  return b.op("conv_transpose2d", {v, kernel},
              {{"stride", win.stride},
               {"dilation", win.dilation},
               {"padding", Ints{win.padding[0], win.padding[1], padEnd[0], padEnd[1]}},
               {"groups", channels},
               {"output_padding", outPad}});
}

/// max_pool2d's gradient when the windows tile the input exactly (stride = kernel, no padding or
/// dilation, sizes divisible, as in 2x2 / stride 2 pooling): the input viewed as [N, C, OH, KH, OW, KW]
/// holds each window on axes 3 and 5, so finding the first maximum and routing dy to it are a
/// reduction and an elementwise select on that view, which fuse (no tap slices, no scatter).
Value* gradTiledMaxPool2d(Builder& b, const GradientContext& c, int64_t kh, int64_t kw) {
  Value* x = c.x(0);
  const Shape& xs = x->shape();
  const Shape& ys = c.y()->shape();
  int64_t n = xs[0], ch = xs[1], oh = ys[2], ow = ys[3], taps = kh * kw;
  std::vector<double> indices(static_cast<size_t>(taps));
  for (int64_t t = 0; t < taps; ++t) indices[static_cast<size_t>(t)] = static_cast<double>(t);
  // Tap t = i * KW + j at window position (i, j): [KH, 1, KW] broadcasts over [..., KH, OW, KW].
  Value* tap = constantTensor(b, {DType::i64, {kh, 1, kw}}, indices);
  Value* window = b.reshape(x, {n, ch, oh, kh, ow, kw});
  Value* hit = b.op("eq", {window, b.reshape(c.y(), {n, ch, oh, 1, ow, 1})});
  Value* first = b.op("reduce_min", {b.where(hit, tap, b.scalar(static_cast<double>(taps), DType::i64))},
                      {{"axes", Ints{3, 5}}, {"keepdims", int64_t{1}}});
  Value* routed = b.where(b.op("eq", {tap, first}), b.reshape(c.dy(), {n, ch, oh, 1, ow, 1}), b.scalarLike(0.0, x));
  return b.reshape(routed, xs);
}

/// The window attributes of a max pool node, as max_pool2d_indices and max_pool2d_backward take them.
AttrMap maxPoolWindowAttrs(const GradientContext& c) {
  return {{"kernel", c.getInts("kernel")},
          {"stride", c.getInts("stride")},
          {"padding", c.getInts("padding")},
          {"dilation", c.getInts("dilation")},
          {"ceil_mode", c.getInt("ceil_mode")}};
}

// max_pool2d: dy goes to the first maximum of each window in scan order (kh, then kw), as PyTorch's
// max_pool2d indices do; a window whose maximum is NaN sends nothing. Windows that tile the input take
// the fusing path above; the others find each window's first maximum (max_pool2d_indices) and gather
// dy back at every input position (max_pool2d_backward): two kernels, no scatter.
std::vector<Value*> gradMaxPool2d(Builder& b, const GradientContext& c) {
  Value* x = c.x(0);
  if (!isFloat(x->dtype())) return {nullptr};
  PoolAttrs win = readPoolAttrs(c, true);
  const Shape& xs = x->shape();
  const Shape& ys = c.y()->shape();
  int64_t oh = ys[2], ow = ys[3], kh = win.kernel[0], kw = win.kernel[1];
  bool tiled = win.stride == win.kernel && win.dilation == Ints{1, 1} && win.padding == Ints{0, 0, 0, 0} &&
               isStatic(xs) && isStatic(ys) && xs[2] == oh * kh && xs[3] == ow * kw;
  if (tiled) return {gradTiledMaxPool2d(b, c, kh, kw)};
  AttrMap attrs = maxPoolWindowAttrs(c);
  Value* indices = b.op("max_pool2d_indices", {x}, attrs);
  attrs["input_size"] = Ints{xs[2], xs[3]};
  return {b.op("max_pool2d_backward", {c.dy(), indices}, attrs)};
}

// max_pool2d_backward is linear in dy: its gradient reads ddx where each window's index points, when
// that index is one of the window's taps inside the input (what the op itself honours), else 0.
std::vector<Value*> gradMaxPoolBackward(Builder& b, const GradientContext& c) {
  Value* indices = c.x(1);
  Value* ddx = c.dy();
  PoolAttrs win = readPoolAttrs(c, true);
  const Shape& ds = indices->shape();
  const Shape& xs = ddx->shape();
  int64_t n = ds[0], ch = ds[1], oh = ds[2], ow = ds[3], h = xs[2], w = xs[3];
  auto i64 = [&](double v) { return b.scalar(v, DType::i64); };
  // Row and column the index names, and whether they are taps of this window: offsets from the
  // window's origin that are non-negative multiples of the dilation below dilation * kernel.
  Value* inside = b.op("and", {b.op("ge", {indices, i64(0)}), b.op("lt", {indices, i64(static_cast<double>(h * w))})});
  Value* safe = b.where(inside, indices, i64(0));
  // a - (a / m) * m: integer division truncates, and only non-negative offsets are used.
  auto remainder = [&](Value* a, int64_t m) { return b.sub(a, b.mul(b.div(a, i64(static_cast<double>(m))), i64(static_cast<double>(m)))); };
  Value* row = b.div(safe, i64(static_cast<double>(w)));
  Value* column = remainder(safe, w);
  auto originOf = [&](int64_t count, int64_t stride, int64_t pad, const Shape& shape) {
    std::vector<double> origins(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) origins[static_cast<size_t>(i)] = static_cast<double>(i * stride - pad);
    return constantTensor(b, {DType::i64, shape}, origins);
  };
  auto isTap = [&](Value* at, Value* origin, int64_t dilation, int64_t kernel) {
    Value* offset = b.sub(at, origin);
    Value* ok = b.op("and", {b.op("ge", {offset, i64(0)}), b.op("lt", {offset, i64(static_cast<double>(dilation * kernel))})});
    if (dilation == 1) return ok;
    return b.op("and", {ok, b.op("eq", {remainder(offset, dilation), i64(0)})});
  };
  Value* tap = b.op("and", {isTap(row, originOf(oh, win.stride[0], win.padding[0], {oh, 1}), win.dilation[0], win.kernel[0]),
                            isTap(column, originOf(ow, win.stride[1], win.padding[1], {ow}), win.dilation[1], win.kernel[1])});
  // Each plane's first element in ddx flattened: (n * C + c) * H * W.
  std::vector<double> bases(static_cast<size_t>(n * ch));
  for (int64_t p = 0; p < n * ch; ++p) bases[static_cast<size_t>(p)] = static_cast<double>(p * h * w);
  Value* flat = b.add(safe, constantTensor(b, {DType::i64, {n, ch, 1, 1}}, bases));
  Value* read = b.op("gather", {b.reshape(ddx, {n * ch * h * w}), flat}, {{"axis", int64_t{0}}});
  return {b.where(b.op("and", {inside, tap}), read, b.scalarLike(0.0, ddx)), nullptr};
}

// avg_pool2d: each window spreads dy / divisor evenly over the input positions it covers; the divisor
// map is the reference's (count_include_pad, clipping at the padded input for ceil_mode).
std::vector<Value*> gradAvgPool2d(Builder& b, const GradientContext& c) {
  Value* x = c.x(0);
  PoolAttrs win = readPoolAttrs(c, false);
  bool countPad = c.getInt("count_include_pad") == 1;
  const Shape& xs = x->shape();
  const Shape& ys = c.y()->shape();
  if (!isStatic(ys) && (isSymbolic(ys[2]) || isSymbolic(ys[3]))) {
    // Its divisors are a constant per window position, which a symbolic plane has no list of.
    return {b.fail(makeError("the gradient of avg_pool2d over a symbolic image {}: bind its height and width first",
                             x->type().toString()))};
  }
  int64_t ch = xs[1], oh = ys[2], ow = ys[3];
  // Per axis: the padded-window extent and the input extent of every output row (column).
  auto extents = [&](int a, int64_t count) {
    std::vector<std::pair<int64_t, int64_t>> e;
    for (int64_t i = 0; i < count; ++i) {
      int64_t lo = i * win.stride[a] - win.padding[a];
      int64_t hi = std::min(lo + win.kernel[a], xs[2 + a] + win.padding[2 + a]);
      e.emplace_back(hi - lo, std::max<int64_t>(0, std::min(hi, xs[2 + a]) - std::max<int64_t>(lo, 0)));
    }
    return e;
  };
  auto rows = extents(0, oh), cols = extents(1, ow);
  std::vector<double> divisor(static_cast<size_t>(oh * ow));
  for (int64_t i = 0; i < oh; ++i) {
    for (int64_t j = 0; j < ow; ++j) {
      int64_t count = countPad ? rows[i].first * cols[j].first : rows[i].second * cols[j].second;
      // A window of padding only (count 0) covers no input: any divisor gives a zero gradient.
      divisor[static_cast<size_t>(i * ow + j)] = count > 0 ? static_cast<double>(count) : 1.0;
    }
  }
  Value* scaled = b.div(c.dy(), constantTensor(b, {x->dtype(), {oh, ow}}, divisor));
  Value* ones = b.full(1.0, {x->dtype(), {ch, 1, win.kernel[0], win.kernel[1]}});
  return {scatterWindows(b, scaled, ones, ch, win, xs[2], xs[3])};
}

// global_max_pool2d: dy goes to the first maximum of each plane in row-major order (PyTorch's
// adaptive_max_pool2d index).
std::vector<Value*> gradGlobalMaxPool2d(Builder& b, const GradientContext& c) {
  Value* x = c.x(0);
  const Shape& xs = x->shape();
  int64_t plane = xs[2] * xs[3];
  std::vector<double> indices(static_cast<size_t>(plane));
  for (int64_t i = 0; i < plane; ++i) indices[static_cast<size_t>(i)] = static_cast<double>(i);
  Value* position = constantTensor(b, {DType::i64, {xs[2], xs[3]}}, indices);
  Value* hit = b.op("eq", {x, c.y()});
  Value* first = b.op("reduce_min", {b.where(hit, position, b.scalar(static_cast<double>(plane), DType::i64))},
                      {{"axes", Ints{2, 3}}, {"keepdims", int64_t{1}}});
  return {b.where(b.op("eq", {position, first}), c.dy(), b.scalarLike(0.0, x))};
}

}  // namespace

void registerPoolingOps(OpRegistry& registry) {
  std::vector<AttrSpec> maxAttrs = poolAttrs();
  maxAttrs.push_back({"dilation", AttrKind::Ints, std::vector<int64_t>{1, 1}});
  registry.add(OpDef{
      .name = "max_pool2d",
      .summary = "Windowed maximum over H and W; padding never wins; dilation and ceil_mode as PyTorch.",
      .operands = {{"input"}},
      .attrs = maxAttrs,
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kNumeric,
      .infer = [](const OpCall& call) { return inferPool(call, dtypes::kNumeric, true); },
      .symbolicDims = true,
      .reference = referenceMaxPool,
      .example = R"(graph @t(%x: $T[2,3,6,6]) {
  %0 = max_pool2d(%x) {ceil_mode = 1, kernel = [3, 3], stride = [2, 2]} : $T[2,3,3,3]
  %1 = max_pool2d(%x) {dilation = [2, 1], kernel = [2, 3], padding = [1, 1, 0, 1], stride = [1, 2]} : $T[2,3,5,3]
  %2 = max_pool2d(%x) {ceil_mode = 1, dilation = [1, 2], kernel = [2, 2], padding = [1, 0, 1, 0], stride = [3, 2]} : $T[2,3,3,3]
  return r = %0, d = %1, c = %2
})",
      .gradient = gradMaxPool2d,
      .lower = lowerMaxPool,
      // One compare per window tap and output element.
      .flops = [](const OpCall& c) {
        const auto& k = c.getInts("kernel");
        return c.results()[0].numel() * k[0] * k[1];
      },
  });

  registry.add(OpDef{
      .name = "max_pool2d_indices",
      .summary = "Per max_pool2d window, the plane index (row * W + column) of its first maximum in scan order; -1 "
                 "when the maximum is NaN or the window holds only padding.",
      .operands = {{"input"}},
      .attrs = maxAttrs,
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kNumeric,
      .infer = [](const OpCall& call) -> Expected<std::vector<TensorType>> {
        SMELT_TRY(std::vector<TensorType> types, inferPool(call, dtypes::kNumeric, true));
        types[0].dtype = DType::i64;
        return types;
      },
      .symbolicDims = true,
      .reference = referenceMaxPoolIndices,
      .example = R"(graph @t(%x: $T[2,3,6,6]) {
  %0 = max_pool2d_indices(%x) {kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : i64[2,3,3,3]
  %1 = max_pool2d_indices(%x) {ceil_mode = 1, dilation = [1, 2], kernel = [2, 2], padding = [1, 0, 1, 0], stride = [3, 2]} : i64[2,3,3,3]
  return r = %0, c = %1
})",
      .lower = lowerMaxPoolIndices,
      // Two compares per window tap and output element.
      .flops = [](const OpCall& c) {
        const auto& k = c.getInts("kernel");
        return 2 * c.results()[0].numel() * k[0] * k[1];
      },
  });

  std::vector<AttrSpec> backwardAttrs = maxAttrs;
  backwardAttrs.push_back({"input_size", AttrKind::Ints, std::nullopt});
  registry.add(OpDef{
      .name = "max_pool2d_backward",
      .summary = "max_pool2d's input gradient: each window's dy added at the input position its index "
                 "(max_pool2d_indices) names, when that is one of the window's taps; input_size = [H, W].",
      .operands = {{"dy"}, {"indices"}},
      .attrs = backwardAttrs,
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kFloat,
      .infer = inferMaxPoolBackward,
      .symbolicDims = true,
      .reference = referenceMaxPoolBackward,
      .example = R"(graph @t(%dy: $T[2,3,3,3], %i: i64[2,3,3,3], %dc: $T[2,3,3,3]) {
  %0 = max_pool2d_backward(%dy, %i) {input_size = [6, 6], kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : $T[2,3,6,6]
  %1 = max_pool2d_backward(%dc, %i) {ceil_mode = 1, dilation = [1, 2], input_size = [6, 6], kernel = [2, 2], padding = [1, 0, 1, 0], stride = [3, 2]} : $T[2,3,6,6]
  return r = %0, c = %1
})",
      .gradient = gradMaxPoolBackward,
      .lower = lowerMaxPoolBackward,
      .host = hostMaxPoolBackward,
      // One compare per input element and window tap.
      .flops =
          [](const OpCall& c) {
            const auto& k = c.getInts("kernel");
            return c.results()[0].numel() * k[0] * k[1];
          },
  });

  std::vector<AttrSpec> avgAttrs = poolAttrs();
  avgAttrs.push_back({"count_include_pad", AttrKind::Int, int64_t{0}});
  registry.add(OpDef{
      .name = "avg_pool2d",
      .summary = "Windowed mean over H and W; ceil_mode and count_include_pad as PyTorch.",
      .operands = {{"input"}},
      .attrs = avgAttrs,
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kFloat,
      .infer = [](const OpCall& call) -> Expected<std::vector<TensorType>> {
        SMELT_CHECK_OK(expectFlag(call, "count_include_pad"));
        return inferPool(call, dtypes::kFloat, false);
      },
      .symbolicDims = true,
      .reference = referenceAvgPool,
      .example = R"(graph @t(%x: $T[2,3,5,5]) {
  %0 = avg_pool2d(%x) {ceil_mode = 1, count_include_pad = 1, kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : $T[2,3,3,3]
  %1 = avg_pool2d(%x) {ceil_mode = 1, kernel = [2, 2], padding = [1, 0, 0, 1], stride = [2, 2]} : $T[2,3,3,3]
  %2 = avg_pool2d(%x) {ceil_mode = 1, count_include_pad = 1, kernel = [2, 3], stride = [2, 2]} : $T[2,3,3,2]
  return r = %0, e = %1, o = %2
})",
      .gradient = gradAvgPool2d,
      .lower = lowerAvgPool,
      // One add per window tap and output element (the divide is noise).
      .flops = [](const OpCall& c) {
        const auto& k = c.getInts("kernel");
        return c.results()[0].numel() * k[0] * k[1];
      },
  });

  registry.add(OpDef{
      .name = "global_avg_pool2d",
      .summary = "Mean over H and W: [N,C,H,W] -> [N,C,1,1].",
      .operands = {{"input"}},
      .attrs = {},
      .fusion = FusionKind::Reduction,
      .dtypes = dtypes::kFloat,
      .infer = inferGlobalPool,
      .symbolicDims = true,
      .reference = [](const OpCall& call,
                      std::span<const Tensor> in) { return referenceGlobalPool(call, in, planeMean); },
      .example = R"(graph @t(%x: $T[2,3,4,5]) {
  %0 = global_avg_pool2d(%x) : $T[2,3,1,1]
  return r = %0
})",
      .gradient = [](Builder& b, const GradientContext& c) -> std::vector<Value*> {
        const Shape& xs = c.x(0)->shape();
        if (isSymbolic(xs[2]) || isSymbolic(xs[3])) {
          // H*W is no count here: ones over the plane, summed by a kernel at each size.
          Value* plane = b.expand(b.scalarLike(1.0, c.dy()), Shape{xs[2], xs[3]});
          Value* count = b.reduceSum(plane, {0, 1}, false);
          return {b.expand(b.div(c.dy(), count), xs)};
        }
        return {b.expand(b.div(c.dy(), b.scalarLike(static_cast<double>(xs[2] * xs[3]), c.dy())), xs)};
      },
      .lower = globalPoolLowering("global_avg_pool2d"),
  });

  registry.add(OpDef{
      .name = "global_max_pool2d",
      .summary = "Maximum over H and W: [N,C,H,W] -> [N,C,1,1]; NaN propagates.",
      .operands = {{"input"}},
      .attrs = {},
      .fusion = FusionKind::Reduction,
      .dtypes = dtypes::kFloat,
      .infer = inferGlobalPool,
      .symbolicDims = true,
      .reference = [](const OpCall& call,
                      std::span<const Tensor> in) { return referenceGlobalPool(call, in, planeMax); },
      .example = R"(graph @t(%x: $T[2,3,4,5]) {
  %0 = global_max_pool2d(%x) : $T[2,3,1,1]
  return r = %0
})",
      .gradient = gradGlobalMaxPool2d,
      .lower = globalPoolLowering("global_max_pool2d"),
  });
}

}  // namespace smelt

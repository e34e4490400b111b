// Convolution ops on NCHW images: conv2d, conv_transpose2d and locally_connected2d (PyTorch/ONNX rules).
//   %0 = conv2d(%x, %w, %b) {stride = [2, 2], padding = [1, 1, 1, 1], groups = 2} : f32[2,6,3,3]
#include <algorithm>
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

using Window = Window2d;

/// Stride, padding and dilation from the attributes, checked (the kernel comes from the weight).
Expected<Window> readWindow(const OpCall& call) {
  SMELT_CHECK_OK(expectIntsInRange(call, "stride", 2, 1));
  SMELT_CHECK_OK(expectIntsInRange(call, "padding", 4, 0));
  SMELT_CHECK_OK(expectIntsInRange(call, "dilation", 2, 1));
  return *Window2d::fromAttrs(call.attrs(), 1, 1);
}

/// The conv2d output extent along `axis` (Window2d::outputSize), or an error naming the axis.
Expected<int64_t> convOutputSize(const OpCall& call, int axis, int64_t in, int64_t kernel, Window win) {
  win.kernel[axis] = kernel;
  if (isSymbolic(in)) {
    Expected<int64_t> out = win.symbolicOutputSize(axis, in);
    if (!out.ok()) return call.error("{}", out.error().message());
    return *out;
  }
  std::optional<int64_t> out = win.outputSize(axis, in);
  if (!out) {
    return call.error("kernel {} {} with dilation {} does not fit the padded input {} {} (the output would be empty)",
                      kWindowAxisName[axis], kernel, win.dilation[axis], kWindowAxisName[axis],
                      static_cast<int64_t>(win.padded(axis, in)));
  }
  return *out;
}

/// Common operand checks: float dtype shared by all operands, input and weight ranks.
Status checkOperands(const OpCall& call, int64_t weightRank) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kFloat));
  for (size_t i = 1; i < call.numOperands(); ++i) SMELT_CHECK_OK(expectSameDType(call, 0, i));
  SMELT_CHECK_OK(expectRank(call, 0, 4));
  SMELT_CHECK_OK(expectRank(call, 1, weightRank));
  return Status::success();
}

/// No dim of a weight may be symbolic (firstStatic 0), nor any but an image's batch where firstStatic is 1.
Status expectSymbolicBatchOnly(const OpCall& call, size_t operand, size_t firstStatic) {
  const TensorType& t = call.operand(operand);
  for (size_t d = firstStatic; d < t.shape.size(); ++d) {
    if (isSymbolic(t.shape[d])) {
      return call.error("{} is {}: only {} may be symbolic", operandName(call, operand), t.toString(),
                        firstStatic == 0 ? "no dimension of it" : "its batch (dim 0)");
    }
  }
  return Status::success();
}

/// An image's channels (dim 1) must be a count: they size the weight. Its batch and spatial extents may be
/// symbolic (a spatial one enters the result through window arithmetic, ir/window2d.h).
Status expectStaticChannels(const OpCall& call, size_t operand) {
  const TensorType& t = call.operand(operand);
  if (t.rank() < 2 || !isSymbolic(t.shape[1])) return Status::success();
  return call.error("{} is {}: its channels (dim 1) must be a count", operandName(call, operand), t.toString());
}

Expected<int64_t> readGroups(const OpCall& call, int64_t channels) {
  int64_t groups = call.getInt("groups");
  if (groups < 1 || groups > kMaxElements) return call.error("groups must be in [1, 2^40], got {}", groups);
  if (channels % groups != 0) return call.error("groups = {} does not divide the {} input channels", groups, channels);
  return groups;
}

Status checkKernel(const OpCall& call, int64_t kh, int64_t kw) {
  if (kh >= 1 && kw >= 1) return Status::success();
  return call.error("weight has an empty kernel {}x{}", kh, kw);
}

/// Fails unless the optional bias (operand 2) has exactly `shape`.
Status checkBias(const OpCall& call, const Shape& shape, std::string_view what) {
  if (call.numOperands() < 3 || call.operand(2).shape == shape) return Status::success();
  return call.error("bias must be {} ({}), got {}", shapeToString(shape), what, call.operand(2).toString());
}

Expected<std::vector<TensorType>> inferConv2d(const OpCall& call) {
  SMELT_CHECK_OK(checkOperands(call, 4));
  SMELT_TRY(Window win, readWindow(call));
  const Shape& x = call.operand(0).shape;
  const Shape& w = call.operand(1).shape;
  SMELT_TRY(int64_t groups, readGroups(call, x[1]));
  // 128 bits: with zero input channels any groups value divides them, and the product may overflow.
  __int128 expected = static_cast<__int128>(w[1]) * groups;
  if (expected != x[1]) {
    if (expected > kMaxElements) return call.error("input has {} channels, weight expects more than 2^40", x[1]);
    return call.error("input has {} channels, weight expects {}", x[1], static_cast<int64_t>(expected));
  }
  if (w[0] % groups != 0) {
    return call.error("groups = {} does not divide the {} output channels of the weight", groups, w[0]);
  }
  SMELT_CHECK_OK(checkKernel(call, w[2], w[3]));
  SMELT_CHECK_OK(checkBias(call, {w[0]}, "one entry per output channel"));
  SMELT_TRY(int64_t oh, convOutputSize(call, 0, x[2], w[2], win));
  SMELT_TRY(int64_t ow, convOutputSize(call, 1, x[3], w[3], win));
  return single(TensorType{call.operand(0).dtype, {x[0], w[0], oh, ow}});
}

Expected<std::vector<TensorType>> inferConvTranspose2d(const OpCall& call) {
  SMELT_CHECK_OK(checkOperands(call, 4));
  SMELT_CHECK_OK(expectStaticChannels(call, 0));
  for (size_t i = 1; i < call.numOperands(); ++i) SMELT_CHECK_OK(expectSymbolicBatchOnly(call, i, 0));
  SMELT_TRY(Window win, readWindow(call));
  const Shape& x = call.operand(0).shape;
  const Shape& w = call.operand(1).shape;
  SMELT_TRY(int64_t groups, readGroups(call, x[1]));
  if (w[0] != x[1]) return call.error("input has {} channels, weight expects {}", x[1], w[0]);
  SMELT_CHECK_OK(checkKernel(call, w[2], w[3]));
  __int128 wideOutChannels = static_cast<__int128>(w[1]) * groups;
  if (wideOutChannels > kMaxElements) return call.error("weight and groups give more than 2^40 output channels");
  int64_t outChannels = static_cast<int64_t>(wideOutChannels);
  SMELT_CHECK_OK(checkBias(call, {outChannels}, "one entry per output channel"));
  const auto& outPad = call.getInts("output_padding");
  if (outPad.size() == 2 && (isSymbolic(outPad[0]) || isSymbolic(outPad[1]) || isSymbolic(x[2]) || isSymbolic(x[3]))) {
    // Over a symbolic image (the data gradient of a conv2d over one): the same size as a polynomial, whose
    // output_padding, a remainder like -2*(H+1)/2+H+1, bindDims checks at each size.
    Shape result = {x[0], outChannels, 0, 0};
    for (int axis = 0; axis < 2; ++axis) {
      const __int128 shift = static_cast<__int128>(win.dilation[axis]) * (w[2 + axis] - 1) + 1 - win.padBegin[axis] -
                             win.padEnd[axis] - win.stride[axis];
      if (shift > kMaxElements || shift < -kMaxElements) return call.error("the window is larger than 2^40");
      Expected<int64_t> strided = multiplyExtents(x[2 + axis], win.stride[axis]);
      Expected<int64_t> padded = strided.ok() ? addExtents(*strided, outPad[axis]) : strided;
      Expected<int64_t> size = padded.ok() ? addExtents(*padded, static_cast<int64_t>(shift)) : padded;
      if (!size.ok()) return call.error("output {}: {}", kWindowAxisName[axis], size.error().message());
      result[2 + axis] = *size;
    }
    return single(TensorType{call.operand(0).dtype, result});
  }
  SMELT_CHECK_OK(expectIntsInRange(call, "output_padding", 2, 0));
  Shape result = {x[0], outChannels, 0, 0};
  for (int axis = 0; axis < 2; ++axis) {
    // PyTorch's rule: the extra rows must fall inside what one more stride or dilation step reaches.
    if (outPad[axis] >= std::max(win.stride[axis], win.dilation[axis])) {
      return call.error("output_padding {} must be smaller than the stride {} or the dilation {} in the {}",
                        outPad[axis], win.stride[axis], win.dilation[axis], kWindowAxisName[axis]);
    }
    __int128 size = static_cast<__int128>(x[2 + axis] - 1) * win.stride[axis] - win.padBegin[axis] - win.padEnd[axis] +
                    static_cast<__int128>(win.dilation[axis]) * (w[2 + axis] - 1) + outPad[axis] + 1;
    if (size < 1) return call.error("output {} {} is not positive", kWindowAxisName[axis], static_cast<int64_t>(size));
    if (size > kMaxElements) return call.error("output {} is too large (more than 2^40)", kWindowAxisName[axis]);
    result[2 + axis] = static_cast<int64_t>(size);
  }
  return single(TensorType{call.operand(0).dtype, result});
}

Expected<std::vector<TensorType>> inferLocallyConnected2d(const OpCall& call) {
  SMELT_CHECK_OK(checkOperands(call, 6));
  SMELT_TRY(Window win, readWindow(call));
  const Shape& x = call.operand(0).shape;
  const Shape& w = call.operand(1).shape;  // [OH, OW, O, C, KH, KW]
  if (w[3] != x[1]) return call.error("input has {} channels, weight expects {}", x[1], w[3]);
  SMELT_CHECK_OK(checkKernel(call, w[4], w[5]));
  SMELT_TRY(int64_t oh, convOutputSize(call, 0, x[2], w[4], win));
  SMELT_TRY(int64_t ow, convOutputSize(call, 1, x[3], w[5], win));
  if (w[0] != oh || w[1] != ow) {
    return call.error("weight has {}x{} output positions, the output is {}x{}", w[0], w[1], oh, ow);
  }
  SMELT_CHECK_OK(checkBias(call, {w[2], oh, ow}, "[O,OH,OW]"));
  return single(TensorType{call.operand(0).dtype, {x[0], w[2], oh, ow}});
}

/// conv2d_weight_grad(x [N, C, H, W], dy [N, O, OH, OW]) {kernel = [KH, KW]}: [O, C/groups, KH, KW],
/// where dy must be the shape conv2d of x with that kernel and window gives.
Expected<std::vector<TensorType>> inferConv2dWeightGrad(const OpCall& call) {
  SMELT_CHECK_OK(checkOperands(call, 4));
  SMELT_TRY(Window win, readWindow(call));
  SMELT_CHECK_OK(expectIntsInRange(call, "kernel", 2, 1));
  SMELT_CHECK_OK(expectStaticChannels(call, 0));
  SMELT_CHECK_OK(expectStaticChannels(call, 1));
  const Shape& x = call.operand(0).shape;
  const Shape& dy = call.operand(1).shape;
  const auto& kernel = call.getInts("kernel");
  SMELT_TRY(int64_t groups, readGroups(call, x[1]));
  if (dy[1] % groups != 0) return call.error("groups = {} does not divide the {} output channels of dy", groups, dy[1]);
  if (dy[0] != x[0]) {
    return call.error("dy has {} images, the input {}", extentToString(dy[0]), extentToString(x[0]));
  }
  SMELT_TRY(int64_t oh, convOutputSize(call, 0, x[2], kernel[0], win));
  SMELT_TRY(int64_t ow, convOutputSize(call, 1, x[3], kernel[1], win));
  if (dy[2] != oh || dy[3] != ow) {
    return call.error("dy is {}x{}, conv2d of the input with a {}x{} kernel gives {}x{}", dy[2], dy[3], kernel[0],
                      kernel[1], oh, ow);
  }
  return single(TensorType{call.operand(0).dtype, {dy[1], x[1] / groups, kernel[0], kernel[1]}});
}

/// Sizes read off the operand and result types (already verified by inference).
struct ConvSizes {
  int64_t n, c, h, w;  // input
  int64_t o, oh, ow;   // output
  int64_t kh, kw;      // kernel
  Window win;
};

Expected<ConvSizes> readSizes(const OpCall& call, int64_t kernelDim) {
  SMELT_TRY(Window win, readWindow(call));
  const Shape& x = call.operand(0).shape;
  const Shape& w = call.operand(1).shape;
  const Shape& y = call.results()[0].shape;
  return ConvSizes{x[0], x[1], x[2], x[3], y[1], y[2], y[3], w[kernelDim], w[kernelDim + 1], win};
}

/// Output planes filled with the bias (indexed by `biasIndex(o, position)`) or zeros.
template <typename BiasIndex>
std::vector<double> initOutput(const ConvSizes& s, std::span<const Tensor> in, BiasIndex biasIndex) {
  std::vector<double> y(static_cast<size_t>(s.n * s.o * s.oh * s.ow), 0.0);
  if (in.size() < 3) return y;
  std::vector<double> b = in[2].toDoubles();
  int64_t plane = s.oh * s.ow;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t o = 0; o < s.o; ++o)
      for (int64_t p = 0; p < plane; ++p) y[static_cast<size_t>((n * s.o + o) * plane + p)] = b[biasIndex(o, p)];
  return y;
}

Expected<std::vector<Tensor>> referenceConv2d(const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(ConvSizes s, readSizes(call, 2));
  const Window& win = s.win;
  int64_t groups = call.getInt("groups");
  int64_t cg = s.c / groups, og = s.o / groups;
  std::vector<double> x = in[0].toDoubles();
  std::vector<double> w = in[1].toDoubles();
  std::vector<double> y = initOutput(s, in, [&](int64_t o, int64_t) { return o; });
  // Loop order: one weight tap at a time over whole output planes, so the innermost loop is a strided
  // axpy with no bounds tests (validRange clips it). Fast enough to run resnet18 in tests.
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t o = 0; o < s.o; ++o) {
      int64_t g = o / og;
      double* yPlane = &y[static_cast<size_t>((n * s.o + o) * s.oh * s.ow)];
      for (int64_t ic = 0; ic < cg; ++ic) {
        const double* xPlane = &x[static_cast<size_t>((n * s.c + g * cg + ic) * s.h * s.w)];
        const double* wTaps = &w[static_cast<size_t>((o * cg + ic) * s.kh * s.kw)];
        for (int64_t kh = 0; kh < s.kh; ++kh) {
          int64_t offH = kh * win.dilation[0] - win.padBegin[0];
          auto [ohLo, ohHi] = validRange(offH, win.stride[0], s.h, s.oh);
          for (int64_t kw = 0; kw < s.kw; ++kw) {
            int64_t offW = kw * win.dilation[1] - win.padBegin[1];
            auto [owLo, owHi] = validRange(offW, win.stride[1], s.w, s.ow);
            double wv = wTaps[kh * s.kw + kw];
            for (int64_t oh = ohLo; oh < ohHi; ++oh) {
              double* yRow = yPlane + oh * s.ow;
              const double* xRow = xPlane + (oh * win.stride[0] + offH) * s.w + offW;
              for (int64_t ow = owLo; ow < owHi; ++ow) yRow[ow] += wv * xRow[ow * win.stride[1]];
            }
          }
        }
      }
    }
  }
  return std::vector<Tensor>{Tensor::fromDoubles(call.results()[0], y)};
}

Expected<std::vector<Tensor>> referenceConvTranspose2d(const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(ConvSizes s, readSizes(call, 2));
  const Window& win = s.win;
  int64_t groups = call.getInt("groups");
  int64_t cg = s.c / groups, og = s.o / groups;
  std::vector<double> x = in[0].toDoubles();
  std::vector<double> w = in[1].toDoubles();
  std::vector<double> y = initOutput(s, in, [&](int64_t o, int64_t) { return o; });
  // The transpose scatters: input pixel (ih, iw) adds w * x to output (ih*s - pad + k*d, ...).
  // Output rows past the last scattered one (output_padding) keep just the bias.
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t c = 0; c < s.c; ++c) {
      int64_t g = c / cg;
      const double* xPlane = &x[static_cast<size_t>((n * s.c + c) * s.h * s.w)];
      for (int64_t oc = 0; oc < og; ++oc) {
        double* yPlane = &y[static_cast<size_t>((n * s.o + g * og + oc) * s.oh * s.ow)];
        const double* wTaps = &w[static_cast<size_t>((c * og + oc) * s.kh * s.kw)];
        for (int64_t kh = 0; kh < s.kh; ++kh) {
          int64_t offH = kh * win.dilation[0] - win.padBegin[0];
          auto [ihLo, ihHi] = validRange(offH, win.stride[0], s.oh, s.h);
          for (int64_t kw = 0; kw < s.kw; ++kw) {
            int64_t offW = kw * win.dilation[1] - win.padBegin[1];
            auto [iwLo, iwHi] = validRange(offW, win.stride[1], s.ow, s.w);
            double wv = wTaps[kh * s.kw + kw];
            for (int64_t ih = ihLo; ih < ihHi; ++ih) {
              const double* xRow = xPlane + ih * s.w;
              double* yRow = yPlane + (ih * win.stride[0] + offH) * s.ow + offW;
              for (int64_t iw = iwLo; iw < iwHi; ++iw) yRow[iw * win.stride[1]] += wv * xRow[iw];
            }
          }
        }
      }
    }
  }
  return std::vector<Tensor>{Tensor::fromDoubles(call.results()[0], y)};
}

// dw[o, ic, kh, kw] = sum over n, oh, ow of dy[n, o, oh, ow] * x[n, g*C/G + ic, oh*s - p + kh*d, ...].
Expected<std::vector<Tensor>> referenceConv2dWeightGrad(const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(Window win, readWindow(call));
  const Shape& xs = call.operand(0).shape;
  const Shape& ds = call.operand(1).shape;
  const Shape& ws = call.results()[0].shape;
  int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3], o = ds[1], oh = ds[2], ow = ds[3], kh = ws[2], kw = ws[3];
  int64_t groups = call.getInt("groups"), cg = c / groups, og = o / groups;
  std::vector<double> x = in[0].toDoubles();
  std::vector<double> dy = in[1].toDoubles();
  std::vector<double> dw(static_cast<size_t>(o * cg * kh * kw), 0.0);
  for (int64_t oc = 0; oc < o; ++oc) {
    int64_t g = oc / og;
    for (int64_t ic = 0; ic < cg; ++ic) {
      for (int64_t i = 0; i < kh; ++i) {
        int64_t offH = i * win.dilation[0] - win.padBegin[0];
        auto [ohLo, ohHi] = validRange(offH, win.stride[0], h, oh);
        for (int64_t j = 0; j < kw; ++j) {
          int64_t offW = j * win.dilation[1] - win.padBegin[1];
          auto [owLo, owHi] = validRange(offW, win.stride[1], w, ow);
          double sum = 0.0;
          for (int64_t b = 0; b < n; ++b) {
            const double* dyPlane = &dy[static_cast<size_t>((b * o + oc) * oh * ow)];
            const double* xPlane = &x[static_cast<size_t>((b * c + g * cg + ic) * h * w)];
            for (int64_t r = ohLo; r < ohHi; ++r) {
              const double* xRow = xPlane + (r * win.stride[0] + offH) * w + offW;
              for (int64_t q = owLo; q < owHi; ++q) sum += dyPlane[r * ow + q] * xRow[q * win.stride[1]];
            }
          }
          dw[static_cast<size_t>(((oc * cg + ic) * kh + i) * kw + j)] = sum;
        }
      }
    }
  }
  return std::vector<Tensor>{Tensor::fromDoubles(call.results()[0], dw)};
}

Expected<std::vector<Tensor>> referenceLocallyConnected2d(const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(ConvSizes s, readSizes(call, 4));
  const Window& win = s.win;
  std::vector<double> x = in[0].toDoubles();
  std::vector<double> w = in[1].toDoubles();
  int64_t plane = s.oh * s.ow;
  // The bias is [O, OH, OW]: one value per output channel and position.
  std::vector<double> y = initOutput(s, in, [&](int64_t o, int64_t p) { return o * plane + p; });
  int64_t taps = s.c * s.kh * s.kw;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t oh = 0; oh < s.oh; ++oh) {
      for (int64_t ow = 0; ow < s.ow; ++ow) {
        for (int64_t o = 0; o < s.o; ++o) {
          // w[oh, ow, o, :, :, :] holds this position's own kernel.
          const double* wk = &w[static_cast<size_t>(((oh * s.ow + ow) * s.o + o) * taps)];
          double sum = 0.0;
          for (int64_t c = 0; c < s.c; ++c) {
            const double* xPlane = &x[static_cast<size_t>((n * s.c + c) * s.h * s.w)];
            for (int64_t kh = 0; kh < s.kh; ++kh) {
              int64_t ih = oh * win.stride[0] - win.padBegin[0] + kh * win.dilation[0];
              if (ih < 0 || ih >= s.h) continue;
              for (int64_t kw = 0; kw < s.kw; ++kw) {
                int64_t iw = ow * win.stride[1] - win.padBegin[1] + kw * win.dilation[1];
                if (iw < 0 || iw >= s.w) continue;
                sum += wk[(c * s.kh + kh) * s.kw + kw] * xPlane[ih * s.w + iw];
              }
            }
          }
          y[static_cast<size_t>((n * s.o + o) * plane + oh * s.ow + ow)] += sum;
        }
      }
    }
  }
  return std::vector<Tensor>{Tensor::fromDoubles(call.results()[0], y)};
}

// --- kernel lowerings (ir/lowering.h): one dot product per output element -------------------------
// Both sum, in the reference's order (input channel, then kernel row and column), the products of the
// taps that land inside the image, starting from the bias (f32 for f16/bf16; the reference: double).
// A tap outside reads a safe element and leaves the sum unchanged, so no read leaves the buffers.

/// The bias of output channel `o` in the accumulation type, or 0 without one.
KValue biasInit(LoweringContext& ctx, KValue o, DType acc) {
  if (ctx.call().numOperands() < 3) return ctx.emit().zero(acc);
  KValue at[1] = {o};
  return ctx.emit().cast(ctx.operand(2, at), acc);
}

// conv2d: y[n, o, i, j] = b[o] + sum over c, kh, kw of x[n, g*C/G + c, i*s - p + kh*d, ...] * w[o, c, kh, kw]
// with g = o / (O/G).
Expected<std::vector<KValue>> lowerConv2d(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  SMELT_TRY(ConvSizes s, readSizes(ctx.call(), 2));
  const Window& win = s.win;
  int64_t groups = ctx.call().getInt("groups");
  int64_t cg = s.c / groups, og = s.o / groups;
  DType acc = accumulatorType(ctx.call().operand(0).dtype);
  std::span<const KValue> out = ctx.index();
  KValue n = out[0], o = out[1];
  KValue firstChannel = e.mul(e.div(o, e.index(og)), e.index(cg));
  KValue origin[2];
  for (int a = 0; a < 2; ++a) origin[a] = e.sub(e.mul(out[2 + a], e.index(win.stride[a])), e.index(win.padBegin[a]));
  // An image with no pixels (H or W of 0, padded into an output) has no tap to read.
  if (ctx.call().operand(0).numel() == 0) return std::vector<KValue>{biasInit(ctx, o, acc)};
  int64_t extents[3] = {cg, s.kh, s.kw};
  return loopBox(e, extents, {biasInit(ctx, o, acc)}, [&](std::span<const KValue> k, std::span<const KValue> sum) {
    GuardedIndex h = guardIndex(e, e.add(origin[0], e.mul(k[1], e.index(win.dilation[0]))), s.h);
    GuardedIndex v = guardIndex(e, e.add(origin[1], e.mul(k[2], e.index(win.dilation[1]))), s.w);
    KValue xAt[4] = {n, e.add(firstChannel, k[0]), h.index, v.index};
    KValue wAt[4] = {o, k[0], k[1], k[2]};
    KValue product = e.mul(e.cast(ctx.operand(0, xAt), acc), e.cast(ctx.operand(1, wAt), acc));
    return std::vector<KValue>{e.select(e.logicalAnd(h.inside, v.inside), e.add(sum[0], product), sum[0])};
  });
}

// conv_transpose2d, gathered instead of scattered: output row r receives tap kh of input row ih when
// r = ih*s - p + kh*d, so ih = (r + p - kh*d) / s where that divides exactly and lands in [0, H).
// Rows no tap reaches (output_padding) keep the bias. y[n, g*O/G + oc, r, q] = b + sum over the input
// channels c of group g, kh, kw of x[n, c, ih, iw] * w[c, oc, kh, kw].
Expected<std::vector<KValue>> lowerConvTranspose2d(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  SMELT_TRY(ConvSizes s, readSizes(ctx.call(), 2));
  const Window& win = s.win;
  int64_t groups = ctx.call().getInt("groups");
  int64_t cg = s.c / groups, og = s.o / groups;
  DType acc = accumulatorType(ctx.call().operand(0).dtype);
  std::span<const KValue> out = ctx.index();
  KValue n = out[0], o = out[1];
  KValue firstChannel = e.mul(e.div(o, e.index(og)), e.index(cg));
  KValue oc = e.rem(o, e.index(og));
  int64_t size[2] = {s.h, s.w};
  // The input row (column) that tap k along `axis` brings to this output element, guarded.
  auto source = [&](int axis, KValue k) {
    KValue t = e.sub(e.add(out[2 + axis], e.index(win.padBegin[axis])), e.mul(k, e.index(win.dilation[axis])));
    KValue stride = e.index(win.stride[axis]);
    GuardedIndex g = guardIndex(e, e.div(t, stride), size[axis]);
    KValue exact = e.logicalAnd(e.ge(t, e.index(0)), e.binary(KBinary::Eq, e.rem(t, stride), e.index(0)));
    return GuardedIndex{g.index, e.logicalAnd(exact, g.inside)};
  };
  // An image with no pixels (H or W of 0, padded into an output) has no tap to read.
  if (ctx.call().operand(0).numel() == 0) return std::vector<KValue>{biasInit(ctx, o, acc)};
  int64_t extents[3] = {cg, s.kh, s.kw};
  return loopBox(e, extents, {biasInit(ctx, o, acc)}, [&](std::span<const KValue> k, std::span<const KValue> sum) {
    GuardedIndex h = source(0, k[1]), v = source(1, k[2]);
    KValue c = e.add(firstChannel, k[0]);
    KValue xAt[4] = {n, c, h.index, v.index};
    KValue wAt[4] = {c, oc, k[1], k[2]};
    KValue product = e.mul(e.cast(ctx.operand(0, xAt), acc), e.cast(ctx.operand(1, wAt), acc));
    return std::vector<KValue>{e.select(e.logicalAnd(h.inside, v.inside), e.add(sum[0], product), sum[0])};
  });
}

// conv2d_weight_grad: one dot product per weight element over the images and output positions, in the
// reference's order (image, row, column); taps outside the input add nothing.
Expected<std::vector<KValue>> lowerConv2dWeightGrad(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  SMELT_TRY(Window win, readWindow(ctx.call()));
  const Shape& xs = ctx.call().operand(0).shape;
  const Shape& ds = ctx.call().operand(1).shape;
  int64_t groups = ctx.call().getInt("groups");
  int64_t cg = xs[1] / groups, og = ds[1] / groups;
  DType acc = accumulatorType(ctx.call().operand(0).dtype);
  std::span<const KValue> out = ctx.index();  // (o, ic, kh, kw)
  KValue o = out[0];
  KValue channel = e.add(e.mul(e.div(o, e.index(og)), e.index(cg)), out[1]);
  KValue offset[2];
  for (int a = 0; a < 2; ++a) offset[a] = e.sub(e.mul(out[2 + a], e.index(win.dilation[a])), e.index(win.padBegin[a]));
  if (ctx.call().operand(1).numel() == 0 || ctx.call().operand(0).numel() == 0) return std::vector<KValue>{e.zero(acc)};
  int64_t extents[3] = {ds[0], ds[2], ds[3]};
  return loopBox(e, extents, {e.zero(acc)}, [&](std::span<const KValue> k, std::span<const KValue> sum) {
    GuardedIndex h = guardIndex(e, e.add(e.mul(k[1], e.index(win.stride[0])), offset[0]), xs[2]);
    GuardedIndex v = guardIndex(e, e.add(e.mul(k[2], e.index(win.stride[1])), offset[1]), xs[3]);
    KValue xAt[4] = {k[0], channel, h.index, v.index};
    KValue dyAt[4] = {k[0], o, k[1], k[2]};
    KValue product = e.mul(e.cast(ctx.operand(1, dyAt), acc), e.cast(ctx.operand(0, xAt), acc));
    return std::vector<KValue>{e.select(e.logicalAnd(h.inside, v.inside), e.add(sum[0], product), sum[0])};
  });
}

std::vector<AttrSpec> windowAttrs() {
  return {{"stride", AttrKind::Ints, std::vector<int64_t>{1, 1}},
          {"padding", AttrKind::Ints, std::vector<int64_t>{0, 0, 0, 0}},
          {"dilation", AttrKind::Ints, std::vector<int64_t>{1, 1}}};
}

// ---- Gradients ----------------------------------------------------------------------------------
// Written with conv2d and conv_transpose2d themselves (each one's backward uses the other), plus
// reshape/transpose/slice/reduce_sum, so gradients of gradients come from the same rules.

using Ints = std::vector<int64_t>;

/// The spatial window attributes of a forward node, as rules read them.
struct WindowAttrs {
  Ints stride, padding, dilation;
  int64_t groups = 1;
};

WindowAttrs readWindowAttrs(const GradientContext& c, bool hasGroups) {
  return {c.getInts("stride"), c.getInts("padding"), c.getInts("dilation"), hasGroups ? c.getInt("groups") : 1};
}

/// conv2d(in, kernel) with the given stride, dilation, top/left padding and groups, the bottom/right
/// padding chosen as the least that yields at least `want` output rows and columns, then cropped to
/// exactly `want`: the correlation of `in` with `kernel` at offsets [0, want) of every axis.
Value* convCovering(Builder& b, Value* in, Value* kernel, const Ints& stride, const Ints& dilation,
                    const Ints& padBegin, int64_t groups, const Ints& want) {
  if (!in || !kernel) return nullptr;
  Ints padEnd(2), got(2);
  Window2d win;
  for (int a = 0; a < 2; ++a) {
    int64_t size = in->shape()[2 + a];
    win.kernel[a] = kernel->shape()[2 + a];
    win.stride[a] = stride[a];
    win.dilation[a] = dilation[a];
    win.padBegin[a] = padBegin[a];
    padEnd[a] = std::max<int64_t>(0, stride[a] * (want[a] - 1) + static_cast<int64_t>(win.span(a)) - size - padBegin[a]);
    win.padEnd[a] = padEnd[a];
    got[a] = win.outputSize(a, size).value_or(0);
  }
  Value* out = b.op("conv2d", {in, kernel},
                    {{"stride", stride},
                     {"dilation", dilation},
                     {"padding", Ints{padBegin[0], padBegin[1], padEnd[0], padEnd[1]}},
                     {"groups", groups}});
  if (got == want) return out;
  return b.op("slice", {out}, {{"starts", Ints{0, 0}}, {"ends", want}, {"axes", Ints{2, 3}}});
}

/// [N, G*M, H, W] -> [M, G*N, H, W] (channel g*N + n of the result is channel g*M + m of image n):
/// the batch becomes the channels, group by group, for the weight-gradient correlations.
Value* groupsToBatch(Builder& b, Value* v, int64_t groups) {
  if (!v) return nullptr;
  const Shape& s = v->shape();
  int64_t n = s[0], m = s[1] / groups;
  if (groups == 1) return b.transpose(v, {1, 0, 2, 3});
  Value* split = b.reshape(v, {n, groups, m, s[2], s[3]});
  return b.reshape(b.transpose(split, {2, 1, 0, 3, 4}), {m, groups * n, s[2], s[3]});
}

/// The bias gradient of a conv: dy summed over batch and positions.
Value* biasGrad(Builder& b, const GradientContext& c) {
  return c.numOperands() < 3 ? nullptr : b.reduceSum(c.dy(), {0, 2, 3}, false);
}

/// dw[o, i, kh, kw] = sum over n, oh, ow of dy[n, o, oh, ow] * x[n, g*C/G + i, oh*s - p + kh*d, ...].
Value* weightGrad(Builder& b, Value* x, Value* dy, const WindowAttrs& win, int64_t kh, int64_t kw) {
  if (!x || !dy) return nullptr;
  return b.op("conv2d_weight_grad", {x, dy},
              {{"stride", win.stride},
               {"padding", win.padding},
               {"dilation", win.dilation},
               {"groups", win.groups},
               {"kernel", Ints{kh, kw}}});
}

/// The output_padding that makes conv_transpose2d of an output of `ys` restore the input rows of `xs`
/// past the last window.
/// Over a symbolic image it is a symbolic remainder (-2*(H+1)/2+H+1 for a stride of 2), bound with the graph.
Expected<Ints> restoringOutputPadding(const Shape& xs, const Shape& ys, const WindowAttrs& win, int64_t kh,
                                      int64_t kw) {
  Ints outPad(2);
  int64_t k[2] = {kh, kw};
  for (int a = 0; a < 2; ++a) {
    const int64_t shift = win.padding[a] + win.padding[2 + a] - win.dilation[a] * (k[a] - 1) - 1 + win.stride[a];
    SMELT_TRY(int64_t strided, multiplyExtents(ys[2 + a], win.stride[a]));
    SMELT_TRY(int64_t padded, addExtents(xs[2 + a], shift));
    SMELT_TRY(outPad[a], subtractExtents(padded, strided));
  }
  return outPad;
}

/// The weight gradient is bilinear in x and dy: <ddw, dw(x, dy)> = <dy, conv2d(x, ddw)>, so its
/// gradients are conv2d's: conv_transpose2d(dy, ddw) for x and conv2d(x, ddw) for dy.
std::vector<Value*> gradConv2dWeightGrad(Builder& b, const GradientContext& c) {
  WindowAttrs win = readWindowAttrs(c, true);
  Value* x = c.x(0);
  Value* dy = c.x(1);
  Value* ddw = c.dy();
  const Ints& kernel = c.getInts("kernel");
  AttrMap window{{"stride", win.stride}, {"padding", win.padding}, {"dilation", win.dilation}, {"groups", win.groups}};
  AttrMap transposed = window;
  Expected<Ints> outPad = restoringOutputPadding(x->shape(), dy->shape(), win, kernel[0], kernel[1]);
  if (!outPad.ok()) return {b.fail(outPad.error()), nullptr};
  transposed["output_padding"] = *outPad;
  return {b.op("conv_transpose2d", {dy, ddw}, transposed), b.op("conv2d", {x, ddw}, window)};
}

std::vector<Value*> gradConv2d(Builder& b, const GradientContext& c) {
  WindowAttrs win = readWindowAttrs(c, true);
  Value* x = c.x(0);
  Value* w = c.x(1);
  Value* dy = c.dy();
  const Shape& xs = x->shape();
  const Shape& ws = w->shape();
  const Shape& ys = c.y()->shape();
  // dx: the transpose with the same window; output_padding restores the rows past the last window.
  Expected<Ints> outPad = restoringOutputPadding(xs, ys, win, ws[2], ws[3]);
  if (!outPad.ok()) return {b.fail(outPad.error())};
  Value* dx = b.op("conv_transpose2d", {dy, w},
                   {{"stride", win.stride},
                    {"padding", win.padding},
                    {"dilation", win.dilation},
                    {"groups", win.groups},
                    {"output_padding", *outPad}});
  Value* dw = weightGrad(b, x, dy, win, ws[2], ws[3]);
  if (c.numOperands() < 3) return {dx, dw};
  return {dx, dw, biasGrad(b, c)};
}

std::vector<Value*> gradConvTranspose2d(Builder& b, const GradientContext& c) {
  WindowAttrs win = readWindowAttrs(c, true);
  Value* x = c.x(0);
  Value* w = c.x(1);
  Value* dy = c.dy();
  const Shape& xs = x->shape();
  const Shape& ws = w->shape();
  Ints padBegin = {win.padding[0], win.padding[1]};
  // dx[n, c, ih, iw] = sum dy[n, g*O/G + oc, ih*s - p + kh*d, ...] * w[c, oc, kh, kw]: conv2d of dy
  // with the same weight (read as [C, O/G, KH, KW]) and window, over exactly H x W positions.
  Value* dx = convCovering(b, dy, w, win.stride, win.dilation, padBegin, win.groups, {xs[2], xs[3]});
  // dw[c, oc, kh, kw] = sum_{n, ih, iw} x[n, c, ih, iw] * dy[n, g*O/G + oc, ih*s - p + kh*d, ...]: a conv
  // of dy (images = output channels within a group) with x (kernels = input channels).
  Value* in = groupsToBatch(b, dy, win.groups);     // [O/G, G*N, OH, OW]
  Value* kernel = b.transpose(x, {1, 0, 2, 3});      // [C, N, H, W]
  Value* dwT = convCovering(b, in, kernel, win.dilation, win.stride, padBegin, win.groups, {ws[2], ws[3]});
  Value* dw = b.transpose(dwT, {1, 0, 2, 3});        // [C, O/G, KH, KW]
  if (c.numOperands() < 3) return {dx, dw};
  return {dx, dw, biasGrad(b, c)};
}

/// locally_connected2d as primitives: the KH*KW strided taps of the zero-padded input stacked into
/// patches [N, OH, OW, 1, C*KH*KW], times the weight [OH, OW, O, C*KH*KW], summed over the last axis.
std::vector<Value*> decomposeLocallyConnected2d(Builder& b, const Node& node) {
  GradientContext attrs(node, {});
  WindowAttrs win = readWindowAttrs(attrs, false);
  Value* x = node.operand(0);
  Value* w = node.operand(1);
  const Shape& xs = x->shape();
  const Shape& ws = w->shape();  // [OH, OW, O, C, KH, KW]
  int64_t n = xs[0], ch = xs[1], oh = ws[0], ow = ws[1], o = ws[2], kh = ws[4], kw = ws[5];
  Value* padded = b.op("pad", {x}, {{"pads", Ints{0, 0, win.padding[0], win.padding[1], 0, 0, win.padding[2], win.padding[3]}}});
  Value* stacked = stackWindowTaps(b, padded, kh, kw, win.stride.data(), win.dilation.data(), oh, ow);  // [N, C, KH*KW, OH, OW]
  Value* patches = b.reshape(b.transpose(stacked, {0, 3, 4, 1, 2}), {n, oh, ow, 1, ch * kh * kw});
  Value* kernels = b.reshape(w, {oh, ow, o, ch * kh * kw});
  Value* sums = b.reduceSum(b.mul(patches, kernels), {4}, false);  // [N, OH, OW, O]
  Value* y = b.transpose(sums, {0, 3, 1, 2});
  if (node.numOperands() == 3) y = b.add(y, node.operand(2));
  return {y};
}

}  // namespace

void registerConvOps(OpRegistry& registry) {
  std::vector<AttrSpec> convAttrs = windowAttrs();
  convAttrs.push_back({"groups", AttrKind::Int, int64_t{1}});
  registry.add(OpDef{
      .name = "conv2d",
      .summary = "2-D cross-correlation of NCHW images with OIHW weights, optional bias; grouped, strided, "
                 "padded, dilated.",
      .operands = {{"input"}, {"weight"}, {"bias", Arity::Optional}},
      .attrs = convAttrs,
      .fusion = FusionKind::Opaque,
      .product = ProductFacet{.kind = ProductFacet::Kind::Conv, .addend = 2},
      .dtypes = dtypes::kFloat,
      .infer = inferConv2d,
      .symbolicDims = true,
      .reference = referenceConv2d,
      .example = R"(graph @t(%x: $T[2,4,5,5], %w: $T[6,2,3,3], %b: $T[6], %dw: $T[4,1,3,3]) {
  %0 = conv2d(%x, %w, %b) {groups = 2, padding = [1, 1, 1, 1], stride = [2, 2]} : $T[2,6,3,3]
  %1 = conv2d(%x, %dw) {dilation = [2, 2], groups = 4, padding = [2, 1, 2, 0]} : $T[2,4,5,2]
  %2 = conv2d(%x, %w) {dilation = [1, 2], groups = 2, padding = [1, 0, 0, 1], stride = [2, 2]} : $T[2,6,2,1]
  return r = %0, d = %1, s = %2
})",
      .gradient = gradConv2d,
      .lower = lowerConv2d,
      // 2 per multiply-add: each output element reads C/groups * KH * KW taps (weight [O, C/g, KH, KW]).
      .flops = [](const OpCall& c) {
        const Shape& w = c.operand(1).shape;
        return 2 * c.results()[0].numel() * w[1] * w[2] * w[3];
      },
  });

  std::vector<AttrSpec> transposeAttrs = convAttrs;
  transposeAttrs.push_back({"output_padding", AttrKind::Ints, std::vector<int64_t>{0, 0}});
  registry.add(OpDef{
      .name = "conv_transpose2d",
      .summary = "The transpose (gradient) of conv2d: weight [C, O/groups, KH, KW], optional bias [O].",
      .operands = {{"input"}, {"weight"}, {"bias", Arity::Optional}},
      .attrs = transposeAttrs,
      .fusion = FusionKind::Opaque,
      .product = ProductFacet{.kind = ProductFacet::Kind::ConvTranspose, .addend = 2},
      .dtypes = dtypes::kFloat,
      .infer = inferConvTranspose2d,
      .symbolicDims = true,
      .reference = referenceConvTranspose2d,
      .example = R"(graph @t(%x: $T[1,4,3,3], %w: $T[4,3,3,2], %b: $T[6]) {
  %0 = conv_transpose2d(%x, %w, %b) {groups = 2, output_padding = [1, 0], padding = [1, 0, 1, 1], stride = [2, 2]} : $T[1,6,6,5]
  %1 = conv_transpose2d(%x, %w) {dilation = [2, 1], groups = 2, output_padding = [1, 0]} : $T[1,6,8,4]
  %2 = conv_transpose2d(%x, %w, %b) {dilation = [2, 2], groups = 2, output_padding = [1, 1], padding = [0, 0, 2, 1]} : $T[1,6,6,5]
  return r = %0, d = %1, e = %2
})",
      .gradient = gradConvTranspose2d,
      .lower = lowerConvTranspose2d,
      // 2 per multiply-add: each input element scatters into O/groups * KH * KW outputs.
      .flops = [](const OpCall& c) {
        const Shape& w = c.operand(1).shape;
        return 2 * c.operand(0).numel() * w[1] * w[2] * w[3];
      },
  });

  std::vector<AttrSpec> weightGradAttrs = convAttrs;
  weightGradAttrs.push_back({"kernel", AttrKind::Ints, std::vector<int64_t>{1, 1}});
  registry.add(OpDef{
      .name = "conv2d_weight_grad",
      .summary = "conv2d's gradient with respect to its weight: [O, C/groups, KH, KW] from the input [N, C, H, W] "
                 "and the output's gradient dy [N, O, OH, OW], for the same window.",
      .operands = {{"input"}, {"dy"}},
      .attrs = weightGradAttrs,
      .fusion = FusionKind::Opaque,
      .product = ProductFacet{.kind = ProductFacet::Kind::ConvWeightGrad, .addend = -1},
      .dtypes = dtypes::kFloat,
      .infer = inferConv2dWeightGrad,
      .symbolicDims = true,
      .reference = referenceConv2dWeightGrad,
      .example = R"(graph @t(%x: $T[2,4,5,5], %dy: $T[2,6,3,3], %dd: $T[2,4,5,2]) {
  %0 = conv2d_weight_grad(%x, %dy) {groups = 2, kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : $T[6,2,3,3]
  %1 = conv2d_weight_grad(%x, %dd) {dilation = [2, 2], groups = 4, kernel = [3, 3], padding = [2, 1, 2, 0]} : $T[4,1,3,3]
  return s = %0, d = %1
})",
      .gradient = gradConv2dWeightGrad,
      .lower = lowerConv2dWeightGrad,
      // 2 per multiply-add: each dy element meets C/groups * KH * KW taps.
      .flops = [](const OpCall& c) {
        const Shape& w = c.results()[0].shape;
        return 2 * c.operand(1).numel() * w[1] * w[2] * w[3];
      },
  });

  registry.add(OpDef{
      .name = "locally_connected2d",
      .summary = "conv2d with a separate kernel at every output position: weight [OH, OW, O, C, KH, KW], "
                 "optional bias [O, OH, OW].",
      .operands = {{"input"}, {"weight"}, {"bias", Arity::Optional}},
      .attrs = windowAttrs(),
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kFloat,
      .infer = inferLocallyConnected2d,
      .reference = referenceLocallyConnected2d,
      .example = R"(graph @t(%x: $T[2,3,4,4], %w: $T[2,2,5,3,3,3], %b: $T[5,2,2], %v: $T[1,3,5,3,3,3]) {
  %0 = locally_connected2d(%x, %w, %b) {padding = [1, 1, 1, 1], stride = [2, 2]} : $T[2,5,2,2]
  %1 = locally_connected2d(%x, %v) {dilation = [2, 1], padding = [0, 1, 1, 0]} : $T[2,5,1,3]
  return r = %0, d = %1
})",
      .decompose = decomposeLocallyConnected2d,
      // 2 per multiply-add: every weight element [OH, OW, O, C, KH, KW] is used once per image.
      .flops = [](const OpCall& c) { return 2 * c.operand(0).shape[0] * c.operand(1).numel(); },
  });
}

}  // namespace smelt

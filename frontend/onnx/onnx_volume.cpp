// 3-D window ops as 2-D ops over the depth slices (onnx_volume.h).
#include "frontend/onnx/onnx_volume.h"

#include <cmath>
#include <limits>

namespace smelt::onnximport {

namespace {

using Ints = std::vector<int64_t>;

// [N, C, D, H, W] -> [N * D, C, H, W] (the depth slices as a batch).
Expected<Value*> slicesAsBatch(NodeContext& n, Value* x) {
  const Shape& s = x->shape();
  SMELT_TRY(Value * t, n.emit("transpose", {x}, {{"perm", Ints{0, 2, 1, 3, 4}}}));
  return n.emit("reshape", {t}, {{"shape", Ints{s[0] * s[2], s[1], s[3], s[4]}}});
}

// [N * D, C, H, W] -> [N, D, C, H, W].
Expected<Value*> batchAsSlices(NodeContext& n, Value* y, int64_t batch, int64_t depth) {
  const Shape& s = y->shape();
  return n.emit("reshape", {y}, {{"shape", Ints{batch, depth, s[1], s[2], s[3]}}});
}

// [N, D, C, H, W] -> [N, C, D, H, W].
Expected<Value*> depthBack(NodeContext& n, Value* y) {
  return n.emit("transpose", {y}, {{"perm", Ints{0, 2, 1, 3, 4}}});
}

// Taps along axis 1 of [N, D, ...]: `count` positions from `start` in steps of `step`.
Expected<Value*> depthTaps(NodeContext& n, Value* x, int64_t start, int64_t count, int64_t step) {
  return n.emit("slice", {x},
                {{"starts", Ints{start}},
                 {"ends", Ints{start + (count - 1) * step + 1}},
                 {"axes", Ints{1}},
                 {"steps", Ints{step}}});
}

// Pads axis 1 of a rank-5 value by (before, after) with `value`.
Expected<Value*> padDepth(NodeContext& n, Value* x, int64_t before, int64_t after, double value = 0.0) {
  if (before == 0 && after == 0) return x;
  return n.emit("pad", {x}, {{"pads", Ints{0, before, 0, 0, 0, 0, after, 0, 0, 0}}, {"value", value}});
}

Status requireStaticVolume(const Value* x, const char* what) {
  const Shape& s = x->shape();
  if (s.size() != 5 || !x->type().isStatic()) {
    return makeError("3-D {} needs a static [N, C, D, H, W] input, got {}", what, x->type().toString());
  }
  return {};
}

// The 2-D op attributes of the height and width part of a 3-D window.
AttrMap planeAttrs(const Window& w, bool withDilation = true) {
  AttrMap a{{"stride", Ints{w.strides[1], w.strides[2]}},
            {"padding", Ints{w.pads[1], w.pads[2], w.pads[4], w.pads[5]}}};
  if (withDilation) a["dilation"] = Ints{w.dilations[1], w.dilations[2]};
  return a;
}

}  // namespace

Expected<Value*> conv3d(NodeContext& n, Value* x, Value* w, Value* bias, const Window& win, int64_t groups) {
  SMELT_CHECK_OK(requireStaticVolume(x, "convolution"));
  if (!w->type().isStatic()) return makeError("3-D convolution needs a static weight, got {}", w->type().toString());
  int64_t batch = x->shape()[0], kd = win.kernel[0], sd = win.strides[0], dd = win.dilations[0];
  int64_t padded = x->shape()[2] + win.pads[0] + win.pads[3];
  int64_t depth = (padded - dd * (kd - 1) - 1) / sd + 1;
  if (depth <= 0) return makeError("the kernel's depth extent exceeds the padded input's {}", padded);
  SMELT_TRY(Value * moved, n.emit("transpose", {x}, {{"perm", Ints{0, 2, 1, 3, 4}}}));  // [N, D, C, H, W]
  SMELT_TRY(moved, padDepth(n, moved, win.pads[0], win.pads[3]));
  AttrMap attrs = planeAttrs(win);
  attrs["groups"] = groups;
  Value* sum = nullptr;
  for (int64_t i = 0; i < kd; ++i) {
    SMELT_TRY(Value * taps, depthTaps(n, moved, i * dd, depth, sd));  // [N, depth, C, H, W]
    const Shape& t = taps->shape();
    SMELT_TRY(Value * flat, n.emit("reshape", {taps}, {{"shape", Ints{batch * depth, t[2], t[3], t[4]}}}));
    SMELT_TRY(Value * wi, n.emit("gather", {w, n.scalar(DType::i64, static_cast<double>(i))}, {{"axis", int64_t{2}}}));
    std::vector<Value*> operands{flat, wi};
    if (bias && i == 0) operands.push_back(bias);
    SMELT_TRY(Value * y, n.emit("conv2d", operands, attrs));
    if (sum) {
      SMELT_TRY(sum, n.emit("add", {sum, y}));
    } else {
      sum = y;
    }
  }
  SMELT_TRY(Value * slices, batchAsSlices(n, sum, batch, depth));
  return depthBack(n, slices);
}

Expected<Value*> convTranspose3d(NodeContext& n, Value* x, Value* w, Value* bias, const Window& win, int64_t groups,
                                 const std::vector<int64_t>& outputPadding) {
  SMELT_CHECK_OK(requireStaticVolume(x, "transposed convolution"));
  if (!w->type().isStatic()) return makeError("3-D convolution needs a static weight, got {}", w->type().toString());
  int64_t batch = x->shape()[0], in = x->shape()[2], kd = win.kernel[0], sd = win.strides[0], dd = win.dilations[0];
  // Every input slice d adds its tap-i plane at depth d * sd + i * dd of the uncropped output.
  int64_t full = sd * (in - 1) + (kd - 1) * dd + 1 + outputPadding[0];
  int64_t depth = full - win.pads[0] - win.pads[3];
  if (depth <= 0) return makeError("the padding {} + {} leaves no output depth", win.pads[0], win.pads[3]);
  SMELT_TRY(Value * flat, slicesAsBatch(n, x));
  AttrMap attrs = planeAttrs(win);
  attrs["groups"] = groups;
  attrs["output_padding"] = Ints{outputPadding[1], outputPadding[2]};
  Value* sum = nullptr;
  for (int64_t i = 0; i < kd; ++i) {
    SMELT_TRY(Value * wi, n.emit("gather", {w, n.scalar(DType::i64, static_cast<double>(i))}, {{"axis", int64_t{2}}}));
    SMELT_TRY(Value * y, n.emit("conv_transpose2d", {flat, wi}, attrs));
    SMELT_TRY(Value * planes, batchAsSlices(n, y, batch, in));  // [N, in, O, H', W']
    if (sd > 1) {  // spread the slices sd apart: each followed by sd - 1 zero slices
      const Shape& p = planes->shape();
      SMELT_TRY(Value * u, n.emit("unsqueeze", {planes}, {{"axes", Ints{2}}}));
      SMELT_TRY(u, n.emit("pad", {u}, {{"pads", Ints{0, 0, 0, 0, 0, 0, 0, 0, sd - 1, 0, 0, 0}}}));
      SMELT_TRY(u, n.emit("reshape", {u}, {{"shape", Ints{p[0], p[1] * sd, p[2], p[3], p[4]}}}));
      SMELT_TRY(planes,
                n.emit("slice", {u}, {{"starts", Ints{0}}, {"ends", Ints{(in - 1) * sd + 1}}, {"axes", Ints{1}}}));
    }
    int64_t before = i * dd, after = full - before - ((in - 1) * sd + 1);
    SMELT_TRY(planes, padDepth(n, planes, before, after));
    if (sum) {
      SMELT_TRY(sum, n.emit("add", {sum, planes}));
    } else {
      sum = planes;
    }
  }
  SMELT_TRY(
      Value * cropped,
      n.emit("slice", {sum}, {{"starts", Ints{win.pads[0]}}, {"ends", Ints{win.pads[0] + depth}}, {"axes", Ints{1}}}));
  SMELT_TRY(Value * y, depthBack(n, cropped));
  if (bias) {
    SMELT_TRY(Value * b, n.emit("reshape", {bias}, {{"shape", Ints{1, -1, 1, 1, 1}}}));
    SMELT_TRY(y, n.emit("add", {y, b}));
  }
  return y;
}

Expected<Value*> pool3d(NodeContext& n, Value* x, const Window& win, bool isMax, bool ceilMode, bool countIncludePad) {
  SMELT_CHECK_OK(requireStaticVolume(x, "pooling"));
  int64_t batch = x->shape()[0], in = x->shape()[2], kd = win.kernel[0], sd = win.strides[0], dd = win.dilations[0];
  int64_t before = win.pads[0], after = win.pads[3];
  if (!isMax && dd != 1) return makeError("dilated AveragePool is not supported");
  // Height and width first, as 2-D pooling of every depth slice: a window's count factorizes by axis, so the
  // mean over depth of the planes' means is the 3-D mean.
  SMELT_TRY(Value * flat, slicesAsBatch(n, x));
  AttrMap attrs = planeAttrs(win, isMax);
  attrs["kernel"] = Ints{win.kernel[1], win.kernel[2]};
  attrs["ceil_mode"] = int64_t{ceilMode ? 1 : 0};
  if (!isMax) attrs["count_include_pad"] = int64_t{countIncludePad ? 1 : 0};
  SMELT_TRY(Value * planes, n.emit(isMax ? "max_pool2d" : "avg_pool2d", {flat}, attrs));
  SMELT_TRY(planes, batchAsSlices(n, planes, batch, in));  // [N, D, C, H', W']
  // Then depth: the output count as the 2-D ops compute it (ceil mode drops a window starting in the end padding).
  int64_t span = in + before + after - dd * (kd - 1) - 1;
  int64_t depth = (ceilMode ? (span + sd - 1) / sd : span / sd) + 1;
  if (ceilMode && (depth - 1) * sd >= in + before) --depth;
  if (depth <= 0) return makeError("the kernel's depth extent exceeds the padded input's {}", in + before + after);
  int64_t overhang = std::max<int64_t>(0, (depth - 1) * sd + dd * (kd - 1) + 1 - (in + before + after));
  double fill = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
  SMELT_TRY(Value * padded, padDepth(n, planes, before, after + overhang, fill));
  Value* acc = nullptr;
  for (int64_t i = 0; i < kd; ++i) {
    SMELT_TRY(Value * taps, depthTaps(n, padded, i * dd, depth, sd));
    if (acc) {
      SMELT_TRY(acc, n.emit(isMax ? "max" : "add", {acc, taps}));
    } else {
      acc = taps;
    }
  }
  if (!isMax) {
    // Taps per output depth inside the input (or inside the padded input, with count_include_pad).
    Tensor counts(TensorType{x->dtype(), {1, depth, 1, 1, 1}});
    for (int64_t o = 0; o < depth; ++o) {
      int64_t c = 0;
      for (int64_t i = 0; i < kd; ++i) {
        int64_t p = o * sd + i - before;  // position in the unpadded input
        c += countIncludePad ? (p < in + after ? 1 : 0) : (p >= 0 && p < in ? 1 : 0);
      }
      counts.setDouble(o, static_cast<double>(std::max<int64_t>(c, 1)));
    }
    SMELT_TRY(acc, n.emit("div", {acc, n.constant(std::move(counts))}));
  }
  return depthBack(n, acc);
}

}  // namespace smelt::onnximport

// Converters for ONNX neural-network ops: convolution and pooling (2-D directly, 1-D through an added
// unit dimension, 3-D as 2-D ops over the depth slices: onnx_volume.h; auto_pad resolved to explicit
// pads), normalization, GridSample, Dropout, LRN.
#include "frontend/onnx/onnx_context.h"
#include "frontend/onnx/onnx_volume.h"

namespace smelt::onnximport {

namespace {

Expected<int64_t> spatialDims(NodeContext& n, const Value* x) {
  int64_t rank = x->type().rank();
  if (rank >= 3 && rank <= 5) return rank - 2;
  return makeError("{} input must be 3-D, 4-D or 5-D (N, C, spatial...), got {}", n.opType(), x->type().toString());
}

// Reads strides/pads/dilations and resolves auto_pad for input spatial sizes `in`.
Expected<Window> readWindow(NodeContext& n, int64_t dims, std::vector<int64_t> kernel, std::span<const int64_t> in) {
  Window w;
  w.dims = dims;
  w.kernel = std::move(kernel);
  w.strides = n.attrInts("strides", std::vector<int64_t>(dims, 1));
  w.dilations = n.attrInts("dilations", std::vector<int64_t>(dims, 1));
  w.pads = n.attrInts("pads", std::vector<int64_t>(2 * dims, 0));
  auto sz = static_cast<size_t>(dims);
  if (w.kernel.size() != sz || w.strides.size() != sz || w.dilations.size() != sz || w.pads.size() != 2 * sz) {
    return makeError("kernel_shape, strides, dilations need {} entries and pads {}", dims, 2 * dims);
  }
  for (size_t i = 0; i < sz; ++i) {
    if (w.strides[i] <= 0 || w.dilations[i] <= 0 || w.kernel[i] <= 0) {
      return makeError("kernel, strides and dilations must be positive");
    }
  }
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < sz; ++i) {
      int64_t out = (in[i] + w.strides[i] - 1) / w.strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - in[i]);
      int64_t small = total / 2;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
      w.pads[i + sz] = total - w.pads[i];
    }
  } else if (autoPad != "NOTSET") {
    return makeError("auto_pad '{}' is not supported", autoPad);
  }
  return w;
}

// The 2-D op attributes for a window (1-D windows get a unit first spatial dimension).
AttrMap windowAttrs(const Window& w, bool withDilation = true) {
  auto two = [&](const std::vector<int64_t>& v, int64_t unit) {
    return w.dims == 2 ? v : std::vector<int64_t>{unit, v[0]};
  };
  std::vector<int64_t> padding =
      w.dims == 2 ? w.pads : std::vector<int64_t>{0, w.pads[0], 0, w.pads[1]};
  AttrMap attrs{{"stride", two(w.strides, 1)}, {"padding", padding}};
  if (withDilation) attrs["dilation"] = two(w.dilations, 1);
  return attrs;
}

std::vector<int64_t> spatialOf(const Value* x) { return {x->shape().begin() + 2, x->shape().end()}; }

// 1-D: add/remove the unit dimension at axis 2.
Expected<Value*> to2d(NodeContext& n, Value* x, int64_t dims) {
  if (dims == 2) return x;
  return n.emit("unsqueeze", {x}, {{"axes", std::vector<int64_t>{2}}});
}
Expected<Value*> from2d(NodeContext& n, Value* y, int64_t dims) {
  if (dims == 2) return y;
  return n.emit("squeeze", {y}, {{"axes", std::vector<int64_t>{2}}});
}

Status conv(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * w, n.input(1));
  SMELT_TRY(int64_t dims, spatialDims(n, x));
  if (w->type().rank() != dims + 2) return makeError("weight must have rank {}, got {}", dims + 2, w->type().toString());
  std::vector<int64_t> kernel(w->shape().begin() + 2, w->shape().end());
  SMELT_TRY(Window win, readWindow(n, dims, kernel, spatialOf(x)));
  if (dims == 3) {
    Value* bias = nullptr;
    if (n.hasInput(2)) {
      SMELT_TRY(bias, n.input(2));
    }
    SMELT_TRY(Value * y, conv3d(n, x, w, bias, win, n.attrInt("group", 1)));
    return n.setOutput(0, y);
  }
  SMELT_TRY(Value * x2, to2d(n, x, dims));
  SMELT_TRY(Value * w2, to2d(n, w, dims));
  std::vector<Value*> operands{x2, w2};
  if (n.hasInput(2)) {
    SMELT_TRY(Value * b, n.input(2));
    operands.push_back(b);
  }
  AttrMap attrs = windowAttrs(win);
  attrs["groups"] = n.attrInt("group", 1);
  SMELT_TRY(Value * y, n.emit("conv2d", std::move(operands), std::move(attrs)));
  SMELT_TRY(y, from2d(n, y, dims));
  return n.setOutput(0, y);
}

// ConvTranspose: pads come from `pads`, or from output_shape / auto_pad through the total padding
// stride*(in-1) + output_padding + (k-1)*d + 1 - out (a negative total grows output_padding instead).
Status convTranspose(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * w, n.input(1));
  SMELT_TRY(int64_t dims, spatialDims(n, x));
  if (w->type().rank() != dims + 2) return makeError("weight must have rank {}, got {}", dims + 2, w->type().toString());
  std::vector<int64_t> kernel(w->shape().begin() + 2, w->shape().end());
  std::vector<int64_t> in = spatialOf(x);
  Window win;
  {
    // auto_pad means something else here; read the rest with NOTSET semantics.
    win.dims = dims;
    win.kernel = kernel;
    win.strides = n.attrInts("strides", std::vector<int64_t>(dims, 1));
    win.dilations = n.attrInts("dilations", std::vector<int64_t>(dims, 1));
    win.pads = n.attrInts("pads", std::vector<int64_t>(2 * dims, 0));
  }
  auto sz = static_cast<size_t>(dims);
  std::vector<int64_t> outPad = n.attrInts("output_padding", std::vector<int64_t>(dims, 0));
  if (win.strides.size() != sz || win.dilations.size() != sz || win.pads.size() != 2 * sz || outPad.size() != sz) {
    return makeError("strides, dilations, output_padding need {} entries and pads {}", dims, 2 * dims);
  }
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  std::vector<int64_t> outShape = n.attrInts("output_shape");
  if (outShape.size() > sz) outShape.erase(outShape.begin(), outShape.end() - dims);  // N, C given too
  if (outShape.empty() && (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")) {
    for (size_t i = 0; i < sz; ++i) outShape.push_back(in[i] * win.strides[i]);
  }
  if (autoPad == "VALID") std::fill(win.pads.begin(), win.pads.end(), 0);
  if (!outShape.empty()) {
    if (outShape.size() != sz) return makeError("output_shape needs {} entries", dims);
    for (size_t i = 0; i < sz; ++i) {
      int64_t total = win.strides[i] * (in[i] - 1) + outPad[i] + (kernel[i] - 1) * win.dilations[i] + 1 - outShape[i];
      if (total < 0) {
        outPad[i] -= total;
        total = 0;
      }
      int64_t small = total / 2;
      win.pads[i] = autoPad == "SAME_LOWER" ? total - small : small;
      win.pads[i + sz] = total - win.pads[i];
    }
  }
  if (dims == 3) {
    Value* bias = nullptr;
    if (n.hasInput(2)) {
      SMELT_TRY(bias, n.input(2));
    }
    SMELT_TRY(Value * y, convTranspose3d(n, x, w, bias, win, n.attrInt("group", 1), outPad));
    return n.setOutput(0, y);
  }
  SMELT_TRY(Value * x2, to2d(n, x, dims));
  SMELT_TRY(Value * w2, to2d(n, w, dims));
  std::vector<Value*> operands{x2, w2};
  if (n.hasInput(2)) {
    SMELT_TRY(Value * b, n.input(2));
    operands.push_back(b);
  }
  AttrMap attrs = windowAttrs(win);
  attrs["groups"] = n.attrInt("group", 1);
  attrs["output_padding"] = dims == 2 ? outPad : std::vector<int64_t>{0, outPad[0]};
  SMELT_TRY(Value * y, n.emit("conv_transpose2d", std::move(operands), std::move(attrs)));
  SMELT_TRY(y, from2d(n, y, dims));
  return n.setOutput(0, y);
}

Status pool(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(int64_t dims, spatialDims(n, x));
  bool isMax = n.opType() == "MaxPool";
  if (!n.hasAttr("kernel_shape")) return makeError("attribute 'kernel_shape' is missing");
  SMELT_TRY(Window win, readWindow(n, dims, n.attrInts("kernel_shape"), spatialOf(x)));
  if (dims == 3) {
    if (isMax && n.hasOutput(1)) return makeError("the Indices output of 3-D MaxPool is not supported");
    SMELT_TRY(Value * y, pool3d(n, x, win, isMax, n.attrInt("ceil_mode", 0) != 0, n.attrInt("count_include_pad", 0) != 0));
    return n.setOutput(0, y);
  }
  SMELT_TRY(Value * x2, to2d(n, x, dims));
  AttrMap attrs = windowAttrs(win, isMax);
  attrs["kernel"] = dims == 2 ? win.kernel : std::vector<int64_t>{1, win.kernel[0]};
  attrs["ceil_mode"] = n.attrInt("ceil_mode", 0);
  if (!isMax) {
    if (win.dilations != std::vector<int64_t>(dims, 1)) return makeError("dilated AveragePool is not supported");
    attrs["count_include_pad"] = n.attrInt("count_include_pad", 0);
  }
  SMELT_TRY(Value * y, n.emit(isMax ? "max_pool2d" : "avg_pool2d", {x2}, attrs));
  SMELT_TRY(y, from2d(n, y, dims));
  SMELT_CHECK_OK(n.setOutput(0, y));
  if (!isMax || !n.hasOutput(1)) return Status::success();
  // Indices: ONNX's are flat over the whole input, ((n * C + c) * H + h) * W + w (storage_order 1:
  // column-major planes, w * H + h); max_pool2d_indices gives the plane's h * W + w, so the plane is
  // transposed where asked and each (n, c) plane's offset added.
  SMELT_TRY(Value * plane, n.emit("max_pool2d_indices", {x2}, attrs));
  const Shape& s = x2->shape();
  if (isSymbolic(s[1]) || isSymbolic(s[2]) || isSymbolic(s[3])) {
    return makeError("the Indices output of an input with symbolic channels or spatial sizes");
  }
  if (n.attrInt("storage_order", 0) == 1) {
    Value* width = n.scalar(DType::i64, static_cast<double>(s[3]));
    SMELT_TRY(Value * h, n.emit("div", {plane, width}));
    SMELT_TRY(Value * hw, n.emit("mul", {h, width}));
    SMELT_TRY(Value * w, n.emit("sub", {plane, hw}));
    SMELT_TRY(Value * wh, n.emit("mul", {w, n.scalar(DType::i64, static_cast<double>(s[2]))}));
    SMELT_TRY(plane, n.emit("add", {wh, h}));
  } else if (n.attrInt("storage_order", 0) != 0) {
    return makeError("storage_order {} (0 or 1)", n.attrInt("storage_order", 0));
  }
  const int64_t planeSize = s[2] * s[3], channels = s[1];
  Tensor channelOffsets(TensorType{DType::i64, {1, channels, 1, 1}});
  for (int64_t c = 0; c < channels; ++c) channelOffsets.setInt(c, c * planeSize);
  Value* offsets = n.constant(std::move(channelOffsets));
  // The batch's offsets: a range over a symbolic batch, computed per run; a constant otherwise.
  SMELT_TRY(Value * batch, n.emit("range", {}, {{"start", Tensor::scalar(DType::i64, 0)},
                                              {"delta", Tensor::scalar(DType::i64, static_cast<double>(channels * planeSize))},
                                              {"shape", std::vector<int64_t>{s[0]}}}));
  SMELT_TRY(batch, n.emit("reshape", {batch}, {{"shape", std::vector<int64_t>{s[0], 1, 1, 1}}}));
  SMELT_TRY(offsets, n.emit("add", {batch, offsets}));
  SMELT_TRY(Value * flat, n.emit("add", {plane, offsets}));
  SMELT_TRY(flat, from2d(n, flat, dims));
  return n.setOutput(1, flat);
}

// 2-D: the global pooling ops; other ranks: a keepdims reduction over the spatial axes.
Status globalPool(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  bool isMax = n.opType() == "GlobalMaxPool";
  int64_t rank = x->type().rank();
  if (rank < 3) return makeError("input must have rank >= 3 (N, C, spatial...), got {}", x->type().toString());
  Value* y = nullptr;
  if (rank == 4) {
    SMELT_TRY(y, n.emit(isMax ? "global_max_pool2d" : "global_avg_pool2d", {x}));
  } else {
    std::vector<int64_t> axes;
    for (int64_t d = 2; d < rank; ++d) axes.push_back(d);
    SMELT_TRY(y, n.emit(isMax ? "reduce_max" : "reduce_mean", {x}, {{"axes", axes}, {"keepdims", int64_t{1}}}));
  }
  return n.setOutput(0, y);
}

Status batchNorm(NodeContext& n) {
  std::vector<Value*> operands;
  for (size_t i = 0; i < 5; ++i) {
    SMELT_TRY(Value * v, n.input(i));
    operands.push_back(v);
  }
  double eps = n.attrFloat("epsilon", 1e-5f);
  bool training = n.attrInt("training_mode", 0) != 0;
  if (!training) {
    if (n.hasOutput(1) || n.hasOutput(2)) {
      return makeError("running statistics outputs need training_mode = 1 (opset 14+)");
    }
    SMELT_TRY(Value * y, n.emit("batch_norm", std::move(operands), {{"epsilon", eps}}));
    return n.setOutput(0, y);
  }
  if (n.hasOutput(3) || n.hasOutput(4)) return makeError("the saved mean/variance outputs are not supported");
  AttrMap attrs{{"epsilon", eps}, {"momentum", n.attrFloat("momentum", 0.9f)}};
  SMELT_TRY(std::vector<Value*> r, n.emitNode("batch_norm_train", std::move(operands), std::move(attrs)));
  for (size_t i = 0; i < 3 && i < r.size(); ++i) SMELT_CHECK_OK(n.setOutput(i, r[i]));
  return Status::success();
}

// The axes [axis, rank) as a list.
std::vector<int64_t> trailingAxes(int64_t axis, int64_t rank) {
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  return axes;
}

// mean and 1/sqrt(var + eps) over `axes`, kept as size-1 dims.
struct Moments {
  Value* mean;
  Value* centered;
  Value* invStd;
};
Expected<Moments> moments(NodeContext& n, Value* x, const std::vector<int64_t>& axes, double eps) {
  AttrMap keep{{"axes", axes}, {"keepdims", int64_t{1}}};
  SMELT_TRY(Value * mean, n.emit("reduce_mean", {x}, keep));
  SMELT_TRY(Value * d, n.emit("sub", {x, mean}));
  SMELT_TRY(Value * d2, n.emit("mul", {d, d}));
  SMELT_TRY(Value * var, n.emit("reduce_mean", {d2}, keep));
  SMELT_TRY(Value * ve, n.emit("add", {var, n.scalar(x->dtype(), eps)}));
  SMELT_TRY(Value * inv, n.emit("rsqrt", {ve}));
  return Moments{mean, d, inv};
}

Status layerNorm(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  int64_t rank = x->type().rank();
  SMELT_TRY(int64_t axis, normalizeAxis(n.attrInt("axis", -1), rank));
  double eps = n.attrFloat("epsilon", 1e-5f);
  std::vector<Value*> operands{x};
  for (size_t i = 1; i < 3; ++i) {
    if (!n.hasInput(i)) break;
    SMELT_TRY(Value * v, n.input(i));
    operands.push_back(v);
  }
  SMELT_TRY(Value * y, n.emit("layer_norm", std::move(operands), {{"axis", axis}, {"epsilon", eps}}));
  SMELT_CHECK_OK(n.setOutput(0, y));
  if (n.hasOutput(1) || n.hasOutput(2)) {
    // Mean and InvStdDev are in the stash type (float32 by default).
    DType stash = n.attrInt("stash_type", 1) == 1 ? DType::f32 : x->dtype();
    Value* xs = x;
    if (stash != x->dtype()) {
      SMELT_TRY(xs, n.emit("cast", {x}, {{"to", std::string(dtypeName(stash))}}));
    }
    SMELT_TRY(Moments m, moments(n, xs, trailingAxes(axis, rank), eps));
    SMELT_CHECK_OK(n.setOutput(1, m.mean));
    SMELT_CHECK_OK(n.setOutput(2, m.invStd));
  }
  return Status::success();
}

// (x - mean) / sqrt(var + eps) over the spatial axes, then per-channel scale and bias.
Status instanceNorm(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * scale, n.input(1));
  SMELT_TRY(Value * bias, n.input(2));
  int64_t rank = x->type().rank();
  if (rank < 3) return makeError("input must have rank >= 3, got {}", x->type().toString());
  SMELT_TRY(Moments m, moments(n, x, trailingAxes(2, rank), n.attrFloat("epsilon", 1e-5f)));
  std::vector<int64_t> chanShape(rank - 1, 1);
  chanShape[0] = x->shape()[1];
  SMELT_TRY(Value * s, n.emit("reshape", {scale}, {{"shape", chanShape}}));
  SMELT_TRY(Value * b, n.emit("reshape", {bias}, {{"shape", chanShape}}));
  SMELT_TRY(Value * norm, n.emit("mul", {m.centered, m.invStd}));
  SMELT_TRY(Value * scaled, n.emit("mul", {norm, s}));
  SMELT_TRY(Value * y, n.emit("add", {scaled, b}));
  return n.setOutput(0, y);
}

// ONNX's function body: (x - mean) / (sqrt(var) + 1e-9) over `axes`.
// GroupNormalization (opset 18: scale and bias per group; opset 21: per channel): a layer norm of each
// sample's groups, [N, G, C/G * positions], then the affine per channel.
Status groupNorm(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * scale, n.input(1));
  SMELT_TRY(Value * bias, n.input(2));
  const TensorType& t = x->type();
  int64_t groups = n.attrInt("num_groups", 0);
  if (t.rank() < 3 || isSymbolic(t.shape[1]))
    return makeError("input must be [N, C, ...] with static C, got {}", t.toString());
  int64_t channels = t.shape[1];
  if (groups <= 0 || channels % groups != 0) {
    return makeError("{} channels do not split into num_groups = {} groups", channels, groups);
  }
  int64_t perGroup = channels / groups;
  for (int64_t d = 2; d < t.rank(); ++d) {
    if (isSymbolic(t.shape[d])) return makeError("spatial dims must be static, got {}", t.toString());
    perGroup *= t.shape[d];
  }
  int64_t affine = scale->type().numel();
  if (affine != channels && affine != groups) {
    return makeError("scale {} must hold {} (per channel) or {} (per group) values", scale->type().toString(), channels,
                     groups);
  }
  SMELT_TRY(Value * grouped, n.emit("reshape", {x}, {{"shape", std::vector<int64_t>{t.shape[0], groups, perGroup}}}));
  SMELT_TRY(Value * normed,
            n.emit("layer_norm", {grouped}, {{"axis", int64_t{-1}}, {"epsilon", n.attrFloat("epsilon", 1e-5f)}}));
  SMELT_TRY(Value * y, n.emit("reshape", {normed}, {{"shape", t.shape}}));
  // Per-group parameters repeat over each group's channels.
  std::vector<int64_t> chanShape(static_cast<size_t>(t.rank() - 1), 1);
  chanShape[0] = channels;
  auto perChannel = [&](Value* v) -> Expected<Value*> {
    if (affine != channels) {
      Tensor owner(TensorType{DType::i64, {channels}});
      for (int64_t c = 0; c < channels; ++c) owner.setInt(c, c / (channels / groups));
      SMELT_TRY(Value * flat, n.emit("reshape", {v}, {{"shape", std::vector<int64_t>{groups}}}));
      SMELT_TRY(v, n.emit("gather", {flat, n.constant(std::move(owner))}, {{"axis", int64_t{0}}}));
    }
    return n.emit("reshape", {v}, {{"shape", chanShape}});
  };
  SMELT_TRY(Value * s, perChannel(scale));
  SMELT_TRY(Value * b, perChannel(bias));
  SMELT_TRY(y, n.emit("mul", {y, s}));
  SMELT_TRY(y, n.emit("add", {y, b}));
  return n.setOutput(0, y);
}

Status meanVarianceNorm(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  std::vector<int64_t> axes = n.attrInts("axes", {0, 2, 3});
  AttrMap keep{{"axes", axes}, {"keepdims", int64_t{1}}};
  SMELT_TRY(Value * mean, n.emit("reduce_mean", {x}, keep));
  SMELT_TRY(Value * d, n.emit("sub", {x, mean}));
  SMELT_TRY(Value * d2, n.emit("mul", {d, d}));
  SMELT_TRY(Value * var, n.emit("reduce_mean", {d2}, keep));
  SMELT_TRY(Value * sd, n.emit("sqrt", {var}));
  SMELT_TRY(Value * den, n.emit("add", {sd, n.scalar(x->dtype(), 1e-9)}));
  SMELT_TRY(Value * y, n.emit("div", {d, den}));
  return n.setOutput(0, y);
}

// LRN: the channel-window sum of squares is an average pool (count_include_pad) over a
// [N, 1, C, rest] view, times the window size.
Status lrn(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  int64_t rank = x->type().rank();
  if (rank < 3) return makeError("input must have rank >= 3, got {}", x->type().toString());
  int64_t size = n.attrInt("size", 0);
  if (size <= 0) return makeError("size must be positive, got {}", size);
  double alpha = n.attrFloat("alpha", 1e-4f), beta = n.attrFloat("beta", 0.75f), bias = n.attrFloat("bias", 1.0);
  DType dt = x->dtype();
  int64_t rest = 1;
  for (int64_t d = 2; d < rank; ++d) rest *= x->shape()[d];
  SMELT_TRY(Value * sq, n.emit("mul", {x, x}));
  SMELT_TRY(Value * v, n.emit("reshape", {sq}, {{"shape", std::vector<int64_t>{x->shape()[0], 1, x->shape()[1], rest}}}));
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  AttrMap attrs{{"kernel", std::vector<int64_t>{size, 1}},
                {"stride", std::vector<int64_t>{1, 1}},
                {"padding", std::vector<int64_t>{before, 0, after, 0}},
                {"count_include_pad", int64_t{1}}};
  SMELT_TRY(Value * avg, n.emit("avg_pool2d", {v}, std::move(attrs)));
  SMELT_TRY(Value * sum, n.emit("reshape", {avg}, {{"shape", x->shape()}}));
  SMELT_TRY(Value * scaled, n.emit("mul", {sum, n.scalar(dt, alpha)}));  // alpha/size * (size * avg)
  SMELT_TRY(Value * base, n.emit("add", {scaled, n.scalar(dt, bias)}));
  SMELT_TRY(Value * den, n.emit("pow", {base, n.scalar(dt, beta)}));
  SMELT_TRY(Value * y, n.emit("div", {x, den}));
  return n.setOutput(0, y);
}

Status gridSample(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * grid, n.input(1));
  AttrMap attrs{{"mode", n.attrString("mode", "bilinear")},
                {"padding_mode", n.attrString("padding_mode", "zeros")},
                {"align_corners", n.attrInt("align_corners", 0)}};
  SMELT_TRY(Value * y, n.emit("grid_sample", {x, grid}, std::move(attrs)));
  return n.setOutput(0, y);
}

// Dropout: identity in inference; training draws smelt's counter-based mask (not numpy's stream).
Status dropout(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  double ratio = 0.5;
  bool training = false;
  if (n.opset() >= 12) {
    if (n.hasInput(1)) {
      SMELT_TRY(ratio, n.constScalar(1));
    }
    if (n.hasInput(2)) {
      SMELT_TRY(double t, n.constScalar(2));
      training = t != 0;
    }
  } else {
    ratio = n.attrFloat("ratio", 0.5);
  }
  if (!training) {
    SMELT_CHECK_OK(n.setOutput(0, x));
    if (!n.hasOutput(1)) return Status::success();
  }
  AttrMap attrs{{"ratio", ratio}, {"seed", n.attrInt("seed", 0)}, {"training", training ? int64_t{1} : 0}};
  SMELT_TRY(std::vector<Value*> r, n.emitNode("dropout", {x}, std::move(attrs)));
  if (training) SMELT_CHECK_OK(n.setOutput(0, r[0]));
  if (r.size() > 1) SMELT_CHECK_OK(n.setOutput(1, r[1]));
  return Status::success();
}

}  // namespace

void addNnConverters(ConverterTable& t) {
  t["Conv"] = conv;
  t["ConvTranspose"] = convTranspose;
  t["MaxPool"] = pool;
  t["AveragePool"] = pool;
  t["GlobalAveragePool"] = globalPool;
  t["GlobalMaxPool"] = globalPool;
  t["BatchNormalization"] = batchNorm;
  t["LayerNormalization"] = layerNorm;
  t["InstanceNormalization"] = instanceNorm;
  t["GroupNormalization"] = groupNorm;
  t["MeanVarianceNormalization"] = meanVarianceNorm;
  t["LRN"] = lrn;
  t["GridSample"] = gridSample;
  t["Dropout"] = dropout;
}

}  // namespace smelt::onnximport

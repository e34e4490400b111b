// 3-D convolution, transposed convolution and pooling, composed from the 2-D ops: the depth axis moves into the
// batch, each kernel tap along depth is one 2-D op over the whole volume, and the taps are combined along depth
// (summed for convolutions, max or mean for pooling). Depth and batch must be static.
#pragma once

#include "frontend/onnx/onnx_context.h"

namespace smelt::onnximport {

/// A window op's geometry over `dims` spatial axes, ONNX's layout (pads: all begins, then all ends).
struct Window {
  int64_t dims = 2;
  std::vector<int64_t> kernel, strides, pads, dilations;
};

/// Conv over x [N, C, D, H, W] with w [O, C/groups, kd, kh, kw] and an optional bias.
Expected<Value*> conv3d(NodeContext& n, Value* x, Value* w, Value* bias, const Window& win, int64_t groups);
/// ConvTranspose over x [N, C, D, H, W] with w [C, O/groups, kd, kh, kw].
Expected<Value*> convTranspose3d(NodeContext& n, Value* x, Value* w, Value* bias, const Window& win, int64_t groups,
                                 const std::vector<int64_t>& outputPadding);
/// MaxPool / AveragePool over [N, C, D, H, W].
Expected<Value*> pool3d(NodeContext& n, Value* x, const Window& win, bool isMax, bool ceilMode, bool countIncludePad);

}  // namespace smelt::onnximport

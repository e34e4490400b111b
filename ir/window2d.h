// The 2-D window convolution and pooling share, in one place: kernel, stride, padding and dilation per spatial axis
// (0 = height, 1 = width) as the ops' attributes spell them (`stride` [2], `padding` [top, left, bottom, right],
// `dilation` [2], pooling's `ceil_mode`), and the arithmetic on it: the output extent, and which outputs one kernel
// tap touches. conv2d and its transpose and gradients (ir/ops/conv.cpp), the pools (ir/ops/pooling.cpp) and the
// runtime's convolution plans (runtime/exec/gemm_plan.cpp) read it from here.
//   Window2d w = *Window2d::fromAttrs(node.attrs(), kh, kw);
//   int64_t oh = *w.outputSize(0, h);   // floor((h + pads - dilation*(kh-1) - 1) / stride) + 1
#pragma once

#include "ir/attribute.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace smelt {

/// How an error names a window axis (0 = height, 1 = width).
inline constexpr const char* kWindowAxisName[2] = {"height", "width"};

struct Window2d {
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padBegin[2] = {0, 0};  // top, left
  int64_t padEnd[2] = {0, 0};    // bottom, right
  int64_t dilation[2] = {1, 1};
  /// Pooling's ceil_mode: the output extent rounds up (the last window still starts inside the input or the
  /// top/left padding, as PyTorch and ONNX have it).
  bool ceilMode = false;

  /// From an op's attributes (each optional: an absent `stride` is 1, or the kernel when `strideDefaultsToKernel`,
  /// as pooling's empty stride is) and the kernel's extents; nothing when a list has the wrong length (the op's
  /// verifier says which).
  static std::optional<Window2d> fromAttrs(const AttrMap& attrs, int64_t kh, int64_t kw,
                                           bool strideDefaultsToKernel = false);
  /// The rows (columns) one window covers: dilation * (kernel - 1) + 1 (in 128 bits: absurd attributes overflow).
  __int128 span(int axis) const;
  /// The padded input extent along `axis`.
  __int128 padded(int axis, int64_t in) const;
  /// The output extent along `axis` for an input of `in`; nothing when the window does not fit the padded input.
  std::optional<int64_t> outputSize(int axis, int64_t in) const;
  /// The output extent for a symbolic input extent (ir/type.h): (in + pads - span) / stride + 1 with `/` floor
  /// division, "(H+1)/2+1" for a 3x3, stride-2, pad-1 window over H. Ceil mode's rounding depends on the size: an
  /// error. (That the window fits is checked where the size is bound.)
  Expected<int64_t> symbolicOutputSize(int axis, int64_t in) const;
};

/// The range [lo, hi) of o in [0, count) for which o * stride + offset lies in [0, size): the outputs (or inputs,
/// for the transpose) one kernel tap touches, so that inner loops need no bounds test.
std::pair<int64_t, int64_t> validRange(int64_t offset, int64_t stride, int64_t size, int64_t count);

}  // namespace smelt

#include "ir/window2d.h"

#include <algorithm>
#include <vector>

namespace smelt {

namespace {

const std::vector<int64_t>* ints(const AttrMap& attrs, const char* name) {
  auto it = attrs.find(name);
  return it == attrs.end() ? nullptr : std::get_if<std::vector<int64_t>>(&it->second);
}

}  // namespace

std::optional<Window2d> Window2d::fromAttrs(const AttrMap& attrs, int64_t kh, int64_t kw, bool strideDefaultsToKernel) {
  Window2d w;
  w.kernel[0] = kh;
  w.kernel[1] = kw;
  const auto* stride = ints(attrs, "stride");
  const auto* padding = ints(attrs, "padding");
  const auto* dilation = ints(attrs, "dilation");
  if (stride && !stride->empty()) {
    if (stride->size() != 2) return std::nullopt;
    w.stride[0] = (*stride)[0];
    w.stride[1] = (*stride)[1];
  } else if (strideDefaultsToKernel) {
    w.stride[0] = kh;
    w.stride[1] = kw;
  }
  if (padding) {
    if (padding->size() != 4) return std::nullopt;
    w.padBegin[0] = (*padding)[0];
    w.padBegin[1] = (*padding)[1];
    w.padEnd[0] = (*padding)[2];
    w.padEnd[1] = (*padding)[3];
  }
  if (dilation) {
    if (dilation->size() != 2) return std::nullopt;
    w.dilation[0] = (*dilation)[0];
    w.dilation[1] = (*dilation)[1];
  }
  if (auto it = attrs.find("ceil_mode"); it != attrs.end()) {
    if (const auto* flag = std::get_if<int64_t>(&it->second)) w.ceilMode = *flag == 1;
  }
  return w;
}

__int128 Window2d::span(int axis) const { return static_cast<__int128>(dilation[axis]) * (kernel[axis] - 1) + 1; }

__int128 Window2d::padded(int axis, int64_t in) const {
  return static_cast<__int128>(in) + padBegin[axis] + padEnd[axis];
}

std::optional<int64_t> Window2d::outputSize(int axis, int64_t in) const {
  __int128 room = padded(axis, in) - span(axis);
  if (room < 0) return std::nullopt;
  int64_t s = stride[axis];
  int64_t out = static_cast<int64_t>((ceilMode ? (room + s - 1) / s : room / s) + 1);
  if (ceilMode && (out - 1) * s >= in + padBegin[axis]) --out;
  return out;
}

Expected<int64_t> Window2d::symbolicOutputSize(int axis, int64_t in) const {
  if (ceilMode)
    return makeError("ceil_mode over a symbolic {} ({}): bind it first", kWindowAxisName[axis], extentToString(in));
  const __int128 shift = static_cast<__int128>(padBegin[axis]) + padEnd[axis] - span(axis);
  if (shift > kMaxElements || shift < -kMaxElements) return makeError("the window is larger than 2^40");
  SMELT_TRY(int64_t room, addExtents(in, static_cast<int64_t>(shift)));
  SMELT_TRY(int64_t steps, floorDivideExtent(room, stride[axis]));
  return addExtents(steps, 1);
}

std::pair<int64_t, int64_t> validRange(int64_t offset, int64_t stride, int64_t size, int64_t count) {
  int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t last = size - 1 - offset;
  int64_t hi = last < 0 ? 0 : std::min(count, last / stride + 1);
  return {std::min(lo, hi), hi};
}

}  // namespace smelt

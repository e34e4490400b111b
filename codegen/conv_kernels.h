// The kernels around a convolution computed as a GEMM on a device's BLAS (CLBlast, cuBLAS): the
// column matrix of every image (im2col) before the product, and the product's [channels, images]
// rows back to NCHW after it. Built as kernel descriptions, so every C renderer and its backend runs
// them like any generated kernel:
//   im2col    domain [c*kh*kw, n*oh*ow]: columns[(c*kh + i)*kw + j][(n*oh + y)*ow + x] =
//             x[n, c, y*sh - pt + i*dh, x*sw - pl + j*dw] (0 outside the image)
//   col2im    im2col's adjoint, domain [n*c, h, w]: image[n, c, iy, ix] = the sum of the columns'
//             entries that im2col would read from (n, c, iy, ix); a transposed convolution's output
//             from its product W^T X (rows (c, i, j), columns (n, y, x) over the grid oh x ow)
//   swap      domain [inner, outer, plane]: t[i, o, p] = x[o, i, p]
#pragma once

#include "codegen/kernel.h"

namespace smelt::codegen {

/// A window over NCHW images [n, c, h, w] placed at every point of an oh x ow grid (a forward
/// conv2d's input and output sizes; kernel kh x kw).
struct Im2colShape {
  int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int64_t strideH = 1, strideW = 1, padTop = 0, padLeft = 0, dilationH = 1, dilationW = 1;
};

/// Buffers: 0 = x (in), 1 = columns (out).
Expected<Kernel> im2colKernel(const Im2colShape& shape, DType dtype);

/// Buffers: 0 = columns (in), 1 = image (out).
Expected<Kernel> col2imKernel(const Im2colShape& shape, DType dtype);

/// x [outer, inner, plane] -> t [inner, outer, plane]. Buffers: 0 = x (in), 1 = t (out).
Expected<Kernel> swapLeadingAxesKernel(int64_t outer, int64_t inner, int64_t plane, DType dtype);

}  // namespace smelt::codegen

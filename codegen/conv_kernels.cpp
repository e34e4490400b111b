// im2colKernel, col2imKernel and swapLeadingAxesKernel (see conv_kernels.h).
#include "codegen/conv_kernels.h"

#include "codegen/kernel_builder.h"

namespace smelt::codegen {

Expected<Kernel> im2colKernel(const Im2colShape& s, DType dtype) {
  Kernel k;
  k.name = "im2col";
  const int64_t taps = s.kh * s.kw, plane = s.oh * s.ow;
  k.buffers = {KBuffer{.name = "x", .dtype = dtype, .numel = s.n * s.c * s.h * s.w},
               KBuffer{.name = "columns", .dtype = dtype, .numel = s.c * taps * s.n * plane, .output = true}};
  k.domain = {s.c * taps, s.n * plane};
  k.provenance = {"im2col before a convolution's GEMM"};
  KernelBuilder b(k);
  KValue row = b.outer(0), col = b.outer(1);
  KValue c = b.div(row, b.index(taps)), i = b.rem(b.div(row, b.index(s.kw)), b.index(s.kh));
  KValue j = b.rem(row, b.index(s.kw));
  KValue n = b.div(col, b.index(plane)), y = b.rem(b.div(col, b.index(s.ow)), b.index(s.oh));
  KValue x = b.rem(col, b.index(s.ow));
  KValue iy = b.add(b.sub(b.mul(y, b.index(s.strideH)), b.index(s.padTop)), b.mul(i, b.index(s.dilationH)));
  KValue ix = b.add(b.sub(b.mul(x, b.index(s.strideW)), b.index(s.padLeft)), b.mul(j, b.index(s.dilationW)));
  KValue inside = b.logicalAnd(b.logicalAnd(b.ge(iy, b.index(0)), b.lt(iy, b.index(s.h))),
                               b.logicalAnd(b.ge(ix, b.index(0)), b.lt(ix, b.index(s.w))));
  KValue offset = b.add(b.mul(b.add(b.mul(b.add(b.mul(n, b.index(s.c)), c), b.index(s.h)), iy), b.index(s.w)), ix);
  // Outside the image the offset is made 0 before the load (never an address outside x), and the
  // value 0 after it.
  KValue value = b.load(0, b.select(inside, offset, b.index(0)));
  b.store(1, b.add(b.mul(row, b.index(s.n * plane)), col), b.select(inside, value, b.zero(dtype)));
  SMELT_CHECK_OK(b.status());
  return k;
}

Expected<Kernel> col2imKernel(const Im2colShape& s, DType dtype) {
  Kernel k;
  k.name = "col2im";
  const int64_t taps = s.kh * s.kw, grid = s.n * s.oh * s.ow;
  k.buffers = {KBuffer{.name = "columns", .dtype = dtype, .numel = s.c * taps * grid},
               KBuffer{.name = "image", .dtype = dtype, .numel = s.n * s.c * s.h * s.w, .output = true}};
  k.domain = {s.n * s.c, s.h, s.w};
  k.provenance = {"col2im after a transposed convolution's GEMM"};
  KernelBuilder b(k);
  KValue plane = b.outer(0), iy = b.outer(1), ix = b.outer(2);
  KValue n = b.div(plane, b.index(s.c)), c = b.rem(plane, b.index(s.c));
  // Sums of a few taps in f32 (f64 for f64), rounded once at the end.
  const DType acc = dtype == DType::f64 ? DType::f64 : DType::f32;
  // The grid point along one axis whose tap k lands on image position `at`: at = y*stride - pad +
  // k*dilation, so y = (at + pad - k*dilation) / stride where that divides exactly and lies in the grid.
  auto source = [&](KValue at, KValue tap, int64_t pad, int64_t dilation, int64_t stride, int64_t extent) {
    KValue t = b.sub(b.add(at, b.index(pad)), b.mul(tap, b.index(dilation)));
    KValue nonNegative = b.ge(t, b.index(0));
    KValue y = b.div(b.select(nonNegative, t, b.index(0)), b.index(stride));
    KValue exact = b.binary(KBinary::Eq, b.rem(b.select(nonNegative, t, b.index(0)), b.index(stride)), b.index(0));
    return std::pair{y, b.logicalAnd(b.logicalAnd(nonNegative, exact), b.lt(y, b.index(extent)))};
  };
  std::vector<KValue> sum = b.loop(s.kh, {b.zero(acc)}, [&](KValue i, std::span<const KValue> outer) {
    const std::pair<KValue, KValue> yRow = source(iy, i, s.padTop, s.dilationH, s.strideH, s.oh);
    return b.loop(s.kw, {outer[0]}, [&](KValue j, std::span<const KValue> inner) {
      auto [x, inside] = source(ix, j, s.padLeft, s.dilationW, s.strideW, s.ow);
      inside = b.logicalAnd(yRow.second, inside);
      KValue row = b.add(b.mul(b.add(b.mul(c, b.index(s.kh)), i), b.index(s.kw)), j);
      KValue col = b.add(b.mul(b.add(b.mul(n, b.index(s.oh)), yRow.first), b.index(s.ow)), x);
      // Outside the grid the offset is made 0 before the load, and the term 0 after it.
      KValue value = b.load(0, b.select(inside, b.add(b.mul(row, b.index(grid)), col), b.index(0)));
      return std::vector<KValue>{b.add(inner[0], b.select(inside, b.cast(value, acc), b.zero(acc)))};
    });
  });
  KValue at = b.add(b.mul(b.add(b.mul(plane, b.index(s.h)), iy), b.index(s.w)), ix);
  b.store(1, at, b.cast(sum[0], dtype));
  SMELT_CHECK_OK(b.status());
  return k;
}

Expected<Kernel> swapLeadingAxesKernel(int64_t outer, int64_t inner, int64_t plane, DType dtype) {
  Kernel k;
  k.name = "swap_leading_axes";
  k.buffers = {KBuffer{.name = "x", .dtype = dtype, .numel = outer * inner * plane},
               KBuffer{.name = "t", .dtype = dtype, .numel = outer * inner * plane, .output = true}};
  k.domain = {inner, outer, plane};
  k.provenance = {"[channels, images] to NCHW after a convolution's GEMM"};
  KernelBuilder b(k);
  KValue i = b.outer(0), o = b.outer(1), p = b.outer(2);
  KValue from = b.add(b.mul(b.add(b.mul(o, b.index(inner)), i), b.index(plane)), p);
  KValue to = b.add(b.mul(b.add(b.mul(i, b.index(outer)), o), b.index(plane)), p);
  b.store(1, to, b.load(0, from));
  SMELT_CHECK_OK(b.status());
  return k;
}

}  // namespace smelt::codegen

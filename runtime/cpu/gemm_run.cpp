// The CPU's products (see gemm_run.h): BLAS calls, the convolutions' column copies and scatters.
#include "runtime/cpu/gemm_run.h"

#include "ir/half.h"

#include "runtime/cpu/blas.h"
#include "runtime/cpu/thread_pool.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace smelt {

namespace {

/// Where tap column j reads: input column x * stride + shift for output column x, inside the input for
/// x in [x0, x1). The same for every channel and row, so worked out once per convolution: per row, the
/// two divisions cost more than copying a deep layer's 2 or 4 columns.
struct TapColumns {
  int64_t shift = 0, x0 = 0, x1 = 0;
};

std::vector<TapColumns> tapColumns(const ConvGeometry& g) {
  std::vector<TapColumns> taps(static_cast<size_t>(g.kw));
  for (int64_t j = 0; j < g.kw; ++j) {
    TapColumns& t = taps[static_cast<size_t>(j)];
    t.shift = j * g.dilationW - g.padLeft;
    t.x0 = t.shift >= 0 ? 0 : std::min(g.ow, (-t.shift + g.strideW - 1) / g.strideW);
    t.x1 = t.shift >= g.w ? 0 : std::min(g.ow, (g.w - 1 - t.shift) / g.strideW + 1);
    t.x1 = std::max(t.x0, t.x1);
  }
  return taps;
}

/// One output row `y` of one input channel's taps: out[(i * kw + j) * ld + x] holds the channel's
/// plane `in` at (y * stride - pad + i * dilation, x * stride - pad + j * dilation), or 0 in the
/// padding. The copies themselves have no branch (a plain copy at stride 1).
template <typename T>
void tapRows(const ConvGeometry& g, const TapColumns* columns, const T* in, int64_t y, T* out, int64_t ld) {
  for (int64_t i = 0; i < g.kh; ++i) {
    int64_t iy = y * g.strideH - g.padTop + i * g.dilationH;
    if (iy < 0 || iy >= g.h) {
      for (int64_t j = 0; j < g.kw; ++j) std::fill_n(out + (i * g.kw + j) * ld, g.ow, T(0));
      continue;
    }
    const T* line = in + iy * g.w;
    for (int64_t j = 0; j < g.kw; ++j) {
      T* dst = out + (i * g.kw + j) * ld;
      const TapColumns& t = columns[j];
      for (int64_t x = 0; x < t.x0; ++x) dst[x] = T(0);
      if (g.strideW == 1) {
        for (int64_t x = t.x0; x < t.x1; ++x) dst[x] = line[x + t.shift];
      } else {
        for (int64_t x = t.x0; x < t.x1; ++x) dst[x] = line[x * g.strideW + t.shift];
      }
      for (int64_t x = t.x1; x < g.ow; ++x) dst[x] = T(0);
    }
  }
}

/// The column matrix of every image: row (c, i, j), columns [n*oh*ow, (n+1)*oh*ow) image n's taps,
/// output row after output row. One (channel, image) pair per task.
template <typename T>
void im2colAll(const ConvGeometry& g, const T* x, T* columns) {
  int64_t plane = g.oh * g.ow, width = g.n * plane, taps = g.kh * g.kw;
  std::vector<TapColumns> cols = tapColumns(g);
  ThreadPool::global().parallelFor(
      g.c * g.n,
      [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
          int64_t c = task / g.n, n = task % g.n;
          const T* in = x + (n * g.c + c) * g.h * g.w;
          for (int64_t y = 0; y < g.oh; ++y) {
            tapRows(g, cols.data(), in, y, columns + c * taps * width + n * plane + y * g.ow, width);
          }
        }
      },
      g.c * g.n * taps * plane >= 32768);
}

/// x [outer, inner, plane] -> t [inner, outer, plane]: images side by side per channel (one product for
/// all of them), or a product's [channels, images] rows back to NCHW. One `inner` index per task.
template <typename T>
void swapLeadingAxes(const T* x, int64_t outer, int64_t inner, int64_t plane, T* t) {
  ThreadPool::global().parallelFor(
      inner,
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          for (int64_t o = 0; o < outer; ++o) std::copy_n(x + (o * inner + i) * plane, plane, t + (i * outer + o) * plane);
        }
      },
      outer * inner * plane >= 65536);
}

template <typename T>
void runConvAs(const GemmPlan& p, char* const* operands, char* product, char* scratch) {
  const ConvGeometry& g = *p.conv;
  const T* x = reinterpret_cast<const T*>(operands[p.operandA]);
  const T* w = reinterpret_cast<const T*>(operands[p.operandB]);
  T* columns = reinterpret_cast<T*>(scratch);
  T* out = reinterpret_cast<T*>(product);
  if (g.n == 1) {
    if (!g.direct()) im2colAll(g, x, columns);
    const T* cols = g.direct() ? x : columns;
    for (int64_t group = 0; group < g.groups; ++group) {
      blas::gemm(p.dtype, false, false, p.m, p.n, p.k, 1.0, w + group * p.m * p.k, p.k, cols + group * p.k * p.n, p.n,
                 out + group * p.m * p.n, p.n);
    }
    return;
  }
  im2colAll(g, x, columns);
  T* channelsMajor = columns + g.c * g.kh * g.kw * p.n;
  for (int64_t group = 0; group < g.groups; ++group) {
    blas::gemm(p.dtype, false, false, p.m, p.n, p.k, 1.0, w + group * p.m * p.k, p.k, columns + group * p.k * p.n,
               p.n, channelsMajor + group * p.m * p.n, p.n);
  }
  swapLeadingAxes(channelsMajor, g.o, g.n, g.oh * g.ow, out);
}


/// The transpose's output from the product rows: row (o, i, j), column (n, y, x) adds into output
/// (n, o, y * stride - pad + i * dilation, x * ...) when that lies inside. One output plane per task.
template <typename T>
void col2im(const ConvGeometry& g, const T* columns, T* out) {
  int64_t inPlane = g.h * g.w, outPlane = g.oh * g.ow, width = g.n * inPlane;
  ThreadPool::global().parallelFor(
      g.n * g.o,
      [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
          int64_t n = plane / g.o, o = plane % g.o;
          T* dst = out + plane * outPlane;
          std::fill(dst, dst + outPlane, T(0));
          for (int64_t i = 0; i < g.kh; ++i) {
            for (int64_t j = 0; j < g.kw; ++j) {
              const T* row = columns + ((o * g.kh + i) * g.kw + j) * width + n * inPlane;
              // The input columns x whose output column x * stride - pad + j * dilation is inside.
              int64_t shift = j * g.dilationW - g.padLeft;
              int64_t x0 = shift >= 0 ? 0 : (-shift + g.strideW - 1) / g.strideW;
              int64_t x1 = std::min(g.w, (g.ow - 1 - shift) / g.strideW + 1);
              if (g.ow - 1 - shift < 0) x1 = 0;
              for (int64_t y = 0; y < g.h; ++y) {
                int64_t oy = y * g.strideH - g.padTop + i * g.dilationH;
                if (oy < 0 || oy >= g.oh) continue;
                const T* src = row + y * g.w;
                T* line = dst + oy * g.ow;
                if (g.strideW == 1) {
                  for (int64_t x = x0; x < x1; ++x) line[x + shift] += src[x];
                } else {
                  for (int64_t x = x0; x < x1; ++x) line[x * g.strideW + shift] += src[x];
                }
              }
            }
          }
        }
      },
      g.n * g.o * outPlane * g.kh * g.kw >= 32768);
}

template <typename T>
void runConvTransposeAs(const GemmPlan& p, char* const* operands, char* product, char* scratch) {
  const ConvGeometry& g = *p.conv;
  const T* x = reinterpret_cast<const T*>(operands[p.operandA]);
  const T* w = reinterpret_cast<const T*>(operands[p.operandB]);
  T* columns = reinterpret_cast<T*>(scratch);
  if (g.n > 1) {
    swapLeadingAxes(x, g.n, g.c, g.h * g.w, columns);
    x = columns;
    columns += g.c * p.n;
  }
  for (int64_t group = 0; group < g.groups; ++group) {
    // The group's weight rows [c/groups, o/groups*kh*kw], used transposed.
    blas::gemm(p.dtype, true, false, p.m, p.n, p.k, 1.0, w + group * p.k * p.m, p.m, x + group * p.k * p.n, p.n,
               columns + group * p.m * p.n, p.n);
  }
  col2im(g, columns, reinterpret_cast<T*>(product));
}

/// bf16 transposed convolutions: the product's columns in f32 (oneDNN's bf16 GEMM without the rounding), summed
/// by col2im in f32 into an f32 output, rounded into bf16 once, as the reference sums each output's taps.
/// Scratch (bf16TransposedScratch): the images swapped (bf16), the columns (f32), the output (f32).
void runConvTransposeBf16(const GemmPlan& p, char* const* operands, char* product, char* scratch) {
  const ConvGeometry& g = *p.conv;
  const auto* x = reinterpret_cast<const uint16_t*>(operands[p.operandA]);
  const auto* w = reinterpret_cast<const uint16_t*>(operands[p.operandB]);
  int64_t swappedBytes = 0;
  if (g.n > 1) {
    auto* swapped = reinterpret_cast<uint16_t*>(scratch);
    swapLeadingAxes(x, g.n, g.c, g.h * g.w, swapped);
    x = swapped;
    swappedBytes = (g.c * p.n * 2 + 63) / 64 * 64;
  }
  auto* columns = reinterpret_cast<float*>(scratch + swappedBytes);
  for (int64_t group = 0; group < g.groups; ++group) {
    blas::gemmBf16ToF32(true, false, p.m, p.n, p.k, 1.0, w + group * p.k * p.m, p.m, x + group * p.k * p.n, p.n,
                        columns + group * p.m * p.n, p.n);
  }
  float* out = columns + g.o * g.kh * g.kw * p.n;
  col2im(g, columns, out);
  const int64_t count = g.n * g.o * g.oh * g.ow;
  auto* result = reinterpret_cast<uint16_t*>(product);
  ThreadPool::global().parallelFor(
      count,
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) result[i] = BFloat16::fromFloat(out[i]);
      },
      count >= 65536);
}

/// `a` (rows x cols) transposed into `t` (cols x rows, leading dimension `ldt`).
template <typename T>
void transposeBlock(const T* a, int64_t rows, int64_t cols, T* t, int64_t ldt) {
  if constexpr (std::is_same_v<T, float>) {
    blas::transpose(a, rows, cols, t, ldt);
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) t[c * ldt + r] = a[r * cols + c];
    }
  }
}

/// The block im2rowAll gathers before each transpose: about half a core's L2 cache.
constexpr int64_t kIm2rowBlockBytes = int64_t{512} << 10;

/// im2col transposed: row (n, y, x) holds output position (y, x) of image n's taps in (c, i, j) order,
/// the input at (c, y * stride - pad + i * dilation, ...) or 0 in the padding. A few output rows of
/// one image per task: their columns are gathered as im2col does (contiguous copies) into a block of
/// about half the L2 cache, then transposed into place (a transpose of a block only 2 or 4 columns
/// wide, one output row of a deep layer, ran far below the copy's speed).
template <typename T>
void im2rowAll(const ConvGeometry& g, const T* x, T* rows) {
  int64_t taps = g.kh * g.kw, width = g.c * taps;
  int64_t bytesPerRow = width * g.ow * static_cast<int64_t>(sizeof(T));
  int64_t rowsPerTask = std::clamp<int64_t>(kIm2rowBlockBytes / std::max<int64_t>(bytesPerRow, 1), 1, g.oh);
  int64_t tasksPerImage = (g.oh + rowsPerTask - 1) / rowsPerTask;
  std::vector<TapColumns> cols = tapColumns(g);
  ThreadPool::global().parallelFor(
      g.n * tasksPerImage,
      [&](int64_t begin, int64_t end) {
        thread_local std::vector<T> block;
        block.resize(static_cast<size_t>(width * rowsPerTask * g.ow));
        for (int64_t task = begin; task < end; ++task) {
          int64_t n = task / tasksPerImage, y0 = task % tasksPerImage * rowsPerTask;
          int64_t count = std::min(rowsPerTask, g.oh - y0), span = count * g.ow;
          for (int64_t c = 0; c < g.c; ++c) {
            for (int64_t y = y0; y < y0 + count; ++y) {
              tapRows(g, cols.data(), x + (n * g.c + c) * g.h * g.w, y, block.data() + c * taps * span + (y - y0) * g.ow,
                      span);
            }
          }
          transposeBlock(block.data(), width, span, rows + (n * g.oh + y0) * g.ow * width, width);
        }
      },
      g.n * g.oh * g.ow * width >= 32768);
}

template <typename T>
void runWeightGradAs(const GemmPlan& p, char* const* operands, char* product, char* scratch) {
  const ConvGeometry& g = *p.conv;
  const T* x = reinterpret_cast<const T*>(operands[p.operandA]);
  const T* dy = reinterpret_cast<const T*>(operands[p.operandB]);
  // The columns transposed ([n*oh*ow, c*kh*kw]), so the product's right-hand side is untransposed:
  // oneDNN's sgemm ran the transposed form at about half the speed.
  T* rows = reinterpret_cast<T*>(scratch);
  im2rowAll(g, x, rows);
  if (g.n > 1) {
    T* dyRows = rows + g.c * g.kh * g.kw * p.k;
    swapLeadingAxes(dy, g.n, g.o, g.oh * g.ow, dyRows);
    dy = dyRows;
  }
  T* out = reinterpret_cast<T*>(product);
  int64_t width = g.c * g.kh * g.kw;
  for (int64_t group = 0; group < g.groups; ++group) {
    blas::gemm(p.dtype, false, false, p.m, p.n, p.k, 1.0, dy + group * p.m * p.k, p.k, rows + group * p.n, width,
               out + group * p.m * p.n, p.n);
  }
}

}  // namespace

namespace {

/// The width of the column blocks a split product's threads claim (a multiple of oneDNN's 16-float
/// vector tiles).
constexpr int64_t kColumnBlock = 64;

/// Whether a product is split into column blocks on the pool (see runGemm): f32 on oneDNN, one batch
/// item, more than one thread, and enough work for the blocks to be products worth a call (at 2^22
/// multiply-adds, a 64x64x1024 product: about 30 us on one thread).
bool splitsByColumns(const GemmPlan& p) {
  return p.dtype == DType::f32 && p.batch == 1 && blas::onednn() && ThreadPool::global().threads() > 1 &&
         p.n >= 2 * kColumnBlock && p.m * p.n * p.k >= (int64_t{1} << 22);
}

/// The width of a split product's column blocks: kColumnBlock, but for a very large product (2^30 multiply-adds
/// and more) two blocks per thread. Each oneDNN call packs the whole of A again, so the calls' number is what the
/// split costs: a 2048^3 product took 51-53 ms in 64-wide blocks, 44-47 in 512-wide (two per thread on 2 threads),
/// against 42-44 for oneDNN's own two threads (alternating runs). Two blocks per thread still lets a thread on a
/// busy core give up its second one.
int64_t columnBlockWidth(const GemmPlan& p) {
  if (p.m * p.n * p.k < (int64_t{1} << 30)) return kColumnBlock;
  const int64_t perBlock = (p.n + 2 * ThreadPool::global().threads() - 1) / (2 * ThreadPool::global().threads());
  return std::max(kColumnBlock, (perBlock + kColumnBlock - 1) / kColumnBlock * kColumnBlock);
}

}  // namespace

void preferUntransposedB(GemmPlan& plan) {
  if (!plan.transB || plan.conv || plan.batch != 1 || plan.dtype != DType::f32 || !blas::onednn()) return;
  // The transpose moves all of B every time (weights change every training step). A product split into
  // column blocks pays for it only with enough rows to amortize it: measured with oneDNN on 2 threads,
  // 256x1024x1024 took 2.8-3.0 ms transposed against 2.4-3.3 ms untransposed plus ~0.8 ms to transpose;
  // 512x2048x2048 22.9 against 17.9 plus ~3 ms. A small product (one oneDNN call) is faster untransposed
  // even with its transpose: tiny_latency's 64x64x64 linear layer 6.4 us against 7.6 us transposed.
  if (plan.m < 512 && splitsByColumns(plan)) return;
  plan.transposeB = true;
  plan.columnElements = plan.k * plan.n;
}

namespace {

/// `b` (rows x cols, row-major) into `t` (cols x rows): bands of rows on the thread pool's threads.
void transposeInto(const float* b, int64_t rows, int64_t cols, float* t) {
  constexpr int64_t kBand = 64;
  ThreadPool::global().parallelFor(
      (rows + kBand - 1) / kBand,
      [&](int64_t begin, int64_t end) {
        int64_t r0 = begin * kBand, r1 = std::min(rows, end * kBand);
        blas::transpose(b + r0 * cols, r1 - r0, cols, t + r0, rows);
      },
      rows * cols >= 65536);
}

}  // namespace

void runGemm(const GemmPlan& p, char* const* operands, char* product, char* columns) {
  if (p.conv && p.conv->kind == ConvGeometry::Transposed) {
    if (p.dtype == DType::f32) return runConvTransposeAs<float>(p, operands, product, columns);
    if (p.dtype == DType::bf16) return runConvTransposeBf16(p, operands, product, columns);
    return runConvTransposeAs<double>(p, operands, product, columns);
  }
  // bf16 (oneDNN's bf16 GEMM) moves its layouts as 16-bit words (0 is +0.0); the transposed convolution, whose
  // col2im adds, sums in f32 (runConvTransposeBf16).
  if (p.conv && p.conv->kind == ConvGeometry::WeightGrad) {
    if (p.dtype == DType::f32) return runWeightGradAs<float>(p, operands, product, columns);
    if (p.dtype == DType::bf16) return runWeightGradAs<uint16_t>(p, operands, product, columns);
    return runWeightGradAs<double>(p, operands, product, columns);
  }
  if (p.conv) {
    if (p.dtype == DType::f32) return runConvAs<float>(p, operands, product, columns);
    if (p.dtype == DType::bf16) return runConvAs<uint16_t>(p, operands, product, columns);
    return runConvAs<double>(p, operands, product, columns);
  }
  size_t bytes = dtypeSize(p.dtype);
  const char* a = operands[p.operandA];
  const char* b = operands[p.operandB];
  bool transB = p.transB;
  if (p.transposeB) {
    transposeInto(reinterpret_cast<const float*>(b), p.n, p.k, reinterpret_cast<float*>(columns));
    b = columns;
    transB = false;
  }
  int64_t lda = p.transA ? p.m : p.k;
  int64_t ldb = transB ? p.k : p.n;
  if (splitsByColumns(p)) {
    // Column blocks of C claimed dynamically by the pool's threads, each one single-threaded product
    // (oneDNN runs one thread inside a parallel region): as fast as oneDNN's own threads on a quiet
    // machine, and a thread whose core another process holds delays only its last small block,
    // where oneDNN's static split makes every product wait for its slow half.
    const int64_t width = columnBlockWidth(p);
    const int64_t blocks = (p.n + width - 1) / width;
    ThreadPool::global().parallelFor(blocks, [&](int64_t begin, int64_t end) {
      const int64_t j0 = begin * width, j1 = std::min(p.n, end * width);
      const float* bBlock = reinterpret_cast<const float*>(b) + (transB ? j0 * p.k : j0);
      blas::gemm(p.dtype, p.transA, transB, p.m, j1 - j0, p.k, p.alpha, a, lda, bBlock, ldb,
                 reinterpret_cast<float*>(product) + j0, p.n);
    });
    return;
  }
  for (int64_t i = 0; i < p.batch; ++i) {
    blas::gemm(p.dtype, p.transA, transB, p.m, p.n, p.k, p.alpha, a + i * p.strideA * bytes,
               lda, b + i * p.strideB * bytes, ldb, product + i * p.strideC * bytes, p.n);
  }
}

}  // namespace smelt

// Linear algebra ops: matmul (numpy matmul with batch broadcasting) and gemm (ONNX Gemm).
//   %0 = matmul(%a, %b) : f32[2,5,3,2]                       a: f32[2,1,3,4], b: f32[5,4,2]
//   %1 = gemm(%a, %b, %c) {alpha = 0.5, trans_b = 1} : f32[2,4]   a: f32[2,3], b: f32[4,3], c: f32[4]
#include "ir/builder.h"
#include "ir/ops/lower_helpers.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

#include <cmath>
#include <optional>

namespace smelt {

namespace {

using namespace ops;

// Matrix operands as the reference loops read them: floats as doubles, integers as their 64-bit bit
// pattern (sign-extended for signed, zero-extended for unsigned) so products and sums wrap exactly.
struct Operand {
  std::vector<double> f;
  std::vector<uint64_t> u;
};

Operand load(const Tensor& t) {
  Operand o;
  if (isFloat(t.dtype())) {
    o.f = t.toDoubles();
  } else {
    o.u.resize(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) o.u[i] = static_cast<uint64_t>(t.getInt(i));
  }
  return o;
}

// An integer's value as a double, reading the 64-bit pattern as signed or unsigned per dtype.
double intAsDouble(uint64_t bits, DType dtype) {
  return isUnsignedInt(dtype) ? static_cast<double>(bits) : static_cast<double>(static_cast<int64_t>(bits));
}

// alpha/beta as an exact integer when they are one, so integer gemm with integral scales stays exact.
std::optional<int64_t> exactInt(double v) {
  if (std::trunc(v) != v || std::fabs(v) >= 9.2e18) return std::nullopt;
  return static_cast<int64_t>(v);
}

// --- matmul -----------------------------------------------------------------------------------------

// The [M,K] / [K,N] view of a matmul operand after numpy's rank-1 promotion.
struct MatmulDims {
  Shape aBatch, bBatch, batch;
  int64_t m = 1, k = 1, n = 1;
};

Expected<MatmulDims> matmulDims(const OpCall& call) {
  const TensorType& a = call.operand(0);
  const TensorType& b = call.operand(1);
  for (size_t i = 0; i < 2; ++i) {
    if (call.operand(i).rank() == 0) {
      return call.error("{} must have rank >= 1, got {}", operandName(call, i), call.operand(i).toString());
    }
  }
  MatmulDims d;
  // A vector a is a row [1,K]; a vector b is a column [K,1]. The added dims are dropped from the result.
  d.k = a.shape.back();
  if (a.rank() >= 2) {
    d.m = a.shape[a.rank() - 2];
    d.aBatch.assign(a.shape.begin(), a.shape.end() - 2);
  }
  int64_t bk = b.rank() >= 2 ? b.shape[b.rank() - 2] : b.shape[0];
  if (b.rank() >= 2) {
    d.n = b.shape.back();
    d.bBatch.assign(b.shape.begin(), b.shape.end() - 2);
  }
  if (!extentsUnify(bk, d.k)) {
    std::string expected = b.rank() == 1 ? fmt::format("[{}]", d.k)
                           : b.rank() == 2 ? fmt::format("[{},N]", d.k)
                                           : fmt::format("[...,{},N]", d.k);
    return call.error("{} must be {} to match {} {}, got {}", operandName(call, 1), expected, operandName(call, 0),
                      a.toString(), b.toString());
  }
  auto batch = broadcastShapes(d.aBatch, d.bBatch);
  if (!batch) {
    return call.error("batch dimensions of {} {} and {} {} do not broadcast", operandName(call, 0), a.toString(),
                      operandName(call, 1), b.toString());
  }
  d.batch = *batch;
  return d;
}

Expected<std::vector<TensorType>> inferMatmul(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kNumeric));
  SMELT_CHECK_OK(expectSameDType(call, 0, 1));
  SMELT_TRY(MatmulDims d, matmulDims(call));
  Shape shape = d.batch;
  if (call.operand(0).rank() >= 2) shape.push_back(d.m);
  if (call.operand(1).rank() >= 2) shape.push_back(d.n);
  SMELT_CHECK_OK(expectSaneShape(call, shape));
  return single(TensorType{call.operand(0).dtype, shape});
}

Expected<std::vector<Tensor>> referenceMatmul(const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(MatmulDims d, matmulDims(call));
  Tensor out(call.results()[0]);
  bool floats = isFloat(out.dtype());
  Operand a = load(in[0]);
  Operand b = load(in[1]);
  // Which matrix of a and of b each result batch element reads (numpy broadcasting of batch dims).
  std::vector<int64_t> aMap = broadcastIndexMap(d.aBatch, d.batch);
  std::vector<int64_t> bMap = broadcastIndexMap(d.bBatch, d.batch);
  int64_t outIndex = 0;
  for (size_t batch = 0; batch < aMap.size(); ++batch) {
    int64_t aBase = aMap[batch] * d.m * d.k;
    int64_t bBase = bMap[batch] * d.k * d.n;
    for (int64_t i = 0; i < d.m; ++i) {
      for (int64_t j = 0; j < d.n; ++j, ++outIndex) {
        if (floats) {
          double acc = 0.0;
          for (int64_t p = 0; p < d.k; ++p) acc += a.f[aBase + i * d.k + p] * b.f[bBase + p * d.n + j];
          out.setDouble(outIndex, acc);
        } else {
          uint64_t acc = 0;  // wraps modulo 2^64; the store wraps again to the dtype's width
          for (int64_t p = 0; p < d.k; ++p) acc += a.u[aBase + i * d.k + p] * b.u[bBase + p * d.n + j];
          out.setInt(outIndex, static_cast<int64_t>(acc));
        }
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// --- gemm ---------------------------------------------------------------------------------------------

struct GemmDims {
  int64_t m, k, n;
  bool transA, transB;
};

Expected<GemmDims> gemmDims(const OpCall& call) {
  SMELT_CHECK_OK(expectFlag(call, "trans_a"));
  SMELT_CHECK_OK(expectFlag(call, "trans_b"));
  SMELT_CHECK_OK(expectRank(call, 0, 2));
  SMELT_CHECK_OK(expectRank(call, 1, 2));
  GemmDims d;
  d.transA = call.getInt("trans_a") == 1;
  d.transB = call.getInt("trans_b") == 1;
  const Shape& a = call.operand(0).shape;
  const Shape& b = call.operand(1).shape;
  d.m = d.transA ? a[1] : a[0];
  d.k = d.transA ? a[0] : a[1];
  int64_t bk = d.transB ? b[1] : b[0];
  d.n = d.transB ? b[0] : b[1];
  if (!extentsUnify(bk, d.k)) {
    return call.error("{} must be {} to match {} {}{}, got {}", operandName(call, 1),
                      d.transB ? fmt::format("[N,{}]", d.k) : fmt::format("[{},N]", d.k), operandName(call, 0),
                      call.operand(0).toString(), d.transA ? " (transposed)" : "", call.operand(1).toString());
  }
  return d;
}

Expected<std::vector<TensorType>> inferGemm(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kNumeric));
  SMELT_CHECK_OK(expectSameDType(call, 0, 1));
  SMELT_TRY(GemmDims d, gemmDims(call));
  Shape shape{d.m, d.n};
  if (call.numOperands() == 3) {
    SMELT_CHECK_OK(expectSameDType(call, 0, 2));
    // c broadcasts one way only: it must stretch to [M,N] without changing the result shape.
    const TensorType& c = call.operand(2);
    auto b = broadcastShapes(c.shape, shape);
    if (c.rank() > 2 || !b || *b != shape) {
      return call.error("{} must broadcast to [{},{}], got {}", operandName(call, 2), d.m, d.n, c.toString());
    }
  }
  return single(TensorType{call.operand(0).dtype, shape});
}

Expected<std::vector<Tensor>> referenceGemm(const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(GemmDims d, gemmDims(call));
  Tensor out(call.results()[0]);
  DType dtype = out.dtype();
  bool floats = isFloat(dtype);
  double alpha = call.getFloat("alpha");
  double beta = call.getFloat("beta");
  std::optional<int64_t> alphaInt = exactInt(alpha);
  std::optional<int64_t> betaInt = exactInt(beta);
  Operand a = load(in[0]);
  Operand b = load(in[1]);
  bool hasC = in.size() == 3;
  Operand c = hasC ? load(in[2]) : Operand{};
  std::vector<int64_t> cMap = hasC ? broadcastIndexMap(in[2].shape(), out.shape()) : std::vector<int64_t>{};
  // Element (row, col) of op(a) and op(b), as flat indices into the stored matrices.
  auto aAt = [&](int64_t i, int64_t p) { return d.transA ? p * d.m + i : i * d.k + p; };
  auto bAt = [&](int64_t p, int64_t j) { return d.transB ? j * d.k + p : p * d.n + j; };
  for (int64_t i = 0; i < d.m; ++i) {
    for (int64_t j = 0; j < d.n; ++j) {
      int64_t o = i * d.n + j;
      if (floats) {
        double acc = 0.0;
        for (int64_t p = 0; p < d.k; ++p) acc += a.f[aAt(i, p)] * b.f[bAt(p, j)];
        double v = alpha * acc + (hasC ? beta * c.f[cMap[o]] : 0.0);
        out.setDouble(o, v);
        continue;
      }
      uint64_t acc = 0;
      for (int64_t p = 0; p < d.k; ++p) acc += a.u[aAt(i, p)] * b.u[bAt(p, j)];
      if (alphaInt && (!hasC || betaInt)) {
        // Integral scales: exact, wrapping like every integer op.
        uint64_t v = acc * static_cast<uint64_t>(*alphaInt);
        if (hasC) v += c.u[cMap[o]] * static_cast<uint64_t>(*betaInt);
        out.setInt(o, static_cast<int64_t>(v));
      } else {
        // Fractional scales on integers: through double, then truncated and wrapped like cast.
        double v = alpha * intAsDouble(acc, dtype) + (hasC ? beta * intAsDouble(c.u[cMap[o]], dtype) : 0.0);
        out.setDouble(o, v);
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// --- kernel lowerings (ir/lowering.h): one dot product per output element -------------------------

/// The sum over p in [0, k) of a(p) * b(p) in `acc` (operands converted to it first), in the
/// reference's order. Integers wrap at every step, which gives the reference's sum modulo 2^bits.
KValue dotProduct(KernelEmitter& e, int64_t k, DType acc, const std::function<KValue(KValue)>& a,
                  const std::function<KValue(KValue)>& b) {
  return e.loop(k, {e.zero(acc)}, [&](KValue p, std::span<const KValue> sum) {
    return std::vector<KValue>{e.add(sum[0], e.mul(e.cast(a(p), acc), e.cast(b(p), acc)))};
  })[0];
}

// matmul: the result index is batch + [i if a is a matrix] + [j if b is a matrix]; each operand reads
// its own broadcast batch index. Floats accumulate in f32 for f16/bf16, else in the dtype (the
// reference: double); integers in the dtype, wrapping.
Expected<std::vector<KValue>> lowerMatmul(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  SMELT_TRY(MatmulDims d, matmulDims(ctx.call()));
  bool aMatrix = ctx.call().operand(0).rank() >= 2, bMatrix = ctx.call().operand(1).rank() >= 2;
  std::span<const KValue> out = ctx.index();
  std::span<const KValue> batch = out.first(d.batch.size());
  KValue i = aMatrix ? out[d.batch.size()] : e.index(0);
  KValue j = bMatrix ? out.back() : e.index(0);
  std::vector<KValue> aAt = broadcastIndex(e, batch, d.aBatch, &d.batch);
  std::vector<KValue> bAt = broadcastIndex(e, batch, d.bBatch, &d.batch);
  if (aMatrix) aAt.push_back(i);
  aAt.push_back({});
  bAt.push_back({});
  if (bMatrix) bAt.push_back(j);
  size_t aK = aAt.size() - 1, bK = d.bBatch.size();
  DType acc = accumulatorType(ctx.call().operand(0).dtype);
  return std::vector<KValue>{dotProduct(
      e, d.k, acc,
      [&](KValue p) {
        aAt[aK] = p;
        return ctx.operand(0, aAt);
      },
      [&](KValue p) {
        bAt[bK] = p;
        return ctx.operand(1, bAt);
      })};
}

// gemm as the reference: floats compute alpha * (a @ b) + beta * c in f32 for f16/bf16/f32 and f64 for
// f64 (alpha and beta of 1 are exact and skipped; without c, + 0 as the reference, so -0 becomes +0).
// Integers with integral alpha and beta (beta only with c) stay in the dtype, wrapping. Otherwise the
// reference's integer path goes through double from the *64-bit* sum (not wrapped to the dtype), so
// the kernel sums in i64 (u64 for unsigned) too, scales in f64 and converts back as cast does.
Expected<std::vector<KValue>> lowerGemm(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  const OpCall& call = ctx.call();
  SMELT_TRY(GemmDims d, gemmDims(call));
  DType dtype = call.operand(0).dtype;
  bool hasC = call.numOperands() == 3;
  double alpha = call.getFloat("alpha"), beta = call.getFloat("beta");
  KValue i = ctx.index()[0], j = ctx.index()[1];
  auto a = [&](KValue p) {
    KValue at[2] = {d.transA ? p : i, d.transA ? i : p};
    return ctx.operand(0, at);
  };
  auto b = [&](KValue p) {
    KValue at[2] = {d.transB ? j : p, d.transB ? p : j};
    return ctx.operand(1, at);
  };
  auto c = [&] {
    std::vector<KValue> at = broadcastIndex(e, ctx.index(), call.operand(2).shape, &call.results()[0].shape);
    return ctx.operand(2, at);
  };
  std::optional<int64_t> alphaInt = exactInt(alpha), betaInt = exactInt(beta);
  if (!isFloat(dtype) && alphaInt && (!hasC || betaInt)) {
    KValue v = e.mul(dotProduct(e, d.k, dtype, a, b), e.intConstant(*alphaInt, dtype));
    if (hasC) v = e.add(v, e.mul(c(), e.intConstant(*betaInt, dtype)));
    return std::vector<KValue>{v};
  }
  DType acc = isFloat(dtype) ? accumulatorType(dtype) : isUnsignedInt(dtype) ? DType::u64 : DType::i64;
  DType scale = isFloat(dtype) ? acc : DType::f64;
  KValue v = e.cast(dotProduct(e, d.k, acc, a, b), scale);
  if (alpha != 1.0) v = e.mul(e.constant(alpha, scale), v);
  KValue term = e.zero(scale);
  if (hasC) term = beta == 1.0 ? e.cast(c(), scale) : e.mul(e.constant(beta, scale), e.cast(c(), scale));
  return std::vector<KValue>{e.cast(e.add(v, term), dtype)};
}

// --- gradients ---------------------------------------------------------------------------------------

// v with its last two dims swapped.
Value* transposeLast2(Builder& b, Value* v) {
  if (!v) return nullptr;
  std::vector<int64_t> perm;
  int64_t rank = v->type().rank();
  for (int64_t i = 0; i < rank; ++i) perm.push_back(i);
  std::swap(perm[rank - 2], perm[rank - 1]);
  return b.transpose(v, perm);
}

// With a and b promoted to matrices (a vector a is [1,K], b is [K,1]) and dy reshaped to match:
// da = dy @ b^T and db = a^T @ dy, summed over the batch dims broadcasting added or stretched, then
// reshaped back to the operands' shapes.
std::vector<Value*> matmulGradient(Builder& b, const GradientContext& c) {
  Value* a = c.x(0);
  Value* bm = c.x(1);
  const Shape& as = a->shape();
  const Shape& bs = bm->shape();
  Value* a2 = as.size() == 1 ? b.reshape(a, {1, as[0]}) : a;
  Value* b2 = bs.size() == 1 ? b.reshape(bm, {bs[0], 1}) : bm;
  const Shape& ys = c.y()->shape();
  size_t matrixDims = (as.size() >= 2 ? 1 : 0) + (bs.size() >= 2 ? 1 : 0);
  Shape y2(ys.begin(), ys.end() - static_cast<std::ptrdiff_t>(matrixDims));
  y2.push_back(as.size() >= 2 ? as[as.size() - 2] : 1);
  y2.push_back(bs.size() >= 2 ? bs.back() : 1);
  Value* dy = b.reshape(c.dy(), y2);
  Value* da = b.op("matmul", {dy, transposeLast2(b, b2)});
  Value* db = b.op("matmul", {transposeLast2(b, a2), dy});
  if (!b.ok()) return {nullptr, nullptr};
  return {b.reshape(b.sumToShape(da, a2->shape()), as), b.reshape(b.sumToShape(db, b2->shape()), bs)};
}

// y = alpha * op(a) @ op(b) + beta * c with G = dy: d op(a) = alpha * G @ op(b)^T and
// d op(b) = alpha * op(a)^T @ G, each written as one gemm whose transposes undo op(); dc = beta * G
// summed back to c's shape.
std::vector<Value*> gemmGradient(Builder& b, const GradientContext& c) {
  Value* a = c.x(0);
  Value* bm = c.x(1);
  Value* g = c.dy();
  double alpha = c.getFloat("alpha");
  int64_t ta = c.getInt("trans_a");
  int64_t tb = c.getInt("trans_b");
  auto gemm = [&](Value* lhs, Value* rhs, int64_t transLhs, int64_t transRhs) {
    return b.op("gemm", {lhs, rhs}, {{"alpha", alpha}, {"trans_a", transLhs}, {"trans_b", transRhs}});
  };
  // trans_a = 0: da = G @ op(b)^T.  trans_a = 1: da = (G @ op(b)^T)^T = op(b) @ G^T.
  Value* da = ta == 0 ? gemm(g, bm, 0, 1 - tb) : gemm(bm, g, tb, 1);
  // trans_b = 0: db = op(a)^T @ G.  trans_b = 1: db = G^T @ op(a).
  Value* db = tb == 0 ? gemm(a, g, 1 - ta, 0) : gemm(g, a, 1, ta);
  std::vector<Value*> grads{da, db};
  if (c.numOperands() == 3) {
    double beta = c.getFloat("beta");
    grads.push_back(b.sumToShape(beta == 1.0 ? g : b.scale(g, beta), c.x(2)->shape()));
  }
  return grads;
}

}  // namespace

void registerLinalgOps(OpRegistry& registry) {
  registry.add(OpDef{
      .name = "matmul",
      .summary = "Matrix product with numpy semantics: rank-1 promotion, broadcast batch dims.",
      .operands = {{"a"}, {"b"}},
      .attrs = {},
      .fusion = FusionKind::Opaque,
      .product = ProductFacet{.kind = ProductFacet::Kind::Matmul, .addend = -1},
      .dtypes = dtypes::kNumeric,
      .infer = inferMatmul,
      .symbolicDims = true,
      .reference = referenceMatmul,
      .example = R"(graph @t(%a: $T[2,1,3,4], %b: $T[5,4,2], %v: $T[4], %m: $T[4,3]) {
  %0 = matmul(%a, %b) : $T[2,5,3,2]
  %1 = matmul(%v, %b) : $T[5,2]
  %2 = matmul(%a, %v) : $T[2,1,3]
  %3 = matmul(%v, %v) : $T[]
  %4 = matmul(%m, %a) : $T[2,1,4,4]
  return r = %0, vb = %1, av = %2, vv = %3, ma = %4
})",
      .gradient = matmulGradient,
      .lower = lowerMatmul,
      // 2 per multiply-add: each result element is a K-long dot product (K = a's last dim).
      .flops = [](const OpCall& c) { return 2 * c.results()[0].numel() * c.operand(0).shape.back(); },
  });
  registry.add(OpDef{
      .name = "gemm",
      .summary = "alpha * op(a) @ op(b) + beta * c, op = optional transpose, c broadcast to [M,N].",
      .operands = {{"a"}, {"b"}, {"c", Arity::Optional}},
      .attrs = {{"alpha", AttrKind::Float, Attribute{1.0}},
                {"beta", AttrKind::Float, Attribute{1.0}},
                {"trans_a", AttrKind::Int, Attribute{int64_t{0}}},
                {"trans_b", AttrKind::Int, Attribute{int64_t{0}}}},
      .fusion = FusionKind::Opaque,
      .product = ProductFacet{.kind = ProductFacet::Kind::Gemm, .addend = 2},
      .dtypes = dtypes::kNumeric,
      .infer = inferGemm,
      .symbolicDims = true,
      .reference = referenceGemm,
      .example = R"(graph @t(%a: $T[3,2], %b: $T[4,3], %c: $T[4], %p: $T[2,3], %q: $T[3,4], %s: $T[], %col: $T[2,1]) {
  %0 = gemm(%a, %b, %c) {alpha = 0.5, beta = 2.0, trans_a = 1, trans_b = 1} : $T[2,4]
  %1 = gemm(%p, %q) : $T[2,4]
  %2 = gemm(%a, %q, %s) {alpha = 2.0, trans_a = 1} : $T[2,4]
  %3 = gemm(%p, %b, %col) {beta = -1.0, trans_b = 1} : $T[2,4]
  return r = %0, pq = %1, aq = %2, pb = %3
})",
      .gradient = gemmGradient,
      .lower = lowerGemm,
      // 2*M*N*K for the product, plus 3*M*N for alpha, beta and the add.
      .flops = [](const OpCall& c) {
        int64_t k = c.operand(0).shape[c.getInt("trans_a") ? 0 : 1];
        return c.results()[0].numel() * (2 * k + 3);
      },
  });
}

}  // namespace smelt

// Random ops: dropout, drawing its mask from a counter-based stream (splitmix64 of seed and element
// index) so every backend, and every run, draws the same mask for the same seed. An optional i64
// scalar operand is added to the seed, so a training step compiled once draws a new mask per step.
//   %y, %mask = dropout(%x) {ratio = 0.1, seed = 42} : f32[8,16], bool[8,16]
//   %y, %mask = dropout(%x, %step) {ratio = 0.1, seed = 42} : f32[8,16], bool[8,16]
#include "ir/builder.h"
#include "ir/ops/lower_helpers.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

#include <cmath>

namespace smelt {

namespace {
using namespace ops;

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// Vigna's splitmix64 finalizer: a bijection on 64 bits that mixes consecutive counters well.
uint64_t splitmix64(uint64_t z) {
  z += kGolden;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// docs/ops.md: u = (splitmix64(seed * golden + i) >> 11) * 2^-53, uniform in [0, 1) with 53 bits;
// the element is kept when u >= ratio. Arithmetic wraps modulo 2^64 (negative seeds included).
bool keepElement(uint64_t seed, uint64_t index, double ratio) {
  double u = static_cast<double>(splitmix64(seed * kGolden + index) >> 11) * 0x1p-53;
  return u >= ratio;
}

Expected<std::vector<TensorType>> inferDropout(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kFloat));
  double ratio = call.getFloat("ratio");
  // ratio = 1 drops everything (y = 0) rather than dividing by zero; NaN fails the range check.
  if (!(ratio >= 0 && ratio <= 1)) return call.error("attribute 'ratio' must be in [0, 1], got {}", ratio);
  SMELT_CHECK_OK(expectFlag(call, "training"));
  if (call.numOperands() > 1 && !(call.operand(1) == TensorType{DType::i64, {}})) {
    return call.error("operand 'seed_offset' must be an i64 scalar, got {}", call.operand(1).toString());
  }
  const TensorType& x = call.operand(0);
  return std::vector<TensorType>{x, TensorType{DType::boolean, x.shape}};
}

Expected<std::vector<Tensor>> referenceDropout(const OpCall& call, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  double ratio = call.getFloat("ratio");
  auto seed = static_cast<uint64_t>(call.getInt("seed"));
  if (in.size() > 1) seed += static_cast<uint64_t>(in[1].getInt(0));
  bool training = call.getInt("training") == 1;
  Tensor y(call.results()[0]);
  Tensor mask(call.results()[1]);
  bool* keep = mask.data<bool>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    keep[i] = !training || keepElement(seed, static_cast<uint64_t>(i), ratio);
    if (!training) {
      // Inference is the identity: copy the value without a round trip through the scale.
      y.setDouble(i, x.getDouble(i));
    } else {
      y.setDouble(i, keep[i] ? x.getDouble(i) / (1 - ratio) : 0.0);
    }
  }
  return std::vector<Tensor>{std::move(y), std::move(mask)};
}

// dx = where(mask, dy / (1 - ratio), 0): the forward's scale on the kept elements. Inference passes dy
// through; ratio = 1 keeps nothing, so the gradient is zero (not 0 * inf). The mask takes no gradient.
std::vector<Value*> gradientDropout(Builder& b, const GradientContext& c) {
  Value* dy = c.dy(0);
  std::vector<Value*> grads(c.numOperands(), nullptr);  // the seed offset is an integer: no gradient
  if (!dy) return grads;
  double ratio = c.getFloat("ratio");
  if (c.getInt("training") != 1) grads[0] = dy;
  else if (ratio == 1) grads[0] = b.zerosLike(dy);
  else grads[0] = b.where(c.y(1), b.div(dy, b.scalarLike(1 - ratio, dy)), b.scalarLike(0.0, dy));
  return grads;
}

// The mask and scaling of referenceDropout, element by element: splitmix64 in u64 arithmetic on the
// element's row-major index.
Expected<std::vector<KValue>> lowerDropout(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  KValue x = ctx.operandAt(0);
  if (ctx.call().getInt("training") != 1) return std::vector<KValue>{x, e.one(DType::boolean)};
  double ratio = ctx.call().getFloat("ratio");
  auto u64 = [&](uint64_t v) { return e.intConstant(static_cast<int64_t>(v), DType::u64); };
  KValue index = e.cast(linearOffset(e, ctx.index(), ctx.call().results()[0].shape), DType::u64);
  KValue seed = u64(static_cast<uint64_t>(ctx.call().getInt("seed")));
  if (ctx.call().numOperands() > 1) seed = e.add(seed, e.cast(ctx.operand(1, {}), DType::u64));
  KValue z = e.add(e.add(e.mul(seed, u64(kGolden)), index), u64(kGolden));
  z = e.mul(e.binary(KBinary::Xor, z, e.binary(KBinary::Shr, z, u64(30))), u64(0xBF58476D1CE4E5B9ull));
  z = e.mul(e.binary(KBinary::Xor, z, e.binary(KBinary::Shr, z, u64(27))), u64(0x94D049BB133111EBull));
  z = e.binary(KBinary::Xor, z, e.binary(KBinary::Shr, z, u64(31)));
  KValue u = e.mul(e.cast(e.binary(KBinary::Shr, z, u64(11)), DType::f64), e.constant(0x1p-53, DType::f64));
  KValue keep = e.ge(u, e.constant(ratio, DType::f64));
  KValue scaled = e.div(x, e.constant(1 - ratio, x.dtype));
  return std::vector<KValue>{e.select(keep, scaled, e.zero(x.dtype)), keep};
}

}  // namespace

void registerRandomOps(OpRegistry& registry) {
  registry.add(OpDef{
      .name = "dropout",
      .summary = "Zeroes elements with probability ratio and scales the rest by 1/(1-ratio); also returns the mask.",
      .operands = {{"x"}, {"seed_offset", Arity::Optional}},
      .attrs = {{"ratio", AttrKind::Float, Attribute{0.5}},
                {"seed", AttrKind::Int, Attribute{int64_t{0}}},
                {"training", AttrKind::Int, Attribute{int64_t{1}}}},
      .fusion = FusionKind::Elementwise,
      .dtypes = dtypes::kFloat,
      .infer = inferDropout,
      .symbolicDims = true,
      .reference = referenceDropout,
      .example = R"(graph @t(%x: $T[4,8], %step: i64[]) {
  %0, %1 = dropout(%x) {ratio = 0.25, seed = 7} : $T[4,8], bool[4,8]
  %2, %3 = dropout(%x) {training = 0} : $T[4,8], bool[4,8]
  %4, %5 = dropout(%x) {ratio = 1, seed = 3} : $T[4,8], bool[4,8]
  %6, %7 = dropout(%x, %step) {ratio = 0.5, seed = 7} : $T[4,8], bool[4,8]
  return y = %0, mask = %1, z = %2, all = %3, none = %4, stepped = %6, stepped_mask = %7
})",
      .gradient = gradientDropout,
      .lower = lowerDropout,
  });
}

}  // namespace smelt

// Unary elementwise ops: one table row each (see elementwise.h).
#include "ir/ops/elementwise.h"
#include "ir/ops/register_ops.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace smelt {

namespace {
using namespace ops;

// A row whose function ignores attributes.
std::function<FloatFn1(const OpCall&)> plain(double (*f)(double)) {
  return [f](const OpCall&) -> FloatFn1 { return f; };
}

// -x with two's-complement wrap: negating INT64_MIN in int64 would be undefined behaviour.
int64_t wrapNeg(int64_t x) { return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(x)); }

// 1/(1+e^-x) without overflow: e^-x is only formed for x >= 0, where it is at most 1.
double stableSigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

// log(1+e^x) = max(x,0) + log1p(e^-|x|): no overflow for large x, no lost digits for very negative x.
double stableSoftplus(double x) {
  if (std::isnan(x)) return x;
  return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)));
}

double geluErf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }

double geluTanh(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// elu's negative branch; expm1 keeps precision for x near 0.
double eluOf(double x, double alpha) { return x > 0 ? x : alpha * std::expm1(x); }

Status validateGelu(const OpCall& call) {
  const std::string& mode = call.getString("approximate");
  if (mode == "none" || mode == "tanh") return Status::success();
  return call.error("attribute 'approximate' must be \"none\" or \"tanh\", got \"{}\"", mode);
}


// Kernel lowerings shared by several rows (ir/lowering.h), following each row's reference exactly.
// sign: NaN and signed zeros pass through; unsigned is x != 0.
KValue lowerSign(KernelEmitter& e, KValue x, const OpCall&) {
  KValue zero = e.zero(x.dtype);
  KValue one = e.one(x.dtype);
  if (isUnsignedInt(x.dtype)) return e.select(e.binary(KBinary::Ne, x, zero), one, zero);
  KValue minusOne = e.intConstant(-1, x.dtype);
  KValue rest = isFloat(x.dtype) ? x : zero;
  return e.select(e.binary(KBinary::Gt, x, zero), one, e.select(e.lt(x, zero), minusOne, rest));
}

// relu keeps NaN; -0 becomes +0 as in the reference (x > 0 fails, 0 is stored).
KValue lowerRelu(KernelEmitter& e, KValue x, const OpCall&) {
  KValue zero = e.zero(x.dtype);
  KValue positive = e.binary(KBinary::Gt, x, zero);
  if (isFloat(x.dtype)) positive = e.binary(KBinary::Or, positive, e.unary(KUnary::IsNan, x));
  return e.select(positive, x, zero);
}

KValue lowerElu(KernelEmitter& e, KValue x, double alpha) {
  KValue negative = e.mul(e.constant(alpha, x.dtype), e.unary(KUnary::Expm1, x));
  return e.select(e.binary(KBinary::Gt, x, e.zero(x.dtype)), x, negative);
}

KValue lowerGelu(KernelEmitter& e, KValue x, const OpCall& call) {
  DType t = x.dtype;
  KValue half = e.constant(0.5, t);
  KValue one = e.one(t);
  if (call.getString("approximate") == "tanh") {
    KValue cube = e.mul(e.mul(x, x), x);
    KValue u = e.mul(e.constant(std::sqrt(2.0 / std::numbers::pi), t), e.add(x, e.mul(e.constant(0.044715, t), cube)));
    return e.mul(e.mul(half, x), e.add(one, e.unary(KUnary::Tanh, u)));
  }
  KValue scaled = e.mul(x, e.constant(1.0 / std::numbers::sqrt2, t));
  return e.mul(e.mul(half, x), e.add(one, e.unary(KUnary::Erf, scaled)));
}

// max(x, 0) + log1p(e^-|x|); NaN propagates through max.
KValue lowerSoftplus(KernelEmitter& e, KValue x, const OpCall&) {
  KValue tail = e.unary(KUnary::Log1p, e.unary(KUnary::Exp, e.unary(KUnary::Neg, e.unary(KUnary::Abs, x))));
  return e.add(e.binary(KBinary::Max, x, e.zero(x.dtype)), tail);
}

const AttrSpec kAlpha001{"alpha", AttrKind::Float, 0.01};
const AttrSpec kAlpha1{"alpha", AttrKind::Float, 1.0};

// Gradient rules: dx from the operand x, the result y and the incoming gradient dy (see UnaryGradFn).
// Each uses only differentiable registry ops, so gradients of gradients work.
using V = Value*;
using Ctx = const GradientContext&;

// x <= 0 as a bool mask: the negative branch of relu, elu and selu, 0 included (PyTorch's test, so a
// NaN input takes the positive branch as there).
V nonPositive(Builder& b, V x) { return b.op("le", {x, b.scalarLike(0.0, x)}); }

// elu's and selu's gradient: dy * scale for x > 0, else dy * scale * alpha * e^x. exp only sees
// min(x, 0), so the discarded branch stays finite for large x (an inf there would turn the second-order
// gradient, which sends 0 into that branch, into NaN).
V eluGrad(Builder& b, V x, V dy, double alpha, double scale) {
  V neg = nonPositive(b, x);
  V negSlope = b.scale(b.exp(b.where(neg, x, b.scalarLike(0.0, x))), alpha * scale);
  return b.mul(dy, b.where(neg, negSlope, b.scalarLike(scale, x)));
}

// gelu (exact): x*Phi(x), so gelu'(x) = Phi(x) + x*phi(x) with the normal cdf Phi(x) = (1+erf(x/sqrt2))/2
// and density phi(x) = e^(-x^2/2)/sqrt(2pi).
V geluErfGrad(Builder& b, V x, V dy) {
  V cdf = b.scale(b.add(b.op("erf", {b.scale(x, 1.0 / std::numbers::sqrt2)}), b.scalarLike(1.0, x)), 0.5);
  V pdf = b.scale(b.exp(b.scale(b.square(x), -0.5)), 0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2);
  return b.mul(dy, b.add(cdf, b.mul(x, pdf)));
}

// gelu (tanh form): y = x/2 * (1 + t), t = tanh(u), u = k*(x + c*x^3), so
// y' = (1 + t)/2 + x/2 * (1 - t^2) * k * (1 + 3c*x^2), exactly (not the erf form's derivative).
V geluTanhGrad(Builder& b, V x, V dy) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  const double c = 0.044715;
  V x2 = b.square(x);
  V t = b.op("tanh", {b.scale(b.add(x, b.scale(b.mul(x, x2), c)), k)});
  V one = b.scalarLike(1.0, x);
  V outer = b.scale(b.add(one, t), 0.5);
  V du = b.scale(b.add(one, b.scale(x2, 3.0 * c)), 0.5 * k);
  V inner = b.mul(b.mul(x, b.sub(one, b.square(t))), du);
  return b.mul(dy, b.add(outer, inner));
}

// Example with a non-default attribute setting next to the default one.
std::string twoSettingsExample(const std::string& name, const std::string& attrs) {
  return fmt::format(R"(graph @t(%x: $T[2,3]) {{
  %0 = {0}(%x) : $T[2,3]
  %1 = {0}(%x) {{{1}}} : $T[2,3]
  return a = %0, b = %1
}})",
                     name, attrs);
}

}  // namespace

void registerUnaryOps(OpRegistry& registry) {
  const UnaryRow rows[] = {
      {.name = "neg",
       .summary = "-x",
       .dtypes = dtypes::kSignedNumeric,
       .floatFn = plain([](double x) { return -x; }),
       .intFn = wrapNeg,
       .grad = [](Builder& b, V, V, V dy, Ctx) { return b.neg(dy); },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Neg, x); }},
      {.name = "reciprocal",
       .summary = "1/x",
       .dtypes = dtypes::kFloat,
       .floatFn = plain([](double x) { return 1.0 / x; }),
       .grad = [](Builder& b, V, V y, V dy, Ctx) { return b.neg(b.mul(dy, b.square(y))); },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.div(e.one(x.dtype), x); }},  // -dy/x^2
      {.name = "sqrt",
       .summary = "sqrt(x)",
       .dtypes = dtypes::kFloat,
       .floatFn = plain([](double x) { return std::sqrt(x); }),
       // dy/(2 sqrt(x)); sqrt'(0) = inf (PyTorch).
       .grad = [](Builder& b, V, V y, V dy, Ctx) { return b.div(dy, b.scale(y, 2.0)); },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Sqrt, x); }},
      {.name = "rsqrt",
       .summary = "1/sqrt(x)",
       .dtypes = dtypes::kFloat,
       .floatFn = plain([](double x) { return 1.0 / std::sqrt(x); }),
       // -x^(-3/2)/2 = -y^3/2.
       .grad = [](Builder& b, V, V y, V dy, Ctx) { return b.scale(b.mul(dy, b.mul(y, b.square(y))), -0.5); },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Rsqrt, x); }},
      {.name = "abs",
       .summary = "|x|",
       .dtypes = dtypes::kNumeric,
       .floatFn = plain([](double x) { return std::fabs(x); }),
       .intFn = [](int64_t x) { return x < 0 ? wrapNeg(x) : x; },
       .unsignedFn = [](uint64_t x) { return x; },
       // dy*sign(x): abs'(0) = 0 (PyTorch).
       .grad = [](Builder& b, V x, V, V dy, Ctx) { return b.mul(dy, b.op("sign", {x})); },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Abs, x); }},
      // sign keeps NaN (numpy) and the sign of zero.
      {.name = "sign",
       .summary = "-1, 0 or 1",
       .dtypes = dtypes::kNumeric,
       .floatFn = plain([](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }),
       .intFn = [](int64_t x) { return int64_t{x > 0} - int64_t{x < 0}; },
       .unsignedFn = [](uint64_t x) { return uint64_t{x != 0}; },
       // Zero gradient everywhere, 0 included (PyTorch): nothing flows back.
       .grad = [](Builder&, V, V, V, Ctx) -> V { return nullptr; },
       .lower = lowerSign},
      {.name = "floor",
       .summary = "floor(x)",
       .dtypes = dtypes::kFloat,
       .floatFn = plain([](double x) { return std::floor(x); }),
       // Zero gradient, at the integers too (PyTorch): nothing flows back.
       .grad = [](Builder&, V, V, V, Ctx) -> V { return nullptr; },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Floor, x); }},
      {.name = "ceil",
       .summary = "ceil(x)",
       .dtypes = dtypes::kFloat,
       .floatFn = plain([](double x) { return std::ceil(x); }),
       // Zero gradient, at the integers too (PyTorch): nothing flows back.
       .grad = [](Builder&, V, V, V, Ctx) -> V { return nullptr; },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Ceil, x); }},
      {.name = "exp",
       .summary = "e^x",
       .dtypes = dtypes::kFloat,
       .floatFn = plain([](double x) { return std::exp(x); }),
       .grad = [](Builder& b, V, V y, V dy, Ctx) { return b.mul(dy, y); },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Exp, x); }},
      {.name = "log",
       .summary = "natural log",
       .dtypes = dtypes::kFloat,
       .floatFn = plain([](double x) { return std::log(x); }),
       .grad = [](Builder& b, V x, V, V dy, Ctx) { return b.div(dy, x); },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Log, x); }},
      {.name = "sin",
       .summary = "sin(x)",
       .dtypes = dtypes::kFloat,
       .floatFn = plain([](double x) { return std::sin(x); }),
       .grad = [](Builder& b, V x, V, V dy, Ctx) { return b.mul(dy, b.op("cos", {x})); },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Sin, x); }},
      {.name = "cos",
       .summary = "cos(x)",
       .dtypes = dtypes::kFloat,
       .floatFn = plain([](double x) { return std::cos(x); }),
       .grad = [](Builder& b, V x, V, V dy, Ctx) { return b.neg(b.mul(dy, b.op("sin", {x}))); },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Cos, x); }},
      {.name = "tan",
       .summary = "tan(x)",
       .dtypes = dtypes::kFloat,
       .floatFn = plain([](double x) { return std::tan(x); }),
       // 1/cos^2 = 1 + tan^2.
       .grad = [](Builder& b, V, V y, V dy, Ctx) { return b.mul(dy, b.add(b.scalarLike(1.0, y), b.square(y))); },
       // Scaled so |x| <= 1.25 on the tests' inputs (|x| <= 2): central differences break down near the
       // poles at +-pi/2.
       .example = R"(graph @t(%x: $T[2,3]) {
  %0 = constant() {value = dense<$T[]> [0.625]} : $T[]
  %1 = mul(%x, %0) : $T[2,3]
  %2 = tan(%1) : $T[2,3]
  return r = %2
})",
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Tan, x); }},
      {.name = "tanh",
       .summary = "tanh(x)",
       .dtypes = dtypes::kFloat,
       .floatFn = plain([](double x) { return std::tanh(x); }),
       .grad = [](Builder& b, V, V y, V dy, Ctx) { return b.mul(dy, b.sub(b.scalarLike(1.0, y), b.square(y))); },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Tanh, x); }},
      {.name = "erf",
       .summary = "the error function",
       .dtypes = dtypes::kFloat,
       .floatFn = plain([](double x) { return std::erf(x); }),
       // 2/sqrt(pi) * e^(-x^2).
       .grad = [](Builder& b, V x, V, V dy, Ctx) {
         return b.mul(dy, b.scale(b.exp(b.neg(b.square(x))), 2.0 * std::numbers::inv_sqrtpi));
       },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Erf, x); }},
      {.name = "sigmoid",
       .summary = "1/(1+e^-x)",
       .dtypes = dtypes::kFloat,
       .floatFn = plain(stableSigmoid),
       .grad = [](Builder& b, V, V y, V dy, Ctx) { return b.mul(dy, b.mul(y, b.sub(b.scalarLike(1.0, y), y))); },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Sigmoid, x); }},
      // relu keeps NaN (as PyTorch and numpy's maximum do) rather than mapping it to 0.
      {.name = "relu",
       .summary = "max(x, 0)",
       .dtypes = dtypes::kSignedNumeric,
       .floatFn = plain([](double x) { return std::isnan(x) || x > 0 ? x : 0.0; }),
       .intFn = [](int64_t x) { return x > 0 ? x : int64_t{0}; },
       // 0 where x <= 0: relu'(0) = 0 (PyTorch). Read off y (y <= 0 exactly where x <= 0; NaN passes dy
       // either way), as PyTorch's threshold_backward does: the backward then keeps relu's output,
       // which the next layer's weight gradient needs anyway, instead of its input too.
       .grad = [](Builder& b, V, V y, V dy, Ctx) { return b.where(nonPositive(b, y), b.scalarLike(0.0, dy), dy); },
       .lower = lowerRelu},
      {.name = "leaky_relu",
       .summary = "x if x >= 0 else alpha*x",
       .dtypes = dtypes::kFloat,
       .attrs = {kAlpha001},
       .floatFn = [](const OpCall& call) -> FloatFn1 {
         double alpha = call.getFloat("alpha");
         return [alpha](double x) { return x >= 0 ? x : alpha * x; };
       },
       // dy where x > 0, else alpha*dy: at 0 the negative slope (PyTorch).
       .grad = [](Builder& b, V x, V, V dy, Ctx c) {
         return b.where(b.op("gt", {x, b.scalarLike(0.0, x)}), dy, b.scale(dy, c.getFloat("alpha")));
       },
       .example = twoSettingsExample("leaky_relu", "alpha = 0.5"),
       .lower = [](KernelEmitter& e, KValue x, const OpCall& c) {
         return e.select(e.ge(x, e.zero(x.dtype)), x, e.mul(e.constant(c.getFloat("alpha"), x.dtype), x));
       }},
      {.name = "elu",
       .summary = "x if x > 0 else alpha*(e^x-1)",
       .dtypes = dtypes::kFloat,
       .attrs = {kAlpha1},
       .floatFn = [](const OpCall& call) -> FloatFn1 {
         double alpha = call.getFloat("alpha");
         return [alpha](double x) { return eluOf(x, alpha); };
       },
       // At 0 the negative branch, alpha (PyTorch).
       .grad = [](Builder& b, V x, V, V dy, Ctx c) { return eluGrad(b, x, dy, c.getFloat("alpha"), 1.0); },
       .example = twoSettingsExample("elu", "alpha = 0.5"),
       .lower = [](KernelEmitter& e, KValue x, const OpCall& c) { return lowerElu(e, x, c.getFloat("alpha")); }},
      {.name = "selu",
       .summary = "gamma*elu(x, alpha)",
       .dtypes = dtypes::kFloat,
       .attrs = {{"alpha", AttrKind::Float, 1.6732632423543772}, {"gamma", AttrKind::Float, 1.0507009873554805}},
       .floatFn = [](const OpCall& call) -> FloatFn1 {
         double alpha = call.getFloat("alpha");
         double gamma = call.getFloat("gamma");
         return [alpha, gamma](double x) { return gamma * eluOf(x, alpha); };
       },
       // At 0 the negative branch, gamma*alpha (PyTorch).
       .grad = [](Builder& b, V x, V, V dy, Ctx c) {
         return eluGrad(b, x, dy, c.getFloat("alpha"), c.getFloat("gamma"));
       },
       .example = twoSettingsExample("selu", "alpha = 0.5, gamma = 2"),
       .lower = [](KernelEmitter& e, KValue x, const OpCall& c) {
         return e.mul(e.constant(c.getFloat("gamma"), x.dtype), lowerElu(e, x, c.getFloat("alpha")));
       }},
      {.name = "gelu",
       .summary = "x*Phi(x), exact (\"none\") or the tanh approximation",
       .dtypes = dtypes::kFloat,
       .attrs = {{"approximate", AttrKind::String, std::string("none")}},
       .floatFn = [](const OpCall& call) -> FloatFn1 {
         return call.getString("approximate") == "tanh" ? geluTanh : geluErf;
       },
       .validate = validateGelu,
       .grad = [](Builder& b, V x, V, V dy, Ctx c) {
         return c.getString("approximate") == "tanh" ? geluTanhGrad(b, x, dy) : geluErfGrad(b, x, dy);
       },
       .example = twoSettingsExample("gelu", "approximate = \"tanh\""),
       .lower = lowerGelu},
      {.name = "silu",
       .summary = "x*sigmoid(x)",
       .dtypes = dtypes::kFloat,
       .floatFn = plain([](double x) { return x * stableSigmoid(x); }),
       // s*(1 + x*(1-s)) with s = sigmoid(x).
       .grad = [](Builder& b, V x, V, V dy, Ctx) {
         V s = b.op("sigmoid", {x});
         V one = b.scalarLike(1.0, x);
         return b.mul(dy, b.mul(s, b.add(one, b.mul(x, b.sub(one, s)))));
       },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.mul(x, e.unary(KUnary::Sigmoid, x)); }},
      {.name = "softplus",
       .summary = "log(1+e^x)",
       .dtypes = dtypes::kFloat,
       .floatFn = plain(stableSoftplus),
       .grad = [](Builder& b, V x, V, V dy, Ctx) { return b.mul(dy, b.op("sigmoid", {x})); },
       .lower = lowerSoftplus},
      {.name = "not",
       .summary = "logical not",
       .dtypes = dtypes::kBool,
       .floatFn = plain([](double x) { return x == 0 ? 1.0 : 0.0; }),
       .unsignedFn = [](uint64_t x) { return uint64_t{x == 0}; },
       .lower = [](KernelEmitter& e, KValue x, const OpCall&) { return e.unary(KUnary::Not, x); }},
  };
  for (const UnaryRow& row : rows) registry.add(makeUnaryOp(row));
}

}  // namespace smelt

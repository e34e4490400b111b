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

const AttrSpec kAlpha001{"alpha", AttrKind::Float, 0.01};
const AttrSpec kAlpha1{"alpha", AttrKind::Float, 1.0};

}  // namespace

void registerUnaryOps(OpRegistry& registry) {
  const UnaryRow rows[] = {
      {"neg", "-x", dtypes::kSignedNumeric, {}, plain([](double x) { return -x; }), wrapNeg},
      {"reciprocal", "1/x", dtypes::kFloat, {}, plain([](double x) { return 1.0 / x; })},
      {"sqrt", "sqrt(x)", dtypes::kFloat, {}, plain([](double x) { return std::sqrt(x); })},
      {"rsqrt", "1/sqrt(x)", dtypes::kFloat, {}, plain([](double x) { return 1.0 / std::sqrt(x); })},
      {"abs", "|x|", dtypes::kNumeric, {}, plain([](double x) { return std::fabs(x); }),
       [](int64_t x) { return x < 0 ? wrapNeg(x) : x; }, [](uint64_t x) { return x; }},
      // sign keeps NaN (numpy) and the sign of zero.
      {"sign", "-1, 0 or 1", dtypes::kNumeric, {},
       plain([](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }),
       [](int64_t x) { return int64_t{x > 0} - int64_t{x < 0}; }, [](uint64_t x) { return uint64_t{x != 0}; }},
      {"floor", "floor(x)", dtypes::kFloat, {}, plain([](double x) { return std::floor(x); })},
      {"ceil", "ceil(x)", dtypes::kFloat, {}, plain([](double x) { return std::ceil(x); })},
      {"exp", "e^x", dtypes::kFloat, {}, plain([](double x) { return std::exp(x); })},
      {"log", "natural log", dtypes::kFloat, {}, plain([](double x) { return std::log(x); })},
      {"sin", "sin(x)", dtypes::kFloat, {}, plain([](double x) { return std::sin(x); })},
      {"cos", "cos(x)", dtypes::kFloat, {}, plain([](double x) { return std::cos(x); })},
      {"tan", "tan(x)", dtypes::kFloat, {}, plain([](double x) { return std::tan(x); })},
      {"tanh", "tanh(x)", dtypes::kFloat, {}, plain([](double x) { return std::tanh(x); })},
      {"erf", "the error function", dtypes::kFloat, {}, plain([](double x) { return std::erf(x); })},
      {"sigmoid", "1/(1+e^-x)", dtypes::kFloat, {}, plain(stableSigmoid)},
      // relu keeps NaN (as PyTorch and numpy's maximum do) rather than mapping it to 0.
      {"relu", "max(x, 0)", dtypes::kSignedNumeric, {},
       plain([](double x) { return std::isnan(x) || x > 0 ? x : 0.0; }),
       [](int64_t x) { return x > 0 ? x : int64_t{0}; }},
      {"leaky_relu", "x if x >= 0 else alpha*x", dtypes::kFloat, {kAlpha001},
       [](const OpCall& call) -> FloatFn1 {
         double alpha = call.getFloat("alpha");
         return [alpha](double x) { return x >= 0 ? x : alpha * x; };
       }},
      {"elu", "x if x > 0 else alpha*(e^x-1)", dtypes::kFloat, {kAlpha1},
       [](const OpCall& call) -> FloatFn1 {
         double alpha = call.getFloat("alpha");
         return [alpha](double x) { return eluOf(x, alpha); };
       }},
      {"selu", "gamma*elu(x, alpha)", dtypes::kFloat,
       {{"alpha", AttrKind::Float, 1.6732632423543772}, {"gamma", AttrKind::Float, 1.0507009873554805}},
       [](const OpCall& call) -> FloatFn1 {
         double alpha = call.getFloat("alpha");
         double gamma = call.getFloat("gamma");
         return [alpha, gamma](double x) { return gamma * eluOf(x, alpha); };
       }},
      {.name = "gelu",
       .summary = "x*Phi(x), exact (\"none\") or the tanh approximation",
       .dtypes = dtypes::kFloat,
       .attrs = {{"approximate", AttrKind::String, std::string("none")}},
       .floatFn = [](const OpCall& call) -> FloatFn1 {
         return call.getString("approximate") == "tanh" ? geluTanh : geluErf;
       },
       .validate = validateGelu},
      {"silu", "x*sigmoid(x)", dtypes::kFloat, {}, plain([](double x) { return x * stableSigmoid(x); })},
      {"softplus", "log(1+e^x)", dtypes::kFloat, {}, plain(stableSoftplus)},
      {.name = "not",
       .summary = "logical not",
       .dtypes = dtypes::kBool,
       .floatFn = plain([](double x) { return x == 0 ? 1.0 : 0.0; }),
       .unsignedFn = [](uint64_t x) { return uint64_t{x == 0}; }},
  };
  for (const UnaryRow& row : rows) registry.add(makeUnaryOp(row));
}

}  // namespace smelt

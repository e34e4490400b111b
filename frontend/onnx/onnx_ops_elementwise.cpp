// Converters for ONNX elementwise ops: direct unary/binary rows, variadic Min/Max/Sum/Mean chains,
// Clip, Cast, Where, and cheap compositions (HardSigmoid, Mish, PRelu, Celu, IsNaN, Sinh...).
#include "frontend/onnx/onnx_context.h"
#include "frontend/onnx/onnx_tensor.h"

#include <cmath>
#include <limits>

namespace smelt::onnximport {

namespace {

// ONNX op -> smelt op, for ops that map one to one with no attributes.
constexpr std::pair<std::string_view, std::string_view> kUnary[] = {
    {"Neg", "neg"},   {"Reciprocal", "reciprocal"}, {"Sqrt", "sqrt"}, {"Abs", "abs"},   {"Sign", "sign"},
    {"Floor", "floor"}, {"Ceil", "ceil"},           {"Exp", "exp"},   {"Log", "log"},   {"Sin", "sin"},
    {"Cos", "cos"},   {"Tan", "tan"},               {"Tanh", "tanh"}, {"Sigmoid", "sigmoid"},
    {"Relu", "relu"}, {"Erf", "erf"},               {"Softplus", "softplus"}, {"Not", "not"},
};
constexpr std::pair<std::string_view, std::string_view> kBinary[] = {
    {"Add", "add"},  {"Sub", "sub"},           {"Mul", "mul"},     {"Div", "div"}, {"Equal", "eq"},
    {"Less", "lt"},  {"LessOrEqual", "le"},    {"Greater", "gt"},  {"GreaterOrEqual", "ge"},
    {"And", "and"},  {"Or", "or"},             {"Xor", "xor"},
};

std::string_view smeltName(std::string_view onnxOp) {
  for (auto [o, s] : kUnary) {
    if (o == onnxOp) return s;
  }
  for (auto [o, s] : kBinary) {
    if (o == onnxOp) return s;
  }
  return {};
}

Status unary(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * y, n.emit(smeltName(n.opType()), {x}));
  return n.setOutput(0, y);
}

Status binary(NodeContext& n) {
  SMELT_TRY(Value * a, n.input(0));
  SMELT_TRY(Value * b, n.input(1));
  SMELT_TRY(Value * y, n.emit(smeltName(n.opType()), {a, b}));
  return n.setOutput(0, y);
}

// ONNX Pow allows an exponent of another dtype; smelt's pow wants one dtype: cast the exponent.
Status pow(NodeContext& n) {
  SMELT_TRY(Value * a, n.input(0));
  SMELT_TRY(Value * b, n.input(1));
  if (b->dtype() != a->dtype()) {
    SMELT_TRY(b, n.emit("cast", {b}, {{"to", std::string(dtypeName(a->dtype()))}}));
  }
  SMELT_TRY(Value * y, n.emit("pow", {a, b}));
  return n.setOutput(0, y);
}

// Min, Max, Sum: left fold of the binary op; Mean: Sum divided by the count.
Status variadic(NodeContext& n) {
  std::string_view op = n.opType() == "Min" ? "min" : n.opType() == "Max" ? "max" : "add";
  if (n.numInputs() == 0) return makeError("needs at least one input");
  SMELT_TRY(Value * acc, n.input(0));
  for (size_t i = 1; i < n.numInputs(); ++i) {
    SMELT_TRY(Value * x, n.input(i));
    SMELT_TRY(acc, n.emit(op, {acc, x}));
  }
  if (n.opType() == "Mean" && n.numInputs() > 1) {
    SMELT_TRY(acc, n.emit("div", {acc, n.scalar(acc->dtype(), static_cast<double>(n.numInputs()))}));
  }
  return n.setOutput(0, acc);
}

Status clip(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  if (n.opset() < 11) {
    lo = n.attrFloat("min", lo);
    hi = n.attrFloat("max", hi);
  } else {
    if (n.hasInput(1)) {
      SMELT_TRY(lo, n.constScalar(1));
    }
    if (n.hasInput(2)) {
      SMELT_TRY(hi, n.constScalar(2));
    }
  }
  SMELT_TRY(Value * y, n.emit("clip", {x}, {{"min", lo}, {"max", hi}}));
  return n.setOutput(0, y);
}

Status castTo(NodeContext& n, DType to) {
  SMELT_TRY(Value * x, n.input(0));
  if (x->dtype() == to) return n.setOutput(0, x);
  SMELT_TRY(Value * y, n.emit("cast", {x}, {{"to", std::string(dtypeName(to))}}));
  return n.setOutput(0, y);
}

Status cast(NodeContext& n) {
  if (!n.hasAttr("to")) return makeError("attribute 'to' is missing");
  SMELT_TRY(DType to, dtypeFromOnnx(n.attrInt("to", 0), "attribute to"));
  return castTo(n, to);
}

Status castLike(NodeContext& n) {
  SMELT_TRY(TensorType like, n.inputType(1));
  return castTo(n, like.dtype);
}

Status where(NodeContext& n) {
  SMELT_TRY(Value * c, n.input(0));
  SMELT_TRY(Value * a, n.input(1));
  SMELT_TRY(Value * b, n.input(2));
  SMELT_TRY(Value * y, n.emit("where", {c, a, b}));
  return n.setOutput(0, y);
}

// Activations with attributes. Defaults are ONNX's (stored as float32 in ONNX, so the same here).
Status leakyRelu(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * y, n.emit("leaky_relu", {x}, {{"alpha", n.attrFloat("alpha", 0.01f)}}));
  return n.setOutput(0, y);
}

Status elu(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * y, n.emit("elu", {x}, {{"alpha", n.attrFloat("alpha", 1.0)}}));
  return n.setOutput(0, y);
}

Status selu(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  AttrMap attrs{{"alpha", n.attrFloat("alpha", 1.67326319217681884765625f)},
                {"gamma", n.attrFloat("gamma", 1.05070102214813232421875f)}};
  SMELT_TRY(Value * y, n.emit("selu", {x}, std::move(attrs)));
  return n.setOutput(0, y);
}

// max(0, min(1, alpha*x + beta)); HardSwish is x * HardSigmoid(x) with alpha 1/6, beta 0.5.
Expected<Value*> hardSigmoidOf(NodeContext& n, Value* x, double alpha, double beta) {
  SMELT_TRY(Value * ax, n.emit("mul", {x, n.scalar(x->dtype(), alpha)}));
  SMELT_TRY(Value * axb, n.emit("add", {ax, n.scalar(x->dtype(), beta)}));
  return n.emit("clip", {axb}, {{"min", 0.0}, {"max", 1.0}});
}

Status hardSigmoid(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * y, hardSigmoidOf(n, x, n.attrFloat("alpha", 0.2f), n.attrFloat("beta", 0.5f)));
  return n.setOutput(0, y);
}

Status hardSwish(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * h, hardSigmoidOf(n, x, 1.0 / 6.0, 0.5));
  SMELT_TRY(Value * y, n.emit("mul", {x, h}));
  return n.setOutput(0, y);
}

// x / (1 + |x|)
Status softsign(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * a, n.emit("abs", {x}));
  SMELT_TRY(Value * d, n.emit("add", {a, n.scalar(x->dtype(), 1.0)}));
  SMELT_TRY(Value * y, n.emit("div", {x, d}));
  return n.setOutput(0, y);
}

// x * tanh(softplus(x))
Status mish(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * s, n.emit("softplus", {x}));
  SMELT_TRY(Value * t, n.emit("tanh", {s}));
  SMELT_TRY(Value * y, n.emit("mul", {x, t}));
  return n.setOutput(0, y);
}

// x if x > alpha else 0
Status thresholdedRelu(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * keep, n.emit("gt", {x, n.scalar(x->dtype(), n.attrFloat("alpha", 1.0))}));
  SMELT_TRY(Value * y, n.emit("where", {keep, x, n.scalar(x->dtype(), 0.0)}));
  return n.setOutput(0, y);
}

// x if x >= 0 else slope * x (slope broadcasts to x)
Status prelu(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * slope, n.input(1));
  SMELT_TRY(Value * neg, n.emit("lt", {x, n.scalar(x->dtype(), 0.0)}));
  SMELT_TRY(Value * sx, n.emit("mul", {x, slope}));
  SMELT_TRY(Value * y, n.emit("where", {neg, sx, x}));
  return n.setOutput(0, y);
}

// max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
Status celu(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  double alpha = n.attrFloat("alpha", 1.0);
  DType dt = x->dtype();
  SMELT_TRY(Value * pos, n.emit("relu", {x}));
  SMELT_TRY(Value * xa, n.emit("div", {x, n.scalar(dt, alpha)}));
  SMELT_TRY(Value * e, n.emit("exp", {xa}));
  SMELT_TRY(Value * em1, n.emit("sub", {e, n.scalar(dt, 1.0)}));
  SMELT_TRY(Value * s, n.emit("mul", {em1, n.scalar(dt, alpha)}));
  SMELT_TRY(Value * negPart, n.emit("min", {s, n.scalar(dt, 0.0)}));
  SMELT_TRY(Value * y, n.emit("add", {pos, negPart}));
  return n.setOutput(0, y);
}

// x + bias if x < -lambd; x - bias if x > lambd; else 0
Status shrink(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  double lambd = n.attrFloat("lambd", 0.5);
  double bias = n.attrFloat("bias", 0.0);
  DType dt = x->dtype();
  SMELT_TRY(Value * below, n.emit("lt", {x, n.scalar(dt, -lambd)}));
  SMELT_TRY(Value * above, n.emit("gt", {x, n.scalar(dt, lambd)}));
  SMELT_TRY(Value * plus, n.emit("add", {x, n.scalar(dt, bias)}));
  SMELT_TRY(Value * minus, n.emit("sub", {x, n.scalar(dt, bias)}));
  SMELT_TRY(Value * inner, n.emit("where", {above, minus, n.scalar(dt, 0.0)}));
  SMELT_TRY(Value * y, n.emit("where", {below, plus, inner}));
  return n.setOutput(0, y);
}

// NaN is the only value unequal to itself.
Status isNaN(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * y, n.emit("ne", {x, x}));
  return n.setOutput(0, y);
}

Status isInf(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  bool pos = n.attrInt("detect_positive", 1) != 0;
  bool neg = n.attrInt("detect_negative", 1) != 0;
  double inf = std::numeric_limits<double>::infinity();
  SMELT_TRY(Value * isPos, n.emit("eq", {x, n.scalar(x->dtype(), inf)}));
  SMELT_TRY(Value * isNeg, n.emit("eq", {x, n.scalar(x->dtype(), -inf)}));
  Value* y = nullptr;
  if (pos && neg) {
    SMELT_TRY(y, n.emit("or", {isPos, isNeg}));
  } else if (pos) {
    y = isPos;
  } else if (neg) {
    y = isNeg;
  } else {
    SMELT_TRY(y, n.emit("and", {isPos, isNeg}));  // all false
  }
  return n.setOutput(0, y);
}

// sinh = (e^x - e^-x) / 2, cosh = (e^x + e^-x) / 2
Status sinhCosh(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * e, n.emit("exp", {x}));
  SMELT_TRY(Value * nx, n.emit("neg", {x}));
  SMELT_TRY(Value * en, n.emit("exp", {nx}));
  SMELT_TRY(Value * s, n.emit(n.opType() == "Sinh" ? "sub" : "add", {e, en}));
  SMELT_TRY(Value * y, n.emit("mul", {s, n.scalar(x->dtype(), 0.5)}));
  return n.setOutput(0, y);
}

// asinh = log(x + sqrt(x^2 + 1)), acosh = log(x + sqrt(x^2 - 1)), atanh = log((1 + x) / (1 - x)) / 2
Status inverseHyperbolic(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  DType dt = x->dtype();
  Value* y = nullptr;
  if (n.opType() == "Atanh") {
    SMELT_TRY(Value * num, n.emit("add", {n.scalar(dt, 1.0), x}));
    SMELT_TRY(Value * den, n.emit("sub", {n.scalar(dt, 1.0), x}));
    SMELT_TRY(Value * q, n.emit("div", {num, den}));
    SMELT_TRY(Value * l, n.emit("log", {q}));
    SMELT_TRY(y, n.emit("mul", {l, n.scalar(dt, 0.5)}));
  } else {
    SMELT_TRY(Value * sq, n.emit("mul", {x, x}));
    SMELT_TRY(Value * r, n.emit(n.opType() == "Asinh" ? "add" : "sub", {sq, n.scalar(dt, 1.0)}));
    SMELT_TRY(Value * s, n.emit("sqrt", {r}));
    SMELT_TRY(Value * t, n.emit("add", {x, s}));
    SMELT_TRY(y, n.emit("log", {t}));
  }
  return n.setOutput(0, y);
}

// Round half to even: floor(x), plus 1 when the fraction is above one half, or exactly one half and
// floor(x) is odd.
Status round(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  DType dt = x->dtype();
  SMELT_TRY(Value * f, n.emit("floor", {x}));
  SMELT_TRY(Value * frac, n.emit("sub", {x, f}));
  SMELT_TRY(Value * half, n.emit("mul", {f, n.scalar(dt, 0.5)}));
  SMELT_TRY(Value * halfFloor, n.emit("floor", {half}));
  SMELT_TRY(Value * odd, n.emit("ne", {half, halfFloor}));
  SMELT_TRY(Value * above, n.emit("gt", {frac, n.scalar(dt, 0.5)}));
  SMELT_TRY(Value * tie, n.emit("eq", {frac, n.scalar(dt, 0.5)}));
  SMELT_TRY(Value * tieOdd, n.emit("and", {tie, odd}));
  SMELT_TRY(Value * up, n.emit("or", {above, tieOdd}));
  SMELT_TRY(Value * f1, n.emit("add", {f, n.scalar(dt, 1.0)}));
  SMELT_TRY(Value * y, n.emit("where", {up, f1, f}));
  return n.setOutput(0, y);
}

// fmod = 1: x - trunc(x / y) * y (sign of x). fmod = 0 (integers): the remainder takes y's sign.
Status mod(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * yv, n.input(1));
  DType dt = x->dtype();
  bool fmod = n.attrInt("fmod", 0) != 0;
  if (isFloat(dt) && !fmod) return makeError("fmod must be 1 for floating-point inputs");
  Value* q = nullptr;
  SMELT_TRY(Value * d, n.emit("div", {x, yv}));
  if (isFloat(dt)) {
    SMELT_TRY(Value * fl, n.emit("floor", {d}));
    SMELT_TRY(Value * ce, n.emit("ceil", {d}));
    SMELT_TRY(Value * nonneg, n.emit("ge", {d, n.scalar(dt, 0.0)}));
    SMELT_TRY(q, n.emit("where", {nonneg, fl, ce}));
  } else {
    q = d;  // integer div truncates toward zero
  }
  SMELT_TRY(Value * qy, n.emit("mul", {q, yv}));
  SMELT_TRY(Value * r, n.emit("sub", {x, qy}));
  if (fmod || isUnsignedInt(dt)) return n.setOutput(0, r);
  Value* zero = n.scalar(dt, 0.0);
  SMELT_TRY(Value * rNonzero, n.emit("ne", {r, zero}));
  SMELT_TRY(Value * rNeg, n.emit("lt", {r, zero}));
  SMELT_TRY(Value * yNeg, n.emit("lt", {yv, zero}));
  SMELT_TRY(Value * differ, n.emit("xor", {rNeg, yNeg}));
  SMELT_TRY(Value * fix, n.emit("and", {rNonzero, differ}));
  SMELT_TRY(Value * ry, n.emit("add", {r, yv}));
  SMELT_TRY(Value * y, n.emit("where", {fix, ry, r}));
  return n.setOutput(0, y);
}

}  // namespace

void addElementwiseConverters(ConverterTable& t) {
  for (auto [o, s] : kUnary) t[std::string(o)] = unary;
  for (auto [o, s] : kBinary) t[std::string(o)] = binary;
  t["Pow"] = pow;
  for (const char* op : {"Min", "Max", "Sum", "Mean"}) t[op] = variadic;
  t["Clip"] = clip;
  t["Cast"] = cast;
  t["CastLike"] = castLike;
  t["Where"] = where;
  t["LeakyRelu"] = leakyRelu;
  t["Elu"] = elu;
  t["Selu"] = selu;
  t["HardSigmoid"] = hardSigmoid;
  t["HardSwish"] = hardSwish;
  t["Softsign"] = softsign;
  t["Mish"] = mish;
  t["ThresholdedRelu"] = thresholdedRelu;
  t["PRelu"] = prelu;
  t["Celu"] = celu;
  t["Shrink"] = shrink;
  t["IsNaN"] = isNaN;
  t["IsInf"] = isInf;
  t["Sinh"] = sinhCosh;
  t["Cosh"] = sinhCosh;
  t["Asinh"] = inverseHyperbolic;
  t["Acosh"] = inverseHyperbolic;
  t["Atanh"] = inverseHyperbolic;
  t["Round"] = round;
  t["Mod"] = mod;
}

}  // namespace smelt::onnximport

// The kernel interpreter: a scalar value per SSA id (a double for floats, 64 bits for integers and
// bool), statements executed in order, loops iterated with their carried values.
#include "codegen/kernel_interpreter.h"

#include "ir/int_pow.h"

#include <bit>
#include <cmath>
#include <limits>

namespace smelt::codegen {

namespace {

/// One scalar: `f` for floats, `i` for integers (unsigned values as their 64-bit pattern) and bool.
struct Scalar {
  double f = 0;
  int64_t i = 0;
};

double roundTo(DType t, double x) {
  switch (t) {
    case DType::f16: return static_cast<float>(Half(x));
    case DType::bf16: return static_cast<float>(BFloat16(x));
    case DType::f32: return static_cast<float>(x);
    default: return x;
  }
}

/// Wraps a 64-bit pattern to dtype `t` (sign- or zero-extended back to 64 bits).
int64_t wrapTo(DType t, int64_t v) {
  return dispatchDType(t, [&]<typename T>(TypeTag<T>) -> int64_t {
    if constexpr (std::is_same_v<T, bool>) {
      return v != 0;
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<int64_t>(static_cast<T>(v));
    } else {
      return v;
    }
  });
}

// fromDouble's integer conversion: NaN -> 0, truncation, saturation at the int64 range, wrap.
int64_t doubleToInt(DType t, double x) {
  if (x != x) return 0;
  if (x >= 9.2233720368547758e18) return wrapTo(t, static_cast<int64_t>(x >= 1.8446744073709552e19 ? 0 : static_cast<uint64_t>(x)));
  if (x <= -9.2233720368547758e18) return wrapTo(t, INT64_MIN);
  return wrapTo(t, static_cast<int64_t>(x));
}

double intToDouble(DType t, int64_t v) {
  return isUnsignedInt(t) ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
}

class Interpreter {
 public:
  Interpreter(const Kernel& k, std::span<Tensor* const> buffers, int64_t firstExtent)
      : k_(k), buffers_(buffers), values_(k.types.size()), domain_(k.domain) {
    if (!domain_.empty() && domain_[0] == kRunTimeExtent) domain_[0] = firstExtent;
  }

  Status run() {
    if (buffers_.size() != k_.buffers.size()) {
      return makeError("kernel @{}: {} buffers given, it has {}", k_.name, buffers_.size(), k_.buffers.size());
    }
    for (int64_t d : domain_) {
      if (d < 0) return makeError("kernel @{}: its domain's first extent is given at launch; none was", k_.name);
    }
    for (size_t i = 0; i < buffers_.size(); ++i) {
      const KBuffer& b = k_.buffers[i];
      if (buffers_[i]->dtype() != b.dtype || (b.numel != kRunTimeExtent && buffers_[i]->numel() != b.numel)) {
        return makeError("kernel @{}: buffer {} is {}, expected {}[{}]", k_.name, i, buffers_[i]->type().toString(),
                         dtypeName(b.dtype), b.numel);
      }
    }
    outer_.assign(domain_.size(), 0);
    int64_t points = 1;
    for (int64_t d : domain_) points *= d;
    for (int64_t p = 0; p < points; ++p) {
      int64_t rest = p;
      for (size_t d = domain_.size(); d-- > 0;) {
        outer_[d] = rest % domain_[d];
        rest /= domain_[d];
      }
      SMELT_CHECK_OK(block(k_.body));
    }
    return Status::success();
  }

 private:
  Status block(const KBlock& b) {
    for (const KStmt& s : b.stmts) {
      if (const KInst* i = std::get_if<KInst>(&s)) {
        SMELT_CHECK_OK(inst(*i));
      } else if (const KStore* st = std::get_if<KStore>(&s)) {
        SMELT_CHECK_OK(store(*st));
      } else {
        const KLoop& l = *std::get<std::shared_ptr<KLoop>>(s);
        for (size_t c = 0; c < l.carried.size(); ++c) values_[l.carried[c]] = values_[l.init[c]];
        const int64_t extent = l.extentValue >= 0 ? values_[l.extentValue].i : l.extent;
        for (int64_t it = 0; it < extent; ++it) {
          values_[l.index].i = it;
          SMELT_CHECK_OK(block(l.body));
          std::vector<Scalar> next;
          for (int32_t n : l.next) next.push_back(values_[n]);
          for (size_t c = 0; c < l.carried.size(); ++c) values_[l.carried[c]] = next[c];
        }
        for (size_t c = 0; c < l.results.size(); ++c) values_[l.results[c]] = values_[l.carried[c]];
      }
    }
    return Status::success();
  }

  Status checkOffset(size_t buffer, int64_t offset) const {
    if (offset < 0 || offset >= buffers_[buffer]->numel()) {
      return makeError("kernel @{}: offset {} out of bounds of buffer {} ({} elements)", k_.name, offset, buffer,
                       buffers_[buffer]->numel());
    }
    return Status::success();
  }

  Status store(const KStore& st) {
    auto buffer = static_cast<size_t>(st.buffer);
    int64_t offset = values_[st.offset].i;
    SMELT_CHECK_OK(checkOffset(buffer, offset));
    Tensor& t = *buffers_[buffer];
    const Scalar& v = values_[st.value];
    if (isFloat(t.dtype())) t.setDouble(offset, v.f);
    else t.setInt(offset, v.i);
    return Status::success();
  }

  Status inst(const KInst& in) {
    Scalar& r = values_[in.result];
    DType t = in.dtype;
    switch (in.kind) {
      case KInstKind::Const:
        if (isFloat(t)) r.f = roundTo(t, in.fbits);
        else r.i = wrapTo(t, in.ibits);
        return Status::success();
      case KInstKind::Outer: r.i = outer_[static_cast<size_t>(in.ibits)]; return Status::success();
      case KInstKind::Param: {
        const Tensor& sizes = *buffers_.back();
        if (sizes.dtype() != DType::i64 || in.ibits < 0 || in.ibits >= sizes.numel()) {
          return makeError("kernel @{}: param {} needs an i64 last buffer holding it", k_.name, in.ibits);
        }
        const int64_t bits = sizes.getInt(in.ibits);
        if (t == DType::f32) r.f = std::bit_cast<float>(static_cast<uint32_t>(bits));
        else if (t == DType::f64) r.f = std::bit_cast<double>(bits);
        else r.i = wrapTo(t, bits);
        return Status::success();
      }
      case KInstKind::Load: {
        auto buffer = static_cast<size_t>(in.ibits);
        int64_t offset = values_[in.a].i;
        SMELT_CHECK_OK(checkOffset(buffer, offset));
        const Tensor& src = *buffers_[buffer];
        if (isFloat(t)) r.f = src.getDouble(offset);
        else r.i = wrapTo(t, src.getInt(offset));
        return Status::success();
      }
      case KInstKind::Select: r = values_[in.a].i ? values_[in.b] : values_[in.c]; return Status::success();
      case KInstKind::Cast: return cast(in, r);
      case KInstKind::Unary: return unary(in, r);
      case KInstKind::Binary: return binary(in, r);
    }
    return Status::success();
  }

  Status cast(const KInst& in, Scalar& r) {
    DType from = k_.types[in.a];
    const Scalar& x = values_[in.a];
    DType to = in.dtype;
    if (to == DType::boolean) r.i = isFloat(from) ? x.f != 0.0 : x.i != 0;
    else if (isFloat(to)) r.f = roundTo(to, isFloat(from) ? x.f : intToDouble(from, x.i));
    else r.i = isFloat(from) ? doubleToInt(to, x.f) : wrapTo(to, x.i);
    return Status::success();
  }

  Status unary(const KInst& in, Scalar& r) {
    const Scalar& x = values_[in.a];
    DType t = k_.types[in.a];
    if (in.unary == KUnary::IsNan) {
      r.i = isFloat(t) && std::isnan(x.f);
      return Status::success();
    }
    if (!isFloat(t)) {
      switch (in.unary) {
        case KUnary::Neg: r.i = wrapTo(t, static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(x.i))); break;
        case KUnary::Abs:
          r.i = isSignedInt(t) && x.i < 0 ? wrapTo(t, static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(x.i))) : x.i;
          break;
        case KUnary::Not: r.i = t == DType::boolean ? !x.i : wrapTo(t, ~x.i); break;
        default: return makeError("kernel @{}: {} of {}", k_.name, kUnaryName(in.unary), dtypeName(t));
      }
      return Status::success();
    }
    double v = x.f, y = 0;
    switch (in.unary) {
      case KUnary::Neg: y = -v; break;
      case KUnary::Abs: y = std::fabs(v); break;
      case KUnary::Exp: y = std::exp(v); break;
      case KUnary::Expm1: y = std::expm1(v); break;
      case KUnary::Log: y = std::log(v); break;
      case KUnary::Log1p: y = std::log1p(v); break;
      case KUnary::Sqrt: y = std::sqrt(v); break;
      case KUnary::Rsqrt: y = 1.0 / std::sqrt(v); break;
      case KUnary::Sin: y = std::sin(v); break;
      case KUnary::Cos: y = std::cos(v); break;
      case KUnary::Tan: y = std::tan(v); break;
      case KUnary::Tanh: y = std::tanh(v); break;
      case KUnary::Erf: y = std::erf(v); break;
      case KUnary::Sigmoid: y = v >= 0 ? 1.0 / (1.0 + std::exp(-v)) : std::exp(v) / (1.0 + std::exp(v)); break;
      case KUnary::Floor: y = std::floor(v); break;
      case KUnary::Ceil: y = std::ceil(v); break;
      case KUnary::RoundEven: y = std::nearbyint(v); break;
      default: return makeError("kernel @{}: {} of {}", k_.name, kUnaryName(in.unary), dtypeName(t));
    }
    r.f = roundTo(in.dtype, y);
    return Status::success();
  }

  Status binary(const KInst& in, Scalar& r) {
    const Scalar& x = values_[in.a];
    const Scalar& z = values_[in.b];
    DType t = k_.types[in.a];
    if (isFloat(t)) {
      double a = x.f, b = z.f, y = 0;
      constexpr double nan = std::numeric_limits<double>::quiet_NaN();
      switch (in.binary) {
        case KBinary::Add: y = a + b; break;
        case KBinary::Sub: y = a - b; break;
        case KBinary::Mul: y = a * b; break;
        case KBinary::Div: y = a / b; break;
        case KBinary::Rem: y = std::fmod(a, b); break;
        case KBinary::Min: y = std::isnan(a) || std::isnan(b) ? nan : (b < a ? b : a); break;
        case KBinary::Max: y = std::isnan(a) || std::isnan(b) ? nan : (b > a ? b : a); break;
        case KBinary::Pow: y = std::pow(a, b); break;
        case KBinary::Lt: r.i = a < b; return Status::success();
        case KBinary::Le: r.i = a <= b; return Status::success();
        case KBinary::Gt: r.i = a > b; return Status::success();
        case KBinary::Ge: r.i = a >= b; return Status::success();
        case KBinary::Eq: r.i = a == b; return Status::success();
        case KBinary::Ne: r.i = a != b; return Status::success();
        default: return makeError("kernel @{}: {} of {}", k_.name, kBinaryName(in.binary), dtypeName(t));
      }
      r.f = roundTo(in.dtype, y);
      return Status::success();
    }
    bool isUnsigned = isUnsignedInt(t) || t == DType::boolean;
    int64_t a = x.i, b = z.i;
    auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    switch (in.binary) {
      case KBinary::Add: r.i = wrapTo(t, static_cast<int64_t>(ua + ub)); break;
      case KBinary::Sub: r.i = wrapTo(t, static_cast<int64_t>(ua - ub)); break;
      case KBinary::Mul: r.i = wrapTo(t, static_cast<int64_t>(ua * ub)); break;
      case KBinary::Div:
        if (b == 0) r.i = 0;
        else if (isUnsigned) r.i = wrapTo(t, static_cast<int64_t>(ua / ub));
        else if (b == -1) r.i = wrapTo(t, static_cast<int64_t>(uint64_t{0} - ua));
        else r.i = wrapTo(t, a / b);
        break;
      case KBinary::Rem:
        if (b == 0 || (!isUnsigned && b == -1)) r.i = 0;
        else r.i = isUnsigned ? wrapTo(t, static_cast<int64_t>(ua % ub)) : wrapTo(t, a % b);
        break;
      case KBinary::Min: r.i = isUnsigned ? (ub < ua ? b : a) : (b < a ? b : a); break;
      case KBinary::Max: r.i = isUnsigned ? (ub > ua ? b : a) : (b > a ? b : a); break;
      case KBinary::Pow:
        r.i = wrapTo(t, isUnsigned ? static_cast<int64_t>(wrappingPow(ua, ub)) : wrappingPowSigned(a, b));
        break;
      case KBinary::And: r.i = wrapTo(t, a & b); break;
      case KBinary::Or: r.i = wrapTo(t, a | b); break;
      case KBinary::Xor: r.i = wrapTo(t, a ^ b); break;
      case KBinary::Shl: r.i = ub >= 64 ? 0 : wrapTo(t, static_cast<int64_t>(ua << ub)); break;
      case KBinary::Shr:
        if (isUnsigned) r.i = ub >= 64 ? 0 : wrapTo(t, static_cast<int64_t>(ua >> ub));
        else r.i = wrapTo(t, a >> std::min<uint64_t>(ub, 63));
        break;
      case KBinary::Lt: r.i = isUnsigned ? ua < ub : a < b; break;
      case KBinary::Le: r.i = isUnsigned ? ua <= ub : a <= b; break;
      case KBinary::Gt: r.i = isUnsigned ? ua > ub : a > b; break;
      case KBinary::Ge: r.i = isUnsigned ? ua >= ub : a >= b; break;
      case KBinary::Eq: r.i = a == b; break;
      case KBinary::Ne: r.i = a != b; break;
    }
    return Status::success();
  }

  const Kernel& k_;
  std::span<Tensor* const> buffers_;
  std::vector<Scalar> values_;
  std::vector<int64_t> domain_;  // the kernel's, with the first extent given at launch filled in
  std::vector<int64_t> outer_;
};

}  // namespace

Status interpretKernel(const Kernel& kernel, std::span<Tensor* const> buffers) {
  return Interpreter(kernel, buffers, kRunTimeExtent).run();
}

Status interpretKernel(const Kernel& kernel, std::span<Tensor* const> buffers, int64_t firstExtent) {
  return Interpreter(kernel, buffers, firstExtent).run();
}

}  // namespace smelt::codegen

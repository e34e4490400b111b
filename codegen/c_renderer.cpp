// Kernel description -> C-family source (see c_renderer.h for the shape and the semantics). The
// writer below emits one C declaration per SSA value; each dialect's hooks supply the names.
#include "codegen/c_renderer.h"

#include "codegen/kernel_walk.h"
#include "codegen/row_cache.h"

#include <fmt/format.h>

#include <cmath>
#include <algorithm>
#include <limits>
#include <set>

#include "ir/half.h"

namespace smelt::codegen {

namespace {

/// Replaces every `from` in `text` with `to`.
void replaceAll(std::string& text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

/// The most iterations per thread a split loop unrolls whole (softmax over 4096 columns on 256
/// threads: 16); longer rows keep a strided loop rather than grow the kernel.
constexpr int64_t kMaxUnrolledIterations = 32;

// The helpers every kernel may call, in C with placeholders for the dialect's names ($HP helper
// prefix, $U32 / $I64 / $U64 types, $L the 64-bit literal suffix, $F2B / $B2F bit casts). The
// software conversions are ir/half.h's, bit for bit: round to nearest even, NaN kept quiet, f16
// subnormals through an exact float add; hardware ones (CRenderer::preludeHeader) round the same way
// and may return another NaN.
constexpr std::string_view kPrelude =
    R"(// f16 (IEEE binary16) and bf16 live in memory as 16-bit patterns and in registers as float. A
// dialect with hardware conversions defines SMELT_HW_F16 / SMELT_HW_BF16 and its own before this.
#ifndef SMELT_HW_F16
$HP float smelt_h2f($U32 h) {
  $U32 sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return $B2F(sign | 0x7f800000u | (m << 13));
  if (e == 0u) {
    float mag = (float)m * 5.9604644775390625e-8f;
    return sign ? -mag : mag;
  }
  return $B2F(sign | ((e + 112u) << 23) | (m << 13));
}
$HP $U32 smelt_f2h(float f) {
  $U32 x = $F2B(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return sign | 0x7c00u | (a > 0x7f800000u ? 0x200u | ((a >> 13) & 0x3ffu) : 0u);
  if (a >= 0x477ff000u) return sign | 0x7c00u;
  if (a < 0x38800000u) return sign | ($F2B($B2F(a) + 0.5f) - 0x3f000000u);
  return sign | ((a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13);
}
#endif
#ifndef SMELT_HW_BF16
$HP $U32 smelt_f2bf(float f) {
  $U32 x = $F2B(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
#endif
// f32 rounded to the nearest f16 (what every f16 instruction does to its result).
$HP float smelt_rh(float f) { return smelt_h2f(smelt_f2h(f)); }
$HP float smelt_bf2f($U32 b) { return $B2F(b << 16); }
$HP float smelt_rbf(float f) { return smelt_bf2f(smelt_f2bf(f)); }
// Float -> integer as the cast op: NaN -> 0, truncation, [2^63, 2^64) through u64, >= 2^64 -> 0,
// <= -2^63 -> INT64_MIN; the caller wraps the result to its width.
$HP $I64 smelt_f2i(float x) {
  if (x != x) return 0;
  if (x >= 9223372036854775808.0f) return x >= 18446744073709551616.0f ? 0 : ($I64)($U64)x;
  if (x <= -9223372036854775808.0f) return -9223372036854775807$L - 1;
  return ($I64)x;
}
// Integer pow (ir/int_pow.h): exact, modulo 2^64; the caller wraps to its width.
$HP $U64 smelt_ipow($U64 a, $U64 b) {
  $U64 r = 1;
  for (; b != 0; b >>= 1, a *= a) {
    if (b & 1) r *= a;
  }
  return r;
}
)";

constexpr std::string_view kPreludeDouble = R"($HP $I64 smelt_d2i(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775808.0) return x >= 18446744073709551616.0 ? 0 : ($I64)($U64)x;
  if (x <= -9223372036854775808.0) return -9223372036854775807$L - 1;
  return ($I64)x;
}
)";

/// Renders one kernel; see c_renderer.h.
class Writer {
 public:
  Writer(const CRenderer& r, const Kernel& k) : r_(r), k_(k) {}

  Expected<std::string> run(const std::string& symbol) {
    for (DType t : k_.types) {
      if (t == DType::f64 && !r_.fp64()) return failure("f64 (the device has no fp64)");
    }
    out_ += fmt::format("// kernel @{} domain [{}]\n", k_.name, domainText(k_));
    for (const std::string& p : k_.provenance) out_ += fmt::format("//   from {}\n", oneLine(p));
    std::vector<std::string> params;
    const std::string restrict = k_.disjointBuffers ? r_.restrictQualifier() : "";
    for (size_t i = 0; i < k_.buffers.size(); ++i) {
      const KBuffer& b = k_.buffers[i];
      params.push_back(fmt::format("{}{}{}* {}b{}", r_.bufferQualifier(), b.output ? "" : "const ", memType(b.dtype),
                                   restrict, i));
      if (r_.bufferOffsets()) params.push_back(fmt::format("{} b{}_off", i64(), i));
    }
    params.push_back(fmt::format("{} n", i64()));
    out_ += fmt::format("{} {}({}) {{\n", r_.kernelPrefix(), symbol, fmt::join(params, ", "));
    if (k_.blockThreads > 0) {
      // One block per outer point, launched as exactly n blocks, so there is no bounds check: an early
      // return before a barrier, even a uniform one, is where compilers go wrong (PoCL 3.1 drops the
      // stores of a split loop between two barriers after one). The combine arrays are the block's.
      // With shuffles a warp combines in registers, the array holds one partial per warp and, in a
      // slot of its own, the block's total (shuffleCombine).
      const bool shuffles = !r_.warpLanes().empty();
      for (const std::string& t : combineTypes()) {
        out_ += fmt::format("  {}{} smelt_red_{}[{}];\n", r_.sharedQualifier(), t, ident(t),
                            shuffles ? totalSlot() + 1 : k_.blockThreads);
      }
      out_ += fmt::format("  {0} p = {1};\n  {0} tid = {2};\n", i64(), r_.blockIndex(),
                          r_.threadInBlock());
      if (shuffles) {
        out_ += fmt::format("  const int lanes = {0} < {1} ? {0} : {1};\n", r_.warpLanes(), k_.blockThreads);
      }
    } else if (k_.pointsPerThread > 1) {
      out_ += fmt::format("  {} p0 = ({}) * {};\n  if (p0 >= n) return;\n", i64(), r_.threadIndex(),
                          k_.pointsPerThread);
    } else {
      out_ += fmt::format("  {} p = {};\n  if (p >= n) return;\n", i64(), r_.threadIndex());
    }
    if (r_.bufferOffsets()) {
      for (size_t i = 0; i < k_.buffers.size(); ++i) out_ += fmt::format("  b{0} += b{0}_off;\n", i);
    }
    readParams(k_.body);
    rows_ = planRowCaches(k_);
    if (k_.pointsPerThread > 1) {
      vectorBody();
    } else {
      block(k_.body, "  ");
    }
    out_ += "}\n";
    if (!error_.empty()) return failure(error_);
    return std::move(out_);
  }

 private:
  // --- types -------------------------------------------------------------------------------------
  std::string i64() const { return r_.typeName(DType::i64); }
  std::string u32() const { return r_.typeName(DType::u32); }
  std::string u64() const { return r_.typeName(DType::u64); }
  /// Buffer element type: f16/bf16 as their 16 bits, bool as a byte.
  std::string memType(DType t) const {
    if (t == DType::f16 || t == DType::bf16) return r_.typeName(DType::u16);
    return r_.typeName(t == DType::boolean ? DType::u8 : t);
  }
  /// Register type: f16/bf16 compute in float.
  std::string regType(DType t) const {
    if (t == DType::f16 || t == DType::bf16) return r_.typeName(DType::f32);
    return r_.typeName(t == DType::boolean ? DType::u8 : t);
  }
  DType typeOf(int32_t id) const { return k_.types[static_cast<size_t>(id)]; }
  static int bits(DType t) { return t == DType::boolean ? 8 : static_cast<int>(dtypeSize(t) * 8); }
  /// The unsigned type integer arithmetic of `t` wraps in (narrow types promote to int in C).
  std::string wide(DType t) const { return bits(t) <= 32 ? u32() : u64(); }
  /// `expr` (an integer expression) wrapped to `t`: bool is != 0.
  std::string wrap(DType t, const std::string& expr) const {
    if (t == DType::boolean) return fmt::format("({})(({}) != 0)", regType(t), expr);
    return fmt::format("({})({})", regType(t), expr);
  }
  std::string boolOf(const std::string& cond) const { return fmt::format("({})({})", regType(DType::boolean), cond); }
  static std::string v(int32_t id) { return fmt::format("v{}", id); }
  static std::string oneLine(std::string s) {
    for (char& c : s) c = c == '\n' || c == '\r' ? ' ' : c;
    return s;
  }

  // --- literals ----------------------------------------------------------------------------------
  /// A float or double literal of `x` (already representable in its type).
  std::string floatLiteral(double x, bool isDouble) const {
    if (std::isnan(x))
      return r_.bitsToFloat(isDouble ? "0x7ff8000000000000" + r_.int64Suffix() : "0x7fc00000u", isDouble);
    if (std::isinf(x)) {
      std::string inf = r_.bitsToFloat(isDouble ? "0x7ff0000000000000" + r_.int64Suffix() : "0x7f800000u", isDouble);
      return x < 0 ? "(-" + inf + ")" : inf;
    }
    std::string s = isDouble ? fmt::format("{}", x) : fmt::format("{}", static_cast<float>(x));
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return isDouble ? s : s + "f";
  }
  /// An integer literal of type `t` with the value `x` wrapped to it.
  std::string intLiteral(int64_t x, DType t) const {
    switch (t) {
      case DType::boolean:
        return x != 0 ? "1" : "0";
      case DType::u64:
        return fmt::format("{}U{}", static_cast<uint64_t>(x), r_.int64Suffix());
      case DType::i64:
        if (x == std::numeric_limits<int64_t>::min())
          return fmt::format("(-9223372036854775807{} - 1)", r_.int64Suffix());
        return fmt::format("{}{}", x, r_.int64Suffix());
      case DType::u32:
        return fmt::format("{}u", static_cast<uint32_t>(x));
      case DType::i32:
        if (static_cast<int32_t>(x) == std::numeric_limits<int32_t>::min()) return "(-2147483647 - 1)";
        return fmt::format("{}", static_cast<int32_t>(x));
      case DType::u16:
        return fmt::format("{}", static_cast<uint16_t>(x));
      case DType::i16:
        return fmt::format("{}", static_cast<int16_t>(x));
      case DType::u8:
        return fmt::format("{}", static_cast<uint8_t>(x));
      case DType::i8:
        return fmt::format("{}", static_cast<int8_t>(x));
      default:
        return fmt::format("{}", x);
    }
  }
  /// The value a constant instruction holds in its register.
  std::string constant(const KInst& in) const {
    switch (in.dtype) {
      case DType::f16:
        return floatLiteral(static_cast<float>(Half(in.fbits)), false);
      case DType::bf16:
        return floatLiteral(static_cast<float>(BFloat16(in.fbits)), false);
      case DType::f32:
        return floatLiteral(static_cast<float>(in.fbits), false);
      case DType::f64:
        return floatLiteral(in.fbits, true);
      default:
        return intLiteral(in.ibits, in.dtype);
    }
  }

  // --- floats ------------------------------------------------------------------------------------
  /// `expr` (computed in float) rounded to `t` when t is f16 or bf16.
  static std::string round(DType t, const std::string& expr) {
    if (t == DType::f16) return fmt::format("smelt_rh({})", expr);
    if (t == DType::bf16) return fmt::format("smelt_rbf({})", expr);
    return expr;
  }
  std::string fn(std::string_view base, DType t, const std::string& args) const {
    return fmt::format("{}({})", r_.mathFunction(base, t == DType::f64), args);
  }
  std::string one(DType t) const { return floatLiteral(1.0, t == DType::f64); }
  std::string zero(DType t) const { return floatLiteral(0.0, t == DType::f64); }

  /// A float unary op of x; `pre` receives statements it needs first (sigmoid's exponential).
  std::string floatUnary(const KInst& in, DType t, const std::string& x, const std::string& indent) {
    switch (in.unary) {
      case KUnary::Neg:
        return "-" + x;
      case KUnary::Abs:
        return fn("fabs", t, x);
      case KUnary::Exp:
        return fn("exp", t, x);
      case KUnary::Expm1:
        return fn("expm1", t, x);
      case KUnary::Log:
        return fn("log", t, x);
      case KUnary::Log1p:
        return fn("log1p", t, x);
      case KUnary::Sqrt:
        return fn("sqrt", t, x);
      // 1/sqrt as the reference computes it (rsqrt() is not correctly rounded).
      case KUnary::Rsqrt:
        return fmt::format("{} / {}", one(t), fn("sqrt", t, x));
      case KUnary::Sin:
        return fn("sin", t, x);
      case KUnary::Cos:
        return fn("cos", t, x);
      case KUnary::Tan:
        return fn("tan", t, x);
      case KUnary::Tanh:
        return fn("tanh", t, x);
      case KUnary::Erf:
        return fn("erf", t, x);
      case KUnary::Sigmoid: {
        // 1/(1+e^-x) for x >= 0, e^x/(1+e^x) below: the exponential never overflows.
        std::string e = v(in.result) + "_e";
        out_ += fmt::format("{}{} {} = {};\n", indent, regType(t), e, fn("exp", t, "-" + fn("fabs", t, x)));
        return fmt::format("{} >= {} ? {} / ({} + {}) : {} / ({} + {})", x, zero(t), one(t), one(t), e, e, one(t), e);
      }
      case KUnary::Floor:
        return fn("floor", t, x);
      case KUnary::Ceil:
        return fn("ceil", t, x);
      case KUnary::RoundEven:
        return fn("rint", t, x);
      default:
        break;
    }
    fail(fmt::format("{} of a float", kUnaryName(in.unary)));
    return x;
  }

  /// Ops whose float result is one of the representable values they started from (no rounding).
  static bool exactOnRepresentable(KUnary op) {
    return op == KUnary::Neg || op == KUnary::Abs || op == KUnary::Floor || op == KUnary::Ceil ||
           op == KUnary::RoundEven;
  }

  std::string unary(const KInst& in, const std::string& indent) {
    DType t = typeOf(in.a);
    std::string x = v(in.a);
    if (in.unary == KUnary::IsNan) return boolOf(isFloat(t) ? x + " != " + x : "0");
    if (isFloat(t)) {
      std::string y = floatUnary(in, t, x, indent);
      return exactOnRepresentable(in.unary) ? y : round(t, y);
    }
    switch (in.unary) {
      case KUnary::Neg:
        return wrap(t, fmt::format("({})0 - ({}){}", wide(t), wide(t), x));
      case KUnary::Abs:
        if (!isSignedInt(t)) return x;
        return fmt::format("{} < 0 ? {} : {}", x, wrap(t, fmt::format("({})0 - ({}){}", wide(t), wide(t), x)), x);
      case KUnary::Not:
        return t == DType::boolean ? boolOf("!" + x) : wrap(t, "~" + x);
      default:
        break;
    }
    fail(fmt::format("{} of {}", kUnaryName(in.unary), dtypeName(t)));
    return x;
  }

  std::string floatBinary(KBinary op, DType t, const std::string& a, const std::string& b) {
    switch (op) {
      case KBinary::Add:
        return round(t, a + " + " + b);
      case KBinary::Sub:
        return round(t, a + " - " + b);
      case KBinary::Mul:
        return round(t, a + " * " + b);
      case KBinary::Div:
        return round(t, a + " / " + b);
      case KBinary::Rem:
        return round(t, fn("fmod", t, a + ", " + b));
      case KBinary::Pow:
        return round(t, fn("pow", t, a + ", " + b));
      // NaN-propagating (fmin/fmax are not); a + b is the NaN. The result is an operand: no rounding.
      case KBinary::Min:
        return fmt::format("{0} != {0} || {1} != {1} ? {0} + {1} : {1} < {0} ? {1} : {0}", a, b);
      case KBinary::Max:
        return fmt::format("{0} != {0} || {1} != {1} ? {0} + {1} : {1} > {0} ? {1} : {0}", a, b);
      case KBinary::Lt:
        return boolOf(a + " < " + b);
      case KBinary::Le:
        return boolOf(a + " <= " + b);
      case KBinary::Gt:
        return boolOf(a + " > " + b);
      case KBinary::Ge:
        return boolOf(a + " >= " + b);
      case KBinary::Eq:
        return boolOf(a + " == " + b);
      case KBinary::Ne:
        return boolOf(a + " != " + b);
      default:
        break;
    }
    fail(fmt::format("{} of floats", kBinaryName(op)));
    return a;
  }

  std::string intBinary(const KInst& in, DType t, const std::string& a, const std::string& b,
                        const std::string& indent) {
    bool isUnsigned = !isSignedInt(t);
    std::string w = wide(t), T = regType(t);
    auto arith = [&](const char* op) { return wrap(t, fmt::format("({}){} {} ({}){}", w, a, op, w, b)); };
    switch (in.binary) {
      case KBinary::Add:
        return arith("+");
      case KBinary::Sub:
        return arith("-");
      case KBinary::Mul:
        return arith("*");
      case KBinary::Div:
      case KBinary::Rem: {
        // By 0 gives 0; x / -1 wraps (INT_MIN / -1 = INT_MIN) and x % -1 is 0. The divisor is made
        // safe first, so no path divides by 0 or overflows even if the compiler speculates.
        bool div = in.binary == KBinary::Div;
        std::string safe = v(in.result) + "_d";
        std::string special = isUnsigned ? fmt::format("{} == 0", b) : fmt::format("{0} == 0 || {0} == ({1})-1", b, T);
        out_ += fmt::format("{}{} {} = {} ? ({})1 : {};\n", indent, T, safe, special, T, b);
        std::string q = wrap(t, fmt::format("{} {} {}", a, div ? "/" : "%", safe));
        if (isUnsigned) return fmt::format("{} == 0 ? ({})0 : {}", b, T, q);
        std::string minusOne = div ? wrap(t, fmt::format("({})0 - ({}){}", w, w, a)) : fmt::format("({})0", T);
        return fmt::format("{0} == 0 ? ({1})0 : {0} == ({1})-1 ? {2} : {3}", b, T, minusOne, q);
      }
      // Narrow types promote to int keeping their values, so C's comparisons are the right ones.
      case KBinary::Min:
        return fmt::format("{1} < {0} ? {1} : {0}", a, b);
      case KBinary::Max:
        return fmt::format("{1} > {0} ? {1} : {0}", a, b);
      case KBinary::Pow: {
        // ir/int_pow.h: a negative exponent truncates 1/a^-b to 1, -1 or 0.
        std::string u64 = r_.typeName(DType::u64);
        std::string p = wrap(t, fmt::format("smelt_ipow(({}){}, ({}){})", u64, a, u64, b));
        if (isUnsigned) return p;
        return fmt::format("{1} < 0 ? ({2})({0} == 1 ? 1 : {0} == -1 ? (({1} & 1) != 0 ? -1 : 1) : 0) : {3}", a, b, T,
                           p);
      }
      case KBinary::And:
        return wrap(t, fmt::format("{} & {}", a, b));
      case KBinary::Or:
        return wrap(t, fmt::format("{} | {}", a, b));
      case KBinary::Xor:
        return wrap(t, fmt::format("{} ^ {}", a, b));
      case KBinary::Shl:
      case KBinary::Shr: {
        // A shift count outside [0, width) (negative counts are huge as u64) shifts everything out:
        // 0, or the sign for an arithmetic right shift.
        std::string tooFar = fmt::format("({}){} >= {}u", u64(), b, bits(t));
        if (in.binary == KBinary::Shl)
          return fmt::format("{} ? ({})0 : {}", tooFar, T, wrap(t, fmt::format("({}){} << {}", w, a, b)));
        if (isUnsigned) return fmt::format("{} ? ({})0 : {}", tooFar, T, wrap(t, fmt::format("{} >> {}", a, b)));
        // Arithmetic shift without C's implementation-defined >> of a negative value.
        std::string s = v(in.result) + "_s";
        out_ += fmt::format("{}int {} = {} ? {} : (int){};\n", indent, s, tooFar, bits(t) - 1, b);
        return fmt::format("{0} < 0 ? {1} : {2}", a, wrap(t, fmt::format("~(~{} >> {})", a, s)),
                           wrap(t, fmt::format("{} >> {}", a, s)));
      }
      case KBinary::Lt:
      case KBinary::Le:
      case KBinary::Gt:
      case KBinary::Ge:
      case KBinary::Eq:
      case KBinary::Ne: {
        bool reflexive = in.binary == KBinary::Le || in.binary == KBinary::Ge || in.binary == KBinary::Eq;
        // x == x of an integer is a constant (compilers warn about the self-comparison).
        if (in.a == in.b) return boolOf(reflexive ? "1" : "0");
        static constexpr const char* kOps[] = {"<", "<=", ">", ">=", "==", "!="};
        return boolOf(fmt::format("{} {} {}", a, kOps[static_cast<int>(in.binary) - static_cast<int>(KBinary::Lt)], b));
      }
    }
    return a;
  }

  std::string binary(const KInst& in, const std::string& indent) {
    DType t = typeOf(in.a);
    // min(x, x) is x (NaN included); written out it would be a self-comparison compilers warn about.
    if (in.a == in.b && (in.binary == KBinary::Min || in.binary == KBinary::Max)) return v(in.a);
    if (isFloat(t)) return floatBinary(in.binary, t, v(in.a), v(in.b));
    return intBinary(in, t, v(in.a), v(in.b), indent);
  }

  /// The `cast` op: see c_renderer.h.
  std::string cast(const KInst& in) {
    DType from = typeOf(in.a), to = in.dtype;
    std::string x = v(in.a);
    if (to == DType::boolean) return boolOf(fmt::format("{} != {}", x, isFloat(from) ? zero(from) : "0"));
    if (isFloat(to)) {
      if (to == DType::f64) return from == DType::f64 ? x : fmt::format("({}){}", regType(to), x);
      std::string f;  // the value as a float (f16/bf16 registers already are)
      if (isFloat(from)) {
        if (from == to) return x;
        f = from == DType::f64 ? fmt::format("(float){}", x) : x;
      } else if (bits(from) == 64 && r_.fp64()) {
        f = fmt::format("({})({}){}", regType(DType::f32), r_.typeName(DType::f64), x);  // as the reference: via double
      } else {
        f = fmt::format("({}){}", regType(DType::f32), x);
      }
      return round(to, f);
    }
    if (isFloat(from)) return wrap(to, fmt::format("{}({})", from == DType::f64 ? "smelt_d2i" : "smelt_f2i", x));
    return fmt::format("({}){}", regType(to), x);
  }

  std::string load(const KInst& in) const {
    auto buffer = static_cast<size_t>(in.ibits);
    DType t = k_.buffers[buffer].dtype;
    std::string at = lane_ >= 0 && atPoint(in.a) ? fmt::format("l{}.{}", buffer, laneName())
                                                 : fmt::format("b{}[{}]", buffer, v(in.a));
    if (t == DType::f16) return fmt::format("smelt_h2f({})", at);
    if (t == DType::bf16) return fmt::format("smelt_bf2f({})", at);
    if (t == DType::boolean) return boolOf(at + " != 0");
    return at;
  }

  /// The run-time values of a kernel compiled for every size (KInstKind::Param), read once at the
  /// start from its last buffer: f32 values are the low 32 bits of their slot, f64 all 64.
  void readParams(const KBlock& blk) {
    const std::string sizes = fmt::format("b{}", k_.buffers.size() - 1);
    for (const KStmt& s : blk.stmts) {
      if (const auto* l = std::get_if<std::shared_ptr<KLoop>>(&s)) readParams((*l)->body);
      const KInst* in = std::get_if<KInst>(&s);
      if (!in || in->kind != KInstKind::Param) continue;
      const std::string slot = fmt::format("{}[{}]", sizes, in->ibits);
      std::string rhs;
      if (in->dtype == DType::f32) rhs = r_.bitsToFloat(fmt::format("({})({})", u32(), slot), false);
      else if (in->dtype == DType::f64) rhs = r_.bitsToFloat(slot, true);
      else if (!isFloat(in->dtype)) rhs = wrap(in->dtype, slot);
      else error_ = fmt::format("a {} run-time value", dtypeName(in->dtype));
      out_ += fmt::format("  {} {} = {};\n", regType(in->dtype), v(in->result), rhs);
    }
  }
  /// A loop's extent: its literal, or the run-time value holding it.
  std::string extentOf(const KLoop& l) const { return l.extentValue >= 0 ? v(l.extentValue) : std::to_string(l.extent); }

  // --- statements --------------------------------------------------------------------------------
  void inst(const KInst& in, const std::string& indent) {
    std::string rhs;
    switch (in.kind) {
      case KInstKind::Param: return;  // read at the start (readParams())
      case KInstKind::Const:
        rhs = constant(in);
        break;
      case KInstKind::Outer:
        rhs = outer(static_cast<size_t>(in.ibits));
        break;
      case KInstKind::Unary:
        rhs = unary(in, indent);
        break;
      case KInstKind::Binary:
        rhs = binary(in, indent);
        break;
      case KInstKind::Select:
        rhs = fmt::format("{} ? {} : {}", v(in.a), v(in.b), v(in.c));
        break;
      case KInstKind::Cast:
        rhs = cast(in);
        break;
      case KInstKind::Load:
        if (auto cached = rows_.loads.find(&in); cached != rows_.loads.end()) {
          return cachedLoad(in, cached->second, indent);
        }
        // A top-level load of a block-mapped kernel may read what another thread stored.
        if (k_.blockThreads > 0 && depth_ == 0) barrierIfWritten(static_cast<int32_t>(in.ibits), indent);
        rhs = load(in);
        break;
    }
    out_ += fmt::format("{}{} {} = {};\n", indent, regType(in.dtype), v(in.result), rhs);
  }

  /// A load of a row kept in registers (codegen/row_cache.h): the first sweep loads and keeps each
  /// iteration's value, the later ones read it back.
  void cachedLoad(const KInst& in, const RowCachePlan::CachedLoad& cached, const std::string& indent) {
    if (step_.empty()) return fail("a row kept in registers outside an unrolled split loop");
    const std::string array = fmt::format("smelt_row{}[{}]", cached.array, step_);
    if (cached.fills) {
      out_ += fmt::format("{}{} {} = {};\n", indent, regType(in.dtype), v(in.result), load(in));
      out_ += fmt::format("{}{} = {};\n", indent, array, v(in.result));
    } else {
      out_ += fmt::format("{}{} {} = {};\n", indent, regType(in.dtype), v(in.result), array);
    }
  }

  /// The outer index along `dim`, from the linear point p (row-major).
  std::string outer(size_t dim) const {
    int64_t stride = 1;
    for (size_t d = dim + 1; d < k_.domain.size(); ++d) stride *= k_.domain[d];
    std::string s = stride == 1 ? "p" : fmt::format("p / {}", stride);
    return dim == 0 ? s : fmt::format("({}) % {}", s, k_.domain[dim]);
  }

  void store(const KStore& st, const std::string& indent) {
    DType t = k_.buffers[static_cast<size_t>(st.buffer)].dtype;
    std::string x = v(st.value);
    if (t == DType::f16) x = fmt::format("({})smelt_f2h({})", memType(t), x);
    if (t == DType::bf16) x = fmt::format("({})smelt_f2bf({})", memType(t), x);
    // In a block-mapped kernel every thread computes the same top-level value and every thread writes
    // it: one coalesced transaction per warp. Guarding it with `if (tid == 0)` is what a CUDA author
    // would write, but PoCL 3.1 then skips the next barrier-separated loop entirely (a conditional
    // store, a barrier, a loop: tests/codegen/test_block_kernels.cpp keeps that shape).
    if (lane_ >= 0) {
      out_ += fmt::format("{}s{}.{} = {};\n", indent, st.buffer, laneName(), x);  // vectorBody's check: at p
    } else {
      out_ += fmt::format("{}b{}[{}] = {};\n", indent, st.buffer, v(st.offset), x);
    }
    written_.insert(rootOf(st.buffer));
  }

  // --- vectorized kernels (Kernel::pointsPerThread, codegen/vectorize.h) ---------------------------
  bool atPoint(int32_t id) const { return points_.count(id) != 0; }
  std::string laneName() const { return std::string(1, "xyzw"[lane_]); }
  /// The vector type of `lanes` elements of buffer type `t` (CUDA, HIP and OpenCL share the names).
  std::string vectorType(DType t) const {
    std::string base;
    switch (t) {
      case DType::f32: base = "float"; break;
      case DType::i32: base = "int"; break;
      case DType::u32: base = "uint"; break;
      case DType::i16: base = "short"; break;
      case DType::u16:
      case DType::f16:
      case DType::bf16: base = "ushort"; break;
      case DType::i8: base = "char"; break;
      default: base = "uchar"; break;  // u8, bool
    }
    return fmt::format("{}{}", base, k_.pointsPerThread);
  }
  /// Points p0 .. p0 + lanes - 1: the buffers read and written at the point as vectors, the body once
  /// per lane in its own scope; a thread with fewer points left (or, where the dialect needs it,
  /// buffers not aligned to their vectors) runs its points one by one.
  void vectorBody() {
    const int lanes = k_.pointsPerThread;
    if (lanes > 4) {
      error_ = fmt::format("{} points per thread (at most 4)", lanes);
      return;
    }
    for (const KStmt& s : k_.body.stmts) {
      if (const auto* i = std::get_if<KInst>(&s); i && i->kind == KInstKind::Outer) points_.insert(i->result);
    }
    std::set<size_t> loaded, stored;
    for (const KStmt& s : k_.body.stmts) {
      if (const auto* i = std::get_if<KInst>(&s); i && i->kind == KInstKind::Load && atPoint(i->a)) {
        loaded.insert(static_cast<size_t>(i->ibits));
      } else if (const auto* st = std::get_if<KStore>(&s)) {
        if (!atPoint(st->offset)) {
          error_ = "a vectorized kernel stores at an offset that is not its point";
          return;
        }
        stored.insert(static_cast<size_t>(st->buffer));
      }
    }
    std::vector<std::string> aligned;
    for (const std::set<size_t>* buffers : {&loaded, &stored}) {
      for (size_t b : *buffers) {
        const int64_t bytes = lanes * (k_.buffers[b].dtype == DType::boolean ? 1 : dtypeSize(k_.buffers[b].dtype));
        std::string check = r_.vectorAlignment(fmt::format("b{}", b), bytes);
        if (!check.empty()) aligned.push_back(check);
      }
    }
    out_ += fmt::format("  if (p0 + {} <= n{}{}) {{\n", lanes, aligned.empty() ? "" : " && ", fmt::join(aligned, " && "));
    for (size_t b : loaded) {
      out_ += fmt::format("    {} l{} = {};\n", vectorType(k_.buffers[b].dtype), b,
                          r_.vectorLoad(vectorType(k_.buffers[b].dtype), fmt::format("b{} + p0", b)));
    }
    for (size_t b : stored) out_ += fmt::format("    {} s{};\n", vectorType(k_.buffers[b].dtype), b);
    for (lane_ = 0; lane_ < lanes; ++lane_) {
      out_ += fmt::format("    {{\n      {} p = p0 + {};\n", i64(), lane_);
      block(k_.body, "      ");
      out_ += "    }\n";
    }
    lane_ = -1;
    for (size_t b : stored) {
      out_ += "    " + r_.vectorStore(vectorType(k_.buffers[b].dtype), fmt::format("b{} + p0", b), fmt::format("s{}", b)) + "\n";
    }
    out_ += fmt::format("  }} else {{\n    for ({0} p = p0; p < n && p < p0 + {1}; ++p) {{\n", i64(), lanes);
    block(k_.body, "      ");
    out_ += "    }\n  }\n";
  }

  // --- block-mapped kernels ------------------------------------------------------------------------
  /// The register types of the carried values split loops combine, each once.
  std::vector<std::string> combineTypes() const {
    std::vector<std::string> types;
    combineTypes(k_.body, types);
    return types;
  }
  void combineTypes(const KBlock& block, std::vector<std::string>& types) const {
    for (const KStmt& s : block.stmts) {
      const auto* l = std::get_if<std::shared_ptr<KLoop>>(&s);
      if (!l) continue;
      combineTypes((*l)->body, types);  // a split loop inside a loop every thread runs (map_to_blocks.h)
      if ((*l)->combine.empty()) continue;
      for (int32_t c : (*l)->carried) {
        std::string t = regType(typeOf(c));
        if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
      }
    }
  }
  static std::string ident(std::string t) {
    for (char& c : t) c = (c == ' ') ? '_' : c;
    return t;
  }
  /// `op`'s identity in `t`: where a thread's partial starts when it is not the one starting from init.
  std::string identity(KBinary op, DType t) const {
    KInst c;
    c.kind = KInstKind::Const;
    c.dtype = t;
    const bool fl = isFloat(t);
    const double inf = std::numeric_limits<double>::infinity();
    auto extreme = [&](bool high) -> int64_t {
      if (t == DType::boolean) return high ? 1 : 0;
      if (!isSignedInt(t)) return high ? (bits(t) == 64 ? -1 : (int64_t{1} << bits(t)) - 1) : 0;
      return high ? (bits(t) == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits(t) - 1)) - 1)
                  : (bits(t) == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits(t) - 1)));
    };
    switch (op) {
      case KBinary::Add:
      case KBinary::Or: c.fbits = 0, c.ibits = 0; break;
      case KBinary::Mul: c.fbits = 1, c.ibits = 1; break;
      case KBinary::And: c.ibits = t == DType::boolean ? 1 : -1; break;
      case KBinary::Max: c.fbits = -inf, c.ibits = extreme(false); break;
      case KBinary::Min: c.fbits = inf, c.ibits = extreme(true); break;
      default: break;
    }
    if (!fl && !isSignedInt(t) && t != DType::boolean && bits(t) < 64) c.ibits &= (int64_t{1} << bits(t)) - 1;
    return constant(c);
  }
  /// `op` of two values of `t`, with the instruction's semantics (NaN-propagating max, f16 rounding).
  std::string combineExpr(KBinary op, DType t, const std::string& a, const std::string& b, const std::string& indent) {
    if (isFloat(t)) return floatBinary(op, t, a, b);
    KInst in;
    in.kind = KInstKind::Binary;
    in.binary = op;
    in.dtype = t;
    return intBinary(in, t, a, b, indent);
  }

  /// A split loop: strided iterations per thread, then each carried value combined across the block
  /// (a tree through the block's shared array, ending in a value every thread reads).
  void splitLoop(const KLoop& l, const std::string& indent) {
    // What was written before (a top-level store, an earlier loop) and is read here is visible to
    // all threads.
    std::vector<int32_t> reads;
    loadsIn(l.body, reads);
    for (int32_t b : reads) barrierIfWritten(b, indent);
    if (r_.barrierBetweenSplitLoops() && splitLoops_ > 0 && !out_.ends_with(r_.blockBarrier() + "\n")) barrier(indent);
    ++splitLoops_;
    for (size_t c = 0; c < l.carried.size(); ++c) {
      DType t = typeOf(l.carried[c]);
      // A partial loop's init is already this thread's partial (an enclosing loop's carried value).
      out_ += l.partial ? fmt::format("{}{} {} = {};\n", indent, regType(t), v(l.carried[c]), v(l.init[c]))
                        : fmt::format("{}{} {} = tid == 0 ? {} : {};\n", indent, regType(t), v(l.carried[c]),
                                      v(l.init[c]), identity(l.combine[c], t));
    }
    // A constant extent that is a multiple of the block runs the same iterations per thread in a loop
    // of constant trip count: the compiler unrolls it and issues every load before the first use.
    const int64_t perThread =
        l.extentValue < 0 && l.extent % k_.blockThreads == 0 ? l.extent / k_.blockThreads : 0;
    for (size_t a = 0; a < rows_.arrays.size(); ++a) {
      const RowCachePlan::Array& row = rows_.arrays[a];
      if (row.filledIn != &l) continue;
      out_ += fmt::format("{}{} smelt_row{}[{}];\n", indent, regType(row.dtype), a, row.length);
    }
    std::string step;
    if (perThread > 0 && perThread <= kMaxUnrolledIterations) {
      step = "r" + v(l.index);
      if (!r_.unrollPragma().empty()) out_ += indent + r_.unrollPragma() + "\n";
      out_ += fmt::format("{0}for (int {1} = 0; {1} < {2}; ++{1}) {{\n{0}  {3} {4} = tid + ({3}){1} * {5};\n", indent,
                          step, perThread, i64(), v(l.index), k_.blockThreads);
    } else {
      out_ += fmt::format("{0}for ({1} {2} = tid; {2} < {3}; {2} += {4}) {{\n", indent, i64(), v(l.index),
                          extentOf(l), k_.blockThreads);
    }
    std::string inner = indent + "  ";
    ++depth_;
    step_ = step;
    block(l.body, inner);
    step_.clear();
    --depth_;
    for (size_t c = 0; c < l.next.size(); ++c) out_ += fmt::format("{}{} = {};\n", inner, v(l.carried[c]), v(l.next[c]));
    out_ += indent + "}\n";
    if (l.partial) {
      for (size_t c = 0; c < l.results.size(); ++c) {
        out_ += fmt::format("{}{} {} = {};\n", indent, regType(typeOf(l.results[c])), v(l.results[c]),
                            v(l.carried[c]));
      }
      return;
    }
    combineCarried(l, indent);
  }

  /// Each carried value of `l` combined across the block into its result. What the loop wrote stays
  /// unseen by other threads until a barrier: the combine's first one, or the one barrierIfWritten
  /// puts before the next thing that reads memory.
  void combineCarried(const KLoop& l, const std::string& indent) {
    for (size_t c = 0; c < l.carried.size(); ++c) {
      if (r_.warpLanes().empty()) {
        treeCombine(l, c, indent);
      } else {
        shuffleCombine(l, c, indent);
      }
    }
  }

  /// Combines carried value `c` of `l` through the block's array: a tree of halving strides.
  void treeCombine(const KLoop& l, size_t c, const std::string& indent) {
    DType t = typeOf(l.carried[c]);
    std::string red = "smelt_red_" + ident(regType(t));
    out_ += fmt::format("{}{}[tid] = {};\n", indent, red, v(l.carried[c]));
    barrier(indent);
    out_ += fmt::format("{0}for ({1} s = {2}; s > 0; s >>= 1) {{\n", indent, i64(), k_.blockThreads / 2);
    out_ += fmt::format("{0}  if (tid < s) {1}[tid] = {2};\n{0}  {3}\n{0}}}\n", indent, red,
                        combineExpr(l.combine[c], t, red + "[tid]", red + "[tid + s]", indent + "  "),
                        r_.blockBarrier());
    readTotal(l, c, red, indent);
  }

  /// Combines carried value `c` of `l` with warp shuffles: each warp in registers, its lane 0 writes
  /// the warp's partial, and the first warp combines those the same way.
  void shuffleCombine(const KLoop& l, size_t c, const std::string& indent) {
    DType t = typeOf(l.carried[c]);
    const std::string reg = regType(t), red = "smelt_red_" + ident(reg), x = v(l.carried[c]);
    // The shuffle runs once per step into its own variable, by every lane: a combine such as max's
    // NaN test evaluates its operands conditionally, and a shuffle some lanes of the warp skip waits
    // for them forever (it hung softmax on an H100).
    auto warpCombine = [&](const std::string& in) {
      const std::string other = x + "_o", inner = indent + in + "  ";
      out_ += fmt::format("{0}{1}for (int s = lanes / 2; s > 0; s >>= 1) {{\n", indent, in);
      out_ += fmt::format("{}{} {} = ({}){};\n", inner, reg, other, reg, r_.shuffleDown(x, "s", "lanes"));
      std::string combined = combineExpr(l.combine[c], t, x, other, inner);
      out_ += fmt::format("{}{} = {};\n{}{}}}\n", inner, x, combined, indent, in);
    };
    warpCombine("");
    out_ += fmt::format("{}if (tid % lanes == 0) {}[tid / lanes] = {};\n", indent, red, x);
    barrier(indent);
    // The first warp, every lane active (a shuffle reads only active lanes), combines the partials.
    out_ += fmt::format("{}if (tid < lanes) {{\n", indent);
    out_ += fmt::format("{}  {} = tid < {} / lanes ? {}[tid] : {};\n", indent, x, k_.blockThreads, red,
                        identity(l.combine[c], t));
    warpCombine("  ");
    // The total has a slot of its own, so no barrier follows its reading: the next combine's first
    // barrier comes before anything writes the slot again, and every read of the partials comes
    // before this combine's second barrier, which any thread writing the next partials has passed.
    out_ += fmt::format("{0}  if (tid == 0) {1}[{3}] = {2};\n{0}}}\n", indent, red, x, totalSlot());
    barrier(indent);
    out_ += fmt::format("{}{} {} = {}[{}];\n", indent, reg, v(l.results[c]), red, totalSlot());
  }
  /// Where shuffleCombine leaves a block's total: after one partial per warp of at least 32 lanes.
  int totalSlot() const { return std::max(1, k_.blockThreads / 32); }

  /// Every thread reads the combined total, then a barrier: no thread overwrites the array (the next
  /// combine) while another still reads it.
  void readTotal(const KLoop& l, size_t c, const std::string& red, const std::string& indent) {
    out_ += fmt::format("{}{} {} = {}[0];\n", indent, regType(typeOf(l.carried[c])), v(l.results[c]), red);
    barrier(indent);
  }

  void barrier(const std::string& indent) {
    out_ += fmt::format("{}{}\n", indent, r_.blockBarrier());
    written_.clear();
  }
  /// A barrier if a thread of the block wrote `buffer` (or memory it shares) since the last one: what
  /// follows reads it, maybe where another thread wrote.
  void barrierIfWritten(int32_t buffer, const std::string& indent) {
    if (written_.count(rootOf(buffer)) != 0) barrier(indent);
  }
  int32_t rootOf(int32_t buffer) const { return memoryOf(k_, buffer); }
  static void loadsIn(const KBlock& b, std::vector<int32_t>& out) {
    for (const KStmt& s : b.stmts) {
      if (const KInst* i = std::get_if<KInst>(&s)) {
        if (i->kind == KInstKind::Load) out.push_back(static_cast<int32_t>(i->ibits));
      } else if (const auto* l = std::get_if<std::shared_ptr<KLoop>>(&s)) {
        loadsIn((*l)->body, out);
      }
    }
  }

  void loop(const KLoop& l, const std::string& indent) {
    if (l.split && k_.blockThreads > 0) return splitLoop(l, indent);
    // Carried values are mutable variables, declared before the loop and updated at its end; per-thread
    // partials of a combining loop (KLoop::partial) start from the identity but in thread 0.
    const bool combines = !l.combine.empty() && k_.blockThreads > 0;
    for (size_t c = 0; c < l.carried.size(); ++c) {
      const DType t = typeOf(l.carried[c]);
      out_ += fmt::format("{}{} {} = {};\n", indent, regType(t), v(l.carried[c]),
                          combines ? fmt::format("tid == 0 ? {} : {}", v(l.init[c]), identity(l.combine[c], t))
                                   : v(l.init[c]));
    }
    out_ += fmt::format("{0}for ({1} {2} = 0; {2} < {3}; ++{2}) {{\n", indent, i64(), v(l.index), extentOf(l));
    std::string inner = indent + "  ";
    ++depth_;
    block(l.body, inner);
    --depth_;
    // All next values are read before any carried variable changes when one next is another
    // carried value (a swap).
    bool readsCarried = false;
    for (size_t c = 0; c < l.next.size(); ++c) {
      for (size_t o = 0; o < l.carried.size(); ++o) readsCarried |= o != c && l.next[c] == l.carried[o];
    }
    for (size_t c = 0; c < l.next.size(); ++c) {
      if (readsCarried)
        out_ +=
            fmt::format("{}{} {}_next = {};\n", inner, regType(typeOf(l.carried[c])), v(l.carried[c]), v(l.next[c]));
    }
    for (size_t c = 0; c < l.next.size(); ++c) {
      if (l.next[c] == l.carried[c]) continue;
      out_ += fmt::format("{}{} = {}{};\n", inner, v(l.carried[c]), readsCarried ? v(l.carried[c]) : v(l.next[c]),
                          readsCarried ? "_next" : "");
    }
    out_ += indent + "}\n";
    if (combines) return combineCarried(l, indent);
    for (size_t c = 0; c < l.results.size(); ++c) {
      out_ += fmt::format("{}{} {} = {};\n", indent, regType(typeOf(l.results[c])), v(l.results[c]), v(l.carried[c]));
    }
  }

  void block(const KBlock& b, const std::string& indent) {
    for (const KStmt& s : b.stmts) {
      if (const KInst* i = std::get_if<KInst>(&s))
        inst(*i, indent);
      else if (const KStore* st = std::get_if<KStore>(&s))
        store(*st, indent);
      else
        loop(*std::get<std::shared_ptr<KLoop>>(s), indent);
    }
  }

  /// Records the first thing that cannot be rendered; run() returns it as the error.
  void fail(const std::string& what) {
    if (error_.empty()) error_ = what;
  }
  Error failure(std::string_view what) const {
    return makeError("kernel @{}: the {} renderer cannot render {}", k_.name, r_.backend(), what);
  }

  const CRenderer& r_;
  const Kernel& k_;
  std::string out_;
  std::string error_;
  /// Loops entered (0: the body's top level); the buffers stored to since the last barrier.
  int depth_ = 0;
  std::set<int32_t> written_;
  /// The lane being rendered in vectorBody, or -1, and the values that are the point (outer 0).
  int lane_ = -1;
  std::set<int32_t> points_;
  /// Split loops rendered so far.
  int splitLoops_ = 0;
  /// The rows kept in registers, and the iteration variable of the unrolled split loop being rendered.
  RowCachePlan rows_;
  std::string step_;
};

}  // namespace

std::string CRenderer::prelude() const {
  std::string text = preludeHeader();
  text += kPrelude;
  if (fp64()) text += kPreludeDouble;
  replaceAll(text, "$HP", helperPrefix());
  replaceAll(text, "$U32", typeName(DType::u32));
  replaceAll(text, "$U64", typeName(DType::u64));
  replaceAll(text, "$I64", typeName(DType::i64));
  replaceAll(text, "$L", int64Suffix());
  // The bit casts are written as calls: $F2B(x) -> the hook's expression of x.
  for (auto [tag, toFloat] :
       {std::pair{std::string_view("$F2B("), false}, std::pair{std::string_view("$B2F("), true}}) {
    for (size_t at = text.find(tag); at != std::string::npos; at = text.find(tag, at)) {
      size_t open = at + tag.size() - 1, depth = 0, close = open;
      for (; close < text.size(); ++close) {
        depth += text[close] == '(';
        if (text[close] == ')' && --depth == 0) break;
      }
      std::string arg = text.substr(open + 1, close - open - 1);
      std::string call = toFloat ? bitsToFloat(arg, false) : floatToBits(arg, false);
      text.replace(at, close + 1 - at, call);
    }
  }
  return text;
}

Expected<std::string> CRenderer::renderKernel(const Kernel& kernel, const std::string& symbol) const {
  return Writer(*this, kernel).run(symbol);
}

Expected<std::string> CRenderer::renderSource(std::span<const Kernel* const> kernels,
                                              std::span<const std::string> symbols) const {
  if (kernels.size() != symbols.size()) {
    return makeError("{} renderer: {} kernels but {} symbols", backend(), kernels.size(), symbols.size());
  }
  std::string source = prelude();
  for (size_t i = 0; i < kernels.size(); ++i) {
    SMELT_TRY(std::string text, renderKernel(*kernels[i], symbols[i]));
    source += "\n" + text;
  }
  return source;
}

std::string CRenderer::symbolFor(const Kernel& kernel, size_t index) {
  std::string name = fmt::format("k{}_{}", index, kernel.name);
  for (char& c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) c = '_';
  }
  return name;
}

}  // namespace smelt::codegen

// Turns elementwise table rows into OpDefs: inference (dtype check, broadcasting) and reference loops.
#include "ir/ops/elementwise.h"

#include "ir/ops/lower_helpers.h"
#include "ir/ops/op_helpers.h"

#include <optional>

namespace smelt::ops {

namespace {

std::string unaryExample(const std::string& name) {
  return fmt::format(R"(graph @t(%x: $T[2,3]) {{
  %0 = {}(%x) : $T[2,3]
  return r = %0
}})",
                     name);
}

std::string binaryExample(const std::string& name, bool predicate) {
  std::string result = predicate ? "bool" : "$T";
  return fmt::format(R"(graph @t(%a: $T[2,3], %b: $T[3]) {{
  %0 = {}(%a, %b) : {}[2,3]
  return r = %0
}})",
                     name, result);
}

}  // namespace

OpDef makeUnaryOp(UnaryRow row) {
  OpDef def;
  def.name = row.name;
  def.summary = row.summary;
  def.operands = {{"x"}};
  def.attrs = row.attrs;
  def.fusion = FusionKind::Elementwise;
  def.symbolicDims = true;
  def.dtypes = row.dtypes;
  DTypeSet allowed = row.dtypes;
  def.infer = [allowed, validate = row.validate](const OpCall& call) -> Expected<std::vector<TensorType>> {
    SMELT_CHECK_OK(expectDType(call, 0, allowed));
    if (validate) SMELT_CHECK_OK(validate(call));
    return single(call.operand(0));
  };
  def.reference = [floatFn = row.floatFn, intFn = row.intFn, unsignedFn = row.unsignedFn](
                      const OpCall& call, std::span<const Tensor> in) -> Expected<std::vector<Tensor>> {
    const Tensor& x = in[0];
    Tensor out(x.type());
    FloatFn1 f = floatFn(call);
    dispatchDType(x.dtype(), [&]<typename T>(TypeTag<T>) {
      const T* src = x.data<T>();
      T* dst = out.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        if constexpr (kIsFloatStorage<T>) {
          dst[i] = fromDouble<T>(f(toDouble(src[i])));
        } else if constexpr (std::is_signed_v<T>) {
          dst[i] = intFn ? static_cast<T>(intFn(static_cast<int64_t>(src[i]))) : fromDouble<T>(f(toDouble(src[i])));
        } else {
          // Unsigned and bool: zero-extend so u64 values past 2^63 are not read as negative.
          dst[i] = unsignedFn ? static_cast<T>(unsignedFn(static_cast<uint64_t>(src[i])))
                              : fromDouble<T>(f(toDouble(src[i])));
        }
      }
    });
    return std::vector<Tensor>{std::move(out)};
  };
  if (row.grad) {
    def.gradient = [grad = row.grad](Builder& b, const GradientContext& c) -> std::vector<Value*> {
      return {grad(b, c.x(0), c.y(), c.dy(), c)};
    };
  }
  if (row.lower) {
    def.lower = elementwiseLowering([lower = row.lower](KernelEmitter& e, std::span<const KValue> x, const OpCall& call) {
      return lower(e, x[0], call);
    });
  }
  def.example = row.example.empty() ? unaryExample(row.name) : row.example;
  return def;
}

namespace {

std::optional<KBinary> kernelBinaryNamed(std::string_view name) {
  static const std::pair<std::string_view, KBinary> table[] = {
      {"add", KBinary::Add}, {"sub", KBinary::Sub}, {"mul", KBinary::Mul}, {"div", KBinary::Div},
      {"pow", KBinary::Pow}, {"min", KBinary::Min}, {"max", KBinary::Max}, {"and", KBinary::And},
      {"or", KBinary::Or},   {"xor", KBinary::Xor}, {"eq", KBinary::Eq},   {"ne", KBinary::Ne},
      {"lt", KBinary::Lt},   {"le", KBinary::Le},   {"gt", KBinary::Gt},   {"ge", KBinary::Ge}};
  for (const auto& [n, op] : table) {
    if (n == name) return op;
  }
  return std::nullopt;
}

}  // namespace

OpDef makeBinaryOp(BinaryRow row) {
  OpDef def;
  def.name = row.name;
  def.summary = row.summary;
  def.operands = {{"lhs"}, {"rhs"}};
  def.fusion = FusionKind::Elementwise;
  def.symbolicDims = true;
  def.dtypes = row.dtypes;
  DTypeSet allowed = row.dtypes;
  bool predicate = row.predicate;
  def.infer = [allowed, predicate](const OpCall& call) -> Expected<std::vector<TensorType>> {
    SMELT_CHECK_OK(expectDType(call, 0, allowed));
    SMELT_CHECK_OK(expectSameDType(call, 0, 1));
    auto shape = broadcastShapes(call.operand(0).shape, call.operand(1).shape);
    if (!shape) return call.error("{}", shape.error().message());
    return single(TensorType{predicate ? DType::boolean : call.operand(0).dtype, *shape});
  };
  def.reference = [row](const OpCall& call, std::span<const Tensor> in) -> Expected<std::vector<Tensor>> {
    const Tensor& a = in[0];
    const Tensor& b = in[1];
    Tensor out(call.results()[0]);
    std::vector<int64_t> ia = broadcastIndexMap(a.shape(), out.shape());
    std::vector<int64_t> ib = broadcastIndexMap(b.shape(), out.shape());
    dispatchDType(a.dtype(), [&]<typename T>(TypeTag<T>) {
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      auto store = [&](int64_t i, auto value) {
        if (row.predicate) {
          out.data<bool>()[i] = value != 0;
        } else if constexpr (kIsFloatStorage<T>) {
          out.data<T>()[i] = fromDouble<T>(static_cast<double>(value));
        } else {
          out.data<T>()[i] = static_cast<T>(value);
        }
      };
      for (int64_t i = 0; i < out.numel(); ++i) {
        T x = pa[ia[i]];
        T y = pb[ib[i]];
        if constexpr (kIsFloatStorage<T>) {
          store(i, row.floatFn(toDouble(x), toDouble(y)));
        } else if constexpr (std::is_signed_v<T>) {
          if (row.signedFn) {
            store(i, row.signedFn(static_cast<int64_t>(x), static_cast<int64_t>(y)));
          } else {
            store(i, fromDouble<T>(row.floatFn(toDouble(x), toDouble(y))));
          }
        } else {
          if (row.unsignedFn) {
            store(i, row.unsignedFn(static_cast<uint64_t>(x), static_cast<uint64_t>(y)));
          } else {
            store(i, fromDouble<T>(row.floatFn(toDouble(x), toDouble(y))));
          }
        }
      }
    });
    return std::vector<Tensor>{std::move(out)};
  };
  if (row.gradLhs || row.gradRhs) {
    def.gradient = [lhs = row.gradLhs, rhs = row.gradRhs](Builder& b, const GradientContext& c) -> std::vector<Value*> {
      Value* a = c.x(0);
      Value* bv = c.x(1);
      Value* da = lhs ? b.sumToShape(lhs(b, a, bv, c.y(), c.dy()), a->shape()) : nullptr;
      Value* db = rhs ? b.sumToShape(rhs(b, a, bv, c.y(), c.dy()), bv->shape()) : nullptr;
      return {da, db};
    };
  }
  def.example = row.example.empty() ? binaryExample(row.name, row.predicate) : row.example;
  if (auto op = kernelBinaryNamed(row.name)) {
    def.lower = elementwiseLowering([op = *op](KernelEmitter& e, std::span<const KValue> x, const OpCall&) {
      return e.binary(op, x[0], x[1]);
    });
  }
  return def;
}

}  // namespace smelt::ops

// The op registry: every op is declared once, as one OpDef holding all of its facets (operands,
// attributes with defaults, dtype and shape inference with verification, reference semantics, and an
// IR example the registry-wide tests run). Later stages add their facets (gradient, lowering) here.
#pragma once

#include "ir/attribute.h"
#include "ir/lowering.h"
#include "ir/support/expected.h"
#include "ir/tensor.h"

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace smelt {

struct OpDef;
class Builder;
class Node;
class Value;

/// How an operand slot is filled: exactly once, optionally (trailing slots only), any number >= 1
/// (Variadic), or any number, none too (AnyNumber: a fused kernel whose body only generates values,
/// such as a range up to a symbolic length).
enum class Arity { Single, Optional, Variadic, AnyNumber };

/// One operand slot of an op.
struct OperandSpec {
  std::string name;
  Arity arity = Arity::Single;
};

/// One attribute of an op; no default means the attribute is required.
struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<Attribute> defaultValue;
};

/// How the op behaves for fusion: elementwise maps index to index; broadcast (expand) and injective ops (pad,
/// gather, concat) move data; views (reshape, transpose, slice, ...) are an indexed load of their operand inside
/// a kernel; reductions reduce; opaque ops are kernels of their own (an op with a `product` facet heads an
/// epilogue kernel).
enum class FusionKind { Elementwise, Broadcast, Injective, View, Reduction, Opaque };

/// What product an op computes, for ops that are a matrix product at heart: fusion makes them the head (anchor)
/// of an epilogue kernel, and the runtime plans them onto vendor GEMMs (runtime/exec/gemm_plan).
struct ProductFacet {
  enum class Kind { Matmul, Gemm, Conv, ConvTranspose, ConvWeightGrad };
  Kind kind = Kind::Matmul;
  /// The operand added to the product (a bias, gemm's c), or -1; it is present when the node has more operands.
  int addend = -1;
};

/// The range one operand's values must lie in, [lo, hi), and the words an error says of a value outside it
/// ("an index is out of range [-4, 4) for axis 1 of size 4").
struct OperandRange {
  int64_t lo = 0;
  int64_t hi = 0;
  std::string words;
};

class OpCall;

/// An operand whose values the reference checks and a kernel cannot (a kernel does not stop: a gather would
/// clamp an index, a scatter drop an update, a one-hot comparison match nothing). Compiled graphs compute a
/// flag beside the node and the executable reports a value outside the range after the run
/// (passes/index_checks.h).
struct CheckedOperand {
  size_t operand = 1;
  std::function<OperandRange(const OpCall& call)> range;
};

/// What an op's inference and reference functions see of one application: the operand types, the
/// complete attributes (defaults filled in), the result types (reference only), and a label such as
/// "conv2d %7" that every error message starts with.
class OpCall {
 public:
  OpCall(const OpDef& op, std::string label, std::span<const TensorType> operandTypes, const AttrMap& attrs,
         std::span<const TensorType> resultTypes = {})
      : op_(op), label_(std::move(label)), operandTypes_(operandTypes), attrs_(attrs), resultTypes_(resultTypes) {}

  const OpDef& op() const { return op_; }
  const std::string& label() const { return label_; }
  size_t numOperands() const { return operandTypes_.size(); }
  const TensorType& operand(size_t i) const { return operandTypes_[i]; }
  std::span<const TensorType> operands() const { return operandTypes_; }
  std::span<const TensorType> results() const { return resultTypes_; }
  const AttrMap& attrs() const { return attrs_; }

  int64_t getInt(std::string_view name) const { return get<int64_t>(name); }
  double getFloat(std::string_view name) const { return get<double>(name); }
  const std::string& getString(std::string_view name) const { return get<std::string>(name); }
  const std::vector<int64_t>& getInts(std::string_view name) const { return get<std::vector<int64_t>>(name); }
  const std::vector<double>& getFloats(std::string_view name) const { return get<std::vector<double>>(name); }
  const Tensor& getTensor(std::string_view name) const { return get<Tensor>(name); }

  /// An error prefixed with the label: `call.error("input has {} channels", c)`.
  template <typename... Args>
  Error error(fmt::format_string<Args...> format, Args&&... args) const {
    return Error(label_ + ": " + fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  template <typename T>
  const T& get(std::string_view name) const;

  const OpDef& op_;
  std::string label_;
  std::span<const TensorType> operandTypes_;
  const AttrMap& attrs_;
  std::span<const TensorType> resultTypes_;
};

/// Checks operand dtypes and shapes and attribute values, and returns the result types.
using InferFn = std::function<Expected<std::vector<TensorType>>(const OpCall& call)>;
/// Computes the results on host tensors. Plain loops, clear over fast, float math in double.
using ReferenceFn = std::function<Expected<std::vector<Tensor>>(const OpCall& call, std::span<const Tensor> operands)>;

/// What a gradient rule sees: the forward node (operands, results, attributes) and the gradient
/// flowing into each result, null where none flows (a result that does not reach the target).
class GradientContext {
 public:
  GradientContext(const Node& node, std::span<Value* const> resultGrads) : node_(node), resultGrads_(resultGrads) {}
  const Node& node() const { return node_; }
  /// Operand `i`, result `i`, and the gradient flowing into result `i` (null: none).
  Value* x(size_t i) const;
  Value* y(size_t i = 0) const;
  Value* dy(size_t i = 0) const { return i < resultGrads_.size() ? resultGrads_[i] : nullptr; }
  size_t numOperands() const;
  int64_t getInt(std::string_view name) const;
  double getFloat(std::string_view name) const;
  const std::string& getString(std::string_view name) const;
  const std::vector<int64_t>& getInts(std::string_view name) const;
  const std::vector<double>& getFloats(std::string_view name) const;

 private:
  const Node& node_;
  std::span<Value* const> resultGrads_;
};

/// Emits the vector-Jacobian product of one node with registry ops and returns one gradient per
/// operand: null for operands that take none (integers, indices, conditions). Errors go to the Builder.
using GradientFn = std::function<std::vector<Value*>(Builder& b, const GradientContext& ctx)>;
/// Emits the node's computation in more primitive registry ops, returning values of the same types as
/// its results. An op with a decomposition and no gradient rule is differentiated through it.
using DecomposeFn = std::function<std::vector<Value*>(Builder& b, const Node& node)>;

/// Runs `body(begin, end)` over parts of [0, count), possibly on several threads (the executable's pool).
using ParallelFor = std::function<void(int64_t count, const std::function<void(int64_t, int64_t)>& body)>;
/// A direct CPU implementation over raw buffers: the operands', then the results' (flat, row-major).
using HostKernel = std::function<void(char* const* buffers, const ParallelFor& parallel)>;
/// The host implementation of one application, or an empty function where it does not apply (a dtype
/// it does not take): the op's kernel runs instead.
using HostFn = std::function<HostKernel(const OpCall& call)>;

/// The one declaration of an op.
struct OpDef {
  std::string name;
  std::string summary;
  std::vector<OperandSpec> operands;
  std::vector<AttrSpec> attrs;
  FusionKind fusion = FusionKind::Opaque;
  /// Set for ops that are a matrix product (matmul, gemm, the convolutions): see ProductFacet.
  std::optional<ProductFacet> product;
  /// The element types the op accepts for its main operand(s): listed by `smelt ops`, and every one of
  /// them is run by the registry-wide tests through `example`.
  DTypeSet dtypes;
  InferFn infer;
  /// Whether `infer` takes operands with symbolic extents (ir/type.h): it only copies, compares and
  /// broadcasts extents, never computes with one (or, as reshape, handles them itself). The graph
  /// refuses symbolic operands to any other op with an error naming the node.
  bool symbolicDims = false;
  ReferenceFn reference;
  /// A complete IR graph using the op, with `$T` standing for each dtype in `dtypes`. The registry
  /// tests parse it for every dtype, verify it, round-trip it and run it on random inputs.
  std::string example;
  /// `example` for `dtype` (`smelt ops --example`, the registry-wide tests).
  std::string exampleIn(DType dtype) const;
  /// Reverse-mode rule (autodiff). Null when the op has none; see `decompose`.
  GradientFn gradient;
  /// The op in primitives: composite ops inherit their gradient (and gradients of gradients) from it.
  DecomposeFn decompose;
  /// How one element of the results is computed (codegen): see ir/lowering.h. Null: the op cannot be
  /// compiled (composites are decomposed first).
  LowerFn lower;
  /// For ops whose kernel form is a gather a CPU runs badly while a plain loop does not (a scatter
  /// written as a gather): the CPU executable runs this instead of the kernel when the op is a node
  /// of its own. It must give the kernel's results bit for bit (the same arithmetic in the same order).
  /// Null: the kernel everywhere.
  HostFn host;
  /// A collective across the ranks of a data-parallel job (ir/collective.h): never a kernel, never folded or
  /// merged; every executable runs it on the host, in schedule order (`collectiveOnHost` over a CPU executable's
  /// buffers, else `reference` on copies).
  bool collective = false;
  /// A collective over an executable's own host buffers (operands', then results'), without the copies
  /// `reference` works on: the CPU executable runs it (runtime/exec). Null: `reference`.
  std::function<Status(const OpCall& call, char* const* buffers)> collectiveOnHost;
  /// Set for ops with an operand whose values must lie in a range (indices, labels): see CheckedOperand.
  std::optional<CheckedOperand> checked;
  /// Rough arithmetic operations of one application (`smelt inspect`, cost models); the OpCall has
  /// operand and result types. Null: defaultFlops() by fusion kind.
  std::function<int64_t(const OpCall&)> flops;

  /// True when gradients flow through the op (it has a rule or a decomposition).
  bool differentiable() const { return gradient != nullptr || decompose != nullptr; }
  /// The attribute spec named `name`, or null.
  const AttrSpec* findAttr(std::string_view attrName) const;
  /// The fewest and most operands the op takes (max is SIZE_MAX when variadic).
  size_t minOperands() const;
  size_t maxOperands() const;
};

/// The FLOPs of an op without a `flops` facet: elementwise ops one per result element, reductions one
/// per input element, data movement (broadcast, injective) none, opaque ops one per result element.
inline int64_t defaultFlops(const OpCall& call) {
  int64_t results = 0;
  for (const TensorType& t : call.results()) results += t.numel();
  switch (call.op().fusion) {
    case FusionKind::Broadcast:
    case FusionKind::Injective:
    case FusionKind::View:
      return 0;
    case FusionKind::Reduction:
      return call.numOperands() ? call.operand(0).numel() : 0;
    case FusionKind::Elementwise:
    case FusionKind::Opaque:
      break;
  }
  return results;
}

/// The op's `flops` facet when it has one, else defaultFlops().
inline int64_t flopsOf(const OpCall& call) { return call.op().flops ? call.op().flops(call) : defaultFlops(call); }

/// All ops, by name. Built once on first use; read-only and thread-safe after that.
class OpRegistry {
 public:
  static const OpRegistry& global();

  const OpDef* find(std::string_view name) const;
  /// Every op, sorted by name.
  const std::vector<const OpDef*>& all() const { return sorted_; }

  /// Registers an op. Used only by the register*Ops functions in ir/ops/.
  void add(OpDef def);

 private:
  OpRegistry() = default;
  void finalize();
  std::vector<std::unique_ptr<OpDef>> ops_;
  std::vector<const OpDef*> sorted_;
};

/// The op's inference for `call`, guarded for symbolic extents: symbolic operands only where the op
/// takes them (OpDef::symbolicDims), and every result shape within checkShapeLimits (an extent an op
/// computed from a symbol is an error naming the node, never a wrong shape).
Expected<std::vector<TensorType>> inferResultTypes(const OpCall& call);

/// `text` with every `$T` replaced by `dtype`: op examples and the tests' IR written for several dtypes.
std::string substituteDType(std::string text, std::string_view dtype);

/// Checks operand count and attribute names/kinds against `op`, fills in default attributes, and returns
/// the complete attribute map. Errors start with `label`.
Expected<AttrMap> completeAttributes(const OpDef& op, std::string_view label, size_t numOperands, AttrMap attrs);

template <typename T>
const T& OpCall::get(std::string_view name) const {
  auto it = attrs_.find(name);
  // Attributes are completed and kind-checked before any inference or reference call, so a miss
  // here is a bug in the op's declaration, not bad input.
  if (it == attrs_.end() || !std::holds_alternative<T>(it->second)) {
    static const T empty{};
    fmt::print(stderr, "smelt internal error: {} reads undeclared attribute '{}'\n", label_, name);
    return empty;
  }
  return std::get<T>(it->second);
}

}  // namespace smelt

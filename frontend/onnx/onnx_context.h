// Import state shared by the converters: the value table (ONNX names -> smelt values), known constant
// values, attribute access, and node emission with constant folding (a smelt node whose operands are
// all constants is evaluated with the reference interpreter and replaced by a `constant`).
#pragma once

#include "frontend/onnx/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace smelt::onnximport {

/// An ONNX value whose contents are known at import time.
struct ConstEntry {
  Tensor value;
  /// True for initializers: consumed as a run-time operand they become parameters (not folded).
  bool initializer = false;
};

/// The model-wide import state.
struct ImportState {
  Graph* graph = nullptr;
  int opset = 17;
  std::string modelDir;
  const OnnxImportOptions* options = nullptr;
  /// ONNX value name -> smelt value, for values already materialized.
  std::map<std::string, Value*, std::less<>> values;
  /// ONNX value name -> known contents (initializers, Constant outputs, folded results).
  std::map<std::string, ConstEntry, std::less<>> constants;
  /// Initializers already materialized as parameters / as constant nodes.
  std::map<std::string, Value*, std::less<>> parameterValues;
  std::map<std::string, Value*, std::less<>> constantNodeValues;
  /// Values computed at import time for static operands that depend on hinted graph inputs.
  std::map<const Value*, Tensor> staticMemo;
};

/// The tensor a `constant` node holds, or null when `v` is not a constant node's result.
const Tensor* constantValueOf(const Value* v);

/// What a converter sees of one ONNX node.
class NodeContext {
 public:
  NodeContext(ImportState& state, const onnx::NodeProto& proto);

  const onnx::NodeProto& proto() const { return proto_; }
  const std::string& opType() const { return proto_.op_type(); }
  const std::string& nodeName() const { return proto_.name(); }
  int opset() const { return state_.opset; }
  Graph& graph() { return *state_.graph; }

  // --- inputs -----------------------------------------------------------------------------------
  size_t numInputs() const { return static_cast<size_t>(proto_.input_size()); }
  /// True when input `i` is present (ONNX marks a skipped optional input with an empty name).
  bool hasInput(size_t i) const { return i < numInputs() && !proto_.input(static_cast<int>(i)).empty(); }
  /// Input `i` as a run-time value (an initializer becomes a parameter here).
  Expected<Value*> input(size_t i);
  /// The type of input `i`, without materializing it.
  Expected<TensorType> inputType(size_t i);
  /// Input `i` as a static tensor; a clear error when it is computed at run time.
  Expected<Tensor> constInput(size_t i);
  /// Input `i` as static integers (axes, pads, shapes).
  Expected<std::vector<int64_t>> constInts(size_t i);
  /// Input `i` as one static number (a scalar or one-element tensor).
  Expected<double> constScalar(size_t i);

  // --- attributes (missing -> default; a wrong kind is reported after the converter returns) --------
  bool hasAttr(std::string_view name) const { return findAttr(name) != nullptr; }
  int64_t attrInt(std::string_view name, int64_t def);
  double attrFloat(std::string_view name, double def);
  std::string attrString(std::string_view name, std::string def);
  std::vector<int64_t> attrInts(std::string_view name, std::vector<int64_t> def = {});
  std::vector<double> attrFloats(std::string_view name, std::vector<double> def = {});
  Expected<Tensor> attrTensor(std::string_view name);
  /// The first attribute error a getter met, if any.
  const std::optional<Error>& attrError() const { return attrError_; }

  // --- outputs ----------------------------------------------------------------------------------
  size_t numOutputs() const { return static_cast<size_t>(proto_.output_size()); }
  bool hasOutput(size_t i) const { return i < numOutputs() && !proto_.output(static_cast<int>(i)).empty(); }
  /// Binds ONNX output `i` to `v` (ignored when the output is absent).
  Status setOutput(size_t i, Value* v);

  // --- emission ---------------------------------------------------------------------------------
  /// Adds a smelt node named after this ONNX node; folds it when every operand is a constant.
  Expected<std::vector<Value*>> emitNode(std::string_view op, std::vector<Value*> operands, AttrMap attrs = {});
  /// emitNode for single-result ops.
  Expected<Value*> emit(std::string_view op, std::vector<Value*> operands, AttrMap attrs = {});
  /// A `constant` node.
  Value* constant(Tensor value);
  /// A rank-0 constant of `dtype`.
  Value* scalar(DType dtype, double value) { return constant(Tensor::scalar(dtype, value)); }

 private:
  const onnx::AttributeProto* findAttr(std::string_view name) const;
  void attrKindError(const onnx::AttributeProto& a, std::string_view expected);
  Expected<std::string> inputName(size_t i) const;
  /// Evaluates `v` at import time from constants, non-trainable parameters and hinted graph inputs.
  Expected<Tensor> staticValue(const Value* v, int depth);

  ImportState& state_;
  const onnx::NodeProto& proto_;
  bool allInputsConstant_ = false;
  std::optional<Error> attrError_;
};

/// Converts one ONNX node: reads its inputs and attributes, emits smelt nodes, binds its outputs.
using Converter = Status (*)(NodeContext& node);
using ConverterTable = std::map<std::string, Converter, std::less<>>;

/// Converter families, one per onnx_ops_*.cpp file.
void addElementwiseConverters(ConverterTable& table);
void addReduceConverters(ConverterTable& table);
void addLayoutConverters(ConverterTable& table);
void addNnConverters(ConverterTable& table);
void addCompositeConverters(ConverterTable& table);
void addScatterConverters(ConverterTable& table);
void addResizeConverters(ConverterTable& table);
void addRecurrentConverters(ConverterTable& table);
void addEinsumConverters(ConverterTable& table);

/// Every converter, by ONNX op type (built once).
const ConverterTable& converterTable();

}  // namespace smelt::onnximport

// NodeContext: input lookup (run-time or static), attribute access, node emission with folding.
#include "frontend/onnx/onnx_context.h"

#include "frontend/onnx/onnx_shape_values.h"
#include "frontend/onnx/onnx_tensor.h"

#include <cmath>

namespace smelt::onnximport {

const Tensor* constantValueOf(const Value* v) {
  if (!v || !v->producer() || v->producer()->opName() != "constant") return nullptr;
  auto it = v->producer()->attrs().find("value");
  if (it == v->producer()->attrs().end()) return nullptr;
  return std::get_if<Tensor>(&it->second);
}

NodeContext::NodeContext(ImportState& state, const onnx::NodeProto& proto) : state_(state), proto_(proto) {
  // A node whose inputs are all known folds entirely, so even integer initializers stay constants.
  allInputsConstant_ = true;
  for (const std::string& name : proto_.input()) {
    if (name.empty()) continue;
    auto c = state_.constants.find(name);
    bool known = c != state_.constants.end() && !(c->second.initializer && isFloat(c->second.value.dtype()));
    if (!known) {
      auto v = state_.values.find(name);
      known = v != state_.values.end() && constantValueOf(v->second);
    }
    if (!known) allInputsConstant_ = false;
  }
}

Expected<std::string> NodeContext::inputName(size_t i) const {
  if (!hasInput(i)) return makeError("input #{} is missing", i);
  return proto_.input(static_cast<int>(i));
}

Expected<Value*> NodeContext::input(size_t i) {
  SMELT_TRY(std::string name, inputName(i));
  if (auto it = state_.values.find(name); it != state_.values.end()) return it->second;
  auto c = state_.constants.find(name);
  if (c == state_.constants.end()) {
    return makeError("input #{} '{}' is not produced by any earlier node, initializer or graph input", i, name);
  }
  const ConstEntry& entry = c->second;
  bool asParameter = entry.initializer && !(allInputsConstant_ && !isFloat(entry.value.dtype()));
  if (asParameter) {
    if (auto p = state_.parameterValues.find(name); p != state_.parameterValues.end()) return p->second;
    if (graph().isNameTaken(name)) return makeError("initializer '{}' clashes with a graph input", name);
    Value* v = graph().addParameter(name, entry.value, isFloat(entry.value.dtype()));
    state_.parameterValues[name] = v;
    return v;
  }
  if (auto p = state_.constantNodeValues.find(name); p != state_.constantNodeValues.end()) return p->second;
  Value* v = constant(entry.value);
  state_.constantNodeValues[name] = v;
  return v;
}

Expected<TensorType> NodeContext::inputType(size_t i) {
  SMELT_TRY(std::string name, inputName(i));
  if (auto it = state_.values.find(name); it != state_.values.end()) return it->second->type();
  if (auto c = state_.constants.find(name); c != state_.constants.end()) return c->second.value.type();
  return makeError("input #{} '{}' is not produced by any earlier node, initializer or graph input", i, name);
}

Expected<Tensor> NodeContext::constInput(size_t i) {
  SMELT_TRY(std::string name, inputName(i));
  if (auto c = state_.constants.find(name); c != state_.constants.end()) return c->second.value;
  auto it = state_.values.find(name);
  if (it == state_.values.end()) {
    return makeError("input #{} '{}' is not produced by any earlier node, initializer or graph input", i, name);
  }
  auto value = staticValue(it->second, 0);
  if (!value.ok()) {
    return makeError("input #{} '{}' must be static (an initializer, a Constant, or computed from static shapes), "
                     "but {}",
                     i, name, value.error().message());
  }
  return value;
}

Expected<Tensor> NodeContext::staticValue(const Value* v, int depth) {
  if (const Tensor* t = constantValueOf(v)) return *t;
  if (auto m = state_.staticMemo.find(v); m != state_.staticMemo.end()) return m->second;
  if (v->kind() == ValueKind::Input) {
    if (state_.options) {
      auto hint = state_.options->staticInputValues.find(v->name());
      if (hint != state_.options->staticInputValues.end()) {
        if (state_.options->usedStaticInputs) state_.options->usedStaticInputs->insert(v->name());
        if (!(hint->second.type() == v->type())) {
          return makeError("the static value given for graph input '{}' is {}, the input is {}", v->name(),
                           hint->second.type().toString(), v->type().toString());
        }
        return hint->second;
      }
    }
    return makeError("it depends on graph input '{}', known only at run time", v->name());
  }
  if (v->kind() == ValueKind::Parameter) {
    if (v->trainable()) return makeError("it depends on trainable parameter '{}'", v->name());
    return v->initialValue();
  }
  if (depth > 256) return makeError("it is computed by a chain of more than 256 nodes");
  const Node* node = v->producer();
  std::vector<Tensor> operands;
  for (const Value* o : node->operands()) {
    SMELT_TRY(Tensor t, staticValue(o, depth + 1));
    operands.push_back(std::move(t));
  }
  SMELT_TRY(std::vector<Tensor> results, foldShapeValues(graph(), *node, operands));
  for (size_t r = 0; r < results.size(); ++r) state_.staticMemo[node->result(r)] = results[r];
  return results[static_cast<size_t>(v->resultIndex())];
}

Expected<std::vector<int64_t>> NodeContext::constInts(size_t i) {
  SMELT_TRY(Tensor t, constInput(i));
  if (!isInteger(t.dtype())) return makeError("input #{} must be integers, got {}", i, t.type().toString());
  if (t.rank() > 1) return makeError("input #{} must be a 1-D list, got {}", i, t.type().toString());
  return t.toInts();
}

Expected<double> NodeContext::constScalar(size_t i) {
  SMELT_TRY(Tensor t, constInput(i));
  if (t.numel() != 1) return makeError("input #{} must hold one value, got {}", i, t.type().toString());
  return t.getDouble(0);
}

const onnx::AttributeProto* NodeContext::findAttr(std::string_view name) const {
  for (const auto& a : proto_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

void NodeContext::attrKindError(const onnx::AttributeProto& a, std::string_view expected) {
  if (!attrError_) attrError_ = makeError("attribute '{}' must be {}", a.name(), expected);
}

// Old exporters leave `type` unset; then the filled field decides.
int64_t NodeContext::attrInt(std::string_view name, int64_t def) {
  const auto* a = findAttr(name);
  if (!a) return def;
  if (a->type() == onnx::AttributeProto::INT || (a->type() == onnx::AttributeProto::UNDEFINED && a->has_i())) {
    return a->i();
  }
  attrKindError(*a, "an int");
  return def;
}

double NodeContext::attrFloat(std::string_view name, double def) {
  const auto* a = findAttr(name);
  if (!a) return def;
  if (a->type() == onnx::AttributeProto::FLOAT || (a->type() == onnx::AttributeProto::UNDEFINED && a->has_f())) {
    return a->f();
  }
  attrKindError(*a, "a float");
  return def;
}

std::string NodeContext::attrString(std::string_view name, std::string def) {
  const auto* a = findAttr(name);
  if (!a) return def;
  if (a->type() == onnx::AttributeProto::STRING || (a->type() == onnx::AttributeProto::UNDEFINED && a->has_s())) {
    return a->s();
  }
  attrKindError(*a, "a string");
  return def;
}

std::vector<int64_t> NodeContext::attrInts(std::string_view name, std::vector<int64_t> def) {
  const auto* a = findAttr(name);
  if (!a) return def;
  if (a->type() == onnx::AttributeProto::INTS || a->type() == onnx::AttributeProto::UNDEFINED) {
    return {a->ints().begin(), a->ints().end()};
  }
  attrKindError(*a, "a list of ints");
  return def;
}

std::vector<double> NodeContext::attrFloats(std::string_view name, std::vector<double> def) {
  const auto* a = findAttr(name);
  if (!a) return def;
  if (a->type() == onnx::AttributeProto::FLOATS || a->type() == onnx::AttributeProto::UNDEFINED) {
    return {a->floats().begin(), a->floats().end()};
  }
  attrKindError(*a, "a list of floats");
  return def;
}

Expected<Tensor> NodeContext::attrTensor(std::string_view name) {
  const auto* a = findAttr(name);
  if (!a) return makeError("attribute '{}' is missing", name);
  if (!a->has_t()) return makeError("attribute '{}' must be a tensor", name);
  return tensorFromProto(a->t(), state_.modelDir, fmt::format("{} attribute '{}'", nodeName(), name));
}

Status NodeContext::setOutput(size_t i, Value* v) {
  if (!hasOutput(i)) return Status::success();
  if (!v) return makeError("output #{} has no value", i);
  const std::string& name = proto_.output(static_cast<int>(i));
  if (state_.values.count(name) || state_.constants.count(name)) {
    return makeError("output '{}' is already defined (ONNX values must be assigned once)", name);
  }
  state_.values[name] = v;
  if (const Tensor* t = constantValueOf(v)) state_.constants[name] = ConstEntry{*t, false};
  return Status::success();
}

Value* NodeContext::constant(Tensor value) {
  AttrMap attrs;
  attrs.emplace("value", std::move(value));
  auto node = graph().addNode("constant", {}, std::move(attrs), nodeName());
  return node.ok() ? node.value()->result() : nullptr;
}

Expected<std::vector<Value*>> NodeContext::emitNode(std::string_view op, std::vector<Value*> operands, AttrMap attrs) {
  bool foldable = !operands.empty();
  for (Value* v : operands) foldable = foldable && constantValueOf(v) != nullptr;
  SMELT_TRY(Node * node, graph().addNode(op, std::move(operands), std::move(attrs), nodeName()));
  // Folding must not make data: results larger than their operands (an expand, a ConstantOfShape, a
  // tile) stay computed once they pass the size shape computations need, as in passes/fold.cpp.
  constexpr int64_t kMaxGrownElements = int64_t{1} << 16;
  int64_t operandElements = 0, resultElements = 0;
  for (const Value* v : node->operands()) operandElements += v->type().numel();
  bool staticResults = true;  // a symbolic result (an expand to a symbolic shape) is computed per run
  for (const Value* v : node->results()) {
    resultElements += v->type().numel();
    staticResults = staticResults && v->type().isStatic();
  }
  foldable = foldable && staticResults && (resultElements <= kMaxGrownElements || resultElements <= operandElements);
  if (!foldable) return node->results();
  std::vector<Tensor> inputs;
  for (Value* v : node->operands()) inputs.push_back(*constantValueOf(v));
  SMELT_TRY(std::vector<Tensor> results, foldShapeValues(graph(), *node, inputs));
  std::vector<Value*> folded;
  for (Tensor& t : results) folded.push_back(constant(std::move(t)));
  return folded;  // the evaluated node is now dead; the importer removes dead nodes at the end
}

Expected<Value*> NodeContext::emit(std::string_view op, std::vector<Value*> operands, AttrMap attrs) {
  SMELT_TRY(std::vector<Value*> results, emitNode(op, std::move(operands), std::move(attrs)));
  if (results.size() != 1) return makeError("{} has {} results, expected 1", op, results.size());
  return results[0];
}

}  // namespace smelt::onnximport

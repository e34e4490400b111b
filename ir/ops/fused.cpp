// fused: one kernel made by the fusion pass. Its body is a nested graph (a graph-valued attribute) whose
// inputs are the node's operands and whose outputs are its results; `kind` says how the kernel iterates
// (see docs/passes.md): "loop" (elementwise over one shape), "reduce" (elementwise work around
// reductions over the same axes) or "epilogue" (a matmul/gemm/conv with elementwise consumers).
//   %0 = fused(%x, %b) {kind = "loop"} : f32[4,8] body = graph @fused(%p0: f32[4,8], %p1: f32[8]) {
//     %0 = add(%p0, %p1) : f32[4,8]
//     %1 = relu(%0) : f32[4,8]
//     return r0 = %1
//   }
// The reference runs the body with the interpreter; gradients come from inlining the body
// (decompose), so a fused graph still differentiates.
#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

#include <unordered_map>

namespace smelt {

namespace {

const GraphRef& bodyOf(const AttrMap& attrs) {
  static const GraphRef none;
  auto it = attrs.find("body");
  if (it == attrs.end()) return none;
  const GraphRef* body = std::get_if<GraphRef>(&it->second);
  return body ? *body : none;
}

Expected<std::vector<TensorType>> inferFused(const OpCall& call) {
  const GraphRef& body = bodyOf(call.attrs());
  if (!body) return call.error("has no body graph");
  const std::string& kind = call.getString("kind");
  if (kind != "loop" && kind != "reduce" && kind != "epilogue") {
    return call.error("kind must be \"loop\", \"reduce\" or \"epilogue\", got \"{}\"", kind);
  }
  if (body->inputs().size() != call.numOperands()) {
    return call.error("has {} operands but its body takes {} inputs", call.numOperands(), body->inputs().size());
  }
  for (size_t i = 0; i < call.numOperands(); ++i) {
    const Value* input = body->inputs()[i];
    if (!(input->type() == call.operand(i))) {
      return call.error("operand #{} is {} but body input %{} is {}", i, call.operand(i).toString(), input->name(),
                        input->type().toString());
    }
  }
  // A kernel body reads everything through its operands and holds no kernels itself.
  if (!body->parameters().empty()) {
    return call.error("body declares parameter %{}; a kernel body reads parameters as operands",
                      body->parameters()[0]->name());
  }
  for (const auto& node : body->nodes()) {
    if (node->opName() == "fused") return call.error("body holds another fused kernel ({})", body->labelOf(*node));
  }
  if (body->outputs().empty()) return call.error("body returns nothing");
  std::vector<TensorType> results;
  for (const GraphOutput& out : body->outputs()) results.push_back(out.value->type());
  return results;
}

Expected<std::vector<Tensor>> referenceFused(const OpCall& call, std::span<const Tensor> operands) {
  const Graph& body = *bodyOf(call.attrs());
  TensorMap feeds;
  for (size_t i = 0; i < operands.size(); ++i) feeds.emplace(body.inputs()[i]->name(), operands[i]);
  auto results = interpret(body, feeds);
  if (!results) return call.error("body: {}", results.error().message());
  return std::move(results.value());
}

// Re-emits the body's nodes in the enclosing graph: the unfused computation, which the registry's
// gradient rules then differentiate.
std::vector<Value*> decomposeFused(Builder& b, const Node& node) {
  const Graph& body = *bodyOf(node.attrs());
  std::unordered_map<const Value*, Value*> map;
  for (size_t i = 0; i < body.inputs().size(); ++i) map[body.inputs()[i]] = node.operand(i);
  for (const auto& inner : body.nodes()) {
    std::vector<Value*> operands;
    for (const Value* o : inner->operands()) operands.push_back(map.at(o));
    std::vector<Value*> results = b.ops(inner->opName(), std::move(operands), inner->attrs());
    if (results.size() != inner->results().size()) return {};
    for (size_t i = 0; i < results.size(); ++i) map[inner->result(i)] = results[i];
  }
  std::vector<Value*> outputs;
  for (const GraphOutput& out : body.outputs()) outputs.push_back(map.at(out.value));
  return outputs;
}

// The kernel's arithmetic is its body's.
int64_t flopsFused(const OpCall& call) {
  const Graph& body = *bodyOf(call.attrs());
  int64_t total = 0;
  for (const auto& node : body.nodes()) {
    std::vector<TensorType> operands, results;
    for (const Value* o : node->operands()) operands.push_back(o->type());
    for (const Value* r : node->results()) results.push_back(r->type());
    total += flopsOf(OpCall(node->op(), body.labelOf(*node), operands, node->attrs(), results));
  }
  return total;
}

}  // namespace

void registerFusedOps(OpRegistry& registry) {
  registry.add(OpDef{
      .name = "fused",
      .summary = "One kernel made by fusion: runs its body graph (a graph-valued attribute) on its operands.",
      .operands = {{"inputs", Arity::AnyNumber}},
      // No default for kind, so every dump says how the kernel iterates.
      .attrs = {{"kind", AttrKind::String, std::nullopt}, {"body", AttrKind::Graph, std::nullopt}},
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kAll,
      .infer = inferFused,
      .reference = referenceFused,
      .example = R"(graph @t(%x: $T[2,3], %y: $T[3,2], %c: bool[3,2]) {
  %0, %1 = fused(%x, %y, %c) {kind = "loop"} : $T[3,2], $T[3,2] body = graph @fused(%p0: $T[2,3], %p1: $T[3,2], %p2: bool[3,2]) {
    %0 = transpose(%p0) {perm = [1, 0]} : $T[3,2]
    %1 = where(%p2, %0, %p1) : $T[3,2]
    return r0 = %0, r1 = %1
  }
  return a = %0, b = %1
})",
      .decompose = decomposeFused,
      .flops = flopsFused,
  });
}

}  // namespace smelt

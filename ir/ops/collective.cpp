// Collective ops across the ranks of a data-parallel job (ir/collective.h): all_reduce.
//   %g = all_reduce(%grads) {op = "mean"} : f32[1024]
// They have no kernel: every executable runs them on the host through their reference implementation, which
// calls the process's collective group (a world of one without one: the identity).
#include "ir/collective.h"
#include "ir/builder.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

namespace smelt {

namespace {
using namespace ops;

Expected<std::vector<TensorType>> inferAllReduce(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kFloat));
  const std::string& op = call.getString("op");
  if (op != "sum" && op != "mean") return call.error("op must be \"sum\" or \"mean\", got \"{}\"", op);
  return std::vector<TensorType>{call.operand(0)};
}

Expected<std::vector<Tensor>> referenceAllReduce(const OpCall& call, std::span<const Tensor> in) {
  Tensor out = in[0];
  const std::shared_ptr<CollectiveGroup>& group = collectiveGroup();
  if (!group || group->size() == 1) return std::vector<Tensor>{std::move(out)};
  SMELT_CHECK_OK(group->allReduceSum(out));
  if (call.getString("op") == "mean") {
    const double scale = 1.0 / group->size();
    for (int64_t i = 0; i < out.numel(); ++i) out.setDouble(i, out.getDouble(i) * scale);
  }
  return std::vector<Tensor>{std::move(out)};
}

// Every rank's result is the same function of every rank's operand: the gradient of the sum (or mean) with
// respect to this rank's operand gathers the gradients flowing into every rank's result the same way.
std::vector<Value*> gradAllReduce(Builder& b, const GradientContext& c) {
  return {b.op("all_reduce", {c.dy()}, {{"op", c.getString("op")}})};
}

}  // namespace

void registerCollectiveOps(OpRegistry& registry) {
  registry.add(OpDef{
      .name = "all_reduce",
      .summary = "The elementwise sum (or mean) of the operand over every rank of the process's collective group.",
      .operands = {{"x"}},
      .attrs = {{"op", AttrKind::String, Attribute{std::string("sum")}}},
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kFloat,
      .infer = inferAllReduce,
      .symbolicDims = true,
      .reference = referenceAllReduce,
      .example = R"(graph @t(%x: $T[3,4]) {
  %0 = all_reduce(%x) : $T[3,4]
  %1 = all_reduce(%x) {op = "mean"} : $T[3,4]
  return sum = %0, mean = %1
})",
      .gradient = gradAllReduce,
      .collective = true,
  });
}

}  // namespace smelt

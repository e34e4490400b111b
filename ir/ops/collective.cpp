// Collective ops across the ranks of a data-parallel job (ir/collective.h): all_reduce, and the same split in two,
// all_reduce_start and all_reduce_wait, so the ops scheduled between them compute while it runs.
//   %g = all_reduce(%grads) {op = "mean"} : f32[1024]
//   %s = all_reduce_start(%grads) {op = "mean", tag = 3} : f32[1024]     (passes %grads through)
//   %g = all_reduce_wait(%s) {op = "mean", tag = 3} : f32[1024]
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

bool worldOfOne() {
  const std::shared_ptr<CollectiveGroup>& group = collectiveGroup();
  return !group || group->size() == 1;
}

// A sum over the ranks divided by their number for op = "mean".
std::vector<Tensor> finish(const OpCall& call, Tensor sum) {
  if (call.getString("op") == "mean") {
    const double scale = 1.0 / collectiveGroup()->size();
    for (int64_t i = 0; i < sum.numel(); ++i) sum.setDouble(i, sum.getDouble(i) * scale);
  }
  return {std::move(sum)};
}

Expected<std::vector<Tensor>> referenceAllReduce(const OpCall& call, std::span<const Tensor> in) {
  Tensor out = in[0];
  if (worldOfOne()) return std::vector<Tensor>{std::move(out)};
  SMELT_CHECK_OK(collectiveGroup()->allReduceSum(out));
  return finish(call, std::move(out));
}

Expected<std::vector<Tensor>> referenceAllReduceStart(const OpCall& call, std::span<const Tensor> in) {
  if (!worldOfOne()) {
    SMELT_TRY(int64_t handle, collectiveGroup()->startAllReduceSum(in[0]));
    recordStartedAllReduce(call.getInt("tag"), handle);
  }
  return std::vector<Tensor>{in[0]};
}

Expected<std::vector<Tensor>> referenceAllReduceWait(const OpCall& call, std::span<const Tensor> in) {
  if (worldOfOne()) return std::vector<Tensor>{in[0]};
  SMELT_TRY(int64_t handle, takeStartedAllReduce(call.getInt("tag")));
  SMELT_TRY(Tensor sum, collectiveGroup()->finishAllReduce(handle));
  if (sum.type() != in[0].type()) {
    return call.error("the all-reduce of tag {} summed {}, not {}", call.getInt("tag"), sum.type().toString(),
                      in[0].type().toString());
  }
  return finish(call, std::move(sum));
}

// Every rank's result is the same function of every rank's operand: the gradient of the sum (or mean) with
// respect to this rank's operand gathers the gradients flowing into every rank's result the same way.
std::vector<Value*> gradAllReduce(Builder& b, const GradientContext& c) {
  return {b.op("all_reduce", {c.dy()}, {{"op", c.getString("op")}})};
}

// The pair is an all_reduce: the start passes gradients through, the wait reduces them.
std::vector<Value*> gradAllReduceStart(Builder&, const GradientContext& c) { return {c.dy()}; }

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
  const std::vector<AttrSpec> pairAttrs{{"op", AttrKind::String, Attribute{std::string("sum")}},
                                        {"tag", AttrKind::Int, std::nullopt}};
  registry.add(OpDef{
      .name = "all_reduce_start",
      .summary = "Starts all_reduce of the operand (its `tag` pairs it with an all_reduce_wait) and passes it through.",
      .operands = {{"x"}},
      .attrs = pairAttrs,
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kFloat,
      .infer = inferAllReduce,
      .symbolicDims = true,
      .reference = referenceAllReduceStart,
      .example = R"(graph @t(%x: $T[3,4]) {
  %0 = all_reduce_start(%x) {op = "mean", tag = 7} : $T[3,4]
  %1 = exp(%x) : $T[3,4]
  %2 = all_reduce_wait(%0) {op = "mean", tag = 7} : $T[3,4]
  return reduced = %2, meanwhile = %1
})",
      .gradient = gradAllReduceStart,
      .collective = true,
  });
  registry.add(OpDef{
      .name = "all_reduce_wait",
      .summary = "Waits for the all_reduce_start of the same `tag` (its operand) and returns the reduced values.",
      .operands = {{"started"}},
      .attrs = pairAttrs,
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kFloat,
      .infer = inferAllReduce,
      .symbolicDims = true,
      .reference = referenceAllReduceWait,
      .example = R"(graph @t(%x: $T[3,4]) {
  %0 = all_reduce_start(%x) {tag = 1} : $T[3,4]
  %1 = all_reduce_wait(%0) {tag = 1} : $T[3,4]
  return r = %1
})",
      .gradient = gradAllReduce,
      .collective = true,
  });
}

}  // namespace smelt

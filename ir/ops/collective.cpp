// Collective ops across the ranks of a data-parallel job (ir/collective.h): all_reduce, and the same split in two,
// all_reduce_start and all_reduce_wait, so the ops scheduled between them compute while it runs.
//   %g = all_reduce(%grads) {op = "mean"} : f32[1024]
//   %s = all_reduce_start(%grads) {op = "mean", tag = 3} : f32[1024]     (passes %grads through)
//   %g = all_reduce_wait(%s) {op = "mean", tag = 3} : f32[1024]
// They have no kernel: every executable runs them on the host, calling the process's collective group (a world of
// one without one: the identity): a CPU executable over its own buffers (collectiveOnHost: the bucket summed in
// place, no copy), a device's and the interpreter through the reference implementation, on copies.
#include "ir/collective.h"
#include "ir/builder.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

#include <cstring>

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

// `count` elements of a sum over the ranks into `out` (which may be `sum`), divided by the ranks' number for
// op = "mean": one pass, typed (the gradient buckets are megabytes).
template <typename T>
void finishInto(const T* sum, T* out, int64_t count, bool mean) {
  const T scale = mean ? T(1) / static_cast<T>(collectiveGroup()->size()) : T(1);
  if (!mean && sum == out) return;
  for (int64_t i = 0; i < count; ++i) out[i] = sum[i] * scale;
}

Status finishInto(const OpCall& call, const void* sum, void* out, const TensorType& type) {
  const bool mean = call.getString("op") == "mean";
  switch (type.dtype) {
    case DType::f32:
      finishInto(static_cast<const float*>(sum), static_cast<float*>(out), type.numel(), mean);
      return Status::success();
    case DType::f64:
      finishInto(static_cast<const double*>(sum), static_cast<double*>(out), type.numel(), mean);
      return Status::success();
    default:
      return call.error("all-reduce of {} is not supported (f32, f64)", type.toString());
  }
}

Expected<std::vector<Tensor>> referenceAllReduce(const OpCall& call, std::span<const Tensor> in) {
  Tensor out = in[0];
  if (worldOfOne()) return std::vector<Tensor>{std::move(out)};
  SMELT_CHECK_OK(collectiveGroup()->allReduceSum(out));
  SMELT_CHECK_OK(finishInto(call, out.raw(), out.raw(), out.type()));
  return std::vector<Tensor>{std::move(out)};
}

// The interpreter's start sums a copy of the operand it keeps until the wait (the operand itself passes through).
Expected<std::vector<Tensor>> referenceAllReduceStart(const OpCall& call, std::span<const Tensor> in) {
  if (!worldOfOne()) {
    auto held = std::make_shared<Tensor>(in[0]);
    SMELT_TRY(int64_t handle, collectiveGroup()->startAllReduceSum(held->raw(), held->numel(), held->dtype()));
    recordStartedAllReduce(call.getInt("tag"), {handle, std::move(held)});
  }
  return std::vector<Tensor>{in[0]};
}

Expected<std::vector<Tensor>> referenceAllReduceWait(const OpCall& call, std::span<const Tensor> in) {
  if (worldOfOne()) return std::vector<Tensor>{in[0]};
  SMELT_TRY(StartedAllReduce started, takeStartedAllReduce(call.getInt("tag")));
  SMELT_CHECK_OK(collectiveGroup()->finishAllReduce(started.handle));
  if (!started.held || started.held->type() != in[0].type()) {
    return call.error("the all-reduce of tag {} summed {}, not {}", call.getInt("tag"),
                      started.held ? started.held->type().toString() : "an executable's buffer",
                      in[0].type().toString());
  }
  Tensor sum = std::move(*started.held);
  SMELT_CHECK_OK(finishInto(call, sum.raw(), sum.raw(), sum.type()));
  return std::vector<Tensor>{std::move(sum)};
}

// The same over an executable's host buffers, without copies: the start sums in place in its result buffer (the
// operand copied there first unless they are one), which only the wait reads (the executable checks), and the
// wait writes the finished sum into its own.
Status hostAllReduceStart(const OpCall& call, char* const* buffers) {
  const TensorType& type = call.operand(0);
  if (buffers[1] != buffers[0]) std::memcpy(buffers[1], buffers[0], type.byteSize());
  if (worldOfOne()) return Status::success();
  SMELT_TRY(int64_t handle, collectiveGroup()->startAllReduceSum(buffers[1], type.numel(), type.dtype));
  recordStartedAllReduce(call.getInt("tag"), {handle, nullptr});
  return Status::success();
}

Status hostAllReduceWait(const OpCall& call, char* const* buffers) {
  const TensorType& type = call.operand(0);
  if (worldOfOne()) {
    if (buffers[1] != buffers[0]) std::memcpy(buffers[1], buffers[0], type.byteSize());
    return Status::success();
  }
  SMELT_TRY(StartedAllReduce started, takeStartedAllReduce(call.getInt("tag")));
  SMELT_CHECK_OK(collectiveGroup()->finishAllReduce(started.handle));
  // A start whose value other nodes read ran on a copy (the reference's): the sum is there.
  if (started.held) {
    if (started.held->type() != type) {
      return call.error("the all-reduce of tag {} summed {}, not {}", call.getInt("tag"),
                        started.held->type().toString(), type.toString());
    }
    return finishInto(call, started.held->raw(), buffers[1], type);
  }
  return finishInto(call, buffers[0], buffers[1], type);
}

Status hostAllReduce(const OpCall& call, char* const* buffers) {
  const TensorType& type = call.operand(0);
  if (buffers[1] != buffers[0]) std::memcpy(buffers[1], buffers[0], type.byteSize());
  if (worldOfOne()) return Status::success();
  SMELT_TRY(int64_t handle, collectiveGroup()->startAllReduceSum(buffers[1], type.numel(), type.dtype));
  SMELT_CHECK_OK(collectiveGroup()->finishAllReduce(handle));
  return finishInto(call, buffers[1], buffers[1], type);
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
      .collectiveOnHost = hostAllReduce,
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
      .collectiveOnHost = hostAllReduceStart,
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
      .collectiveOnHost = hostAllReduceWait,
  });
}

}  // namespace smelt

// constant: a tensor literal as a value.
//   %0 = constant() {value = dense<f32[2]> [1.5, -2]} : f32[2]
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

namespace smelt {

void registerConstantOps(OpRegistry& registry) {
  registry.add(OpDef{
      .name = "constant",
      .summary = "A tensor literal.",
      .operands = {},
      .attrs = {{"value", AttrKind::Tensor, std::nullopt}},
      .fusion = FusionKind::Elementwise,
      .dtypes = dtypes::kAll,
      .infer = [](const OpCall& call) -> Expected<std::vector<TensorType>> {
        return ops::single(call.getTensor("value").type());
      },
      .reference = [](const OpCall& call, std::span<const Tensor>) -> Expected<std::vector<Tensor>> {
        return std::vector<Tensor>{call.getTensor("value")};
      },
      .example = R"(graph @t() {
  %0 = constant() {value = dense<$T[2,2]> [1, 0, 1, 1]} : $T[2,2]
  return r = %0
})",
      // A literal computes nothing.
      .flops = [](const OpCall&) { return int64_t{0}; },
  });
}

}  // namespace smelt

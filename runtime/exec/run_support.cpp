// Feed binding, output tensors and the kernel check (see run_support.h).
#include "runtime/exec/run_support.h"

#include "codegen/log.h"

#include <cmath>

namespace smelt {

std::string describeShape(const Node* node) {
  std::string s = " (";
  for (size_t i = 0; i < node->numOperands(); ++i) {
    if (i) s += ", ";
    const Shape& shape = node->operand(i)->shape();
    for (size_t d = 0; d < shape.size(); ++d) s += (d ? "x" : "") + std::to_string(shape[d]);
  }
  return s + ")";
}

void prepareOutputs(const Graph& graph, std::vector<Tensor>& outputs, const std::vector<bool>* skip) {
  outputs.resize(graph.outputs().size());
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    if (skip && i < skip->size() && (*skip)[i]) continue;
    // (A default-constructed Tensor says f32[] but holds no bytes: check the storage too.)
    const TensorType& type = graph.outputs()[i].value->type();
    // Every output is written whole by the run (kernels, or copies of inputs and constants), so new
    // ones are not zero-filled first.
    if (!(outputs[i].type() == type) || outputs[i].bytes().size() != type.byteSize()) {
      outputs[i] = Tensor::uninitialized(type);
    }
  }
}

Status checkAgainstReference(const Graph& graph, const Node& node, const std::string& label,
                             const std::vector<Tensor>& operands, const std::vector<Tensor>& results) {
  SMELT_TRY(std::vector<Tensor> want, evaluateNode(graph, node, operands));
  for (size_t r = 0; r < want.size(); ++r) {
    const Tensor &w = want[r], &got = results[r];
    double scale = 0, worst = 0;
    int64_t at = -1;
    for (int64_t i = 0; i < w.numel(); ++i) scale = std::max(scale, std::abs(w.getDouble(i)));
    for (int64_t i = 0; i < w.numel(); ++i) {
      double a = w.getDouble(i), b = got.getDouble(i);
      if (std::isnan(a) && std::isnan(b)) continue;
      double d = std::abs(a - b) / std::max(scale, 1e-30);
      if (!(d <= worst)) worst = d, at = i;
    }
    if (worst > 1e-3) {
      logger().error("SMELT_CHECK_KERNELS: {} result #{} differs from the reference by {:.3g} (relative to max "
                     "{:.3g}) at {}: {} vs {}",
                     label, r, worst, scale, at, got.getDouble(at), w.getDouble(at));
    }
  }
  return Status::success();
}

}  // namespace smelt

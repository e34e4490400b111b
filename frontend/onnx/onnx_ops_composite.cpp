// Converters for ONNX ops with no smelt op of their own, composed from docs/ops.md ops with index
// tensors built at import time: ArgMax/ArgMin/Hardmax (reduce + iota), GatherElements (gather on a
// flattened view), CumSum (matmul with a triangular mask), OneHot, NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss (their ONNX function bodies).
#include "frontend/onnx/onnx_index_helpers.h"

namespace smelt::onnximport {

namespace {

Status argMaxMin(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  if (x->type().rank() == 0) return makeError("input must have rank >= 1, got {}", x->type().toString());
  SMELT_TRY(int64_t axis, normalizeAxis(n.attrInt("axis", 0), x->type().rank()));
  SMELT_TRY(Value * y, argExtreme(n, x, axis, n.opType() == "ArgMax", n.attrInt("select_last_index", 0) != 0,
                                  n.attrInt("keepdims", 1) != 0));
  return n.setOutput(0, y);
}

// 1 at the first max along `axis`, 0 elsewhere.
Status hardmax(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  if (n.opset() < 13) return makeError("opset {} Hardmax (2-D coercion) is not supported; use opset 13+", n.opset());
  SMELT_TRY(int64_t axis, normalizeAxis(n.attrInt("axis", -1), x->type().rank()));
  SMELT_TRY(Value * am, argExtreme(n, x, axis, true, false, true));
  SMELT_TRY(Value * hit, n.emit("eq", {am, n.constant(iota(x->type().rank(), axis, x->shape()[axis]))}));
  SMELT_TRY(Value * y, n.emit("where", {hit, n.scalar(x->dtype(), 1.0), n.scalar(x->dtype(), 0.0)}));
  return n.setOutput(0, y);
}

Status gatherElementsOp(NodeContext& n) {
  SMELT_TRY(Value * data, n.input(0));
  SMELT_TRY(Value * indices, n.input(1));
  SMELT_TRY(int64_t axis, normalizeAxis(n.attrInt("axis", 0), data->type().rank()));
  SMELT_TRY(Value * y, gatherElements(n, data, indices, axis));
  return n.setOutput(0, y);
}

// CumSum along `axis`: move it last, multiply by a triangular 0/1 matrix, move it back.
Status cumSum(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(double axisValue, n.constScalar(1));
  int64_t rank = x->type().rank();
  SMELT_TRY(int64_t axis, normalizeAxis(static_cast<int64_t>(axisValue), rank));
  bool exclusive = n.attrInt("exclusive", 0) != 0, reverse = n.attrInt("reverse", 0) != 0;
  int64_t len = x->shape()[axis];
  Tensor mask(TensorType{x->dtype(), {len, len}});
  for (int64_t i = 0; i < len; ++i) {
    for (int64_t j = 0; j < len; ++j) {
      bool in = reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
      mask.setDouble(i * len + j, in ? 1.0 : 0.0);
    }
  }
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) perm.push_back(d);
  std::swap(perm[axis], perm[rank - 1]);
  Value* moved = x;
  if (axis != rank - 1) {
    SMELT_TRY(moved, n.emit("transpose", {x}, {{"perm", perm}}));
  }
  SMELT_TRY(Value * summed, n.emit("matmul", {moved, n.constant(std::move(mask))}));
  Value* y = summed;
  if (axis != rank - 1) {
    SMELT_TRY(y, n.emit("transpose", {summed}, {{"perm", perm}}));
  }
  return n.setOutput(0, y);
}

// OneHot: where(unsqueeze(indices, axis) == iota, on, off).
Status oneHot(NodeContext& n) {
  SMELT_TRY(Value * indices, n.input(0));
  SMELT_TRY(double depthValue, n.constScalar(1));
  SMELT_TRY(Value * values, n.input(2));
  auto depth = static_cast<int64_t>(depthValue);
  if (depth <= 0) return makeError("depth must be positive, got {}", depth);
  if (values->type().numel() != 2) return makeError("values must hold [off, on], got {}", values->type().toString());
  int64_t outRank = indices->type().rank() + 1;
  SMELT_TRY(int64_t axis, normalizeAxis(n.attrInt("axis", -1), outRank));
  SMELT_TRY(Value * idx, wrapIndices(n, indices, depth));
  SMELT_TRY(Value * u, n.emit("unsqueeze", {idx}, {{"axes", std::vector<int64_t>{axis}}}));
  SMELT_TRY(Value * hit, n.emit("eq", {u, n.constant(iota(outRank, axis, depth))}));
  SMELT_TRY(Value * flatValues, n.emit("reshape", {values}, {{"shape", std::vector<int64_t>{2}}}));
  AttrMap offAttrs{{"starts", std::vector<int64_t>{0}}, {"ends", std::vector<int64_t>{1}}};
  AttrMap onAttrs{{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{2}}};
  SMELT_TRY(Value * off, n.emit("slice", {flatValues}, offAttrs));
  SMELT_TRY(Value * on, n.emit("slice", {flatValues}, onAttrs));
  SMELT_TRY(Value * y, n.emit("where", {hit, on, off}));
  return n.setOutput(0, y);
}

// NegativeLogLikelihoodLoss on log-probabilities `input` [N, C, d...] and `target` [N, d...].
Expected<Value*> nllLoss(NodeContext& n, Value* input, Value* target, Value* weight) {
  if (input->type().rank() < 2 || target->type().rank() != input->type().rank() - 1) {
    return makeError("input must be [N, C, ...] and target [N, ...], got {} and {}", input->type().toString(),
                     target->type().toString());
  }
  DType dt = input->dtype();
  std::string reduction = n.attrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return makeError("reduction '{}' is not one of none, sum, mean", reduction);
  }
  Value* t = target;
  if (t->dtype() != DType::i64) {
    SMELT_TRY(t, n.emit("cast", {t}, {{"to", std::string("i64")}}));
  }
  Value* ignored = nullptr;
  if (n.hasAttr("ignore_index")) {
    SMELT_TRY(ignored, n.emit("eq", {t, n.scalar(DType::i64, static_cast<double>(n.attrInt("ignore_index", 0)))}));
    SMELT_TRY(t, n.emit("where", {ignored, n.scalar(DType::i64, 0), t}));  // keep gathers in range
  }
  SMELT_TRY(Value * t1, n.emit("unsqueeze", {t}, {{"axes", std::vector<int64_t>{1}}}));
  SMELT_TRY(Value * picked, gatherElements(n, input, t1, 1));
  SMELT_TRY(Value * p, n.emit("squeeze", {picked}, {{"axes", std::vector<int64_t>{1}}}));
  SMELT_TRY(Value * loss, n.emit("neg", {p}));
  Value* w = nullptr;  // per-element weights, when not all ones
  if (weight) {
    SMELT_TRY(w, n.emit("gather", {weight, t}, {{"axis", int64_t{0}}}));
  }
  if (ignored) {
    Value* base = w ? w : n.scalar(dt, 1.0);
    SMELT_TRY(w, n.emit("where", {ignored, n.scalar(dt, 0.0), base}));
  }
  if (w) {
    SMELT_TRY(loss, n.emit("mul", {loss, w}));
  }
  AttrMap all{{"axes", std::vector<int64_t>{}}, {"keepdims", int64_t{0}}};
  if (reduction == "none") return loss;
  if (reduction == "sum") return n.emit("reduce_sum", {loss}, all);
  if (!w) return n.emit("reduce_mean", {loss}, all);
  SMELT_TRY(Value * total, n.emit("reduce_sum", {loss}, all));
  Value* wFull = w;
  if (w->shape() != loss->shape()) {
    SMELT_TRY(wFull, n.emit("expand", {w}, {{"shape", loss->shape()}}));
  }
  SMELT_TRY(Value * wSum, n.emit("reduce_sum", {wFull}, all));
  return n.emit("div", {total, wSum});
}

Status nll(NodeContext& n) {
  SMELT_TRY(Value * input, n.input(0));
  SMELT_TRY(Value * target, n.input(1));
  Value* weight = nullptr;
  if (n.hasInput(2)) {
    SMELT_TRY(weight, n.input(2));
  }
  SMELT_TRY(Value * y, nllLoss(n, input, target, weight));
  return n.setOutput(0, y);
}

// SoftmaxCrossEntropyLoss: NLL of log_softmax over the class axis; output 1 is the log-probabilities.
Status softmaxCrossEntropy(NodeContext& n) {
  SMELT_TRY(Value * scores, n.input(0));
  SMELT_TRY(Value * labels, n.input(1));
  Value* weight = nullptr;
  if (n.hasInput(2)) {
    SMELT_TRY(weight, n.input(2));
  }
  SMELT_TRY(Value * logProb, n.emit("log_softmax", {scores}, {{"axis", int64_t{1}}}));
  SMELT_TRY(Value * y, nllLoss(n, logProb, labels, weight));
  SMELT_CHECK_OK(n.setOutput(0, y));
  return n.setOutput(1, logProb);
}

// TopK by rank counting: an element's rank is how many elements along the axis come before it in the
// output order (larger, or smaller for largest = 0; equal ones by lower index, as ONNX orders ties);
// the k outputs are the elements of ranks 0..k-1, found by comparing ranks with 0..k-1. Quadratic in
// the axis length but a fixed handful of fused ops for any k, with no sort op: the values are a gather,
// so their gradient flows to the selected elements.
Status topK(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(std::vector<int64_t> kv, n.constInts(1));
  if (kv.size() != 1) return makeError("K must hold one value, got {}", kv.size());
  int64_t rank = x->type().rank();
  if (rank == 0) return makeError("the input must have rank >= 1");
  SMELT_TRY(int64_t axis, normalizeAxis(n.attrInt("axis", -1), rank));
  int64_t len = x->shape()[axis], k = kv[0];
  if (isSymbolic(len) || !x->type().isStatic()) return makeError("the input {} must be static", x->type().toString());
  if (k < 0 || k > len) return makeError("K = {} must be in [0, {}] (the axis's length)", k, len);
  constexpr int64_t kMaxComparisons = int64_t{1} << 31;
  if (x->type().numel() > kMaxComparisons / std::max<int64_t>(len, 1)) {
    return makeError("{} along an axis of {}: {} comparisons exceed smelt's TopK limit of {}", x->type().toString(), len,
                     x->type().numel() * len, kMaxComparisons);
  }
  bool largest = n.attrInt("largest", 1) != 0;
  // Element i (along `axis`) against element j (along the axis inserted after it).
  SMELT_TRY(Value * xi, n.emit("unsqueeze", {x}, {{"axes", std::vector<int64_t>{axis + 1}}}));
  SMELT_TRY(Value * xj, n.emit("unsqueeze", {x}, {{"axes", std::vector<int64_t>{axis}}}));
  SMELT_TRY(Value * better, n.emit(largest ? "gt" : "lt", {xj, xi}));
  SMELT_TRY(Value * tie, n.emit("eq", {xj, xi}));
  Value* iIdx = n.constant(iota(rank + 1, axis, len));
  Value* jIdx = n.constant(iota(rank + 1, axis + 1, len));
  SMELT_TRY(Value * earlier, n.emit("lt", {jIdx, iIdx}));
  SMELT_TRY(Value * tieFirst, n.emit("and", {tie, earlier}));
  SMELT_TRY(Value * before, n.emit("or", {better, tieFirst}));
  SMELT_TRY(Value * count, n.emit("cast", {before}, {{"to", std::string("i64")}}));
  AttrMap overJ{{"axes", std::vector<int64_t>{axis + 1}}, {"keepdims", int64_t{0}}};
  SMELT_TRY(Value * ranks, n.emit("reduce_sum", {count}, overJ));  // [.., len, ..]
  // Output slot r takes the element of rank r: a one-hot over [.., len, k, ..], summed over len.
  SMELT_TRY(Value * ranksI, n.emit("unsqueeze", {ranks}, {{"axes", std::vector<int64_t>{axis + 1}}}));
  SMELT_TRY(Value * hit, n.emit("eq", {ranksI, n.constant(iota(rank + 1, axis + 1, k))}));
  SMELT_TRY(Value * pos, n.emit("where", {hit, iIdx, n.scalar(DType::i64, 0)}));
  AttrMap overI{{"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t{0}}};
  SMELT_TRY(Value * indices, n.emit("reduce_sum", {pos}, overI));  // [.., k, ..]
  SMELT_TRY(Value * values, gatherElements(n, x, indices, axis));
  SMELT_CHECK_OK(n.setOutput(0, values));
  return n.setOutput(1, indices);
}

}  // namespace

void addCompositeConverters(ConverterTable& t) {
  t["TopK"] = topK;
  t["ArgMax"] = argMaxMin;
  t["ArgMin"] = argMaxMin;
  t["Hardmax"] = hardmax;
  t["GatherElements"] = gatherElementsOp;
  t["CumSum"] = cumSum;
  t["OneHot"] = oneHot;
  t["NegativeLogLikelihoodLoss"] = nll;
  t["SoftmaxCrossEntropyLoss"] = softmaxCrossEntropy;
}

}  // namespace smelt::onnximport

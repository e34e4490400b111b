// Converters for ONNX reductions (axes as attribute or, from ReduceSum-13 and opset 18, as input;
// ReduceL1/L2/SumSquare/LogSum composed) and Softmax/LogSoftmax (opset < 13 coerces to 2-D).
#include "frontend/onnx/onnx_context.h"

namespace smelt::onnximport {

namespace {

struct ReduceAxes {
  std::vector<int64_t> axes;
  bool identity = false;  // noop_with_empty_axes with no axes given
};

Expected<ReduceAxes> reduceAxes(NodeContext& n) {
  ReduceAxes r;
  bool axesAsInput = n.opset() >= 18 || (n.opType() == "ReduceSum" && n.opset() >= 13);
  if (axesAsInput) {
    if (n.hasInput(1)) {
      SMELT_TRY(r.axes, n.constInts(1));
    }
  } else {
    r.axes = n.attrInts("axes");
  }
  r.identity = r.axes.empty() && n.attrInt("noop_with_empty_axes", 0) != 0;
  return r;
}

Expected<Value*> reduce(NodeContext& n, std::string_view op, Value* x, const ReduceAxes& axes) {
  return n.emit(op, {x}, {{"axes", axes.axes}, {"keepdims", n.attrInt("keepdims", 1) != 0 ? int64_t{1} : 0}});
}

// ONNX op -> smelt reduction applied directly.
constexpr std::pair<std::string_view, std::string_view> kDirect[] = {
    {"ReduceSum", "reduce_sum"}, {"ReduceMean", "reduce_mean"}, {"ReduceMax", "reduce_max"},
    {"ReduceMin", "reduce_min"}, {"ReduceProd", "reduce_prod"}, {"ReduceLogSumExp", "reduce_logsumexp"},
};

Status reduceOp(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(ReduceAxes axes, reduceAxes(n));
  const std::string& op = n.opType();
  Value* pre = x;  // the value summed (composed reductions transform x first)
  if (op == "ReduceL1") {
    SMELT_TRY(pre, n.emit("abs", {x}));
  } else if (op == "ReduceL2" || op == "ReduceSumSquare") {
    SMELT_TRY(pre, n.emit("mul", {x, x}));
  }
  if (axes.identity) {
    // ONNX: with noop_with_empty_axes the reduction is the identity, but the element transform
    // (abs, square) still applies; L2 of one element is |x|, LogSum of one element is log(x).
    Value* y = pre;
    if (op == "ReduceL2") {
      SMELT_TRY(y, n.emit("sqrt", {pre}));
    }
    if (op == "ReduceLogSum") {
      SMELT_TRY(y, n.emit("log", {pre}));
    }
    return n.setOutput(0, y);
  }
  std::string_view smeltOp = "reduce_sum";
  for (auto [o, s] : kDirect) {
    if (o == op) smeltOp = s;
  }
  SMELT_TRY(Value * y, reduce(n, smeltOp, pre, axes));
  if (op == "ReduceL2") {
    SMELT_TRY(y, n.emit("sqrt", {y}));
  }
  if (op == "ReduceLogSum") {
    SMELT_TRY(y, n.emit("log", {y}));
  }
  return n.setOutput(0, y);
}

// Opset 13 Softmax works on one axis; older opsets flatten to [prod(d[:axis]), prod(d[axis:])].
Status softmax(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  std::string_view op = n.opType() == "Softmax" ? "softmax" : "log_softmax";
  if (n.opset() >= 13) {
    SMELT_TRY(Value * y, n.emit(op, {x}, {{"axis", n.attrInt("axis", -1)}}));
    return n.setOutput(0, y);
  }
  int64_t rank = x->type().rank();
  SMELT_TRY(int64_t axis, normalizeAxis(n.attrInt("axis", 1), std::max<int64_t>(rank, 1)));
  SMELT_TRY(Value * flat, n.emit("flatten", {x}, {{"axis", axis}}));
  SMELT_TRY(Value * s, n.emit(op, {flat}, {{"axis", int64_t{-1}}}));
  SMELT_TRY(Value * y, n.emit("reshape", {s}, {{"shape", x->shape()}}));
  return n.setOutput(0, y);
}

}  // namespace

void addReduceConverters(ConverterTable& t) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceLogSumExp",
                         "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum"}) {
    t[op] = reduceOp;
  }
  t["Softmax"] = softmax;
  t["LogSoftmax"] = softmax;
}

}  // namespace smelt::onnximport

// LSTM, GRU and RNN: each direction unrolled by ir/recurrent.h (the model API's layers share it).
#include "frontend/onnx/onnx_context.h"
#include "ir/recurrent.h"

namespace smelt::onnximport {

namespace {

// ONNX lists alpha and beta values only for the activations that take them, in order; the others get the defaults the
// runtimes use.
std::vector<RecurrentActivation> activationsOf(NodeContext& n) {
  std::vector<RecurrentActivation> acts;
  std::vector<int64_t> none;
  std::vector<double> alphas = n.attrFloats("activation_alpha"), betas = n.attrFloats("activation_beta");
  size_t ai = 0, bi = 0;
  for (const std::string& name : [&] {
         std::vector<std::string> names;
         for (const auto& a : n.proto().attribute()) {
           if (a.name() == "activations") names.assign(a.strings().begin(), a.strings().end());
         }
         return names;
       }()) {
    RecurrentActivation a{name};
    static const std::map<std::string, std::pair<double, double>, std::less<>> kDefaults{
        {"LeakyRelu", {0.01, 0}},    {"ThresholdedRelu", {1.0, 0}}, {"Elu", {1.0, 0}},
        {"HardSigmoid", {0.2, 0.5}}, {"ScaledTanh", {1.0, 1.0}},    {"Affine", {1.0, 0.0}}};
    if (auto d = kDefaults.find(name); d != kDefaults.end()) {
      a.alpha = ai < alphas.size() ? alphas[ai++] : d->second.first;
      bool takesBeta = name == "HardSigmoid" || name == "ScaledTanh" || name == "Affine";
      a.beta = takesBeta && bi < betas.size() ? betas[bi++] : d->second.second;
    }
    acts.push_back(std::move(a));
  }
  return acts;
}

// Direction `d` of a [dirs, ...] input, or null when the input is absent.
Expected<Value*> direction(NodeContext& n, size_t input, int64_t d) {
  if (!n.hasInput(input)) return static_cast<Value*>(nullptr);
  SMELT_TRY(Value * v, n.input(input));
  return n.emit("gather", {v, n.scalar(DType::i64, static_cast<double>(d))}, {{"axis", int64_t{0}}});
}

Status recurrentOp(NodeContext& n) {
  const std::string& type = n.opType();
  RecurrentSpec spec;
  spec.kind = type == "LSTM" ? RecurrentKind::LSTM : type == "GRU" ? RecurrentKind::GRU : RecurrentKind::RNN;
  spec.gates = spec.kind == RecurrentKind::GRU ? kOnnxGruGates : kOnnxLstmGates;
  int64_t gates = spec.kind == RecurrentKind::LSTM ? 4 : spec.kind == RecurrentKind::GRU ? 3 : 1;
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(TensorType rType, n.inputType(2));
  if (x->type().rank() != 3 || rType.rank() != 3) {
    return makeError("X must be rank 3 and R [directions, {}*hidden, hidden], got {} and {}", gates,
                     x->type().toString(), rType.toString());
  }
  spec.hidden = n.attrInt("hidden_size", rType.shape[2]);
  // The attribute must agree with the weights it describes (a mutated model's hidden_size of -4e18 made the
  // bias slices' bounds overflow).
  if (!rType.isStatic()) return makeError("R must have static dimensions, got {}", rType.toString());
  if (spec.hidden != rType.shape[2] || rType.shape[2] > rType.shape[1] || rType.shape[1] != gates * rType.shape[2]) {
    return makeError("hidden_size {} does not match R {} (expected [directions, {} * hidden, hidden])", spec.hidden,
                     rType.toString(), gates);
  }
  spec.clip = n.attrFloat("clip", 0.0);
  spec.coupleInputForget = n.attrInt("input_forget", 0) != 0;
  spec.linearBeforeReset = n.attrInt("linear_before_reset", 0) != 0;
  std::string dir = n.attrString("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") {
    return makeError("direction '{}' is not forward, reverse or bidirectional", dir);
  }
  int64_t dirs = dir == "bidirectional" ? 2 : 1;
  if (rType.shape[0] != dirs)
    return makeError("R has {} directions, direction '{}' needs {}", rType.shape[0], dir, dirs);
  std::vector<RecurrentActivation> acts = activationsOf(n);
  size_t perDir = spec.kind == RecurrentKind::LSTM ? 3 : spec.kind == RecurrentKind::GRU ? 2 : 1;
  if (!acts.empty() && acts.size() != perDir * static_cast<size_t>(dirs)) {
    return makeError("{} activations given; {} direction(s) of {} take {}", acts.size(), dirs, type,
                     perDir * static_cast<size_t>(dirs));
  }
  bool batchFirst = n.attrInt("layout", 0) != 0;
  if (batchFirst) {
    SMELT_TRY(x, n.emit("transpose", {x}, {{"perm", std::vector<int64_t>{1, 0, 2}}}));
  }
  Value* lengths = nullptr;
  if (n.hasInput(4)) {
    SMELT_TRY(lengths, n.input(4));
  }
  Builder b(n.graph(), n.nodeName().empty() ? type : n.nodeName());
  std::vector<Value*> ys, hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    RecurrentWeights w;
    SMELT_TRY(w.w, direction(n, 1, d));
    SMELT_TRY(w.r, direction(n, 2, d));
    SMELT_TRY(Value * bias, direction(n, 3, d));
    if (bias) {
      int64_t gh = gates * spec.hidden;
      AttrMap first{{"starts", std::vector<int64_t>{0}}, {"ends", std::vector<int64_t>{gh}}};
      AttrMap second{{"starts", std::vector<int64_t>{gh}}, {"ends", std::vector<int64_t>{2 * gh}}};
      SMELT_TRY(w.wBias, n.emit("slice", {bias}, first));
      SMELT_TRY(w.rBias, n.emit("slice", {bias}, second));
    }
    SMELT_TRY(w.h0, direction(n, 5, d));
    if (spec.kind == RecurrentKind::LSTM) {
      SMELT_TRY(w.c0, direction(n, 6, d));
      SMELT_TRY(w.peephole, direction(n, 7, d));
    }
    RecurrentSpec dirSpec = spec;
    if (!acts.empty()) {
      dirSpec.activations.assign(acts.begin() + static_cast<std::ptrdiff_t>(perDir * static_cast<size_t>(d)),
                                 acts.begin() + static_cast<std::ptrdiff_t>(perDir * static_cast<size_t>(d + 1)));
    }
    bool reverse = dir == "reverse" || d == 1;
    RecurrentOutput r = recurrence(b, dirSpec, w, x, reverse, lengths);
    SMELT_CHECK_OK(b.status());
    ys.push_back(b.op("unsqueeze", {r.sequence}, {{"axes", std::vector<int64_t>{1}}}));  // [seq, 1, batch, h]
    hs.push_back(b.op("unsqueeze", {r.lastHidden}, {{"axes", std::vector<int64_t>{0}}}));
    if (r.lastCell) cs.push_back(b.op("unsqueeze", {r.lastCell}, {{"axes", std::vector<int64_t>{0}}}));
  }
  Value* y = b.op("concat", ys, {{"axis", int64_t{1}}});   // [seq, dirs, batch, h]
  Value* yh = b.op("concat", hs, {{"axis", int64_t{0}}});  // [dirs, batch, h]
  Value* yc = cs.empty() ? nullptr : b.op("concat", cs, {{"axis", int64_t{0}}});
  if (batchFirst) {
    y = b.transpose(y, {2, 0, 1, 3});  // [batch, seq, dirs, h]
    yh = b.transpose(yh, {1, 0, 2});
    if (yc) yc = b.transpose(yc, {1, 0, 2});
  }
  SMELT_CHECK_OK(b.status());
  SMELT_CHECK_OK(n.setOutput(0, y));
  SMELT_CHECK_OK(n.setOutput(1, yh));
  if (yc) return n.setOutput(2, yc);
  return {};
}

}  // namespace

void addRecurrentConverters(ConverterTable& t) {
  t["LSTM"] = recurrentOp;
  t["GRU"] = recurrentOp;
  t["RNN"] = recurrentOp;
}

}  // namespace smelt::onnximport

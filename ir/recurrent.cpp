// Unrolled RNN, LSTM and GRU (ir/recurrent.h), following ONNX's equations (operators.md, LSTM/GRU/RNN).
#include "ir/recurrent.h"

namespace smelt {

namespace {

Value* activate(Builder& b, const RecurrentActivation& a, Value* x) {
  const std::string& n = a.name;
  if (n == "Sigmoid") return b.op("sigmoid", {x});
  if (n == "Tanh") return b.op("tanh", {x});
  if (n == "Relu") return b.op("relu", {x});
  if (n == "LeakyRelu") return b.op("leaky_relu", {x}, {{"alpha", a.alpha}});
  if (n == "Elu") return b.op("elu", {x}, {{"alpha", a.alpha}});
  if (n == "Softplus") return b.op("softplus", {x});
  if (n == "Softsign") return b.div(x, b.add(b.scalarLike(1.0, x), b.op("abs", {x})));
  if (n == "Affine") return b.add(b.scale(x, a.alpha), b.scalarLike(a.beta, x));
  if (n == "ScaledTanh") return b.scale(b.op("tanh", {b.scale(x, a.beta)}), a.alpha);
  if (n == "HardSigmoid") {
    return b.op("clip", {b.add(b.scale(x, a.alpha), b.scalarLike(a.beta, x))}, {{"min", 0.0}, {"max", 1.0}});
  }
  if (n == "ThresholdedRelu") {
    return b.where(b.op("gt", {x, b.scalarLike(a.alpha, x)}), x, b.scalarLike(0.0, x));
  }
  return b.fail(makeError("recurrent activation '{}' is not one ONNX defines", n));
}

// ONNX's defaults for alpha and beta where the activation list gives none.
std::vector<RecurrentActivation> activationsOf(const RecurrentSpec& spec) {
  if (!spec.activations.empty()) return spec.activations;
  if (spec.kind == RecurrentKind::RNN) return {{"Tanh"}};
  if (spec.kind == RecurrentKind::GRU) return {{"Sigmoid"}, {"Tanh"}};
  return {{"Sigmoid"}, {"Tanh"}, {"Tanh"}};
}

// Rows [gate * hidden, (gate + 1) * hidden) of the last axis of `x`.
Value* gateOf(Builder& b, Value* x, int64_t gate, int64_t hidden) {
  if (!x) return nullptr;  // an earlier node failed: the builder holds its error
  int64_t last = x->type().rank() - 1;
  return b.op("slice", {x},
              {{"starts", std::vector<int64_t>{gate * hidden}},
               {"ends", std::vector<int64_t>{(gate + 1) * hidden}},
               {"axes", std::vector<int64_t>{last}}});
}

}  // namespace

RecurrentOutput recurrence(Builder& b, const RecurrentSpec& spec, const RecurrentWeights& wts, Value* x, bool reverse,
                           Value* lengths) {
  RecurrentOutput out;
  if (!x || !wts.w || !wts.r) {
    b.fail(makeError("recurrence: the input and both weights are required"));
    return out;
  }
  const TensorType& xt = x->type();
  int64_t gates = spec.kind == RecurrentKind::LSTM ? 4 : spec.kind == RecurrentKind::GRU ? 3 : 1;
  int64_t h = spec.hidden;
  if (xt.rank() != 3 || isSymbolic(xt.shape[0])) {
    b.fail(
        makeError("recurrence: input must be [seq, batch, features] with a "
                  "static seq, got {}",
                  xt.toString()));
    return out;
  }
  if (h <= 0 || wts.w->shape() != Shape{gates * h, xt.shape[2]} || wts.r->shape() != Shape{gates * h, h}) {
    b.fail(makeError(
        "recurrence: weights must be [{}, {}] and [{}, {}] for "
        "hidden size {}, got {} and {}",
        gates * h, extentToString(xt.shape[2]), gates * h, h, h, wts.w->type().toString(), wts.r->type().toString()));
    return out;
  }
  std::vector<RecurrentActivation> act = activationsOf(spec);
  size_t wantActs = spec.kind == RecurrentKind::LSTM ? 3 : spec.kind == RecurrentKind::GRU ? 2 : 1;
  if (act.size() != wantActs) {
    b.fail(makeError("recurrence: {} activations given, the cell takes {}", act.size(), wantActs));
    return out;
  }
  int64_t seq = xt.shape[0], batch = xt.shape[1];
  // Each step is a few dozen nodes: a declared length in the millions (a mutated model's header) would build
  // graphs of tens of millions of nodes before anything else could refuse it.
  if (seq > kMaxRecurrentSteps) {
    b.fail(makeError("recurrence: a sequence of {} steps is longer than the {} steps smelt unrolls (x is {})", seq,
                     kMaxRecurrentSteps, xt.toString()));
    return out;
  }
  const GateLayout& g = spec.gates;
  DType dt = xt.dtype;

  // The input projection of every step at once: [seq, batch, gates*h].
  Value* xw = b.op("matmul", {x, b.transpose(wts.w, {1, 0})});
  if (wts.wBias) xw = b.add(xw, wts.wBias);
  Value* rT = b.transpose(wts.r, {1, 0});  // [h, gates*h]
  // GRU without linear_before_reset multiplies the reset gate into h before its hidden-gate product.
  Value* rHiddenT = nullptr;
  if (spec.kind == RecurrentKind::GRU && !spec.linearBeforeReset) {
    rHiddenT = b.transpose(b.op("slice", {wts.r},
                                {{"starts", std::vector<int64_t>{g[2] * h}},
                                 {"ends", std::vector<int64_t>{(g[2] + 1) * h}},
                                 {"axes", std::vector<int64_t>{0}}}),
                           {1, 0});
  }

  Value* state = wts.h0 ? wts.h0 : b.full(0.0, TensorType{dt, {batch, h}});
  Value* cell =
      spec.kind == RecurrentKind::LSTM ? (wts.c0 ? wts.c0 : b.full(0.0, TensorType{dt, {batch, h}})) : nullptr;
  Value* len = nullptr;      // [batch, 1]
  Value* lenFlat = nullptr;  // [batch]
  Value* flatXw = nullptr;
  Value* batchIota = nullptr;
  if (lengths) {
    lenFlat = b.cast(lengths, DType::i64);
    len = b.op("unsqueeze", {lenFlat}, {{"axes", std::vector<int64_t>{1}}});
    if (reverse) {
      if (isSymbolic(batch)) {
        b.fail(
            makeError("recurrence: a reverse pass with sequence lengths "
                      "needs a static batch"));
        return out;
      }
      flatXw = b.reshape(xw, {seq * batch, gates * h});
      Tensor iota(TensorType{DType::i64, {batch}});
      for (int64_t i = 0; i < batch; ++i) iota.setInt(i, i);
      batchIota = b.op("constant", {}, {{"value", std::move(iota)}});
    }
  }
  auto clipped = [&](Value* v) {
    return spec.clip > 0 ? b.op("clip", {v}, {{"min", -spec.clip}, {"max", spec.clip}}) : v;
  };
  // Flat row of step t's input for each sequence of a reverse pass with lengths: t < len ? len-1-t : t.
  auto reversedRows = [&](int64_t t) {
    Value* tt = b.scalar(static_cast<double>(t), DType::i64);
    Value* mirrored = b.sub(b.sub(lenFlat, b.scalar(1, DType::i64)), tt);
    Value* inside = b.op("lt", {tt, lenFlat});
    Value* time = b.where(inside, mirrored, b.op("expand", {tt}, {{"shape", std::vector<int64_t>{batch}}}));
    return b.add(b.mul(time, b.scalar(static_cast<double>(batch), DType::i64)), batchIota);
  };

  std::vector<Value*> steps(static_cast<size_t>(seq));
  std::vector<Value*> rowsOfStep(static_cast<size_t>(seq));
  for (int64_t k = 0; k < seq; ++k) {
    // With lengths a reverse pass walks each sequence's own steps (gathered rows), output in step order; without, it
    // walks time backwards.
    bool gathered = reverse && lengths;
    int64_t t = reverse && !lengths ? seq - 1 - k : k;
    Value* xt_ = nullptr;
    if (gathered) {
      rowsOfStep[static_cast<size_t>(k)] = reversedRows(k);
      xt_ = b.op("gather", {flatXw, rowsOfStep[static_cast<size_t>(k)]}, {{"axis", int64_t{0}}});
    } else {
      xt_ = b.op("gather", {xw, b.scalar(static_cast<double>(t), DType::i64)}, {{"axis", int64_t{0}}});
    }
    Value* hr = b.op("matmul", {state, rT});
    if (wts.rBias) hr = b.add(hr, wts.rBias);
    Value* next = nullptr;
    Value* nextCell = nullptr;
    if (spec.kind == RecurrentKind::RNN) {
      next = activate(b, act[0], clipped(b.add(xt_, hr)));
    } else if (spec.kind == RecurrentKind::LSTM) {
      auto pre = [&](int64_t gate) { return b.add(gateOf(b, xt_, g[gate], h), gateOf(b, hr, g[gate], h)); };
      auto peep = [&](Value* v, int64_t which, Value* c) {
        return wts.peephole ? b.add(v, b.mul(gateOf(b, wts.peephole, which, h), c)) : v;
      };
      Value* i = activate(b, act[0], clipped(peep(pre(0), 0, cell)));
      Value* f =
          spec.coupleInputForget ? b.sub(b.scalarLike(1.0, i), i) : activate(b, act[0], clipped(peep(pre(2), 2, cell)));
      Value* c = activate(b, act[1], clipped(pre(3)));
      nextCell = b.add(b.mul(f, cell), b.mul(i, c));
      Value* o = activate(b, act[0], clipped(peep(pre(1), 1, nextCell)));
      next = b.mul(o, activate(b, act[2], nextCell));
    } else {  // GRU
      Value* z = activate(b, act[0], clipped(b.add(gateOf(b, xt_, g[0], h), gateOf(b, hr, g[0], h))));
      Value* r = activate(b, act[0], clipped(b.add(gateOf(b, xt_, g[1], h), gateOf(b, hr, g[1], h))));
      Value* hiddenPart = nullptr;
      if (spec.linearBeforeReset) {
        hiddenPart = b.mul(r, gateOf(b, hr, g[2], h));
      } else {
        hiddenPart = b.op("matmul", {b.mul(r, state), rHiddenT});
        if (wts.rBias) hiddenPart = b.add(hiddenPart, gateOf(b, wts.rBias, g[2], h));
      }
      Value* candidate = activate(b, act[1], clipped(b.add(gateOf(b, xt_, g[2], h), hiddenPart)));
      next = b.add(b.mul(b.sub(b.scalarLike(1.0, z), z), candidate), b.mul(z, state));
    }
    Value* y = next;
    if (len) {
      Value* live = b.op("lt", {b.scalar(static_cast<double>(gathered ? k : t), DType::i64), len});  // [batch, 1]
      state = b.where(live, next, state);
      if (nextCell) cell = b.where(live, nextCell, cell);
      y = b.where(live, next, b.scalarLike(0.0, next));
    } else {
      state = next;
      if (nextCell) cell = nextCell;
    }
    steps[static_cast<size_t>(t)] = b.op("unsqueeze", {y}, {{"axes", std::vector<int64_t>{0}}});
  }
  out.sequence = b.op("concat", steps, {{"axis", int64_t{0}}});
  if (reverse && lengths && b.ok()) {
    // Step k of sequence b holds time rowsOfStep[k]'s output; the map is its own inverse.
    Value* flatY = b.reshape(out.sequence, {seq * batch, h});
    for (int64_t k = 0; k < seq; ++k) {
      steps[static_cast<size_t>(k)] =
          b.op("unsqueeze", {b.op("gather", {flatY, rowsOfStep[static_cast<size_t>(k)]}, {{"axis", int64_t{0}}})},
               {{"axes", std::vector<int64_t>{0}}});
    }
    out.sequence = b.op("concat", steps, {{"axis", int64_t{0}}});
  }
  out.lastHidden = state;
  out.lastCell = cell;
  return out;
}

}  // namespace smelt

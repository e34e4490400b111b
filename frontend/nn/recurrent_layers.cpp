// LSTM and GRU layers (layers.h) over ir/recurrent.h's unrolled cells, in PyTorch's layout.
#include "frontend/nn/layers.h"
#include "ir/recurrent.h"

#include <fmt/format.h>

#include <cmath>

namespace smelt::nn {

namespace {

class Recurrent final : public Module {
 public:
  Recurrent(RecurrentKind kind, int64_t in, int64_t hidden, RecurrentOptions o)
      : kind_(kind), in_(in), h_(hidden), o_(o) {}
  Value* forward(GraphContext& ctx, Value* x) override {
    Builder& b = ctx.b();
    if (!x) return nullptr;
    if (x->type().rank() != 3 || x->shape()[2] != in_ || o_.layers < 1 || h_ < 1) {
      return b.fail(makeError("{}: input must be {} with {} features, got {}", describe(),
                              o_.batchFirst ? "[batch, seq, features]" : "[seq, batch, features]", in_,
                              x->type().toString()));
    }
    if (o_.batchFirst) x = b.transpose(x, {1, 0, 2});
    int64_t gates = kind_ == RecurrentKind::LSTM ? 4 : 3;
    RecurrentSpec spec;
    spec.kind = kind_;
    spec.hidden = h_;
    spec.gates = kind_ == RecurrentKind::LSTM ? kTorchLstmGates : kTorchGruGates;
    spec.linearBeforeReset = true;  // PyTorch's GRU: r * (W_hn h + b_hn)
    Initializer init = uniform(1.0 / std::sqrt(static_cast<double>(h_)));
    int64_t dirs = o_.bidirectional ? 2 : 1;
    for (int64_t layer = 0; layer < o_.layers && x; ++layer) {
      int64_t in = layer == 0 ? in_ : dirs * h_;
      std::vector<Value*> outputs;
      for (int64_t d = 0; d < dirs; ++d) {
        std::string sfx = fmt::format("_l{}{}", layer, d ? "_reverse" : "");
        RecurrentWeights w;
        w.w = ctx.parameter("weight_ih" + sfx, {gates * h_, in}, init);
        w.r = ctx.parameter("weight_hh" + sfx, {gates * h_, h_}, init);
        if (o_.bias) {
          w.wBias = ctx.parameter("bias_ih" + sfx, {gates * h_}, init);
          w.rBias = ctx.parameter("bias_hh" + sfx, {gates * h_}, init);
        }
        outputs.push_back(recurrence(b, spec, w, x, d == 1).sequence);
      }
      x = dirs == 1 ? outputs[0] : b.op("concat", outputs, {{"axis", int64_t{2}}});
      if (ctx.training() && o_.dropout > 0 && layer + 1 < o_.layers) {
        std::vector<Value*> r =
            b.ops("dropout", {x, ctx.stepInput()}, {{"ratio", o_.dropout}, {"seed", ctx.nextSeed()}});
        x = r.empty() ? nullptr : r[0];
      }
    }
    return o_.batchFirst && x ? b.transpose(x, {1, 0, 2}) : x;
  }
  std::string describe() const override {
    return fmt::format("{}({} -> {}{}{})", kind_ == RecurrentKind::LSTM ? "LSTM" : "GRU", in_, h_,
                       o_.layers > 1 ? fmt::format(", {} layers", o_.layers) : "",
                       o_.bidirectional ? ", bidirectional" : "");
  }

 private:
  RecurrentKind kind_;
  int64_t in_, h_;
  RecurrentOptions o_;
};

}  // namespace

ModulePtr lstm(int64_t in, int64_t hidden, RecurrentOptions options) {
  return std::make_shared<Recurrent>(RecurrentKind::LSTM, in, hidden, options);
}
ModulePtr gru(int64_t in, int64_t hidden, RecurrentOptions options) {
  return std::make_shared<Recurrent>(RecurrentKind::GRU, in, hidden, options);
}

}  // namespace smelt::nn

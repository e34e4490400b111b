// Recurrent layers (RNN, LSTM, GRU) unrolled into IR ops over a static sequence length, shared by the ONNX importer
// (LSTM, GRU, RNN nodes) and the model API's layers (nn::lstm, nn::gru). Unrolled, a recurrence is ordinary IR: it runs
// on every backend, fuses, and differentiates through the GradientTape (backpropagation through time) with no op of its
// own. The input projection of every step is one product over the whole sequence; each step adds one product with the
// recurrent weight.
#pragma once

#include "ir/builder.h"

#include <array>
#include <string>
#include <vector>

namespace smelt {

enum class RecurrentKind { RNN, LSTM, GRU };

/// An activation by its ONNX name (Sigmoid, Tanh, Relu, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu,
/// Softsign, Softplus, Affine) with its alpha and beta where it takes them.
struct RecurrentActivation {
  std::string name;
  double alpha = 0, beta = 0;
};

/// Where each gate's rows sit in the stacked weights, as multiples of the hidden size. Logical gates: LSTM {input,
/// output, forget, cell}, GRU {update, reset, hidden}, RNN {hidden}.
using GateLayout = std::array<int64_t, 4>;
inline constexpr GateLayout kOnnxLstmGates{0, 1, 2, 3};   // ONNX iofc
inline constexpr GateLayout kTorchLstmGates{0, 3, 1, 2};  // PyTorch ifgo
inline constexpr GateLayout kOnnxGruGates{0, 1, 2, 0};    // ONNX zrh
inline constexpr GateLayout kTorchGruGates{1, 0, 2, 0};   // PyTorch rzn

struct RecurrentSpec {
  RecurrentKind kind = RecurrentKind::LSTM;
  int64_t hidden = 0;
  GateLayout gates = kOnnxLstmGates;
  /// f, g (and h for LSTM), as ONNX orders them; empty: the defaults (Sigmoid, Tanh, Tanh; RNN: Tanh).
  std::vector<RecurrentActivation> activations;
  /// Gate pre-activations are clipped to [-clip, clip] when clip > 0.
  double clip = 0;
  /// LSTM: the forget gate is 1 - input gate.
  bool coupleInputForget = false;
  /// GRU: the reset gate multiplies (h R_h^T + Rb_h) rather than h (PyTorch's form).
  bool linearBeforeReset = false;
};

/// One direction's weights: w [gates*hidden, input], r [gates*hidden, hidden]; optional biases [gates*hidden], LSTM
/// peepholes [3*hidden] (input, output, forget) and initial states [batch, hidden].
struct RecurrentWeights {
  Value* w = nullptr;
  Value* r = nullptr;
  Value* wBias = nullptr;
  Value* rBias = nullptr;
  Value* peephole = nullptr;
  Value* h0 = nullptr;
  Value* c0 = nullptr;
};

struct RecurrentOutput {
  /// [seq, batch, hidden], in input time order (for a reverse pass too); zero past a sequence's length.
  Value* sequence = nullptr;
  /// The state after each sequence's last step: [batch, hidden].
  Value* lastHidden = nullptr;
  Value* lastCell = nullptr;  // LSTM only
};

/// The longest sequence a recurrence unrolls (one step is a few dozen nodes).
inline constexpr int64_t kMaxRecurrentSteps = 16384;

/// Runs one direction over x [seq, batch, input] (seq static, at most kMaxRecurrentSteps). `lengths` (i32/i64 [batch], optional) gives each
/// sequence's length: steps past it leave the state unchanged and output zeros; a reverse pass starts at each
/// sequence's own last step. Errors go to the builder.
RecurrentOutput recurrence(Builder& b, const RecurrentSpec& spec, const RecurrentWeights& weights, Value* x,
                           bool reverse, Value* lengths = nullptr);

}  // namespace smelt

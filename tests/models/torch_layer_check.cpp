// smelt_torch_layer_check CASE WEIGHTS.safetensors INPUT.npy OUTDIR: builds one model-API layer configuration
// (CASE, the same table as check_torch_layers.py), loads its parameters from WEIGHTS (strictly: every tensor used,
// none missing), runs it in evaluation mode on INPUT and writes OUTDIR/output.npy and the gradient of the output's
// sum with respect to the input (when it is floating point) and every parameter, OUTDIR/<name>.grad.npy.
#include "autodiff/gradient_tape.h"
#include "frontend/nn/attention.h"
#include "frontend/nn/safetensors.h"
#include "frontend/npy.h"
#include "ir/interpreter.h"

#include <fmt/format.h>

#include <functional>
#include <map>

using namespace smelt;

namespace {

using Build = std::function<Value*(nn::GraphContext&, Value*)>;

Build layer(nn::ModulePtr m) {
  return [m](nn::GraphContext& ctx, Value* x) { return m->forward(ctx, x); };
}

// A key padding mask for [2, S] keys: the second sequence's last two keys are padding.
Value* paddingMask(Builder& b, int64_t keys) {
  Tensor mask(TensorType{DType::boolean, {2, keys}});
  for (int64_t j = 0; j < keys; ++j) mask.setInt(keys + j, j >= keys - 2 ? 1 : 0);
  return b.op("constant", {}, {{"value", std::move(mask)}});
}

const std::map<std::string, Build>& cases() {
  static const std::map<std::string, Build> table{
      {"lstm", layer(nn::lstm(5, 7, {.layers = 2, .bidirectional = true}))},
      {"lstm_batch_first", layer(nn::lstm(5, 6, {.batchFirst = true, .bias = false}))},
      {"gru", layer(nn::gru(5, 6, {.layers = 2, .bidirectional = true, .batchFirst = true}))},
      {"mha",
       [](nn::GraphContext& ctx, Value* x) {
         nn::MultiheadAttention attention(16, 4, {.batchFirst = true});
         return attention.attend(ctx, x, x, x, nn::causalMask(ctx.b(), x->shape()[1]),
                                 paddingMask(ctx.b(), x->shape()[1]));
       }},
      {"encoder", layer(nn::transformerEncoderLayer(16, 2, {.feedforward = 32, .dropout = 0.1}))},
      {"encoder_norm_first_gelu",
       [](nn::GraphContext& ctx, Value* x) {
         nn::TransformerEncoderLayer layer(
             16, 4, {.feedforward = 24, .activation = "gelu", .batchFirst = true, .normFirst = true, .causal = true});
         return layer.encode(ctx, x, nullptr, paddingMask(ctx.b(), x->shape()[1]));
       }},
      {"group_norm", layer(nn::groupNorm(3, 6))},
      {"upsample_nearest", layer(nn::upsample({.scale = 2.0, .mode = "nearest"}))},
      {"upsample_bilinear", layer(nn::upsample({.scale = 1.5, .mode = "bilinear"}))},
      {"upsample_bilinear_align", layer(nn::upsample({.size = {7, 9}, .mode = "bilinear", .alignCorners = true}))},
      {"upsample_bicubic", layer(nn::upsample({.scale = 2.0, .mode = "bicubic"}))},
      {"pixel_shuffle", layer(nn::pixelShuffle(2))},
      {"embedding_padding", layer(nn::embedding(10, 4, {.paddingIndex = 3}))},
  };
  return table;
}

Status run(const std::string& name, const std::string& weights, const std::string& inputPath, const std::string& out) {
  auto it = cases().find(name);
  if (it == cases().end()) return makeError("unknown case '{}'", name);
  SMELT_TRY(nn::StateDict state, nn::loadSafetensors(weights));
  const nn::StateDict given = state;
  SMELT_TRY(Tensor input, readNpy(inputPath));
  Graph g;
  nn::GraphContext ctx(g, state, /*training=*/false);
  Value* x = g.addInput("input", input.type());
  Value* y = it->second(ctx, x);
  SMELT_CHECK_OK(ctx.b().status());
  // Strict loading: the layer made no parameter the file lacks and used every tensor it holds.
  for (const auto& entry : state) {
    if (!given.count(entry.first)) return makeError("the weights file has no '{}'", entry.first);
  }
  std::vector<std::string> wrt;
  for (const Value* p : ctx.trainable()) wrt.push_back(std::string(p->name()));
  if (wrt.size() != given.size()) {
    return makeError("the layer has {} parameters, the weights file {} tensors", wrt.size(), given.size());
  }
  if (isFloat(input.dtype())) wrt.insert(wrt.begin(), "input");
  g.addOutput("output", y);
  SMELT_TRY(std::vector<Value*> grads, gradientOfOutputs(g, wrt));
  for (size_t i = 0; i < grads.size(); ++i) g.addOutput("grad:" + wrt[i], grads[i]);
  TensorMap feeds = state;
  feeds.emplace("input", input);
  SMELT_TRY(std::vector<Tensor> results, interpret(g, feeds));
  SMELT_CHECK_OK(writeNpy(out + "/output.npy", results[0]));
  for (size_t i = 0; i < grads.size(); ++i) SMELT_CHECK_OK(writeNpy(out + "/" + wrt[i] + ".grad.npy", results[i + 1]));
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    fmt::print(stderr, "usage: smelt_torch_layer_check CASE WEIGHTS.safetensors INPUT.npy OUTDIR\n");
    return 2;
  }
  Status s = run(argv[1], argv[2], argv[3], argv[4]);
  if (!s.ok()) {
    fmt::print(stderr, "smelt_torch_layer_check {}: {}\n", argv[1], s.error().message());
    return 1;
  }
  return 0;
}

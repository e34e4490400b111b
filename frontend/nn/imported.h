// A module that runs an existing graph (an imported ONNX model, IR text): fine-tuning an imported
// model is training this module. Its nodes are emitted again into the graph being built, so result
// types are inferred anew (a model exported with batch 1 trains on batches of 32 when no op fixes the
// batch in an attribute); its parameters become the module's, under their names in the graph (ONNX
// initializer names), starting from the graph's values.
//   SMELT_TRY(Graph onnx, loadModel("examples/models/tiny_cnn.onnx"));
//   nn::Model model(nn::imported(std::make_shared<Graph>(std::move(onnx))));
#pragma once

#include "frontend/nn/layers.h"

namespace smelt::nn {

/// The graph's first input is the module's input, its first output the module's output; a graph with
/// other inputs is an error when the module is built.
ModulePtr imported(std::shared_ptr<const Graph> graph);

}  // namespace smelt::nn

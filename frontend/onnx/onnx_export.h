// ONNX export: a smelt graph (an imported or IR model, a model-API graph; forward or a training
// graph) as an ONNX model of opset 17 that other runtimes (onnxruntime) run with the same outputs.
// Every op with an ONNX equivalent maps to it (some to a few nodes: rsqrt is Sqrt then Reciprocal,
// gelu its erf formula), fused nodes export as their bodies, parameters and constants become
// initializers, symbolic dimensions dim_params; an op with no equivalent is an error naming the node.
//   SMELT_TRY(Graph g, loadModel("model.ir"));
//   SMELT_CHECK_OK(exportOnnxFile(g, "model.onnx"));
#pragma once

#include "ir/graph.h"

#include <string>

namespace smelt {

/// True when this build has ONNX (SMELT_WITH_ONNX): export needs ONNX's protobuf classes.
bool onnxExportAvailable();
/// The serialized ModelProto of `graph`.
Expected<std::string> exportOnnxBytes(const Graph& graph);
/// Writes it to `path`.
Status exportOnnxFile(const Graph& graph, const std::string& path);

}  // namespace smelt

// Loads a model file for the CLI and tools: an .onnx model or smelt IR text; "-" reads standard input.
#pragma once

#include "ir/graph.h"
#include "ir/interpreter.h"

#include <map>
#include <string>

namespace smelt {

/// Loads `path`: ONNX when the bytes are not IR text (IR text starts with "graph" after comments),
/// IR text otherwise. "-" reads standard input. `inputValues` are the values the model will be fed:
/// an ONNX op that needs one of them as a static operand (a Reshape's shape, Pad's pads, Clip's bounds
/// given as graph inputs) is imported with that value (OnnxImportOptions::staticInputValues); where the
/// import with symbolic dimensions fails, it is tried again with the values' shapes and `dimSizes` (the
/// sizes of named dynamic dimensions: a CLI command's --dim), logged (SMELT_LOG=info).
/// `sized`, when given, says whether that second import was taken.
Expected<Graph> loadModel(const std::string& path, const TensorMap& inputValues = {},
                          const std::map<std::string, int64_t>& dimSizes = {}, bool* sized = nullptr);

}  // namespace smelt

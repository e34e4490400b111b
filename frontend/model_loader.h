// Loads a model file for the CLI and tools: an .onnx model or smelt IR text; "-" reads standard input.
#pragma once

#include "ir/graph.h"

#include <string>

namespace smelt {

/// Loads `path`: ONNX when the bytes are not IR text (IR text starts with "graph" after comments),
/// IR text otherwise. "-" reads standard input.
Expected<Graph> loadModel(const std::string& path);

}  // namespace smelt

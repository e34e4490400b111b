// ONNX model import (opsets 13 to 17) with ONNX's own protobuf classes. The public API exposes no
// protobuf or ONNX types.
#pragma once

#include "ir/graph.h"

#include <string>

namespace smelt {

/// True when this build includes ONNX import (SMELT_WITH_ONNX).
bool onnxImportAvailable();

/// Imports an .onnx file. External tensor data is read only from the model's own folder.
Expected<Graph> importOnnxFile(const std::string& path);

/// Imports serialized ModelProto bytes; `modelDir` is where external data may be read from.
Expected<Graph> importOnnxBytes(std::string_view bytes, const std::string& modelDir, std::string_view what);

}  // namespace smelt

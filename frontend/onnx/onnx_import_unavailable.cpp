// ONNX import when the build has no ONNX (SMELT_WITH_ONNX=OFF or libonnx-dev missing).
#include "frontend/onnx/onnx_import.h"

namespace smelt {

bool onnxImportAvailable() { return false; }

Expected<Graph> importOnnxFile(const std::string& path) {
  return makeError("{}: this smelt was built without ONNX import (SMELT_WITH_ONNX=OFF)", path);
}

Expected<Graph> importOnnxBytes(std::string_view, const std::string&, std::string_view what) {
  return makeError("{}: this smelt was built without ONNX import (SMELT_WITH_ONNX=OFF)", what);
}

}  // namespace smelt

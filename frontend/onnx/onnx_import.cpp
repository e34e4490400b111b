// (placeholder: the importer is being written)
#include "frontend/onnx/onnx_import.h"

#include <onnx/onnx_pb.h>

namespace smelt {

bool onnxImportAvailable() { return true; }

Expected<Graph> importOnnxFile(const std::string& path) { return makeError("{}: ONNX import is not written yet", path); }

Expected<Graph> importOnnxBytes(std::string_view, const std::string&, std::string_view what) {
  return makeError("{}: ONNX import is not written yet", what);
}

}  // namespace smelt

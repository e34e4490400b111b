// ONNX import when the build has no ONNX (SMELT_WITH_ONNX=OFF or libonnx-dev missing).
#include "frontend/onnx/onnx_export.h"
#include "frontend/onnx/onnx_import.h"

namespace smelt {

namespace {
constexpr const char* kMissing = "this smelt was built without ONNX import (SMELT_WITH_ONNX=OFF)";
}

bool onnxImportAvailable() { return false; }

bool onnxOpSupported(std::string_view) { return false; }

Expected<Graph> importOnnxFile(const std::string& path, const OnnxImportOptions&) {
  return makeError("{}: {}", path, kMissing);
}

Expected<Graph> importOnnxBytes(std::string_view, const std::string&, std::string_view what,
                                const OnnxImportOptions&) {
  return makeError("{}: {}", what, kMissing);
}

Expected<OnnxModelInfo> inspectOnnxBytes(std::string_view, std::string_view what) {
  return makeError("{}: {}", what, kMissing);
}

Expected<Tensor> importOnnxTensorBytes(std::string_view, const std::string&, std::string_view what) {
  return makeError("{}: {}", what, kMissing);
}

Expected<Tensor> importOnnxTensorFile(const std::string& path) { return makeError("{}: {}", path, kMissing); }

bool onnxExportAvailable() { return false; }

Expected<std::string> exportOnnxBytes(const Graph& graph) {
  return makeError("exporting @{}: this smelt was built without ONNX (SMELT_WITH_ONNX=OFF)", graph.name());
}

Status exportOnnxFile(const Graph& graph, const std::string&) { return exportOnnxBytes(graph).error(); }

}  // namespace smelt

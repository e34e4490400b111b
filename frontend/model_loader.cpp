// Model loading: sniff IR text vs ONNX protobuf.
#include "frontend/model_loader.h"

#include "codegen/log.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/parser.h"
#include "ir/support/input_files.h"

#include <filesystem>
#include <iostream>
#include <iterator>

namespace smelt {

namespace {

// IR text begins (after blank lines and // comments) with the keyword `graph`.
bool looksLikeIrText(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    char c = bytes[i];
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      ++i;
    } else if (bytes.substr(i, 2) == "//") {
      size_t nl = bytes.find('\n', i);
      i = nl == std::string_view::npos ? bytes.size() : nl + 1;
    } else {
      return bytes.substr(i, 5) == "graph";
    }
  }
  return false;
}

}  // namespace

Expected<Graph> loadModel(const std::string& path, const TensorMap& inputValues,
                          const std::map<std::string, int64_t>& dimSizes, bool* sized) {
  if (sized) *sized = false;
  std::string bytes;
  std::string dir = ".";
  if (path == "-") {
    bytes.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    SMELT_TRY(bytes, readInputFile(path, "a model"));
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    dir = parent.empty() ? "." : parent.string();
  }
  std::string what = path == "-" ? "<stdin>" : path;
  if (looksLikeIrText(bytes)) {
    ParseOptions options;
    options.externalDataDir = dir;
    options.sourceName = what;
    return parseGraph(bytes, options);
  }
  if (bytes.empty()) return makeError("{}: empty file", what);
  OnnxImportOptions options;
  for (const auto& [name, value] : inputValues) options.staticInputValues.emplace(name, value);
  Expected<Graph> graph = importOnnxBytes(bytes, dir, what, options);
  if (graph.ok() || (inputValues.empty() && dimSizes.empty())) return graph;
  // Imported with symbolic dimensions, the model computes something only a size makes static (a
  // Reshape to a target given as an input): once more with the given arrays' shapes and dimensions' sizes.
  for (const auto& [name, value] : inputValues) options.inputShapes.emplace(name, value.shape());
  options.dimSizes.insert(dimSizes.begin(), dimSizes.end());
  Expected<Graph> atSizes = importOnnxBytes(bytes, dir, what, options);
  if (!atSizes.ok()) return graph;
  logger().info("{}: imported at the fed inputs' shapes, not with symbolic ones ({})", what, graph.error().message());
  if (sized) *sized = true;
  return atSizes;
}

}  // namespace smelt

// ONNX model import (opsets 13 to 17) with ONNX's own protobuf classes. The public API exposes no
// protobuf or ONNX types.
#pragma once

#include "ir/graph.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace smelt {

/// Options for importOnnxBytes / importOnnxFile.
struct OnnxImportOptions {
  /// Values for graph inputs that an op needs as static operands (a Reshape's shape, Pad's pads, Clip's
  /// bounds). Without an entry, such an operand computed at run time is an error. The input stays a
  /// graph input; its fed value must then equal the value given here. The conformance runner uses this,
  /// since ONNX's node tests pass shapes and pads as graph inputs.
  std::map<std::string, Tensor, std::less<>> staticInputValues;
  /// Shapes for graph inputs, replacing the declared ones (and so giving dynamic dimensions a size).
  std::map<std::string, Shape, std::less<>> inputShapes;
  /// Sizes for named dynamic dimensions (a dim_param, as smelt names its symbol): an input dimension named
  /// here imports as that count instead of a symbol (`smelt export --dim batch=1` of a model whose import
  /// with a symbolic batch fails).
  std::map<std::string, int64_t, std::less<>> dimSizes;
  /// When given, filled with the inputs whose staticInputValues the import used (those a model must
  /// be compiled per value of: frontend/model_executable.h).
  std::set<std::string>* usedStaticInputs = nullptr;
};

/// What a model holds, read without importing it (the conformance runner decides scope with it).
struct OnnxModelInfo {
  /// Op type of every node (including subgraphs), in order; non-default domains as "domain::OpType".
  std::vector<std::string> opTypes;
  /// Graph inputs that are not initializers, and graph outputs, in ONNX order.
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  /// Declared element types of those inputs and outputs (nullopt: not a tensor, or not a smelt dtype).
  std::vector<std::optional<DType>> inputDTypes;
  std::vector<std::optional<DType>> outputDTypes;
};

/// True when this build includes ONNX import (SMELT_WITH_ONNX).
bool onnxImportAvailable();

/// True when the importer maps ONNX op type `opType` (default domain) onto smelt ops.
bool onnxOpSupported(std::string_view opType);

/// Imports an .onnx file. External tensor data is read only from the model's own folder.
Expected<Graph> importOnnxFile(const std::string& path, const OnnxImportOptions& options = {});

/// Imports serialized ModelProto bytes; `modelDir` is where external data may be read from.
Expected<Graph> importOnnxBytes(std::string_view bytes, const std::string& modelDir, std::string_view what,
                                const OnnxImportOptions& options = {});

/// Lists a model's op types, inputs and outputs.
Expected<OnnxModelInfo> inspectOnnxBytes(std::string_view bytes, std::string_view what);

/// Reads one serialized TensorProto (ONNX test data files: input_0.pb, output_0.pb).
Expected<Tensor> importOnnxTensorBytes(std::string_view bytes, const std::string& dir, std::string_view what);
Expected<Tensor> importOnnxTensorFile(const std::string& path);

}  // namespace smelt

// ONNX model import: parse the ModelProto, check opsets, turn initializers into parameters and graph
// inputs into inputs, convert each node through the converter table, bind the outputs.
#include "frontend/onnx/onnx_import.h"

#include "frontend/onnx/onnx_context.h"
#include "frontend/onnx/onnx_tensor.h"
#include "ir/support/input_files.h"
#include "ir/verifier.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <limits>
#include <set>

namespace smelt {

namespace onnximport {

const ConverterTable& converterTable() {
  static const ConverterTable table = [] {
    ConverterTable t;
    addElementwiseConverters(t);
    addReduceConverters(t);
    addLayoutConverters(t);
    addNnConverters(t);
    addCompositeConverters(t);
    addScatterConverters(t);
    addResizeConverters(t);
    addRecurrentConverters(t);
    addEinsumConverters(t);
    return t;
  }();
  return table;
}

namespace {

bool isDefaultDomain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

Status parseModel(std::string_view bytes, std::string_view what, onnx::ModelProto& model) {
  if (bytes.empty()) return makeError("{}: empty file", what);
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return makeError("{}: model is larger than 2 GiB; keep weights in external data files", what);
  }
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return makeError("{}: not a valid ONNX model (protobuf parsing failed; truncated or not an .onnx file?)", what);
  }
  if (!model.has_graph()) return makeError("{}: ONNX model has no graph", what);
  return Status::success();
}

// "Conv node 'conv1'" or "Conv node #3" for unnamed nodes.
std::string nodeLabel(const onnx::NodeProto& node, int index) {
  if (node.name().empty()) return fmt::format("ONNX {} node #{}", node.op_type(), index);
  return fmt::format("ONNX {} node '{}'", node.op_type(), node.name());
}

Expected<TensorType> inputTypeOf(const onnx::ValueInfoProto& info, const OnnxImportOptions& options) {
  const std::string& name = info.name();
  if (!info.has_type() || !info.type().has_tensor_type()) {
    return makeError("graph input '{}' is not a tensor (sequence, map and optional inputs are not supported)", name);
  }
  const auto& tt = info.type().tensor_type();
  SMELT_TRY(DType dtype, dtypeFromOnnx(tt.elem_type(), fmt::format("graph input {}", name)));
  TensorType type{dtype, {}};
  if (auto given = options.inputShapes.find(name); given != options.inputShapes.end()) {
    for (int64_t d : given->second) {
      if (d < 0) return makeError("graph input '{}': the shape given, {}, has a negative dimension", name,
                                  shapeToString(given->second));
    }
    type.shape = given->second;
    return type;
  }
  if (!tt.has_shape()) return makeError("graph input '{}' has no shape (not even its rank)", name);
  int64_t numel = 1;
  for (int d = 0; d < tt.shape().dim_size(); ++d) {
    const auto& dim = tt.shape().dim(d);
    // A named dimension ('batch') is a symbolic dimension of that name, bound when the model runs; one
    // without a name or a size gets a name of its own.
    if (dim.has_dim_param() || !dim.has_dim_value()) {
      std::string symbol = dim.has_dim_param() ? dim.dim_param() : fmt::format("{}_{}", name, d);
      for (char& c : symbol) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      if (symbol.empty() || std::isdigit(static_cast<unsigned char>(symbol[0]))) symbol = "d_" + symbol;
      if (!isValidSymbolName(symbol)) return makeError("graph input '{}': dimension #{} has no usable name", name, d);
      if (auto size = options.dimSizes.find(symbol); size != options.dimSizes.end()) {
        const int64_t v = size->second;
        if (v < 0) return makeError("graph input '{}': dimension {} is given as {}", name, symbol, v);
        if (v > 0 && numel > (int64_t{1} << 40) / v) return makeError("graph input '{}': shape is too large", name);
        numel *= v;
        type.shape.push_back(v);
        continue;
      }
      type.shape.push_back(dimSymbol(symbol));
      continue;
    }
    int64_t v = dim.dim_value();
    if (v < 0) return makeError("graph input '{}': dimension #{} is negative ({})", name, d, v);
    if (v > 0 && numel > (int64_t{1} << 40) / v) return makeError("graph input '{}': shape is too large", name);
    numel *= v;
    type.shape.push_back(v);
  }
  return type;
}

// The declared output type, when the model gives one, must match what the import produced.
Status checkOutputType(const onnx::ValueInfoProto& info, const Value* v) {
  if (!info.has_type() || !info.type().has_tensor_type()) return Status::success();
  const auto& tt = info.type().tensor_type();
  if (tt.elem_type() != 0) {
    auto dtype = dtypeFromOnnx(tt.elem_type(), info.name());
    if (dtype.ok() && *dtype != v->dtype()) {
      return makeError("graph output '{}' is declared {}, the imported graph computes {}", info.name(),
                       dtypeName(*dtype), v->type().toString());
    }
  }
  if (tt.has_shape() && tt.shape().dim_size() == v->type().rank()) {
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value() && dim.dim_value() != v->shape()[d]) {
        return makeError("graph output '{}' is declared with dimension #{} = {}, the imported graph computes {}",
                         info.name(), d, dim.dim_value(), v->type().toString());
      }
    }
  } else if (tt.has_shape() && tt.shape().dim_size() != v->type().rank()) {
    return makeError("graph output '{}' is declared with rank {}, the imported graph computes {}", info.name(),
                     tt.shape().dim_size(), v->type().toString());
  }
  return Status::success();
}

Status convertNode(ImportState& state, const onnx::NodeProto& proto, int index) {
  std::string label = nodeLabel(proto, index);
  if (!isDefaultDomain(proto.domain())) {
    return makeError("{}: domain '{}' is not supported (only the default ONNX domain is)", label, proto.domain());
  }
  const ConverterTable& table = converterTable();
  auto it = table.find(proto.op_type());
  if (it == table.end()) return makeError("{}: unsupported ONNX op type '{}'", label, proto.op_type());
  NodeContext ctx(state, proto);
  Status status = it->second(ctx);
  if (!status.ok()) return status.error().withContext(label);
  if (ctx.attrError()) return ctx.attrError()->withContext(label);
  for (size_t i = 0; i < ctx.numOutputs(); ++i) {
    if (ctx.hasOutput(i) && !state.values.count(ctx.proto().output(static_cast<int>(i)))) {
      return makeError("{}: output #{} ('{}') is not supported by the importer", label, i,
                       ctx.proto().output(static_cast<int>(i)));
    }
  }
  return Status::success();
}

Expected<Graph> importModel(const onnx::ModelProto& model, const std::string& modelDir, std::string_view what,
                            const OnnxImportOptions& options) {
  ImportState state;
  state.modelDir = modelDir;
  state.options = &options;
  bool haveDefault = false;
  for (const auto& op : model.opset_import()) {
    if (isDefaultDomain(op.domain())) {
      state.opset = static_cast<int>(std::clamp<int64_t>(op.version(), 1, 1000));
      haveDefault = true;
    }
  }
  // ONNX: a model without an opset_import for the default domain uses opset 1 (IR version 3+ must list it).
  if (!haveDefault && model.graph().node_size() > 0) {
    return makeError("{}: the model imports no opset for the default ONNX domain", what);
  }
  const onnx::GraphProto& g = model.graph();
  Graph graph(g.name().empty() ? "main" : g.name());
  state.graph = &graph;
  if (g.sparse_initializer_size() > 0) return makeError("{}: sparse initializers are not supported", what);

  for (const auto& init : g.initializer()) {
    if (init.name().empty()) return makeError("{}: an initializer has no name", what);
    SMELT_TRY(Tensor t, tensorFromProto(init, modelDir, init.name()));
    if (state.constants.count(init.name())) return makeError("{}: initializer '{}' is defined twice", what, init.name());
    state.constants[init.name()] = ConstEntry{std::move(t), true};
  }
  for (const auto& in : g.input()) {
    if (state.constants.count(in.name())) continue;  // old exporters list initializers as inputs too
    if (in.name().empty()) return makeError("{}: a graph input has no name", what);
    auto type = inputTypeOf(in, options);
    if (!type.ok()) return type.error().withContext(what);
    if (graph.isNameTaken(in.name())) return makeError("{}: graph input '{}' is listed twice", what, in.name());
    state.values[in.name()] = graph.addInput(in.name(), *type);
  }
  for (int i = 0; i < g.node_size(); ++i) {
    Status s = convertNode(state, g.node(i), i);
    if (!s.ok()) return s.error().withContext(what);
  }
  if (g.output_size() == 0) return makeError("{}: the graph has no outputs", what);
  std::set<std::string> outputNames;
  for (const auto& out : g.output()) {
    if (!outputNames.insert(out.name()).second) return makeError("{}: graph output '{}' is listed twice", what, out.name());
    Value* v = nullptr;
    if (auto it = state.values.find(out.name()); it != state.values.end()) {
      v = it->second;
    } else if (auto c = state.constants.find(out.name()); c != state.constants.end()) {
      v = c->second.initializer ? graph.addParameter(out.name(), c->second.value, isFloat(c->second.value.dtype()))
                                : graph.constant(c->second.value);
    }
    if (!v) return makeError("{}: graph output '{}' is not produced by any node", what, out.name());
    Status s = checkOutputType(out, v);
    if (!s.ok()) return s.error().withContext(what);
    graph.addOutput(out.name(), v);
  }
  graph.removeDeadNodes();
  // Whatever the converters built, the graph must verify (unique names, types, definitions before use):
  // a model that makes one that does not is an error here, not a failure later.
  if (Status verified = verifyGraph(graph); !verified.ok()) return verified.error().withContext(what);
  return graph;
}

void collectOpTypes(const onnx::GraphProto& g, std::vector<std::string>& out, int depth) {
  if (depth > 64) return;
  for (const auto& node : g.node()) {
    out.push_back(isDefaultDomain(node.domain()) ? node.op_type() : node.domain() + "::" + node.op_type());
    for (const auto& a : node.attribute()) {
      if (a.has_g()) collectOpTypes(a.g(), out, depth + 1);
      for (const auto& sub : a.graphs()) collectOpTypes(sub, out, depth + 1);
    }
  }
}

Expected<std::string> readFile(const std::string& path) {
  return readInputFile(path, "an ONNX model");
}

std::string parentDir(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace
}  // namespace onnximport

bool onnxImportAvailable() { return true; }

bool onnxOpSupported(std::string_view opType) { return onnximport::converterTable().count(opType) > 0; }

Expected<Graph> importOnnxBytes(std::string_view bytes, const std::string& modelDir, std::string_view what,
                                const OnnxImportOptions& options) {
  onnx::ModelProto model;
  SMELT_CHECK_OK(onnximport::parseModel(bytes, what, model));
  return onnximport::importModel(model, modelDir, what, options);
}

Expected<Graph> importOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  SMELT_TRY(std::string bytes, onnximport::readFile(path));
  return importOnnxBytes(bytes, onnximport::parentDir(path), path, options);
}

Expected<OnnxModelInfo> inspectOnnxBytes(std::string_view bytes, std::string_view what) {
  onnx::ModelProto model;
  SMELT_CHECK_OK(onnximport::parseModel(bytes, what, model));
  OnnxModelInfo info;
  onnximport::collectOpTypes(model.graph(), info.opTypes, 0);
  std::set<std::string, std::less<>> inits;
  for (const auto& init : model.graph().initializer()) inits.insert(init.name());
  auto dtypeOfInfo = [](const onnx::ValueInfoProto& v) -> std::optional<DType> {
    if (!v.has_type() || !v.type().has_tensor_type()) return std::nullopt;
    auto d = onnximport::dtypeFromOnnx(v.type().tensor_type().elem_type(), v.name());
    return d.ok() ? std::optional<DType>(*d) : std::nullopt;
  };
  for (const auto& in : model.graph().input()) {
    if (inits.count(in.name())) continue;
    info.inputs.push_back(in.name());
    info.inputDTypes.push_back(dtypeOfInfo(in));
  }
  for (const auto& out : model.graph().output()) {
    info.outputs.push_back(out.name());
    info.outputDTypes.push_back(dtypeOfInfo(out));
  }
  return info;
}

Expected<Tensor> importOnnxTensorBytes(std::string_view bytes, const std::string& dir, std::string_view what) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return makeError("{}: tensor file is larger than 2 GiB", what);
  }
  onnx::TensorProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return makeError("{}: not a valid ONNX TensorProto (protobuf parsing failed)", what);
  }
  return onnximport::tensorFromProto(proto, dir, what);
}

Expected<Tensor> importOnnxTensorFile(const std::string& path) {
  SMELT_TRY(std::string bytes, onnximport::readFile(path));
  return importOnnxTensorBytes(bytes, onnximport::parentDir(path), path);
}

}  // namespace smelt

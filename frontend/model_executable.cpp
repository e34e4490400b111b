// See model_executable.h.
#include "frontend/model_executable.h"

#include "codegen/log.h"
#include "frontend/model_loader.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/dims.h"
#include "ir/printer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace smelt {

Expected<std::unique_ptr<ModelExecutable>> ModelExecutable::load(const std::string& path,
                                                                 const CompileOptions& options) {
  std::unique_ptr<ModelExecutable> m(new ModelExecutable());
  m->path_ = path;
  m->options_ = options;
  Expected<Graph> graph = loadModel(path);
  if (graph.ok()) {
    SMELT_TRY(std::unique_ptr<Executable> exe, Executable::compile(*graph, options));
    m->last_ = exe.get();
    m->byValues_.emplace("", std::move(exe));
    return m;
  }
  // Only an ONNX model can need its inputs' values; anything else is the file's error.
  if (!onnxImportAvailable() || graph.error().message().find("ONNX") == std::string::npos) return graph.error();
  m->importError_ = graph.error().message();
  return m;
}

Expected<Graph> ModelExecutable::importFor(const TensorMap& feeds) {
  OnnxImportOptions options;
  for (const auto& [name, value] : feeds) options.staticInputValues.emplace(name, value);
  std::set<std::string> used;
  options.usedStaticInputs = &used;
  Expected<Graph> graph = shapesNeeded_ ? Expected<Graph>(makeError("{}", importError_)) : importOnnxFile(path_, options);
  if (!graph.ok()) {
    // Sizes computed from a symbolic dimension (a Reshape to twice the batch): the fed shapes too.
    used.clear();
    for (const auto& [name, value] : feeds) options.inputShapes.emplace(name, value.shape());
    Expected<Graph> sized = importOnnxFile(path_, options);
    if (!sized.ok()) return makeError("{} (imported without run-time values: {})", graph.error().message(), importError_);
    shapesNeeded_ = true;
    graph = std::move(sized);
  }
  valueInputs_.insert(used.begin(), used.end());
  return graph;
}

std::string ModelExecutable::keyOf(const TensorMap& feeds) const {
  std::string key;
  for (const auto& [name, value] : feeds) {
    const bool byValue = valueInputs_.count(name) != 0;
    if (!byValue && !shapesNeeded_) continue;
    key += name + ":" + value.type().toString() + "=";
    if (byValue) key.append(reinterpret_cast<const char*>(value.raw()), static_cast<size_t>(value.byteSize()));
    key += ';';
  }
  return key;
}

Expected<std::vector<Tensor>> ModelExecutable::run(const TensorMap& feeds) {
  if (importError_.empty()) {
    // An ONNX input's declared shape is a hint the fed one overrides (as ONNX's backend tests feed): a
    // static extent fed otherwise imports the model again at the fed shapes.
    const Value* differs = nullptr;
    for (const Value* v : last_->inputs()) {
      auto fed = feeds.find(v->name());
      if (fed != feeds.end() && !typeAccepts(v->type(), fed->second.type())) differs = v;
    }
    if (!differs || !path_.ends_with(".onnx")) return last_->run(feeds);
    importError_ = fmt::format("input '{}' is declared {}, fed {}", differs->name(), differs->type().toString(),
                               feeds.at(differs->name()).type().toString());
    shapesNeeded_ = true;
    byValues_.clear();
  }
  // The first run learns which inputs are needed by value; it and every new value compile.
  const bool learned = !byValues_.empty();
  std::string key = keyOf(feeds);
  auto it = learned ? byValues_.find(key) : byValues_.end();
  if (it == byValues_.end()) {
    SMELT_TRY(Graph graph, importFor(feeds));
    key = keyOf(feeds);
    std::vector<std::string> values;
    for (const std::string& name : valueInputs_) {
      auto fed = feeds.find(name);
      if (fed != feeds.end()) values.push_back(fmt::format("{} = {}", name, printTensorLiteral(fed->second)));
    }
    logger().info("{}: compiling for {}{} ({} compiled before)", path_, fmt::join(values, ", "),
                  shapesNeeded_ ? " and the fed shapes" : "", byValues_.size());
    SMELT_TRY(std::unique_ptr<Executable> exe, Executable::compile(graph, options_));
    it = byValues_.insert_or_assign(key, std::move(exe)).first;
  }
  last_ = it->second.get();
  return last_->run(feeds);
}

}  // namespace smelt

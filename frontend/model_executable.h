// A model file (ONNX or IR text) compiled for what it is fed. Its symbolic dimensions compile once per
// binding through Executable's specializations (kernels shared across sizes); and where an op needs a
// graph input as a static operand (a Reshape's target shape, the axes of a reduction or Squeeze,
// Pad's pads, Clip's bounds, Expand's shape, Dropout's ratio, all given as graph inputs), the model is
// imported with that input's value and compiled per distinct value, cached, instead of failing to
// import. Each such compile is logged (SMELT_LOG=info) with the values and counted.
//   SMELT_TRY(auto model, ModelExecutable::load("reshape.onnx"));
//   SMELT_TRY(std::vector<Tensor> out, model->run({{"data", x}, {"shape", shape}}));
#pragma once

#include "runtime/exec/executable.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace smelt {

class ModelExecutable {
 public:
  /// Reads `path` and, when it needs no input's value, compiles it.
  static Expected<std::unique_ptr<ModelExecutable>> load(const std::string& path, const CompileOptions& options = {});

  /// Runs on `feeds` (every graph input): the compile for the values of the inputs it needs static,
  /// made on first use.
  Expected<std::vector<Tensor>> run(const TensorMap& feeds);

  /// The inputs whose values the model is compiled for (empty until a run needed them, or when none do).
  const std::set<std::string>& valueInputs() const { return valueInputs_; }
  /// How many distinct values of those inputs compiled so far (1 for a model that needs none, once run).
  int compiledValues() const { return static_cast<int>(byValues_.size()); }
  /// The executable of the last run (its graph, report, device).
  const Executable& last() const { return *last_; }

 private:
  ModelExecutable() = default;
  /// The ONNX model imported with the fed values for the inputs it needs static (and, where the import
  /// with its symbolic dimensions fails, with the fed shapes too: then shapesNeeded_).
  Expected<Graph> importFor(const TensorMap& feeds);
  /// What tells two feeds' compiles apart: the value inputs' types and bytes, and every feed's type
  /// when the import needed the shapes.
  std::string keyOf(const TensorMap& feeds) const;

  std::string path_;
  CompileOptions options_;
  /// Why the model did not import without values (empty when it did).
  std::string importError_;
  bool shapesNeeded_ = false;
  std::set<std::string> valueInputs_;
  /// Per distinct value of valueInputs_ (their bytes and types, as a key), its executable.
  std::map<std::string, std::unique_ptr<Executable>> byValues_;
  Executable* last_ = nullptr;
};

}  // namespace smelt

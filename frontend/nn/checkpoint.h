// Loading a checkpoint into a model strictly, as PyTorch's load_state_dict(strict=True) does: the
// model's state is made first (as its first step would make it, for inputs of a given type), so that
// every tensor it has is known; then tensors the model has and the file lacks, and tensors the file has
// and the model lacks, are an error listing them, instead of training on with random weights for a
// `fc.weight` the file calls `module.fc.weight`. A non-strict load skips them and reports what it
// skipped.
//   SMELT_TRY(nn::LoadReport r, nn::loadCheckpoint(model, "digits.safetensors", {DType::f32, {1, 64}}));
#pragma once

#include "frontend/nn/train_step.h"

#include <map>
#include <string>
#include <vector>

namespace smelt::nn {

struct LoadOptions {
  /// Missing and unexpected tensors are an error listing them; off: skipped, and listed in the report.
  bool strict = true;
  /// Optimizer slots (optim.*) are neither required nor loaded: a checkpoint saved for inference loads
  /// into a training model, and one with an optimizer's state into a predictor.
  bool ignoreOptimizerState = true;
  /// PyTorch's batch-norm counters (*.num_batches_tracked), which smelt does not keep, are skipped.
  bool ignoreBatchCounters = true;
};

/// What a load did.
struct LoadReport {
  std::vector<std::string> loaded;
  /// In the model, not in the file (kept as they were), and in the file, not in the model (not loaded).
  std::vector<std::string> missing, unexpected;
  /// The file's metadata strings.
  std::map<std::string, std::string> metadata;
};

/// Loads the safetensors file `path` into `model`, whose state is made first for inputs of `input`'s
/// type. A tensor of another dtype or shape than the model's is always an error naming it; nothing is
/// changed when the load fails.
Expected<LoadReport> loadCheckpoint(Model& model, const std::string& path, const TensorType& input,
                                    const LoadOptions& options = {});

}  // namespace smelt::nn

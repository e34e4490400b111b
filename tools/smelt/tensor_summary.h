// Helpers shared by the CLI commands: feeds from --input options, file-name sanitizing, short
// tensor summaries.
#pragma once

#include "ir/graph.h"
#include "ir/interpreter.h"

#include <string>
#include <vector>

namespace smelt::cli {

/// Reads `NAME=PATH.npy` options into feeds, checking each against the graph's input (or parameter)
/// type. Every graph input must be fed. Errors are one line.
Expected<TensorMap> readFeeds(const Graph& graph, const std::vector<std::string>& options, bool requireAll = true);
/// The arrays of --input NAME=PATH.npy options by name, unchecked (before the model is loaded: an ONNX
/// model's static operands given as inputs are imported with them).
Expected<TensorMap> readInputArrays(const std::vector<std::string>& options);
/// A name safe as a file name: characters other than letters, digits, '.', '_' and '-' become '_'.
std::string sanitizeFileName(std::string_view name);
/// "f32[1,10] [0.1, -2.5, ... ]" with at most a few leading values.
std::string summarizeTensor(const Tensor& tensor, int maxValues = 8);

}  // namespace smelt::cli

/// Like SMELT_TRY, but a failure ends a CLI action with exit code 1.
#define SMELT_TRY_CLI(decl, expr) SMELT_TRY_CLI_IMPL(SMELT_CONCAT(smelt_cli_, __LINE__), decl, expr)
#define SMELT_TRY_CLI_IMPL(tmp, decl, expr)                          \
  auto tmp = (expr);                                                 \
  if (!tmp.ok()) return ::smelt::cli::fail(tmp.error().message());   \
  decl = std::move(tmp).value()

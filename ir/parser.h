// Parses smelt IR text (as printed by printer.h, or written by hand) into a graph. Every node is built
// through Graph::addNode, so parsing also verifies; errors give the line and column with a caret.
#pragma once

#include "ir/graph.h"

#include <string>
#include <string_view>

namespace smelt {

struct ParseOptions {
  /// Folder that `file("name", offset)` tensor literals are resolved against. Names must be plain
  /// relative paths inside it: absolute paths and `..` are refused.
  std::string externalDataDir = ".";
  /// Shown in error messages ("mlp.ir:4:7: ...").
  std::string sourceName = "<input>";
};

/// Parses one graph.
Expected<Graph> parseGraph(std::string_view text, const ParseOptions& options = {});

}  // namespace smelt

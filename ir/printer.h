// Prints a graph as smelt IR text: one generic form for every op, deterministic (values renumbered in
// order, attributes sorted, defaults omitted) and lossless (floats print exactly).
#pragma once

#include "ir/graph.h"

#include <string>

namespace smelt {

/// How tensors (parameter values, tensor attributes) are written.
struct PrintOptions {
  /// Tensors with at most this many elements (and no NaN) print as a readable list; larger ones as hex.
  int64_t maxListElements = 16;
  /// When set, tensors of more than `externalThreshold` bytes go into this file (raw bytes, 64-byte
  /// aligned) and print as `file("<basename>", offset)`. The file is created or truncated.
  std::string externalDataPath;
  size_t externalThreshold = 1024;
  /// Print parameter values at all; when false they print as `...`, as do constants of more than 16
  /// elements (for dumps, not parseable).
  bool printParameterValues = true;
};

/// The graph as IR text.
Expected<std::string> printGraph(const Graph& graph, const PrintOptions& options = {});
/// printGraph for the common in-memory case; an external data file cannot fail here as none is used.
std::string toText(const Graph& graph);
/// One tensor literal body ("[1, 2.5]" or "x\"0000803f\"") for a tensor of known type.
std::string printTensorBody(const Tensor& tensor, const PrintOptions& options = {});
/// `dense<f32[2]> [1, 2]`.
std::string printTensorLiteral(const Tensor& tensor, const PrintOptions& options = {});
/// An attribute value as IR text.
std::string printAttribute(const Attribute& attr, const PrintOptions& options = {});
/// A double that parses back to exactly the same double ("1.0", "0.1", "1e-05", "inf", "nan").
std::string printFloat(double value);
/// A name as it appears after % or @: bare when it is an identifier, otherwise quoted.
std::string printName(std::string_view name);
/// A string literal with escapes.
std::string quoteString(std::string_view s);

}  // namespace smelt

// Folding an ONNX node whose operands are a Shape's values, symbols included (ir/type.h's encoding of
// "N" and "4*N" as i64 extents). Exporters compute sizes from a Shape: Swin multiplies the batch by
// its windows per image and divides it back, torch's expand(-1, ...) compares the batch with -1 and
// selects; a sequence model adds one to its length. Ops that move values carry the symbols; Add, Sub,
// Mul, Div (floor division by a count, or an exact quotient) and Equal compute with them as
// polynomials; anything else would turn a symbol into a wrong number, and is an error naming the node.
#pragma once

#include "ir/graph.h"
#include "ir/tensor.h"

#include <span>
#include <vector>

namespace smelt::onnximport {

/// Whether `t` holds a symbolic dimension's value (an i64 Shape of a symbolic input, ir/type.h).
bool holdsSymbols(const Tensor& t);

/// `node`'s results from its operands' values, computed by the reference interpreter, or, where an
/// operand holds symbols, as the symbols' arithmetic (ir/type.h): a sum, difference or product of
/// extents for add, sub and mul, for div an exact quotient or the floor quotient by a count (a shape's
/// values are never negative, so ONNX's truncation is floor division), and for eq what holds at every
/// binding. An error names the node and what it cannot compute (N / T; whether N equals 3).
Expected<std::vector<Tensor>> foldShapeValues(const Graph& graph, const Node& node, std::span<const Tensor> operands);

}  // namespace smelt::onnximport

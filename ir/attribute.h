// Node attributes: ints, floats, strings, int lists, float lists, tensors and nested graphs (the body
// of a fused kernel), keyed by name.
#pragma once

#include "ir/tensor.h"

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace smelt {

class Graph;

/// A nested graph held by an attribute: the body of a `fused` node. Immutable once built, so copies of
/// a node (Graph::clone, rewrites) share it instead of copying it.
using GraphRef = std::shared_ptr<const Graph>;

/// The kinds an attribute value can have. The order matches Attribute's alternatives.
enum class AttrKind { Int, Float, String, Ints, Floats, Tensor, Graph };

/// One attribute value.
using Attribute =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, Tensor, GraphRef>;

/// A node's attributes, sorted by name so printing is deterministic.
using AttrMap = std::map<std::string, Attribute, std::less<>>;

inline AttrKind attrKind(const Attribute& a) { return static_cast<AttrKind>(a.index()); }
/// "int", "float", "string", "int[]", "float[]", "tensor", "graph".
std::string_view attrKindName(AttrKind kind);
/// Equality with floats and tensors compared bit for bit (-0.0 differs from 0.0; a NaN equals itself);
/// nested graphs are equal when they print the same.
bool attrEquals(const Attribute& a, const Attribute& b);

}  // namespace smelt

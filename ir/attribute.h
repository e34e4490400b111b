// Node attributes: ints, floats, strings, int lists, float lists and tensors, keyed by name.
#pragma once

#include "ir/tensor.h"

#include <map>
#include <string>
#include <variant>
#include <vector>

namespace smelt {

/// The kinds an attribute value can have. The order matches Attribute's alternatives.
enum class AttrKind { Int, Float, String, Ints, Floats, Tensor };

/// One attribute value.
using Attribute = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, Tensor>;

/// A node's attributes, sorted by name so printing is deterministic.
using AttrMap = std::map<std::string, Attribute, std::less<>>;

inline AttrKind attrKind(const Attribute& a) { return static_cast<AttrKind>(a.index()); }
/// "int", "float", "string", "int[]", "float[]", "tensor".
std::string_view attrKindName(AttrKind kind);
/// Equality with floats and tensors compared bit for bit (-0.0 differs from 0.0; a NaN equals itself).
bool attrEquals(const Attribute& a, const Attribute& b);

}  // namespace smelt

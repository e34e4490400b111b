// Attribute helpers.
#include "ir/attribute.h"

#include "ir/printer.h"

#include <algorithm>
#include <bit>
#include <cstdint>

namespace smelt {

std::string_view attrKindName(AttrKind kind) {
  switch (kind) {
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::String: return "string";
    case AttrKind::Ints: return "int[]";
    case AttrKind::Floats: return "float[]";
    case AttrKind::Tensor: return "tensor";
    case AttrKind::Graph: return "graph";
  }
  return "?";
}

namespace {
// Floats compare bit for bit: -0.0 and 0.0 differ (clip {min = -0.0} keeps a negative zero's sign),
// and a NaN equals the same NaN.
bool sameBits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }
}  // namespace

bool attrEquals(const Attribute& a, const Attribute& b) {
  if (a.index() != b.index()) return false;
  if (const Tensor* ta = std::get_if<Tensor>(&a)) return ta->bitwiseEqual(std::get<Tensor>(b));
  if (const GraphRef* ga = std::get_if<GraphRef>(&a)) {
    const GraphRef& gb = std::get<GraphRef>(b);
    if (*ga == gb) return true;
    return *ga && gb && toText(**ga) == toText(*gb);
  }
  if (const double* da = std::get_if<double>(&a)) return sameBits(*da, std::get<double>(b));
  if (const auto* fa = std::get_if<std::vector<double>>(&a)) {
    const auto& fb = std::get<std::vector<double>>(b);
    return fa->size() == fb.size() && std::equal(fa->begin(), fa->end(), fb.begin(), sameBits);
  }
  return a == b;
}

}  // namespace smelt

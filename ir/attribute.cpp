// Attribute helpers.
#include "ir/attribute.h"

namespace smelt {

std::string_view attrKindName(AttrKind kind) {
  switch (kind) {
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::String: return "string";
    case AttrKind::Ints: return "int[]";
    case AttrKind::Floats: return "float[]";
    case AttrKind::Tensor: return "tensor";
  }
  return "?";
}

bool attrEquals(const Attribute& a, const Attribute& b) {
  if (a.index() != b.index()) return false;
  if (const Tensor* ta = std::get_if<Tensor>(&a)) return ta->bitwiseEqual(std::get<Tensor>(b));
  if (const double* da = std::get_if<double>(&a)) {
    double db = std::get<double>(b);
    return *da == db || (*da != *da && db != db);
  }
  if (const auto* fa = std::get_if<std::vector<double>>(&a)) {
    const auto& fb = std::get<std::vector<double>>(b);
    if (fa->size() != fb.size()) return false;
    for (size_t i = 0; i < fa->size(); ++i) {
      if (!((*fa)[i] == fb[i] || ((*fa)[i] != (*fa)[i] && fb[i] != fb[i]))) return false;
    }
    return true;
  }
  return a == b;
}

}  // namespace smelt

// DType names and sizes.
#include "ir/dtype.h"

namespace smelt {

std::string_view dtypeName(DType dtype) {
  switch (dtype) {
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::i8: return "i8";
    case DType::i16: return "i16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
    case DType::u16: return "u16";
    case DType::u32: return "u32";
    case DType::u64: return "u64";
    case DType::boolean: return "bool";
  }
  return "?";
}

Expected<DType> parseDType(std::string_view name) {
  for (DType d : kAllDTypes) {
    if (dtypeName(d) == name) return d;
  }
  return makeError("unknown dtype '{}' (expected one of f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bool)",
                   name);
}

size_t dtypeSize(DType dtype) {
  return dispatchDType(dtype, []<typename T>(TypeTag<T>) { return sizeof(T); });
}

std::vector<DType> DTypeSet::list() const {
  std::vector<DType> out;
  for (DType d : kAllDTypes) {
    if (contains(d)) out.push_back(d);
  }
  return out;
}

std::string DTypeSet::toString() const {
  std::string out;
  for (DType d : list()) {
    if (!out.empty()) out += ',';
    out += dtypeName(d);
  }
  return out;
}

}  // namespace smelt

// OpenCL C names for the C-family renderer's hooks.
#include "codegen/opencl/opencl_renderer.h"

#include <fmt/format.h>

namespace smelt::codegen {

std::string OpenClRenderer::typeName(DType type) const {
  switch (type) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i8: return "char";
    case DType::i16: return "short";
    case DType::i32: return "int";
    case DType::i64: return "long";
    case DType::u16: return "ushort";
    case DType::u32: return "uint";
    case DType::u64: return "ulong";
    default: return "uchar";  // u8, and bool's byte (f16/bf16 never reach a hook)
  }
}

std::string OpenClRenderer::floatToBits(const std::string& x, bool isDouble) const {
  return fmt::format("{}({})", isDouble ? "as_ulong" : "as_uint", x);
}

std::string OpenClRenderer::bitsToFloat(const std::string& x, bool isDouble) const {
  return fmt::format("{}({})", isDouble ? "as_double" : "as_float", x);
}

std::string OpenClRenderer::preludeHeader() const {
  // vload_half / vstore_half_rte are OpenCL C 1.2 core (no cl_khr_fp16 needed for half pointers):
  // the device's own conversions, round to nearest even.
  std::string text = fp64_ ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "";
  return text + R"(#define SMELT_HW_F16 1
static inline float smelt_h2f(uint h) {
  ushort s = (ushort)h;
  return vload_half(0, (const half*)&s);
}
static inline uint smelt_f2h(float f) {
  ushort s;
  vstore_half_rte(f, 0, (half*)&s);
  return s;
}
)";
}

}  // namespace smelt::codegen

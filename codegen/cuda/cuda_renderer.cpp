// CUDA C names for the C-family renderer's hooks.
#include "codegen/cuda/cuda_renderer.h"

#include <fmt/format.h>

namespace smelt::codegen {

std::string CudaRenderer::typeName(DType type) const {
  switch (type) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i8: return "signed char";
    case DType::i16: return "short";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    case DType::u16: return "unsigned short";
    case DType::u32: return "unsigned int";
    case DType::u64: return "unsigned long long";
    default: return "unsigned char";  // u8, and bool's byte (f16/bf16 never reach a hook)
  }
}

std::string CudaRenderer::floatToBits(const std::string& x, bool isDouble) const {
  if (isDouble) return fmt::format("(unsigned long long)__double_as_longlong({})", x);
  return fmt::format("__float_as_uint({})", x);
}

std::string CudaRenderer::bitsToFloat(const std::string& x, bool isDouble) const {
  if (isDouble) return fmt::format("__longlong_as_double((long long){})", x);
  return fmt::format("__uint_as_float({})", x);
}

std::string CudaRenderer::mathFunction(std::string_view base, bool isDouble) const {
  return isDouble ? std::string(base) : fmt::format("{}f", base);
}

std::string CudaRenderer::preludeHeader() const {
  // cvt rounds to nearest even as ir/half.h does; a NaN becomes the canonical one.
  return R"(#define SMELT_HW_F16 1
static __device__ inline float smelt_h2f(unsigned int h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)h));
  return f;
}
static __device__ inline unsigned int smelt_f2h(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#if __CUDA_ARCH__ >= 800
#define SMELT_HW_BF16 1
static __device__ inline unsigned int smelt_f2bf(float f) {
  unsigned short b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  return b;
}
#endif
)";
}

}  // namespace smelt::codegen

// Element types of smelt tensors, their names in IR text, sizes, and a compile-time dispatch helper.
#pragma once

#include "ir/half.h"
#include "ir/support/expected.h"

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

namespace smelt {

/// The element types smelt knows. The order is fixed: it is the order `smelt ops` lists them in.
enum class DType : uint8_t { f16, bf16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, boolean };

inline constexpr DType kAllDTypes[] = {DType::f16, DType::bf16, DType::f32, DType::f64,  DType::i8,
                                       DType::i16, DType::i32,  DType::i64, DType::u8,   DType::u16,
                                       DType::u32, DType::u64,  DType::boolean};

/// The name in IR text: "f32", "bf16", "bool".
std::string_view dtypeName(DType dtype);
/// Parses an IR dtype name; fails on anything else.
Expected<DType> parseDType(std::string_view name);
/// Bytes per element.
size_t dtypeSize(DType dtype);

inline bool isFloat(DType d) { return d <= DType::f64; }
inline bool isSignedInt(DType d) { return d >= DType::i8 && d <= DType::i64; }
inline bool isUnsignedInt(DType d) { return d >= DType::u8 && d <= DType::u64; }
inline bool isInteger(DType d) { return isSignedInt(d) || isUnsignedInt(d); }
inline bool isBool(DType d) { return d == DType::boolean; }

/// A set of dtypes, used by op declarations to say which element types they accept.
class DTypeSet {
 public:
  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<DType> list) {
    for (DType d : list) bits_ |= bit(d);
  }
  constexpr bool contains(DType d) const { return (bits_ & bit(d)) != 0; }
  constexpr DTypeSet operator|(DTypeSet other) const { DTypeSet s; s.bits_ = bits_ | other.bits_; return s; }
  constexpr bool empty() const { return bits_ == 0; }
  std::vector<DType> list() const;
  /// "f16,bf16,f32,f64" style listing for `smelt ops` and error messages.
  std::string toString() const;

 private:
  static constexpr uint32_t bit(DType d) { return 1u << static_cast<unsigned>(d); }
  uint32_t bits_ = 0;
};

namespace dtypes {
inline constexpr DTypeSet kFloat{DType::f16, DType::bf16, DType::f32, DType::f64};
inline constexpr DTypeSet kSignedInt{DType::i8, DType::i16, DType::i32, DType::i64};
inline constexpr DTypeSet kUnsignedInt{DType::u8, DType::u16, DType::u32, DType::u64};
inline constexpr DTypeSet kInteger = kSignedInt | kUnsignedInt;
inline constexpr DTypeSet kNumeric = kFloat | kInteger;
inline constexpr DTypeSet kSignedNumeric = kFloat | kSignedInt;
inline constexpr DTypeSet kBool{DType::boolean};
inline constexpr DTypeSet kAll = kNumeric | kBool;
inline constexpr DTypeSet kIndex{DType::i32, DType::i64};
}  // namespace dtypes

/// A type tag for dispatch: `dispatchDType(d, [&]<class T>(TypeTag<T>) {...})`.
template <typename T>
struct TypeTag {
  using type = T;
};

/// Calls `f(TypeTag<T>{})` with the C++ storage type of `dtype` (Half, BFloat16, float, ..., bool).
template <typename F>
decltype(auto) dispatchDType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f16: return f(TypeTag<Half>{});
    case DType::bf16: return f(TypeTag<BFloat16>{});
    case DType::f32: return f(TypeTag<float>{});
    case DType::f64: return f(TypeTag<double>{});
    case DType::i8: return f(TypeTag<int8_t>{});
    case DType::i16: return f(TypeTag<int16_t>{});
    case DType::i32: return f(TypeTag<int32_t>{});
    case DType::i64: return f(TypeTag<int64_t>{});
    case DType::u8: return f(TypeTag<uint8_t>{});
    case DType::u16: return f(TypeTag<uint16_t>{});
    case DType::u32: return f(TypeTag<uint32_t>{});
    case DType::u64: return f(TypeTag<uint64_t>{});
    case DType::boolean: return f(TypeTag<bool>{});
  }
  return f(TypeTag<float>{});  // unreachable: every enumerator is handled above
}

/// The DType of a C++ storage type.
template <typename T>
constexpr DType dtypeOf();
template <> constexpr DType dtypeOf<Half>() { return DType::f16; }
template <> constexpr DType dtypeOf<BFloat16>() { return DType::bf16; }
template <> constexpr DType dtypeOf<float>() { return DType::f32; }
template <> constexpr DType dtypeOf<double>() { return DType::f64; }
template <> constexpr DType dtypeOf<int8_t>() { return DType::i8; }
template <> constexpr DType dtypeOf<int16_t>() { return DType::i16; }
template <> constexpr DType dtypeOf<int32_t>() { return DType::i32; }
template <> constexpr DType dtypeOf<int64_t>() { return DType::i64; }
template <> constexpr DType dtypeOf<uint8_t>() { return DType::u8; }
template <> constexpr DType dtypeOf<uint16_t>() { return DType::u16; }
template <> constexpr DType dtypeOf<uint32_t>() { return DType::u32; }
template <> constexpr DType dtypeOf<uint64_t>() { return DType::u64; }
template <> constexpr DType dtypeOf<bool>() { return DType::boolean; }

}  // namespace smelt

// Host tensors: a TensorType and its bytes, row-major. Used for parameters, constants, feeds,
// interpreter values and results. Element access converts through double or int64.
#pragma once

#include "ir/support/host_block_cache.h"
#include "ir/type.h"

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace smelt {

/// A dense, row-major host tensor that owns its bytes.
/// An allocator whose value-initialization leaves bytes as they are: a tensor about to be overwritten
/// whole (a compiled graph's output) is not zero-filled first, which would touch every page twice.
/// Its memory comes from the host block cache (support/host_block_cache.h): large tensors reuse blocks
/// whose pages are already mapped, as device tensors reuse their pool's blocks.
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  using std::allocator<T>::allocator;
  T* allocate(std::size_t n) { return static_cast<T*>(allocateHostBlock(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { freeHostBlock(p, n * sizeof(T)); }
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

class Tensor {
 public:
  Tensor() = default;
  /// A zero-filled tensor of `type`.
  explicit Tensor(TensorType type);
  /// A tensor of `type` whose bytes are not initialized: for results that are written whole.
  static Tensor uninitialized(TensorType type);
  /// A tensor of `type` holding a copy of `bytes` (which must be type.byteSize() long).
  static Expected<Tensor> fromBytes(TensorType type, std::span<const std::byte> bytes);
  /// A tensor from C++ values: `Tensor::of<float>({2, 2}, {1, 2, 3, 4})`, exactly one per element (another
  /// count aborts with a message saying so: a bug in the caller, not an input to report).
  template <typename T>
  static Tensor of(Shape shape, const std::vector<T>& values) {
    Tensor t(TensorType{dtypeOf<T>(), std::move(shape)});
    // A wrong count is the caller's bug, never padded or cut silently.
    if (static_cast<int64_t>(values.size()) != t.numel()) {
      abortOnMisuse("Tensor::of: ", fmt::format("{} values for {} ({} elements)", values.size(), t.type().toString(), t.numel()));
    }
    for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
    return t;
  }
  /// A tensor of `type` from doubles, each converted (rounded, or wrapped for integers) to the dtype. As
  /// `of`, a count other than the type's element count aborts with a message (never padded or cut).
  static Tensor fromDoubles(TensorType type, std::span<const double> values);
  /// A scalar of `dtype` holding `value`.
  static Tensor scalar(DType dtype, double value);

  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int64_t rank() const { return type_.rank(); }
  int64_t numel() const { return type_.numel(); }
  size_t byteSize() const { return bytes_.size(); }

  std::byte* raw() { return bytes_.data(); }
  const std::byte* raw() const { return bytes_.data(); }
  std::span<const std::byte> bytes() const { return bytes_; }
  template <typename T>
  T* data() { return reinterpret_cast<T*>(bytes_.data()); }
  template <typename T>
  const T* data() const { return reinterpret_cast<const T*>(bytes_.data()); }

  /// Element `i` (flat, row-major) as a double. Exact for all dtypes but 64-bit integers past 2^53.
  double getDouble(int64_t i) const;
  /// Stores `value` at element `i`, rounding to the dtype (integers truncate toward zero and wrap).
  void setDouble(int64_t i, double value);
  /// Element `i` as an int64 (floats truncate; u64 past 2^63 wraps).
  int64_t getInt(int64_t i) const;
  void setInt(int64_t i, int64_t value);
  /// All elements as doubles / as int64s.
  std::vector<double> toDoubles() const;
  std::vector<int64_t> toInts() const;

  /// A tensor with the same bytes and a new shape of equal element count.
  Tensor reshaped(Shape shape) const;
  /// Same type and identical bytes (so NaNs compare equal to themselves).
  bool bitwiseEqual(const Tensor& other) const { return type_ == other.type_ && bytes_ == other.bytes_; }
  bool operator==(const Tensor& other) const { return bitwiseEqual(other); }

 private:
  TensorType type_;
  std::vector<std::byte, DefaultInitAllocator<std::byte>> bytes_;
};

/// Converts a double to a storage type T the way Tensor::setDouble does.
template <typename T>
T fromDouble(double value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value != 0.0;
  } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<T>(value);
  } else {
    // Integers: truncate toward zero, then wrap modulo 2^bits like numpy's astype on in-range values.
    if (value != value) return T{0};
    if (value >= 9.2233720368547758e18) return static_cast<T>(static_cast<uint64_t>(value >= 1.8446744073709552e19 ? 0 : value));
    if (value <= -9.2233720368547758e18) return static_cast<T>(INT64_MIN);
    return static_cast<T>(static_cast<int64_t>(value));
  }
}

/// Converts a storage type T to double.
template <typename T>
double toDouble(T value) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<double>(static_cast<float>(value));
  } else {
    return static_cast<double>(value);
  }
}

}  // namespace smelt

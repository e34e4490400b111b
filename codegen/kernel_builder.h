// Builds a kernel description (kernel.h) through the KernelEmitter interface the ops' lowerings use.
// Two things keep the body small without a later pass doing the work:
//   - every instruction goes to the outermost open block where its operands are defined (loop-invariant
//     code is never inside the loop; a reduction asked for inside a store loop runs before it), and
//   - identical instructions are shared (common subexpressions, scoped to the blocks that see them).
// Integer index arithmetic with constant operands is folded (x*1, x+0, 3*4).
#pragma once

#include "codegen/kernel.h"

#include <map>
#include <optional>
#include <tuple>

namespace smelt::codegen {

/// Emits into a Kernel; see the file comment.
class KernelBuilder final : public KernelEmitter {
 public:
  explicit KernelBuilder(Kernel& kernel);

  /// The outer index along dim `dim` of the kernel's domain.
  KValue outer(int dim);
  /// A load of buffer `buffer` at element offset `offset` (i64).
  KValue load(int buffer, KValue offset);
  /// A store at the current point of the body (stores are never moved or shared).
  void store(int buffer, KValue offset, KValue value);
  /// Records an error (the first one wins); later emissions return invalid values.
  void fail(Error error);
  Status status() const { return error_ ? Status(*error_) : Status::success(); }

  KValue constant(double value, DType dtype) override;
  KValue intConstant(int64_t value, DType dtype = DType::i64) override;
  KValue unary(KUnary op, KValue x) override;
  KValue binary(KBinary op, KValue a, KValue b) override;
  KValue select(KValue cond, KValue ifTrue, KValue ifFalse) override;
  KValue cast(KValue x, DType to) override;
  std::vector<KValue> loop(int64_t extent, std::vector<KValue> init, const LoopStep& step) override;

  /// Depth of the block that defines `v` (0 = the kernel body).
  int depthOf(KValue v) const { return depth_[static_cast<size_t>(v.id)]; }
  /// The block open at `depth`, to tell whether a value made earlier is still visible.
  const KBlock* blockAt(int depth) const { return blocks_[static_cast<size_t>(depth)]; }
  int currentDepth() const { return static_cast<int>(blocks_.size()) - 1; }

 private:
  using Key = std::tuple<int, int, int32_t, int32_t, int32_t, int, int, int64_t, uint64_t>;
  int32_t newValue(DType dtype, int depth);
  KValue emit(KInst inst, int depth);
  std::optional<int64_t> intValue(KValue v) const;
  bool checkValid(std::initializer_list<KValue> values);

  Kernel& kernel_;
  std::vector<KBlock*> blocks_;               // open blocks, outermost first
  std::vector<std::map<Key, int32_t>> cse_;   // per open block
  std::vector<int> depth_;                    // defining depth per value id
  std::map<int32_t, int64_t> intConstants_;
  std::optional<Error> error_;
};

}  // namespace smelt::codegen

// Kernels compiled once for every size of a graph's symbolic dimensions. A kernel lowered from a graph
// bound at two sizes (N = 64 and N = 65, say) usually differs only in a few numbers: the domain's
// first extent, buffer sizes, loop extents, and constants such as 1/N. generalizeSizes finds them and
// makes a kernel that reads them at run time: the first extent comes with the launch (its domain
// prints `?`, as do the sizes of its buffers) and the rest become `param K` instructions and loop
// extents that read element K of an extra, last buffer ("sizes", i64). Its text holds no size, so the
// kernel cache keys every size to one compiled kernel.
//
// Soundness does not rest on the two sizes it was made from: a kernel lowered at any other size is
// run through the general one only when paramsAt finds it equal to it in everything but those
// numbers, and then with exactly its numbers (a float's bits, an integer's value) as the run-time
// values. A kernel whose shape changes with the size (a loop split across threads above a length, a
// stride that depends on N) is no instance, and is compiled as it is.
//   SMELT_TRY_OR(auto general, generalizeSizes(at64, at65));   // nullopt: they differ beyond numbers
//   std::optional<std::vector<int64_t>> sizes = paramsAt(*general, at200);  // its last buffer's values
#pragma once

#include "codegen/kernel.h"

#include <optional>
#include <string>
#include <vector>

namespace smelt::codegen {

/// A kernel compiled once for every size, and what it takes to recognize its instances.
struct SizeGeneralKernel {
  /// The kernel to compile: run-time extents, and params read from its last buffer when it has any.
  Kernel kernel;
  /// The kernel it was made from, with every number that may vary left out (printed), and those
  /// numbers (a float's bits), in the order they appear.
  std::string skeleton;
  std::vector<int64_t> numbers;
  /// Per number: whether it varies between sizes.
  std::vector<bool> varies;
  /// Per param (the sizes buffer's element K): the number it stands for, and its dtype.
  std::vector<size_t> paramNumbers;
  std::vector<DType> paramTypes;

  int64_t params() const { return static_cast<int64_t>(paramNumbers.size()); }
};

/// The general form of two lowerings of one kernel at different sizes, or nullopt when they differ in
/// more than its numbers (or in an f16 or bf16 constant, which no param holds).
std::optional<SizeGeneralKernel> generalizeSizes(const Kernel& a, const Kernel& b);

/// The run-time values (the sizes buffer's elements) that make `general` compute exactly what
/// `concrete` computes, or nullopt when `concrete` is not an instance of it: it differs in more than
/// the numbers that vary.
std::optional<std::vector<int64_t>> paramsAt(const SizeGeneralKernel& general, const Kernel& concrete);

}  // namespace smelt::codegen

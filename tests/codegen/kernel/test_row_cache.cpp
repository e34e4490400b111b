// planRowCaches (codegen/row_cache.h): which loads of a block-mapped kernel's sweeps are kept in
// registers, and where it must leave memory alone (a store between the sweeps, an output that may share
// the row's memory, extents that are not whole blocks). The rendered kernels run on PoCL against the
// reference in tests/codegen/c_renderers/test_block_kernels.cpp.
#include "codegen/kernel_parser.h"
#include "codegen/row_cache.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <functional>
#include <string>

using namespace smelt;
using namespace smelt::codegen;

namespace {

/// layer_norm's kernel as map-to-blocks leaves it for rows of `columns` on 256 threads: the mean, the
/// variance and the normalized output, each a sweep over the row. `middle` goes into the variance
/// sweep's body and `outputs` after the output buffer's declaration.
std::string layerNorm(int64_t columns, const std::string& middle = "", const std::string& outputs = "") {
  return fmt::format(R"(kernel @layer_norm domain [64] threads 256
  buffer %b0: f32[{0}] in "p0"
  buffer %b1: f32[{1}] in "p1"
  buffer %b2: f32[{1}] in "p2"
  buffer %b3: f32[{0}] out "r0"{3}
  %0 = outer 0 : i64
  %1 = const 0.0 : f32
  %2 = const {1} : i64
  %3 = mul %0, %2 : i64
  %9 = loop %4 < {1} carry(%5 = %1 : f32) split combine(add) {{
    %6 = add %4, %3 : i64
    %7 = load %b0[%6] : f32
    %8 = add %5, %7 : f32
    yield %8
  }}
  %10 = const {1}.0 : f32
  %11 = div %9, %10 : f32
  %19 = loop %12 < {1} carry(%13 = %1 : f32) split combine(add) {{
    %14 = add %3, %12 : i64
    %15 = load %b0[%14] : f32
    %16 = sub %15, %11 : f32
    %17 = mul %16, %16 : f32
    %18 = add %13, %17 : f32{2}
    yield %18
  }}
  %20 = div %19, %10 : f32
  %21 = const 1e-05 : f32
  %22 = add %20, %21 : f32
  %23 = rsqrt %22 : f32
  loop %24 < {1} split {{
    %25 = add %24, %3 : i64
    %26 = load %b2[%24] : f32
    %27 = load %b1[%24] : f32
    %28 = load %b0[%25] : f32
    %29 = sub %28, %11 : f32
    %30 = mul %29, %23 : f32
    %31 = mul %27, %30 : f32
    %32 = add %26, %31 : f32
    store %b3[%25] = %32
  }}
)",
                     64 * columns, columns, middle, outputs);
}

Kernel parsed(const std::string& text) {
  auto kernel = parseKernel(text);
  REQUIRE_MESSAGE(kernel.ok(), (kernel.ok() ? "" : kernel.error().message()), "\n", text);
  return std::move(kernel).value();
}

/// The loads of buffer `buffer` the plan keeps, in kernel order: 'F' fills, 'R' reads.
std::string cachedLoadsOf(const Kernel& k, const RowCachePlan& plan, int64_t buffer) {
  std::string roles;
  std::function<void(const KBlock&)> walk = [&](const KBlock& b) {
    for (const KStmt& s : b.stmts) {
      if (const KInst* in = std::get_if<KInst>(&s)) {
        auto it = plan.loads.find(in);
        if (in->kind != KInstKind::Load || in->ibits != buffer) continue;
        roles += it == plan.loads.end() ? '-' : it->second.fills ? 'F' : 'R';
      } else if (const auto* l = std::get_if<std::shared_ptr<KLoop>>(&s)) {
        walk((*l)->body);
      }
    }
  };
  walk(k.body);
  return roles;
}

}  // namespace

TEST_CASE("row cache: layer_norm's three sweeps load the row once, into 4 registers a thread") {
  Kernel k = parsed(layerNorm(1024));
  RowCachePlan plan = planRowCaches(k);
  REQUIRE(plan.arrays.size() == 1);
  CHECK(plan.arrays[0].length == 4);
  CHECK(plan.arrays[0].dtype == DType::f32);
  CHECK(plan.arrays[0].filledIn == std::get<std::shared_ptr<KLoop>>(k.body.stmts[4]).get());
  CHECK(cachedLoadsOf(k, plan, 0) == "FRR");
  // The weight and bias are loaded once per sweep that reads them: nothing to keep.
  CHECK(cachedLoadsOf(k, plan, 1) == "-");
  CHECK(cachedLoadsOf(k, plan, 2) == "-");
}

TEST_CASE("row cache: rows of more than 32 iterations a thread, or not whole blocks, load from memory") {
  // 8192 columns: 32 a thread, the most kept; 16384: 64, left alone.
  Kernel most = parsed(layerNorm(8192));
  CHECK(cachedLoadsOf(most, planRowCaches(most), 0) == "FRR");
  Kernel wide = parsed(layerNorm(16384));
  CHECK(planRowCaches(wide).arrays.empty());
  // 1000 columns: some threads run 4 iterations, others 3.
  Kernel uneven = parsed(layerNorm(1000));
  CHECK(planRowCaches(uneven).arrays.empty());
}

TEST_CASE("row cache: a store that may reach the row between the sweeps keeps every load in memory") {
  // The output has the input's dtype and size, so the memory plan may put it in place over the input:
  // a store to it in the variance sweep would change what the last sweep reads.
  Kernel overwritten = parsed(layerNorm(1024, "\n    store %b3[%14] = %16"));
  RowCachePlan plan = planRowCaches(overwritten);
  CHECK(cachedLoadsOf(overwritten, plan, 0) == "FR-");
  // Once the executable found every buffer apart, the same store cannot reach the row.
  overwritten.disjointBuffers = true;
  CHECK(cachedLoadsOf(overwritten, planRowCaches(overwritten), 0) == "FRR");
  // An output declared as the input's memory is the row whatever its size.
  Kernel same = parsed(layerNorm(1024, "\n    store %b4[%14] = %16", "\n  buffer %b4: f32[65535] out \"r1\" same %b0"));
  same.disjointBuffers = true;
  CHECK(cachedLoadsOf(same, planRowCaches(same), 0) == "FR-");
}

TEST_CASE("row cache: kernels that are not block-mapped keep nothing") {
  Kernel k = parsed(layerNorm(1024));
  k.blockThreads = 0;
  CHECK(planRowCaches(k).arrays.empty());
}

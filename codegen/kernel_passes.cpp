// The kernel pass table and runner (see kernel_passes.h).
#include "codegen/kernel_passes.h"

#include "codegen/canonical_order.h"
#include "codegen/collapse_loops.h"
#include "codegen/kernel_opt.h"
#include "codegen/kernel_walk.h"
#include "codegen/map_to_blocks.h"
#include "codegen/reuse_through_output.h"
#include "codegen/tile_columns.h"
#include "codegen/vectorize.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace smelt::codegen {

namespace {

constexpr KernelPass kPasses[] = {
    {"collapse-loops", "nested loops that walk one contiguous range become one loop",
     [](Kernel& k) { return collapseNestedLoops(k) > 0; }},
    {"fuse-loops", "independent sibling loops of one extent become one sweep", fuseSiblingLoops},
    {"reuse-through-output", "a value a reduction sweep computes is kept in the output the last sweep writes",
     reuseThroughOutput},
    {"hoist-reciprocals", "x / d in a loop, d from outside it, becomes x * (1 / d) with 1 / d before the loop",
     hoistReciprocals},
    {"cse", "identical instructions in one scope are shared", shareInstructions},
    {"dce", "instructions whose results nothing reads are dropped (an unravel a reshape no longer needs)",
     [](Kernel& k) {
       const int64_t before = countKernel(k).instructions;
       removeDeadInstructions(k);
       return countKernel(k).instructions != before;
     }},
    {"canonical-order", "instructions in one order and numbering, whatever order the lowering emitted them in",
     canonicalOrder},
    {"tile-columns", "CPU: a column kernel walks rows of tiles of adjacent columns", tileColumns},
    {"map-to-blocks", "GPU: long rows run as one block of threads per point, combined in the block",
     [](Kernel& k) { return mapToBlocks(k); }},
    {"vectorize", "GPU: a flat elementwise kernel runs 4 points per thread with vector loads and stores",
     [](Kernel& k) { return vectorize(k); }},
};

Status dump(const Kernel& kernel, const std::string& dir, size_t index, std::string_view pass) {
  std::error_code ec;
  std::filesystem::path folder = std::filesystem::path(dir) / "kernels";
  std::filesystem::create_directories(folder, ec);
  if (ec) return makeError("SMELT_DUMP_DIR '{}': cannot create: {}", folder.string(), ec.message());
  std::filesystem::path path = folder / fmt::format("{}.{:02}-{}.kernel", kernel.name, index, pass);
  std::ofstream out(path, std::ios::binary);
  out << printKernel(kernel);
  if (!out) return makeError("cannot write kernel dump '{}'", path.string());
  return Status::success();
}

}  // namespace

std::span<const KernelPass> kernelPasses() { return kPasses; }

Expected<std::vector<const KernelPass*>> kernelPipeline(std::string_view pipeline) {
  std::vector<const KernelPass*> passes;
  if (pipeline.empty() || pipeline == "none") return passes;
  size_t start = 0;
  while (start <= pipeline.size()) {
    size_t comma = pipeline.find(',', start);
    if (comma == std::string_view::npos) comma = pipeline.size();
    std::string_view name = pipeline.substr(start, comma - start);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    const KernelPass* found = nullptr;
    for (const KernelPass& p : kPasses) {
      if (p.name == name) found = &p;
    }
    if (!found) {
      std::vector<std::string_view> known;
      for (const KernelPass& p : kPasses) known.push_back(p.name);
      return makeError("unknown kernel pass '{}' in '{}' (known: {})", name, pipeline, fmt::join(known, ", "));
    }
    passes.push_back(found);
    start = comma + 1;
  }
  return passes;
}

Expected<bool> runKernelPasses(Kernel& kernel, std::string_view pipeline) {
  SMELT_TRY(std::vector<const KernelPass*> passes, kernelPipeline(pipeline));
  static const std::string dumpDir = [] {
    const char* dir = std::getenv("SMELT_DUMP_DIR");
    return std::string(dir ? dir : "");
  }();
  // The kernel before the pipeline, named after its first pass: a backend's pipeline follows the
  // lowering one and must not overwrite its input.
  if (!dumpDir.empty() && !passes.empty()) {
    SMELT_CHECK_OK(dump(kernel, dumpDir, 0, fmt::format("before-{}", passes.front()->name)));
  }
  bool changed = false;
  for (size_t i = 0; i < passes.size(); ++i) {
    changed = passes[i]->run(kernel) || changed;
    if (!dumpDir.empty()) SMELT_CHECK_OK(dump(kernel, dumpDir, i + 1, passes[i]->name));
  }
  return changed;
}

}  // namespace smelt::codegen

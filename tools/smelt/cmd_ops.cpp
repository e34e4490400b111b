// `smelt ops`: every registered op with the dtypes and backends it supports.
#include "ir/op_registry.h"
#include "runtime/exec/executable.h"
#include "tools/smelt/commands.h"

#include <fmt/ranges.h>

namespace smelt::cli {

Action addOpsCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "List the registered ops: name, dtypes, backends, differentiable");
  return [cmd]() {
    (void)cmd;
    for (const OpDef* op : OpRegistry::global().all()) {
      // The interpreter runs every op with a reference; the compiled backends every op with a kernel
      // lowering, or whose decomposition they compile (elsewhere the node runs on the interpreter).
      std::vector<std::string> backends;
      if (op->reference) backends.push_back("reference");
      if (op->lower || op->decompose) {
        for (const std::string& b : backendNames()) {
          if (b != "reference" && b != "auto") backends.push_back(b);
        }
      }
      // Joined first: a width applied to fmt::join pads every element, not the list.
      fmt::print("{:<20} dtypes={:<48} backends={:<32} differentiable={}\n", op->name, op->dtypes.toString(),
                 fmt::format("{}", fmt::join(backends, ",")), op->differentiable() ? "yes" : "no");
    }
    return 0;
  };
}

}  // namespace smelt::cli

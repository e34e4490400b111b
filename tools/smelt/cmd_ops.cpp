// `smelt ops`: every registered op with the dtypes and backends it supports.
#include "ir/op_registry.h"
#include "runtime/backend.h"
#include "tools/smelt/commands.h"

#include <fmt/ranges.h>

namespace smelt::cli {

Action addOpsCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "List the registered ops: name, dtypes, backends, differentiable");
  return [cmd]() {
    (void)cmd;
    for (const OpDef* op : OpRegistry::global().all()) {
      // Every op runs on the reference backend; compiled backends add themselves in the codegen issue.
      std::vector<std::string> backends;
      for (const std::string& b : availableBackends()) {
        if (b == "reference" && op->reference) backends.push_back(b);
      }
      fmt::print("{:<20} dtypes={:<48} backends={:<10} differentiable={}\n", op->name, op->dtypes.toString(),
                 fmt::join(backends, ","), op->differentiable() ? "yes" : "no");
    }
    return 0;
  };
}

}  // namespace smelt::cli

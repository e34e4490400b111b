// The `smelt` CLI's subcommands. Each lives in its own file and registers itself on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace smelt::cli {

/// A subcommand's action; returns the process exit code.
using Action = std::function<int()>;

/// Each adds its subcommand to `app` and returns the action to run when it is chosen.
Action addOpsCommand(CLI::App& app);
Action addDumpCommand(CLI::App& app);
Action addRunCommand(CLI::App& app);

/// Prints "smelt: error: <message>" to stderr and returns 1.
int fail(const std::string& message);

}  // namespace smelt::cli

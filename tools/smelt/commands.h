// The `smelt` CLI's subcommands. Each lives in its own file and registers itself on the CLI11 app.
#pragma once

#include "ir/graph.h"
#include "ir/interpreter.h"

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
Action addGradCommand(CLI::App& app);
Action addOptCommand(CLI::App& app);
Action addInspectCommand(CLI::App& app);
Action addCacheCommand(CLI::App& app);
Action addKernelsCommand(CLI::App& app);
Action addBenchCommand(CLI::App& app);
Action addDevicesCommand(CLI::App& app);
Action addTuneCommand(CLI::App& app);
Action addExportCommand(CLI::App& app);

/// Splits "a,b,c" (the --wrt and --grad lists); empty names are errors.
Expected<std::vector<std::string>> splitNames(const std::string& list);
/// Differentiates the sum of all floating-point outputs w.r.t. `names` and adds outputs NAME.grad
/// (after the forward outputs when `keepForwardOutputs`, else replacing them).
Status addGradientOutputs(Graph& graph, const std::vector<std::string>& names, bool keepForwardOutputs);

/// The model file argument, described alike in every subcommand.
void addModelFileArgument(CLI::App* cmd, std::string& file);
/// --backend, described alike in every subcommand that runs a model, and checked against what this
/// machine has (an unknown or absent one is an error listing those here); `reference` when the command
/// can run the reference interpreter.
void addBackendOption(CLI::App* cmd, std::string& backend, bool reference);

/// The --dim option ("NAME=EXTENT", repeatable), for commands that take models with symbolic dimensions.
void addDimOption(CLI::App* cmd, std::vector<std::string>& dims);
/// Binds `graph`'s symbolic dimensions from `dims` (--dim) and the shapes of `feeds` (the --input
/// arrays), replacing it with the static graph the passes, backends and autodiff take. A graph without
/// symbolic dimensions is left as it is; an unbound dimension, or a --dim naming none, is an error.
Status bindDimsForCommand(Graph& graph, const std::vector<std::string>& dims, const TensorMap& feeds = {});
/// The model at `file` (loadModel), given the inputs' arrays and the --dim sizes, its symbolic dimensions
/// then bound by them (bindDimsForCommand): a model whose import with symbolic dimensions fails is imported
/// again at those shapes and sizes (nothing is left to bind then).
Expected<Graph> loadModelForCommand(const std::string& file, const std::vector<std::string>& dims,
                                    const TensorMap& given = {}, bool keepSymbolic = false);

/// Loads `file`, binds its symbolic dimensions from `dims` (unless `keepSymbolic` and none are given)
/// and, when `grad` lists names ("x,w"), appends their gradients as outputs after the forward ones
/// (`dump`, `inspect` and `kernels --grad`).
Expected<Graph> loadWithGradients(const std::string& file, const std::string& grad, const std::vector<std::string>& dims,
                                  bool keepSymbolic = false);
/// Runs the comma-separated `pipeline` on `graph` ("none" or empty: nothing), with the environment's
/// pass-manager options (SMELT_DUMP_DIR).
Status runPipeline(Graph& graph, const std::string& pipeline);

/// Prints "smelt: error: <message>" to stderr and returns 1.
int fail(const std::string& message);

}  // namespace smelt::cli

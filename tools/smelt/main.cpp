// smelt: the command-line tool for running, dumping and inspecting graphs.
#include "tools/smelt/commands.h"

#include "frontend/onnx/onnx_import.h"
#include "runtime/device/device_list.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

namespace smelt::cli {

/// "smelt 0.1.0 (...; backends: llvm, opencl, cuda (no device))": the build and what runs here.
std::string versionText() {
#ifdef SMELT_HAVE_LLVM
  const char* cpu = "llvm";
#else
  const char* cpu = "reference";
#endif
  std::vector<std::string> backends;
  for (const DeviceProbe& probe : probeDevices()) {
    std::string name = probe.kind == DeviceKind::kCpu ? cpu : std::string(deviceKindName(probe.kind));
    backends.push_back(probe.devices.empty() ? name + " (no device)" : name);
  }
  return fmt::format("smelt {} (ONNX import: {}; backends: {})", SMELT_VERSION, onnxImportAvailable() ? "yes" : "no",
                     fmt::join(backends, ", "));
}

int fail(const std::string& message) {
  fmt::print(stderr, "smelt: error: {}\n", message);
  return 1;
}

}  // namespace smelt::cli

int main(int argc, char** argv) {
  using namespace smelt::cli;
  CLI::App app{"smelt: define, differentiate, compile and run tensor graphs"};
  app.set_version_flag("--version", std::function<std::string()>(versionText));  // probes devices: only when asked
  // A subcommand is required, except for --version.
  app.require_subcommand(0, 1);
  std::map<CLI::App*, Action> actions;
  auto add = [&](Action (*adder)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    Action action = adder(app);
    actions[app.get_subcommands({})[before]] = std::move(action);
  };
  add(addOpsCommand);
  add(addDumpCommand);
  add(addRunCommand);
  add(addGradCommand);
  add(addOptCommand);
  add(addInspectCommand);
  add(addCacheCommand);
  add(addKernelsCommand);
  add(addBenchCommand);
  add(addDevicesCommand);
  add(addTuneCommand);
  add(addExportCommand);
  // A wrong option is one line, as every other error: "smelt: error: --backend: 'cuda' has no device here
  // (...); here: llvm, cpu, ...".
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return fmt::format("smelt: error: {}\n", e.what()); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, action] : actions) {
    if (sub->parsed()) return action();
  }
  fmt::print(stderr, "{}", app.help());
  return fail("no command given");
}

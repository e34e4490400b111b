// The options several subcommands share, described the same way everywhere: the model file and
// --backend (checked against what this machine has before anything loads).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "runtime/device/device_list.h"
#include "tools/smelt/commands.h"

namespace smelt::cli {

namespace {

/// What --backend takes on this machine: the CPU's names, each device kind that has a device and its
/// devices' ids, auto, and reference where the command runs it.
std::vector<std::string> backendsHere(bool reference) {
  std::vector<std::string> names = {"llvm", "cpu"};
  for (const DeviceProbe& probe : probeDevices()) {
    if (probe.kind == DeviceKind::kCpu || probe.devices.empty()) continue;
    names.emplace_back(deviceKindName(probe.kind));
    for (const DeviceDescription& d : probe.devices) names.push_back(d.id);
  }
  names.emplace_back("auto");
  if (reference) names.emplace_back("reference");
  return names;
}

/// Why `name` is not among them: a kind with no device (and what its probe said), the interpreter
/// where the command compiles, or a name nothing takes.
std::string whyNot(const std::string& name, bool reference) {
  if (name == "reference" && !reference) return "is not for this command (it times compiled runs)";
  const std::string kind = name.substr(0, name.find(':'));
  for (const DeviceProbe& probe : probeDevices()) {
    if (deviceKindName(probe.kind) != kind) continue;
    if (probe.devices.empty())
      return fmt::format("has no device here ({})", probe.unavailable.empty() ? "none found" : probe.unavailable);
    return "is not a device here";
  }
  return "is not a backend";
}

}  // namespace

void addModelFileArgument(CLI::App* cmd, std::string& file) {
  cmd->add_option("file", file, "Model file (.onnx or IR text; - for stdin)")->required();
}

void addBackendOption(CLI::App* cmd, std::string& backend, bool reference) {
  const std::string help = fmt::format(
      "Where to run: llvm (the CPU), opencl, cuda, hip, a device id (cuda:1), auto (measured placement){}; default: "
      "$SMELT_DEVICE, else the CPU",
      reference ? " or reference (the interpreter)" : "");
  cmd->add_option("--backend", backend, help)
      ->check(CLI::Validator(
          [reference](std::string& name) -> std::string {
            const std::vector<std::string> here = backendsHere(reference);
            if (std::find(here.begin(), here.end(), name) != here.end()) return {};
            return fmt::format("'{}' {}; here: {}", name, whyNot(name, reference), fmt::join(here, ", "));
          },
          "BACKEND"));
}

}  // namespace smelt::cli

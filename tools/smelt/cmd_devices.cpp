// `smelt devices`: every device this process can use (the CPU, OpenCL, CUDA, HIP) with its memory
// and capabilities, and for each kind without devices, why (`--json` for scripts).
#include "runtime/device/device_list.h"
#include "tools/smelt/commands.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace smelt::cli {

namespace {

std::string mib(std::uint64_t bytes) { return fmt::format("{:.0f} MiB", static_cast<double>(bytes) / (1 << 20)); }

int printDevices(bool json) {
  std::vector<DeviceProbe> probes = probeDevices();
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const DeviceProbe& p : probes) {
      for (const DeviceDescription& d : p.devices) {
        out.push_back({{"id", d.id}, {"kind", deviceKindName(d.kind)}, {"name", d.name}, {"driver", d.driver},
                       {"memory_bytes", d.memoryBytes}, {"compute_units", d.computeUnits}, {"fp64", d.fp64},
                       {"fp16", d.fp16}, {"capabilities", d.capabilities}});
      }
      if (p.devices.empty()) out.push_back({{"kind", deviceKindName(p.kind)}, {"unavailable", p.unavailable}});
    }
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  for (const DeviceProbe& p : probes) {
    for (const DeviceDescription& d : p.devices) {
      fmt::print("{:<10} {}\n", d.id, d.name);
      fmt::print("           memory {}, {} compute units, f64 {}, f16 {}\n", mib(d.memoryBytes), d.computeUnits,
                 d.fp64 ? "yes" : "no", d.fp16 ? "yes" : "no");
      fmt::print("           {}; {}\n", d.driver, d.capabilities);
    }
    if (p.devices.empty()) fmt::print("{:<10} none: {}\n", deviceKindName(p.kind), p.unavailable);
  }
  return 0;
}

}  // namespace

Action addDevicesCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "List the devices (CPU, OpenCL, CUDA, HIP) with memory and capabilities");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print JSON");
  return [json]() { return printDevices(*json); };
}

}  // namespace smelt::cli

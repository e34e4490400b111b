// `smelt tune`: measures where each device overtakes the CPU, per kind of work and size, and stores
// the table that automatic placement reads (runtime/placement/). `--show` prints the tables in use,
// `--explain FILE` where a model would run and why.
#include "frontend/model_loader.h"
#include "runtime/device/device_list.h"
#include "runtime/placement/placement.h"
#include "runtime/placement/tuner.h"
#include "tools/smelt/commands.h"

#include <fmt/format.h>

#include <cstdlib>

namespace smelt::cli {

namespace {

struct TuneCommandOptions {
  std::vector<std::string> devices;
  std::string kinds;
  bool quick = false;
  int repeats = 7;
  bool show = false;
  std::string explain;
};

std::string crossoverText(const KindCrossover& k) {
  return k.crossover ? fmt::format("{:.3g} {}", static_cast<double>(*k.crossover), workUnit(k.kind))
                     : std::string("never (the CPU was faster at every size)");
}

void printTable(const PlacementTable& table, const std::string& path) {
  fmt::print("{} ({}): {}\n", table.deviceId, table.deviceName, table.source);
  for (const KindCrossover& k : table.kinds) fmt::print("  {:<12} crossover {}\n", workKindName(k.kind), crossoverText(k));
  if (!path.empty()) fmt::print("  stored in {}\n", path);
}

/// The devices to measure: those named, else every device with an executable in this build.
Expected<std::vector<std::shared_ptr<Device>>> devicesToTune(const std::vector<std::string>& ids) {
  std::vector<std::shared_ptr<Device>> devices;
  if (!ids.empty()) {
    for (const std::string& id : ids) {
      SMELT_TRY(std::shared_ptr<Device> device, openDevice(id));
      devices.push_back(std::move(device));
    }
    return devices;
  }
  for (const DeviceDescription& d : listDevices()) {
    if (d.kind == DeviceKind::kCpu) continue;  // every other device is measured against it
    SMELT_TRY(std::shared_ptr<Device> device, openDevice(d.id));
    devices.push_back(std::move(device));
  }
  return devices;
}

int tune(const TuneCommandOptions& o) {
  if (!o.explain.empty()) {
    Expected<Graph> graph = loadModel(o.explain);
    if (!graph) return fail(graph.error().message());
    GraphWork work = measureWork(*graph);
    for (WorkKind kind : kWorkKinds) {
      fmt::print("{:<12} {:.3g} {}\n", workKindName(kind), static_cast<double>(work.of(kind)), workUnit(kind));
    }
    // SMELT_DEVICE naming a device decides; otherwise this is where "auto" (--backend auto,
    // SMELT_DEVICE=auto, CompileOptions::device = "auto") puts the graph.
    const char* env = std::getenv("SMELT_DEVICE");
    if (env && *env && std::string_view(env) != "auto") {
      fmt::print("runs on {} (set by SMELT_DEVICE)\n", env);
      return 0;
    }
    PlacementDecision decision = choosePlacement(*graph);
    fmt::print("runs on {}: {}\n", decision.deviceId, decision.reason);
    fmt::print("(where placement is automatic: --backend auto, SMELT_DEVICE=auto or device \"auto\" in the API)\n");
    return 0;
  }
  if (o.show) {
    std::vector<PlacementTable> tables = placementTables();
    if (tables.empty()) fmt::print("no placement tables: every graph runs on the CPU (run `smelt tune`)\n");
    for (const PlacementTable& t : tables) printTable(t, "");
    return 0;
  }
  TuneOptions options;
  options.quick = o.quick;
  options.repeats = o.repeats;
  options.progress = [](std::string_view line) { fmt::print("  {}\n", line); };
  if (!o.kinds.empty()) {
    Expected<std::vector<std::string>> names = splitNames(o.kinds);
    if (!names) return fail(names.error().message());
    for (const std::string& name : *names) {
      std::optional<WorkKind> kind = parseWorkKind(name);
      if (!kind) return fail(fmt::format("unknown kind '{}' (elementwise, reduction, matmul, conv)", name));
      options.kinds.push_back(*kind);
    }
  }
  Expected<std::vector<std::shared_ptr<Device>>> devices = devicesToTune(o.devices);
  if (!devices) return fail(devices.error().message());
  if (devices->empty()) {
    fmt::print("no OpenCL or CUDA device to measure: every graph runs on the CPU\n");
    return 0;
  }
  for (const std::shared_ptr<Device>& device : *devices) {
    fmt::print("measuring {} ({}) against the CPU\n", device->id(), device->description().name);
    Expected<PlacementTable> table = tunePlacement(device, options);
    if (!table) return fail(fmt::format("{}: {}", device->id(), table.error().message()));
    if (Status saved = savePlacementTable(*table, device->description()); !saved.ok()) {
      return fail(saved.error().message());
    }
    printTable(*table, placementTablePath(device->description()));
  }
  forgetPlacementTables();
  return 0;
}

}  // namespace

Action addTuneCommand(CLI::App& app) {
  auto o = std::make_shared<TuneCommandOptions>();
  auto* cmd = app.add_subcommand("tune", "Measure where each device overtakes the CPU and store the placement table");
  cmd->add_option("--device", o->devices,
                  "Device to measure: a device id (opencl:0, cuda:1; repeatable); default: every device here");
  cmd->add_option("--kinds", o->kinds, "KIND[,KIND...] of elementwise, reduction, matmul, conv (default: all)");
  cmd->add_flag("--quick", o->quick, "Three sizes per kind instead of six or seven");
  cmd->add_option("--repeats", o->repeats, "Timed runs per size and place (median)")->check(CLI::Range(1, 1000));
  cmd->add_flag("--show", o->show, "Print the tables placement uses now, measuring nothing");
  cmd->add_option("--explain", o->explain,
                  "Model file (.onnx or IR text; - for stdin): print its work and where it would run, measuring "
                  "nothing");
  return [o]() { return tune(*o); };
}

}  // namespace smelt::cli

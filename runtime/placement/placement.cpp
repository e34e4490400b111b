// Automatic placement and its overrides: see placement.h.
#include "runtime/placement/placement.h"

#include "codegen/log.h"
#include "runtime/device/device_list.h"

#include <fmt/format.h>

#include <cstdlib>
#include <mutex>

namespace smelt {

namespace {

struct PlacementState {
  std::mutex mutex;
  std::string defaultDevice;
  std::optional<std::vector<PlacementTable>> tables;
};

PlacementState& state() {
  static PlacementState s;
  return s;
}

std::string formatAmount(int64_t amount) {
  return amount < 100000 ? fmt::format("{}", amount) : fmt::format("{:.2g}", static_cast<double>(amount));
}

}  // namespace

PlacementDecision choosePlacement(const GraphWork& work, const std::vector<PlacementTable>& tables) {
  if (tables.empty()) return {"cpu", "no device has a placement table (run `smelt tune`)"};
  const PlacementTable* best = nullptr;
  double bestMargin = 0;
  std::string bestReason, closest;
  double closestMargin = -1;
  for (const PlacementTable& table : tables) {
    for (WorkKind kind : kWorkKinds) {
      std::optional<int64_t> crossover = table.crossoverOf(kind);
      if (!crossover || *crossover <= 0) continue;
      const double margin = static_cast<double>(work.of(kind)) / static_cast<double>(*crossover);
      const std::string line = fmt::format("{} {} {} {} crossover {} on {}", workKindName(kind),
                                           formatAmount(work.of(kind)), workUnit(kind), margin >= 1 ? ">=" : "<",
                                           formatAmount(*crossover), table.deviceId);
      if (margin >= 1 && margin > bestMargin) {
        best = &table;
        bestMargin = margin;
        bestReason = line;
      }
      if (margin > closestMargin) {
        closestMargin = margin;
        closest = line;
      }
    }
  }
  if (best) return {best->deviceId, bestReason};
  if (closest.empty()) return {"cpu", "no device was faster than the CPU at any measured size"};
  return {"cpu", "below every device's crossover (nearest: " + closest + ")"};
}

PlacementDecision choosePlacement(const Graph& graph) {
  return choosePlacement(measureWork(graph), placementTables());
}

void setDefaultDevice(std::string deviceId) {
  std::lock_guard lock(state().mutex);
  state().defaultDevice = std::move(deviceId);
}

std::string resolveRequestedDevice(const std::string& requested) {
  if (!requested.empty()) return requested;
  {
    std::lock_guard lock(state().mutex);
    if (!state().defaultDevice.empty()) return state().defaultDevice;
  }
  const char* env = std::getenv("SMELT_DEVICE");
  if (env && *env) return env;
  return "cpu";
}

std::vector<PlacementTable> placementTables() {
  PlacementState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.tables) return *s.tables;
  std::vector<PlacementTable> tables;
  for (const DeviceDescription& device : listDevices()) {
    if (device.kind == DeviceKind::kCpu) continue;
    Expected<std::optional<PlacementTable>> stored = loadPlacementTable(device);
    if (!stored) {
      logger().warn("placement: {}; {} uses its default", stored.error().message(), device.id);
    } else if (*stored) {
      tables.push_back(std::move(**stored));
      continue;
    }
    if (std::optional<PlacementTable> fallback = defaultPlacementTable(device)) tables.push_back(std::move(*fallback));
  }
  s.tables = tables;
  return tables;
}

void forgetPlacementTables() {
  std::lock_guard lock(state().mutex);
  state().tables.reset();
}

}  // namespace smelt

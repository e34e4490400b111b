// A device's placement table: for each kind of work, the sizes `smelt tune` measured, the time of a
// graph of that size on the CPU and on the device (host feeds in, host outputs back: what a user's
// run pays), and the crossover, the smallest size from which the device was faster at every larger
// measured size. Stored as JSON per device in the kernel cache's folder ($SMELT_CACHE_DIR or
// ~/.cache/smelt) under placement/, keyed by the device's id, and valid only for the device name and
// driver it was measured on.
//   SMELT_TRY(std::optional<PlacementTable> table, loadPlacementTable(device.description()));
//   table->crossoverOf(WorkKind::kMatmul);   // e.g. 2.7e8 flops; nullopt: the CPU always won
#pragma once

#include "runtime/device/device.h"
#include "runtime/placement/graph_work.h"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace smelt {

/// One measured size: median seconds per run on the CPU and on the device.
struct CrossoverPoint {
  int64_t amount = 0;
  double cpuSeconds = 0;
  double deviceSeconds = 0;
};

struct KindCrossover {
  WorkKind kind = WorkKind::kElementwise;
  std::vector<CrossoverPoint> points;
  /// From this amount of work on, the device was faster at every measured size; nullopt: never.
  std::optional<int64_t> crossover;
};

struct PlacementTable {
  std::string deviceId;
  std::string deviceName;
  std::string driver;
  /// "smelt tune, <UTC time>", or "built-in default (not measured)".
  std::string source;
  std::vector<KindCrossover> kinds;

  /// The crossover for `kind`; nullopt when the device never won or the kind was not measured.
  std::optional<int64_t> crossoverOf(WorkKind kind) const;
  /// Whether the table was measured on the device `description` names (same name and driver).
  bool matches(const DeviceDescription& description) const;
};

/// The crossover of measured points in increasing amount (see KindCrossover::crossover).
std::optional<int64_t> crossoverFrom(std::span<const CrossoverPoint> points);

/// The table used for a device `smelt tune` has not measured: for CUDA and HIP GPUs, conservative
/// thresholds (a GPU launch and transfer cost tens of microseconds, so only large work moves); none
/// for OpenCL (often a CPU driver such as PoCL) or the CPU.
std::optional<PlacementTable> defaultPlacementTable(const DeviceDescription& description);

std::string placementTableToJson(const PlacementTable& table);
/// A malformed table is an error naming the field.
Expected<PlacementTable> placementTableFromJson(std::string_view json);

/// Where the table for `description` is stored; empty when there is no cache folder.
std::string placementTablePath(const DeviceDescription& description);
Status savePlacementTable(const PlacementTable& table, const DeviceDescription& description);
/// The stored table; nullopt when none was stored or it was measured on another device or driver
/// (logged at debug level). A file that cannot be read or parsed is an error naming it.
Expected<std::optional<PlacementTable>> loadPlacementTable(const DeviceDescription& description);

}  // namespace smelt

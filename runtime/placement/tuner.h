// `smelt tune`: measures, for each kind of work and a ladder of sizes, one graph of that kind run on
// the CPU and on a device from host feeds to host outputs (median of several runs after a warm-up),
// and derives the device's crossovers (placement_table.h).
//   TuneOptions options;  options.quick = true;
//   SMELT_TRY(PlacementTable table, tunePlacement(device, options));
//   SMELT_CHECK_OK(savePlacementTable(table, device->description()));
#pragma once

#include "ir/graph.h"
#include "runtime/placement/placement_table.h"

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace smelt {

struct TuneOptions {
  /// The kinds to measure; empty: all four.
  std::vector<WorkKind> kinds;
  /// Three sizes per kind instead of six or seven (a first look, and the tests).
  bool quick = false;
  /// Timed runs per size and place (after one untimed warm-up); the median counts.
  int repeats = 7;
  /// Called with one line per measured point ("matmul 2.1e+06 flops: cpu 0.11 ms, opencl:0 0.52 ms").
  std::function<void(std::string_view)> progress;
};

/// The graphs, in IR text, that stand for `kind` at the sizes tunePlacement measures, with their
/// amounts of work (measureWork of each graph).
struct TuneGraph {
  int64_t amount = 0;
  std::string text;
  Graph graph;
};
std::vector<TuneGraph> tuneGraphs(WorkKind kind, bool quick);

/// Measures `device` against the CPU. The device must not be the CPU.
Expected<PlacementTable> tunePlacement(const std::shared_ptr<Device>& device, const TuneOptions& options = {});

}  // namespace smelt

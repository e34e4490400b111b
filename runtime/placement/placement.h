// Where a graph runs when nobody says: on the device whose measured crossover (placement_table.h)
// its work reaches, else on the CPU. Small graphs stay on the CPU, where a launch and two copies
// would cost more than the work; large ones go to the GPU.
//
// What decides, first match wins:
//   1. CompileOptions::device on the executable (runtime/exec/executable.h);
//   2. setDefaultDevice("cuda:0") in the process (the API override);
//   3. $SMELT_DEVICE;
//   4. the CPU.
// Any of them may say "auto": choosePlacement(graph) then compares each device's table (from
// `smelt tune`, or a GPU's built-in default) with the graph's work; the device that exceeds its
// crossover by the widest margin wins.
//   PlacementDecision d = choosePlacement(graph);   // {"opencl:0", "matmul 2.1e9 flops >= 1.3e8"}
#pragma once

#include "ir/graph.h"
#include "runtime/placement/placement_table.h"

#include <optional>
#include <string>
#include <vector>

namespace smelt {

struct PlacementDecision {
  /// "cpu" or a device id ("opencl:0").
  std::string deviceId;
  /// One line on why (logged at debug level when an executable is placed).
  std::string reason;
};

/// The automatic choice for `graph` among the devices of this process (see above, step 4).
PlacementDecision choosePlacement(const Graph& graph);
/// The same choice against explicit tables (one per candidate device): what choosePlacement uses.
PlacementDecision choosePlacement(const GraphWork& work, const std::vector<PlacementTable>& tables);

/// The process-wide device for executables that do not name one ("auto" for measured placement):
/// overrides $SMELT_DEVICE. Empty restores it.
void setDefaultDevice(std::string deviceId);
/// The device an executable with `requested` ("" when it names none) should open: an id, or "auto"
/// for choosePlacement.
std::string resolveRequestedDevice(const std::string& requested);

/// The tables choosePlacement uses, one per non-CPU device that has one (measured or default). Read
/// once per process; forgetPlacementTables() makes the next call read the files again (after
/// `smelt tune`, or in tests).
std::vector<PlacementTable> placementTables();
void forgetPlacementTables();

}  // namespace smelt

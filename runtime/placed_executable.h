// A graph compiled for a device chosen by name, $SMELT_DEVICE, or measured placement, that keeps
// working when the device fails: out of memory (after the device's pool has freed its cache and retried) falls
// back to the CPU for this executable, with one warning; a lost device is reinitialized (its pool
// trimmed, the graph recompiled on it) and run again, and falls back to the CPU if that fails too.
// Ops the device lacks already run on the CPU inside the device executable. Every such event is
// logged (codegen/log.h), and SMELT_FAULTS (runtime/device/fault_injection.h) makes each happen.
//   SMELT_TRY(auto exe, PlacedExecutable::compile(graph, {.device = "opencl"}));
//   SMELT_TRY(std::vector<Tensor> out, exe->run(feeds));
//   exe->deviceId();   // "opencl:0", or "cpu" after a fallback
#pragma once

#include "ir/interpreter.h"

#include <memory>
#include <string>
#include <vector>

namespace smelt {

struct PlacementOptions {
  /// "cpu", "opencl[:N]", "cuda[:N]" or "auto"; empty or "auto": setDefaultDevice()'s device, else
  /// $SMELT_DEVICE, else the automatic choice from the devices' measured crossovers
  /// (runtime/placement/placement.h).
  std::string device;
};

class PlacedExecutable {
 public:
  static Expected<std::unique_ptr<PlacedExecutable>> compile(const Graph& graph, const PlacementOptions& options = {});
  ~PlacedExecutable();

  Expected<std::vector<Tensor>> run(const TensorMap& feeds);
  Status run(const TensorMap& feeds, std::vector<Tensor>& outputs);
  /// Where it runs now: the device's id, or "cpu".
  const std::string& deviceId() const;
  /// How many times it moved to the CPU or reinitialized its device.
  int fallbacks() const;
  int reinitializations() const;

 private:
  PlacedExecutable();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace smelt

// smelt's logger: one spdlog logger named "smelt" for compiles, cache hits and misses, fallbacks.
// SMELT_LOG=trace|debug|info|warn|error|off sets its level (default warn), read once at first use.
//   SMELT_LOG=debug smelt run model.onnx    # every kernel compile with its time, every cache hit/miss
#pragma once

#include <spdlog/spdlog.h>

#include <memory>

namespace smelt {

/// The "smelt" logger (stderr), created on first use. Thread-safe.
spdlog::logger& logger();

}  // namespace smelt

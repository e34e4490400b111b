// Timing loop of `smelt bench` and `smelt tune`: warm-up runs, then timed runs until a count or a time
// budget is reached.
#pragma once

#include "ir/support/expected.h"

#include <functional>
#include <vector>

namespace smelt {

/// How many runs to make, and for how long.
struct RunBudget {
  /// Untimed runs first (at least one when > 0, then only while under a quarter of `maxSeconds`).
  int warmup = 3;
  /// Timed runs at most.
  int runs = 20;
  /// Timed runs at least, whatever the budget (capped by `runs`).
  int minRuns = 3;
  /// Wall-clock budget for warm-up and timed runs together; 0 = none. A slow graph (seconds per run)
  /// then stops after `minRuns` instead of taking `runs` times as long.
  double maxSeconds = 0;
};

/// What the runs took, sorted ascending, in milliseconds.
struct RunTimes {
  std::vector<double> ms;
  int warmups = 0;
  double minMs() const { return ms.front(); }
  /// The middle run (the upper middle of an even count).
  double medianMs() const { return ms[ms.size() / 2]; }
};

/// Calls `run` per `budget`, timing each call on the wall clock; the first failing run's error is
/// returned.
Expected<RunTimes> timeRuns(const std::function<Status()>& run, const RunBudget& budget);
/// The same where each run reports its own time in milliseconds (device time from events, say).
Expected<RunTimes> timeMeasuredRuns(const std::function<Expected<double>()>& run, const RunBudget& budget);

}  // namespace smelt

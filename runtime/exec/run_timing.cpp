// Timing loop (see run_timing.h).
#include "runtime/exec/run_timing.h"

#include <algorithm>
#include <chrono>

namespace smelt {

Expected<RunTimes> timeRuns(const std::function<Status()>& run, const RunBudget& budget) {
  using Clock = std::chrono::steady_clock;
  return timeMeasuredRuns(
      [&]() -> Expected<double> {
        const auto t0 = Clock::now();
        SMELT_CHECK_OK(run());
        return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      },
      budget);
}

Expected<RunTimes> timeMeasuredRuns(const std::function<Expected<double>()>& run, const RunBudget& budget) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); };
  const auto start = Clock::now();
  const bool limited = budget.maxSeconds > 0;
  RunTimes times;
  // Warm-up: the first run pays for page faults in the arena, the thread pool's start and cold caches.
  while (times.warmups < budget.warmup) {
    if (times.warmups > 0 && limited && seconds(start) > budget.maxSeconds / 4) break;
    SMELT_CHECK_OK(run());
    ++times.warmups;
  }
  const int atLeast = std::clamp(budget.minRuns, 1, std::max(budget.runs, 1));
  for (int i = 0; i < std::max(budget.runs, 1); ++i) {
    if (i >= atLeast && limited && seconds(start) > budget.maxSeconds) break;
    SMELT_TRY(double ms, run());
    times.ms.push_back(ms);
  }
  std::sort(times.ms.begin(), times.ms.end());
  return times;
}

}  // namespace smelt

// Where an executable's time goes: SMELT_PROFILE=1 (or =all, for every row) times every step (kernel, BLAS product, interpreted
// node) of every run and, when the executable is destroyed, logs the steps by total time with their
// share, so the one kernel worth optimizing is found without an external profiler.
//   StepProfile profile(steps.size());
//   auto t = StepProfile::now(); ...run step i...; profile.add(i, t);
//   profile.report(labels, kinds);   // at the end
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace smelt {

class StepProfile {
 public:
  using Clock = std::chrono::steady_clock;
  /// Whether SMELT_PROFILE asks for profiles (read once).
  static bool enabled();
  /// How many rows a table shows: 30, or every step with SMELT_PROFILE=all.
  static size_t rows();
  static Clock::time_point now() { return Clock::now(); }

  bool empty() const { return nanoseconds_.empty(); }
  void resize(size_t steps) { nanoseconds_.assign(steps, 0); }
  /// The first run is not counted (one-time work: the BLAS's first call of a shape, first touches).
  bool counting() const { return runs_ > 0; }
  void add(size_t step, Clock::time_point started) {
    nanoseconds_[step] += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started).count();
  }
  /// Adds device time measured between two events (CUDA/HIP: kernel time, without the host's waits).
  void addNanoseconds(size_t step, int64_t nanoseconds) { nanoseconds_[step] += nanoseconds; }
  /// How the steps were timed, for the table's first line ("device events", "host, waiting for each").
  void setClock(std::string clock) { clock_ = std::move(clock); }
  void finishRun() { ++runs_; }
  int64_t countedRuns() const { return runs_ > 0 ? runs_ - 1 : 0; }
  /// The table, slowest steps first (at most `rows`), with each step's label and kind ("kernel",
  /// "BLAS", "BLAS+epilogue", "interpreted"); empty when nothing ran.
  std::string table(const std::vector<std::string>& labels, const std::vector<std::string>& kinds,
                    size_t rows = StepProfile::rows()) const;

 private:
  std::vector<int64_t> nanoseconds_;
  int64_t runs_ = 0;
  std::string clock_ = "host";
};

}  // namespace smelt

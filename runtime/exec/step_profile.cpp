// See step_profile.h.
#include "runtime/exec/step_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

namespace smelt {

bool StepProfile::enabled() {
  static const bool on = [] {
    const char* v = std::getenv("SMELT_PROFILE");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

size_t StepProfile::rows() {
  const char* v = std::getenv("SMELT_PROFILE");
  return v && std::string(v) == "all" ? static_cast<size_t>(-1) : 30;
}

std::string StepProfile::table(const std::vector<std::string>& labels, const std::vector<std::string>& kinds,
                               size_t rows) const {
  int64_t runs = countedRuns();
  if (runs == 0 || nanoseconds_.empty()) return {};
  std::vector<size_t> order(nanoseconds_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return nanoseconds_[a] > nanoseconds_[b]; });
  int64_t total = std::accumulate(nanoseconds_.begin(), nanoseconds_.end(), int64_t{0});
  double perRun = static_cast<double>(runs);
  std::string out = fmt::format("profile: {} steps, {} runs after the first, {:.3f} ms per run (timed: {})\n",
                                nanoseconds_.size(), runs, static_cast<double>(total) / perRun * 1e-6, clock_);
  out += fmt::format("{:>10} {:>6}  {:<24} {}\n", "ms/run", "share", "kind", "step");
  for (size_t i = 0; i < std::min(rows, order.size()); ++i) {
    size_t s = order[i];
    out += fmt::format("{:>10.3f} {:>5.1f}%  {:<24} {}\n", static_cast<double>(nanoseconds_[s]) / perRun * 1e-6,
                       total ? 100.0 * static_cast<double>(nanoseconds_[s]) / static_cast<double>(total) : 0.0,
                       s < kinds.size() ? kinds[s] : "", s < labels.size() ? labels[s] : "");
  }
  return out;
}

}  // namespace smelt

// See progress.h.
#include "progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace smelt::examples {

Progress::Progress(int64_t epochs, int64_t stepsPerEpoch)
    : epochs_(epochs), stepsPerEpoch_(stepsPerEpoch), terminal_(isatty(fileno(stdout)) != 0) {}

std::string Progress::bar(int64_t done, int64_t total) const {
  constexpr int64_t kWidth = 24;
  int64_t filled = total > 0 ? done * kWidth / total : kWidth;
  return std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(kWidth - filled), '.');
}

void Progress::step(int64_t epoch, int64_t step, double loss, double accuracy, double imagesPerSecond) {
  if (!terminal_) return;
  fmt::print("\repoch {:>3}/{} [{}] loss {:.4f}  accuracy {:5.1f}%  {:>8.0f} images/s ", epoch, epochs_,
             bar(step, stepsPerEpoch_), loss, 100 * accuracy, imagesPerSecond);
  std::fflush(stdout);
}

void Progress::endEpoch(int64_t epoch, double loss, double accuracy, double imagesPerSecond, double testAccuracy) {
  std::string test = testAccuracy >= 0 ? fmt::format("  test {:5.1f}%", 100 * testAccuracy) : "";
  fmt::print("{}epoch {:>3}/{} [{}] loss {:.4f}  accuracy {:5.1f}%  {:>8.0f} images/s{}\n", terminal_ ? "\r" : "",
             epoch, epochs_, bar(stepsPerEpoch_, stepsPerEpoch_), loss, 100 * accuracy, imagesPerSecond, test);
  std::fflush(stdout);
}

}  // namespace smelt::examples

// See progress.h.
#include "frontend/nn/progress.h"

#include <fmt/format.h>
#include <unistd.h>

namespace smelt::nn {

ProgressBar::ProgressBar(int64_t epochs, int64_t stepsPerEpoch, std::string unit, std::FILE* out)
    : epochs_(epochs),
      stepsPerEpoch_(stepsPerEpoch),
      unit_(std::move(unit)),
      out_(out),
      terminal_(out && isatty(fileno(out)) != 0) {}

std::string ProgressBar::line(int64_t epoch, int64_t done, double loss, double accuracy, double perSecond) const {
  constexpr int64_t kWidth = 24;
  int64_t filled = stepsPerEpoch_ > 0 ? std::min(done, stepsPerEpoch_) * kWidth / stepsPerEpoch_ : kWidth;
  std::string bar =
      std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(kWidth - filled), '.');
  std::string acc = accuracy >= 0 ? fmt::format("  accuracy {:5.1f}%", 100 * accuracy) : "";
  std::string rate = perSecond > 0 ? fmt::format("  {:>8.0f} {}/s", perSecond, unit_) : "";
  return fmt::format("epoch {:>3}/{} [{}] loss {:.4f}{}{}", epoch, epochs_, bar, loss, acc, rate);
}

void ProgressBar::step(int64_t epoch, int64_t step, double loss, double accuracy, double perSecond) {
  if (!terminal_) return;
  fmt::print(out_, "\r{} ", line(epoch, step, loss, accuracy, perSecond));
  std::fflush(out_);
}

void ProgressBar::endEpoch(int64_t epoch, double loss, double accuracy, double perSecond, double testAccuracy) {
  if (!out_) return;
  std::string test = testAccuracy >= 0 ? fmt::format("  test {:5.1f}%", 100 * testAccuracy) : "";
  fmt::print(out_, "{}{}{}\n", terminal_ ? "\r" : "", line(epoch, stepsPerEpoch_, loss, accuracy, perSecond), test);
  std::fflush(out_);
}

}  // namespace smelt::nn

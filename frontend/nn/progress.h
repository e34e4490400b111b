// A one-line progress bar for training loops: redrawn in place on a terminal, one line per epoch
// otherwise (logs and CI output stay readable).
//   nn::ProgressBar bar(epochs, batches.batchesPerEpoch(), "images");
//   bar.step(epoch, step, loss, accuracy, imagesPerSecond);    // after each step (1-based)
//   bar.endEpoch(epoch, loss, accuracy, imagesPerSecond, testAccuracy);
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace smelt::nn {

class ProgressBar {
 public:
  /// `unit` names what the rate counts ("images/s"); `out` is where it draws (a terminal redraws; null: nowhere,
  /// as on the ranks of a data-parallel job other than rank 0).
  ProgressBar(int64_t epochs, int64_t stepsPerEpoch, std::string unit = "examples", std::FILE* out = stdout);
  /// After step `step` (1-based) of epoch `epoch` (1-based): the epoch's running loss, accuracy and
  /// rate (negative accuracy, or a rate of 0: not shown). Draws only on a terminal.
  void step(int64_t epoch, int64_t step, double loss, double accuracy, double perSecond);
  /// The epoch's summary line, with the test accuracy when measured (negative: not measured).
  void endEpoch(int64_t epoch, double loss, double accuracy, double perSecond, double testAccuracy = -1);

 private:
  std::string line(int64_t epoch, int64_t done, double loss, double accuracy, double perSecond) const;
  int64_t epochs_, stepsPerEpoch_;
  std::string unit_;
  std::FILE* out_;
  bool terminal_;
};

}  // namespace smelt::nn

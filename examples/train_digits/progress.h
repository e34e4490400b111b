// A one-line progress bar for training: redrawn in place on a terminal, one line per epoch otherwise
// (logs and CI output stay readable).
//   Progress bar(epochs, stepsPerEpoch);
//   bar.step(epoch, step, loss, accuracy, imagesPerSecond);  bar.endEpoch(...);
#pragma once

#include <cstdint>
#include <string>

namespace smelt::examples {

class Progress {
 public:
  Progress(int64_t epochs, int64_t stepsPerEpoch);
  /// After step `step` (1-based) of epoch `epoch` (1-based): running loss and accuracy of the epoch.
  void step(int64_t epoch, int64_t step, double loss, double accuracy, double imagesPerSecond);
  /// The epoch's summary line, with the test accuracy when measured (negative: not measured).
  void endEpoch(int64_t epoch, double loss, double accuracy, double imagesPerSecond, double testAccuracy);

 private:
  std::string bar(int64_t done, int64_t total) const;
  int64_t epochs_, stepsPerEpoch_;
  bool terminal_;
};

}  // namespace smelt::examples

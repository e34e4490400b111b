// See fit.h.
#include "frontend/nn/fit.h"

#include <chrono>

#include "frontend/nn/data_parallel.h"

namespace smelt::nn {

Expected<std::vector<EpochSummary>> fit(TrainStep& step, Batches& batches, const FitOptions& options) {
  if (options.epochs < 0) return makeError("fit: {} epochs", options.epochs);
  if (options.ranks < 1 || options.rank < 0 || options.rank >= options.ranks) {
    return makeError("fit: rank {} of {} ranks", options.rank, options.ranks);
  }
  using Clock = std::chrono::steady_clock;
  std::vector<EpochSummary> summaries;
  Tensor x, y, outputs;
  for (int64_t epoch = 1; epoch <= options.epochs; ++epoch) {
    const auto start = Clock::now();
    EpochSummary summary{.epoch = epoch};
    double lossSum = 0;
    for (batches.startEpoch(); batches.next(x, y);) {
      const int64_t s = batches.taken();
      if (options.ranks > 1) {
        if (x.shape()[0] < options.ranks) {
          return makeError("fit: epoch {} step {}: a batch of {} rows leaves rank {} of {} none", epoch, s,
                           x.shape()[0], options.ranks - 1, options.ranks);
        }
        x = shardOf(x, options.rank, options.ranks);
        y = shardOf(y, options.rank, options.ranks);
      }
      Expected<double> loss = step.run(x, y, &outputs);
      if (!loss.ok()) return loss.error().withContext(fmt::format("fit: epoch {} step {}", epoch, s));
      lossSum += *loss;
      summary.examples += x.shape()[0];
      if (options.onStep) {
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        options.onStep(StepProgress{
            .epoch = epoch,
            .step = s,
            .stepsPerEpoch = batches.batchesPerEpoch(),
            .loss = *loss,
            .meanLoss = lossSum / static_cast<double>(s),
            .examples = summary.examples,
            .examplesPerSecond = seconds > 0 ? static_cast<double>(summary.examples) / seconds : 0,
            .inputs = &x,
            .targets = &y,
            .outputs = &outputs,
        });
      }
    }
    summary.meanLoss = batches.taken() > 0 ? lossSum / static_cast<double>(batches.taken()) : 0;
    summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    summaries.push_back(summary);
    if (options.onEpoch) SMELT_CHECK_OK(options.onEpoch(summary));
  }
  return summaries;
}

}  // namespace smelt::nn

// What a long compile says while it runs, at the default log level: nothing for a compile that ends
// within two seconds; after that, a line every few seconds with the stage it is in and how far, and
// one when it is done. A newcomer whose first ResNet compile takes half a minute sees it working.
//   smelt: compiling @step for cuda:0: lowering node 412 of 1210 (2.0 s)
//   smelt: compiling @step for cuda:0: building 96 kernels (NVRTC, or the kernel cache) (4.0 s)
//   smelt: compiled @step for cuda:0 in 5.3 s (96 kernels, 90 from the cache)
// SMELT_LOG=error or off silences it; SMELT_LOG=debug logs every compile anyway.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace smelt {

class CompileProgress {
 public:
  /// Starts watching the compile of `what` ("@step for cuda:0").
  explicit CompileProgress(std::string what, std::chrono::milliseconds quiet = std::chrono::seconds(2));
  /// Stops watching; where it has spoken, says the compile ended, with `summary`.
  ~CompileProgress();
  CompileProgress(const CompileProgress&) = delete;
  CompileProgress& operator=(const CompileProgress&) = delete;

  /// The stage the compile is in now ("lowering node 412 of 1210"). Cheap: a string under a lock.
  void stage(std::string text);
  /// What the closing line adds ("96 kernels, 90 from the cache").
  void summary(std::string text);
  /// Whether it has printed anything (tests).
  bool spoke() const;

 private:
  void watch();

  const std::string what_;
  const std::chrono::milliseconds quiet_;
  const std::chrono::steady_clock::time_point start_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::string stage_, summary_;
  bool done_ = false, spoke_ = false;
  std::thread watcher_;
};

}  // namespace smelt

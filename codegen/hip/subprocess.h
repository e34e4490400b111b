// Runs a helper program with input on stdin, capturing stdout and stderr, under a time limit. Used
// to keep compilers that may crash (HIPRTC) out of smelt's process.
#pragma once

#include "ir/support/expected.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace smelt {

/// What to run.
struct ProcessSpec {
  std::vector<std::string> argv;  ///< argv[0] is the program's path (not searched in PATH)
  std::string input;              ///< written to the child's stdin, which is then closed
  std::chrono::milliseconds timeout{60000};
  /// Variables set (or replaced) in the child's environment; the rest is inherited.
  std::vector<std::pair<std::string, std::string>> environment;
};

/// How it ended.
struct ProcessResult {
  int exit_code = -1;      ///< when it exited normally, else -1
  int signal = 0;          ///< the signal that ended it, else 0
  bool timed_out = false;  ///< killed (SIGKILL) at the time limit
  std::string out;         ///< everything it wrote to stdout
  std::string err;         ///< everything it wrote to stderr
  double wall_ms = 0;
};

/// Spawns spec.argv[0] (posix_spawn) and waits for it. An error means the child could not be
/// started; a crash, a non-zero exit or a timeout is reported in ProcessResult. Thread-safe: the
/// pipes are close-on-exec, so children spawned by other threads do not inherit them. The parent
/// never receives SIGPIPE when the child stops reading early.
Expected<ProcessResult> runProcess(const ProcessSpec& spec);

}  // namespace smelt

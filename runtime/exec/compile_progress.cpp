// See compile_progress.h.
#include "runtime/exec/compile_progress.h"

#include <fmt/format.h>

#include <cstdio>

#include "codegen/log.h"

namespace smelt {

namespace {

bool progressShown() { return logger().should_log(spdlog::level::warn); }

}  // namespace

CompileProgress::CompileProgress(std::string what, std::chrono::milliseconds quiet)
    : what_(std::move(what)), quiet_(quiet), start_(std::chrono::steady_clock::now()) {
  if (progressShown()) watcher_ = std::thread([this] { watch(); });
}

CompileProgress::~CompileProgress() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  if (spoke_) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    fmt::print(stderr, "smelt: compiled {} in {:.1f} s{}\n", what_, seconds,
               summary_.empty() ? "" : " (" + summary_ + ")");
  }
}

void CompileProgress::stage(std::string text) {
  std::lock_guard lock(mutex_);
  stage_ = std::move(text);
}

void CompileProgress::summary(std::string text) {
  std::lock_guard lock(mutex_);
  summary_ = std::move(text);
}

bool CompileProgress::spoke() const {
  std::lock_guard lock(mutex_);
  return spoke_;
}

void CompileProgress::watch() {
  std::unique_lock lock(mutex_);
  auto next = start_ + quiet_;
  while (!wake_.wait_until(lock, next, [this] { return done_; })) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    fmt::print(stderr, "smelt: compiling {}: {} ({:.1f} s)\n", what_, stage_.empty() ? "starting" : stage_, seconds);
    std::fflush(stderr);
    spoke_ = true;
    next += quiet_;
  }
}

}  // namespace smelt

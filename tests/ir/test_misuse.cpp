// Misuse of the value types is loud: reading the value of an Expected that holds an error, or
// building a tensor from the wrong number of values, aborts with a message saying what happened (in
// every build, not only with asserts), instead of a bare abort, an exception, or a silently padded
// tensor. Each case runs in a child process whose stderr and signal are checked.
#include "ir/tensor.h"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <functional>
#include <string>

using namespace smelt;

namespace {

/// What `misuse` wrote to stderr before it aborted, or "" when it did not abort.
std::string abortMessageOf(const std::function<void()>& misuse) {
  int pipeFds[2];
  REQUIRE(pipe(pipeFds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    dup2(pipeFds[1], STDERR_FILENO);
    close(pipeFds[0]);
    misuse();
    _exit(0);
  }
  close(pipeFds[1]);
  std::string out;
  char buffer[512];
  for (ssize_t n; (n = read(pipeFds[0], buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<size_t>(n));
  close(pipeFds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT ? out : "";
}

Expected<int> failing() { return makeError("the file 'weights.bin' is truncated"); }

}  // namespace

TEST_CASE("misuse: the value of an Expected holding an error aborts with that error's message") {
  const std::string message = abortMessageOf([] { (void)*failing(); });
  CHECK(message.find("the file 'weights.bin' is truncated") != std::string::npos);
  CHECK(message.find("Expected that holds an error") != std::string::npos);
  CHECK(abortMessageOf([] { (void)failing().value(); }).find("truncated") != std::string::npos);
  CHECK(abortMessageOf([] { (void)Status::success().error(); }).find("Status that succeeded") != std::string::npos);
  CHECK(abortMessageOf([] { (void)*Expected<int>(3); }).empty());  // a value: no abort
}

TEST_CASE("misuse: Tensor::of and fromDoubles with a wrong number of values abort saying so, never pad or cut") {
  const std::string fewer = abortMessageOf([] { (void)Tensor::of<float>({2, 3}, {1, 2, 3, 4, 5}); });
  CHECK(fewer.find("5 values for f32[2,3] (6 elements)") != std::string::npos);
  CHECK_FALSE(abortMessageOf([] { (void)Tensor::of<int64_t>({2}, {1, 2, 3}); }).empty());
  CHECK(abortMessageOf([] { (void)Tensor::of<int64_t>({2}, {1, 2}); }).empty());
  const std::vector<double> three{1, 2, 3};
  const std::string cut = abortMessageOf([&] { (void)Tensor::fromDoubles(TensorType{DType::f64, {2}}, three); });
  CHECK_MESSAGE(cut.find("Tensor::fromDoubles: 3 values for f64[2] (2 elements)") != std::string::npos, cut);
  CHECK(abortMessageOf([&] { (void)Tensor::fromDoubles(TensorType{DType::i32, {3}}, three); }).empty());
}

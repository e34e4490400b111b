// Helpers shared by the op tests: run IR text on the reference interpreter, get the error that IR text
// which must not parse or verify gives, compare tensors, and build small tensors and one-op graphs.
#pragma once

#include "ir/graph.h"
#include "ir/interpreter.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

namespace smelt::testing {

/// Parses `text`, runs it on the reference interpreter with `feeds` and returns all its outputs. A parse
/// error or a run-time error fails the test (REQUIRE), with the error as the message.
std::vector<Tensor> runOutputs(std::string_view text, const TensorMap& feeds);

/// Like runOutputs, but returns only the first output.
Tensor runFirstOutput(std::string_view text, const TensorMap& feeds);

/// The error that parsing `text` (which verifies every node as it is added) reports. `text` must fail:
/// that is REQUIREd, so IR that parses stops the test.
std::string requireParseError(std::string_view text);

/// The error that parsing `text` (which verifies every node as it is added) reports, or "" if it parses.
std::string parseErrorOrEmpty(std::string_view text);

/// The error that parsing `text` and then verifyGraph on the result report, or "" if neither fails.
std::string verifyErrorOrEmpty(std::string_view text);

/// CHECKs that `actual` matches `expected` within `tolerance` (see compareTensors); the message names
/// the first mismatching element.
void checkClose(const Tensor& actual, const Tensor& expected, double tolerance);

/// checkClose with defaultTolerance(expected.dtype()): 1e-12 for f64, exact for integers.
void checkClose(const Tensor& actual, const Tensor& expected);

/// An f64 tensor of `shape` holding `values`; REQUIREs that there is one value per element.
Tensor f64(Shape shape, const std::vector<double>& values);

/// first, first + scale, first + 2 * scale, ... (0, 1, 2, ... by default) as a tensor of `dtype`.
Tensor iota(DType dtype, Shape shape, double scale = 1.0, double first = 0.0);

/// A one-op graph `%0 = op(%x) {attrs} : result` on one input x of type `in`, returning r = %0.
/// `attrs` goes inside the braces, so "" gives `{}`.
std::string unaryGraph(std::string_view in, std::string_view op, std::string_view attrs, std::string_view result);

}  // namespace smelt::testing

/// CHECKs that IR `text` fails to parse with an error containing `expected`; the failure itself is
/// REQUIREd (see requireParseError). The message is the whole error.
#define CHECK_ERROR(text, expected)                                        \
  do {                                                                     \
    std::string message_ = ::smelt::testing::requireParseError(text);      \
    CHECK_MESSAGE(message_.find(expected) != std::string::npos, message_); \
  } while (0)

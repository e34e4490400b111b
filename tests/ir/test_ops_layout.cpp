// transpose, reshape, flatten, squeeze, unsqueeze, expand: shapes, verifier messages, values checked
// against numpy, and bit-exact data movement for every dtype.
#include "ir/interpreter.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cstring>

using namespace smelt;

using testing::iota;
using testing::parseErrorOrEmpty;
using testing::runFirstOutput;
using testing::unaryGraph;

namespace {

std::vector<int64_t> ints(const Tensor& t) { return t.toInts(); }

}  // namespace

TEST_CASE("transpose: values against numpy, and the empty perm reverses") {
  Tensor x = iota(DType::i32, {2, 3, 4});
  Tensor r = runFirstOutput(unaryGraph("i32[2,3,4]", "transpose", "perm = [1, 2, 0]", "i32[3,4,2]"), {{"x", x}});
  // numpy: np.transpose(np.arange(24).reshape(2,3,4), (1,2,0)).ravel()
  CHECK(ints(r) == std::vector<int64_t>{0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23});
  Tensor rev = runFirstOutput(unaryGraph("i32[2,3,4]", "transpose", "", "i32[4,3,2]"), {{"x", x}});
  // numpy: np.transpose(np.arange(24).reshape(2,3,4)).ravel()
  CHECK(ints(rev) == std::vector<int64_t>{0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23});
}

TEST_CASE("transpose moves bytes exactly: u64 past 2^53 and NaN payloads survive") {
  Tensor u = Tensor::of<uint64_t>({2, 2}, {(uint64_t{1} << 63) + 1, 3, ~uint64_t{0}, (uint64_t{1} << 53) + 1});
  Tensor ru = runFirstOutput(unaryGraph("u64[2,2]", "transpose", "", "u64[2,2]"), {{"x", u}});
  CHECK(ru.data<uint64_t>()[0] == (uint64_t{1} << 63) + 1);
  CHECK(ru.data<uint64_t>()[1] == ~uint64_t{0});
  CHECK(ru.data<uint64_t>()[2] == 3);
  CHECK(ru.data<uint64_t>()[3] == (uint64_t{1} << 53) + 1);
  Tensor f(TensorType{DType::f32, {1, 2}});
  f.data<uint32_t>()[0] = 0x7fc01234u;  // NaN with a payload
  f.data<uint32_t>()[1] = 0xffa00001u;  // signalling-pattern NaN, negative
  Tensor rf = runFirstOutput(unaryGraph("f32[1,2]", "transpose", "", "f32[2,1]"), {{"x", f}});
  CHECK(rf.data<uint32_t>()[0] == 0x7fc01234u);
  CHECK(rf.data<uint32_t>()[1] == 0xffa00001u);
}

TEST_CASE("layout ops round-trip random tensors bit for bit in every dtype") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  for (DType dtype : kAllDTypes) {
    std::string t(dtypeName(dtype));
    CAPTURE(t);
    Tensor x = testing::randomTensor(TensorType{dtype, {2, 3, 4}}, seed);
    // transpose then its inverse, reshape/flatten/squeeze/unsqueeze chains back to the input shape.
    std::string text = fmt::format(R"(graph @t(%x: {0}[2,3,4]) {{
  %0 = transpose(%x) {{perm = [2, 0, 1]}} : {0}[4,2,3]
  %1 = transpose(%0) {{perm = [1, 2, 0]}} : {0}[2,3,4]
  %2 = unsqueeze(%1) {{axes = [1, -1]}} : {0}[2,1,3,4,1]
  %3 = squeeze(%2) : {0}[2,3,4]
  %4 = flatten(%3) {{axis = 2}} : {0}[6,4]
  %5 = reshape(%4) {{shape = [2, -1, 4]}} : {0}[2,3,4]
  %6 = expand(%5) {{shape = [1, 1, 1]}} : {0}[2,3,4]
  return r = %6, mid = %0
}})",
                                   t);
    Graph g = testing::parseOrFail(text);
    auto out = interpret(g, {{"x", x}});
    REQUIRE_MESSAGE(out.ok(), (out.ok() ? "" : out.error().message()));
    CHECK((*out)[0].bitwiseEqual(x));
    // transpose [2,0,1]: result[k,i,j] = x[i,j,k]
    size_t size = dtypeSize(dtype);
    bool same = true;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k)
          same = same && std::memcmp((*out)[1].raw() + ((k * 2 + i) * 3 + j) * size, x.raw() + ((i * 3 + j) * 4 + k) * size,
                                     size) == 0;
    CHECK(same);
  }
}

TEST_CASE("reshape, flatten, squeeze, unsqueeze: result shapes") {
  struct Case {
    const char* in;
    const char* op;
    const char* attrs;
    const char* result;
  };
  const Case cases[] = {
      {"f32[2,3,4]", "reshape", "shape = [-1, 4]", "f32[6,4]"},
      {"f32[2,3,4]", "reshape", "shape = [4, -1, 2]", "f32[4,3,2]"},
      {"f32[2,3,4]", "reshape", "shape = [24]", "f32[24]"},
      {"f32[1]", "reshape", "shape = []", "f32[]"},
      {"f32[]", "reshape", "shape = [1, 1, -1]", "f32[1,1,1]"},
      {"f32[0,3]", "reshape", "shape = [-1, 3]", "f32[0,3]"},
      {"f32[0,3]", "reshape", "shape = [3, 4, 0]", "f32[3,4,0]"},  // a 0 entry is a literal empty dim
      {"f32[2,3,4]", "flatten", "", "f32[2,12]"},
      {"f32[2,3,4]", "flatten", "axis = 0", "f32[1,24]"},
      {"f32[2,3,4]", "flatten", "axis = 3", "f32[24,1]"},
      {"f32[2,3,4]", "flatten", "axis = -1", "f32[6,4]"},
      {"f32[2,3,4]", "flatten", "axis = -3", "f32[1,24]"},
      {"f32[]", "flatten", "axis = 0", "f32[1,1]"},
      {"f32[1,2,1,3,1]", "squeeze", "", "f32[2,3]"},
      {"f32[1,2,1,3,1]", "squeeze", "axes = [-1, 0]", "f32[2,1,3]"},
      {"f32[1]", "squeeze", "", "f32[]"},
      {"f32[2,3]", "unsqueeze", "axes = [0, -1]", "f32[1,2,3,1]"},
      {"f32[2,3]", "unsqueeze", "axes = [1]", "f32[2,1,3]"},
      {"f32[2,3]", "unsqueeze", "axes = [3, 1]", "f32[2,1,3,1]"},
      {"f32[]", "unsqueeze", "axes = [0]", "f32[1]"},
      {"f32[3,1]", "expand", "shape = [2, 1, 4]", "f32[2,3,4]"},
      {"f32[3,1]", "expand", "shape = [3]", "f32[3,3]"},
      {"f32[2,3]", "expand", "shape = [1]", "f32[2,3]"},
      {"f32[1]", "expand", "shape = [0]", "f32[0]"},
  };
  for (const Case& c : cases) {
    std::string text = unaryGraph(c.in, c.op, c.attrs, c.result);
    CAPTURE(text);
    CHECK(parseErrorOrEmpty(text) == "");
  }
}

TEST_CASE("expand: values against numpy broadcasting") {
  Tensor x = Tensor::of<int16_t>({3, 1}, {1, 2, 3});
  Tensor r = runFirstOutput(unaryGraph("i16[3,1]", "expand", "shape = [2, 1, 4]", "i16[2,3,4]"), {{"x", x}});
  // numpy: (np.array([[1],[2],[3]]) * np.ones((2,1,4), int)).ravel()
  CHECK(ints(r) == std::vector<int64_t>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
}

TEST_CASE("layout ops: verifier errors") {
  struct Case {
    const char* in;
    const char* op;
    const char* attrs;
    const char* result;
    const char* expected;
  };
  const Case cases[] = {
      {"f32[2,3,4]", "transpose", "perm = [0, 0, 1]", "f32[2,2,3]",
       "transpose %0: attribute 'perm' must be a permutation of 0..2 for f32[2,3,4], got [0,0,1]"},
      {"f32[2,3,4]", "transpose", "perm = [1, 0]", "f32[3,2]", "must be a permutation of 0..2"},
      {"f32[2,3]", "transpose", "perm = [-1, 0]", "f32[3,2]", "must be a permutation of 0..1"},
      {"f32[2,3]", "transpose", "perm = [9223372036854775807, 0]", "f32[3,2]", "must be a permutation"},
      {"f32[2,3,4]", "reshape", "shape = [5, 5]", "f32[5,5]",
       "reshape %0: cannot reshape f32[2,3,4] (24 elements) to [5,5] (25 elements)"},
      {"f32[2,3,4]", "reshape", "shape = [5, -1]", "f32[5,5]", "24 is not a multiple of 5"},
      {"f32[2,3,4]", "reshape", "shape = [-1, -1]", "f32[24]", "has more than one -1"},
      {"f32[2,3,4]", "reshape", "shape = [0, 24]", "f32[0,24]", "cannot reshape f32[2,3,4] (24 elements) to [0,24] (0 elements)"},
      {"f32[0,3]", "reshape", "shape = [0, -1]", "f32[0,3]", "has a 0 entry, so its -1 cannot be inferred"},
      {"f32[2,3]", "reshape", "shape = [-2, 3]", "f32[2,3]", "entries must be non-negative or a single -1"},
      {"f32[2,3,4]", "reshape", "shape = [-2, -12]", "f32[2,12]", "has entry -2"},
      {"f32[2,3,4]", "reshape", "shape = [1099511627776, 1099511627776, -1]", "f32[24]", "too many elements"},
      {"f32[2,3,4]", "flatten", "axis = 4", "f32[24,1]", "flatten %0: attribute 'axis' 4 is out of range [-3, 3]"},
      {"f32[2,3,4]", "flatten", "axis = -4", "f32[1,24]", "out of range"},
      {"f32[2,3,1]", "squeeze", "axes = [1]", "f32[2,1]", "squeeze %0: cannot squeeze axis 1 of f32[2,3,1]: its size is 3, not 1"},
      {"f32[2,3,1]", "squeeze", "axes = [3]", "f32[2,3]", "axis 3 is out of range for rank 3"},
      {"f32[1,3,1]", "squeeze", "axes = [0, -3]", "f32[3,1]", "axis -3 is repeated"},
      {"f32[2,3]", "unsqueeze", "axes = [0, 0]", "f32[1,1,2,3]", "unsqueeze %0: axis 0 is repeated"},
      {"f32[2,3]", "unsqueeze", "axes = [0, -4]", "f32[1,1,2,3]", "axis -4 is repeated"},
      {"f32[2,3]", "unsqueeze", "axes = [3]", "f32[2,3,1]", "axis 3 is out of range for rank 3"},
      {"f32[2]", "unsqueeze", "axes = [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]", "f32[2]", "rank 18"},
      {"f32[3,2]", "expand", "shape = [4]", "f32[3,4]", "expand %0: cannot expand f32[3,2] to [4]"},
      {"f32[3,1]", "expand", "shape = [-1]", "f32[3,1]", "negative entry -1"},
      {"f32[1,1]", "expand", "shape = [1099511627776, 1099511627776]", "f32[1,1]", "too many elements"},
  };
  for (const Case& c : cases) {
    std::string text = unaryGraph(c.in, c.op, c.attrs, c.result);
    CAPTURE(text);
    std::string message = parseErrorOrEmpty(text);
    CHECK_MESSAGE(message.find(c.expected) != std::string::npos, message);
  }
}

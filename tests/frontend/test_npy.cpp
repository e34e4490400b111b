// .npy reading and writing.
#include "frontend/npy.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

using namespace smelt;

TEST_CASE("npy round-trips every dtype numpy has") {
  for (DType dtype : kAllDTypes) {
    if (dtype == DType::bf16) continue;
    CAPTURE(dtypeName(dtype));
    for (Shape shape : {Shape{}, Shape{5}, Shape{2, 3, 4}, Shape{0, 3}}) {
      Tensor t = testing::randomTensor(TensorType{dtype, shape}, 3);
      auto bytes = serializeNpy(t);
      REQUIRE(bytes.ok());
      CHECK(bytes->size() % 64 == t.byteSize() % 64);
      auto back = parseNpy(*bytes, "test");
      REQUIRE_MESSAGE(back.ok(), (back.ok() ? "" : back.error().message()));
      CHECK(back->bitwiseEqual(t));
    }
  }
}

TEST_CASE("bf16 cannot be written to npy") {
  auto r = serializeNpy(Tensor(TensorType{DType::bf16, {2}}));
  REQUIRE(!r.ok());
  CHECK(r.error().message().find("bf16") != std::string::npos);
}

TEST_CASE("malformed npy bytes give errors, never crashes") {
  Tensor t = testing::randomTensor(TensorType{DType::f32, {3, 4}}, 1);
  std::string good = *serializeNpy(t);
  for (size_t cut = 0; cut < good.size(); ++cut) CHECK(!parseNpy(good.substr(0, cut), "cut").ok());
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  CHECK(parseNpy(fortran, "f").error().message().find("Fortran") != std::string::npos);
  std::string bigEndian = good;
  bigEndian.replace(bigEndian.find("<f4"), 3, ">f4");
  CHECK(parseNpy(bigEndian, "b").error().message().find("big-endian") != std::string::npos);
}

TEST_CASE("npy headers declaring too many dimensions or elements, and files that are not regular, are errors before any allocation") {
  // A version 1.0 file with this shape in its header and 64 bytes of data.
  auto withShape = [](const std::string& shape) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string bytes = "\x93NUMPY";
    bytes += '\x01';
    bytes += '\x00';
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    return parseNpy(bytes + header + std::string(64, '\0'), "h.npy");
  };
  REQUIRE_MESSAGE(withShape("(4, 4)").ok(), withShape("(4, 4)").error().message());
  // 17 dimensions: past the rank limit.
  auto deep = withShape("(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)");
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.error().message().find("h.npy: .npy shape") != std::string::npos);
  // A product that overflows 64 bits (it would wrap to a small byte count).
  auto huge = withShape("(999999999999, 999999999999)");
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().message().find("h.npy: .npy shape") != std::string::npos);
  for (const char* special : {"/dev/zero", "/dev/null", "/tmp"}) {
    auto read = readNpy(special);
    REQUIRE_FALSE(read.ok());
    CHECK(read.error().message().find("not a regular file") != std::string::npos);
  }
}

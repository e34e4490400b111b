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

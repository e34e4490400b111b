// .npy reading and writing, and what every input file reader refuses (IDX, safetensors, models).
#include "frontend/data/idx.h"
#include "frontend/model_loader.h"
#include "frontend/nn/safetensors.h"
#include "frontend/npy.h"
#include "ir/support/input_files.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <random>

using namespace smelt;

TEST_CASE("npy round-trips every dtype, bf16 as ml_dtypes' two-byte void") {
  for (DType dtype : kAllDTypes) {
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

TEST_CASE("npy reads bf16 as numpy with ml_dtypes saves it, and writes it the same way") {
  // np.save of np.array([1.5, -2, 3.25], dtype=ml_dtypes.bfloat16), byte for byte.
  std::string header = "{'descr': '<V2', 'fortran_order': False, 'shape': (3,), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header +
                     std::string("\xc0\x3f\x00\xc0\x50\x40", 6);
  auto t = parseNpy(file, "ml_dtypes");
  REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().message()));
  CHECK(t->type().toString() == "bf16[3]");
  CHECK(t->getDouble(0) == 1.5);
  CHECK(t->getDouble(1) == -2.0);
  CHECK(t->getDouble(2) == 3.25);
  auto again = serializeNpy(*t);
  REQUIRE(again.ok());
  CHECK(*again == file);
  // Other void widths are not bf16.
  std::string wide = file;
  wide.replace(wide.find("<V2"), 3, "<V4");
  CHECK_FALSE(parseNpy(wide, "void4").ok());
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

TEST_CASE("every input file reader refuses devices, FIFOs and folders before reading") {
  std::string fifo = (std::filesystem::temp_directory_path() / fmt::format("smelt_fifo_{}", std::random_device{}())).string();
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // Each would read /dev/zero forever or block on the FIFO if it opened them.
  for (const std::string& path : {std::string("/dev/zero"), fifo, std::string("/tmp")}) {
    CAPTURE(path);
    std::vector<std::string> errors;
    auto note = [&](const auto& result) { errors.push_back(result.ok() ? "<no error>" : result.error().message()); };
    note(readNpy(path));
    note(data::readIdx(path));
    note(nn::loadSafetensors(path));
    note(loadModel(path, {}));
    note(readInputFile(path, "a test file"));
    for (const std::string& e : errors) CHECK_MESSAGE(e.find("not a regular file") != std::string::npos, e);
  }
  std::filesystem::remove(fifo);
}

TEST_CASE("IDX headers whose shape is past smelt's limits are errors before any allocation") {
  auto idx = [](std::vector<uint32_t> dims, size_t dataBytes) {
    std::string bytes = {'\0', '\0', '\x08', static_cast<char>(dims.size())};
    for (uint32_t d : dims) {
      for (int s = 24; s >= 0; s -= 8) bytes += static_cast<char>(d >> s);
    }
    return data::parseIdx(bytes + std::string(dataBytes, '\1'), "h.idx");
  };
  CHECK(idx({2, 3}, 6).ok());
  // 2^32 - 1 per dim, four dims: the product overflows 64 bits and wraps around.
  auto huge = idx({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, 16);
  REQUIRE_FALSE(huge.ok());
  CHECK_MESSAGE(huge.error().message().find("h.idx: IDX shape") != std::string::npos, huge.error().message());
  auto deep = idx(std::vector<uint32_t>(40, 1), 1);
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.error().message().find("rank 40") != std::string::npos);
}

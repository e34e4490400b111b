// See idx.h.
#include "frontend/data/idx.h"

#include "ir/support/input_files.h"

#include <fstream>
#include <span>
#include <vector>

namespace smelt::data {

namespace {

struct IdxType {
  uint8_t code;
  DType dtype;
};
constexpr IdxType kTypes[] = {{0x08, DType::u8}, {0x09, DType::i8}, {0x0B, DType::i16},
                              {0x0C, DType::i32}, {0x0D, DType::f32}, {0x0E, DType::f64}};

uint32_t bigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

Expected<Tensor> readIdx(const std::string& path) {
  SMELT_TRY(std::string bytes, readInputFile(path, "an IDX array"));
  return parseIdx(bytes, path);
}

Expected<Tensor> parseIdx(std::string_view text, std::string_view path) {
  auto bytes = std::span(reinterpret_cast<const unsigned char*>(text.data()), text.size());
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0) return makeError("{}: not an IDX file (bad magic number)", path);
  DType dtype = DType::u8;
  bool known = false;
  for (const IdxType& t : kTypes) {
    if (t.code == bytes[2]) dtype = t.dtype, known = true;
  }
  if (!known) return makeError("{}: unknown IDX element type 0x{:02x}", path, bytes[2]);
  size_t rank = bytes[3];
  if (rank == 0 || bytes.size() < 4 + 4 * rank) return makeError("{}: IDX header truncated (rank {})", path, rank);
  Shape shape;
  for (size_t d = 0; d < rank; ++d) shape.push_back(bigEndian32(&bytes[4 + 4 * d]));
  // Within smelt's limits before the product is used: it could wrap around to the file's size.
  if (Status limits = checkShapeLimits(shape); !limits.ok()) {
    return makeError("{}: IDX shape: {}", path, limits.error().message());
  }
  size_t count = 1;
  for (int64_t d : shape) count *= static_cast<size_t>(d);
  size_t elementBytes = dtypeSize(dtype);
  size_t header = 4 + 4 * rank;
  if (bytes.size() != header + count * elementBytes) {
    return makeError("{}: IDX header says {} elements ({} bytes), the file holds {} bytes after it", path, count,
                     count * elementBytes, bytes.size() - header);
  }
  Tensor t(TensorType{dtype, shape});
  // IDX elements are big-endian; smelt's tensors are this machine's order (little-endian here).
  auto* out = reinterpret_cast<unsigned char*>(t.raw());
  for (size_t i = 0; i < count; ++i) {
    for (size_t b = 0; b < elementBytes; ++b) out[i * elementBytes + b] = bytes[header + i * elementBytes + elementBytes - 1 - b];
  }
  return t;
}

Status writeIdx(const std::string& path, const Tensor& t) {
  uint8_t code = 0;
  for (const IdxType& k : kTypes) {
    if (k.dtype == t.dtype()) code = k.code;
  }
  if (code == 0) return makeError("{}: IDX has no element type for {}", path, dtypeName(t.dtype()));
  std::vector<unsigned char> bytes{0, 0, code, static_cast<unsigned char>(t.rank())};
  for (int64_t d : t.shape()) {
    auto v = static_cast<uint32_t>(d);
    for (int s = 24; s >= 0; s -= 8) bytes.push_back(static_cast<unsigned char>(v >> s));
  }
  size_t elementBytes = dtypeSize(t.dtype());
  const auto* in = reinterpret_cast<const unsigned char*>(t.raw());
  for (int64_t i = 0; i < t.numel(); ++i) {
    for (size_t b = 0; b < elementBytes; ++b) bytes.push_back(in[static_cast<size_t>(i) * elementBytes + elementBytes - 1 - b]);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) return makeError("{}: cannot write the IDX file", path);
  return Status::success();
}

Tensor imagesToFloat(const Tensor& images) {
  Shape shape = images.shape();
  shape.insert(shape.begin() + 1, 1);
  Tensor out(TensorType{DType::f32, shape});
  float* p = out.data<float>();
  for (int64_t i = 0; i < images.numel(); ++i) p[i] = static_cast<float>(images.getDouble(i) / 255.0);
  return out;
}

Tensor labelsToInt64(const Tensor& labels) {
  Tensor out(TensorType{DType::i64, {labels.numel()}});
  for (int64_t i = 0; i < labels.numel(); ++i) out.data<int64_t>()[i] = labels.getInt(i);
  return out;
}

}  // namespace smelt::data

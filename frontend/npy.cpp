// numpy .npy reader and writer. The header is a Python dict literal; we read the three keys numpy
// always writes ('descr', 'fortran_order', 'shape') with a small tolerant scanner.
#include "frontend/npy.h"

#include "ir/support/input_files.h"

#include <fmt/ranges.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace smelt {

namespace {

struct DescrEntry {
  const char* descr;
  DType dtype;
};
// bf16 is ml_dtypes' bfloat16, which numpy saves as two-byte void ('<V2'): arrays of it load back with
// np.load(path).view(ml_dtypes.bfloat16), and a two-byte void array is read as bf16.
const DescrEntry kDescrs[] = {{"f2", DType::f16}, {"f4", DType::f32}, {"f8", DType::f64}, {"i1", DType::i8},
                              {"i2", DType::i16}, {"i4", DType::i32}, {"i8", DType::i64}, {"u1", DType::u8},
                              {"u2", DType::u16}, {"u4", DType::u32}, {"u8", DType::u64}, {"b1", DType::boolean},
                              {"V2", DType::bf16}};

Expected<DType> dtypeFromDescr(const std::string& descr, std::string_view what) {
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '|' || descr[0] == '=')) {
    for (const DescrEntry& e : kDescrs) {
      if (descr.substr(1) == e.descr) return e.dtype;
    }
  }
  if (descr.size() == 3 && descr[0] == '>') return makeError("{}: big-endian data ('{}') is not supported", what, descr);
  return makeError("{}: unsupported numpy dtype '{}'", what, descr);
}

// Finds `'key':` in the header dict and returns the text after it.
Expected<std::string_view> valueAfterKey(std::string_view header, std::string_view key, std::string_view what) {
  std::string quoted1 = fmt::format("'{}'", key);
  std::string quoted2 = fmt::format("\"{}\"", key);
  size_t at = header.find(quoted1);
  size_t len = quoted1.size();
  if (at == std::string_view::npos) {
    at = header.find(quoted2);
    len = quoted2.size();
  }
  if (at == std::string_view::npos) return makeError("{}: .npy header has no '{}'", what, key);
  std::string_view rest = header.substr(at + len);
  size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return makeError("{}: malformed .npy header near '{}'", what, key);
  rest = rest.substr(colon + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest;
}

}  // namespace

Expected<Tensor> parseNpy(std::string_view bytes, std::string_view what) {
  static const char magic[] = "\x93NUMPY";
  if (bytes.size() < 10 || std::memcmp(bytes.data(), magic, 6) != 0) return makeError("{}: not an .npy file", what);
  uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t headerLen = 0;
  size_t headerStart = 0;
  if (major == 1) {
    headerLen = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return makeError("{}: truncated .npy header", what);
    headerLen = 0;
    for (int i = 0; i < 4; ++i) headerLen |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    headerStart = 12;
  } else {
    return makeError("{}: unsupported .npy format version {}", what, major);
  }
  if (headerStart + headerLen > bytes.size()) return makeError("{}: truncated .npy header", what);
  std::string_view header = bytes.substr(headerStart, headerLen);

  SMELT_TRY(std::string_view descrText, valueAfterKey(header, "descr", what));
  if (descrText.empty() || (descrText[0] != '\'' && descrText[0] != '"')) {
    return makeError("{}: unsupported numpy dtype (structured arrays are not supported)", what);
  }
  size_t endQuote = descrText.find(descrText[0], 1);
  if (endQuote == std::string_view::npos) return makeError("{}: malformed .npy header", what);
  SMELT_TRY(DType dtype, dtypeFromDescr(std::string(descrText.substr(1, endQuote - 1)), what));

  SMELT_TRY(std::string_view fortranText, valueAfterKey(header, "fortran_order", what));
  if (fortranText.substr(0, 4) == "True") return makeError("{}: Fortran-order arrays are not supported", what);

  SMELT_TRY(std::string_view shapeText, valueAfterKey(header, "shape", what));
  if (shapeText.empty() || shapeText[0] != '(') return makeError("{}: malformed shape in .npy header", what);
  size_t close = shapeText.find(')');
  if (close == std::string_view::npos) return makeError("{}: malformed shape in .npy header", what);
  Shape shape;
  std::string dims(shapeText.substr(1, close - 1));
  std::stringstream ss(dims);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(" L");
    if (b == std::string::npos) continue;
    size_t e = item.find_last_not_of(" L");
    std::string digits = item.substr(b, e - b + 1);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 12) {
      return makeError("{}: malformed dimension '{}' in .npy header", what, item);
    }
    shape.push_back(std::stoll(digits));
  }
  // Rank and element count within smelt's limits before anything is sized from them (a product that
  // overflows would otherwise wrap to a small byte count).
  if (Status limits = checkShapeLimits(shape); !limits.ok()) {
    return makeError("{}: .npy shape ({}): {}", what, fmt::join(shape, ", "), limits.error().message());
  }
  TensorType type{dtype, shape};
  size_t dataStart = headerStart + headerLen;
  size_t need = type.byteSize();
  if (bytes.size() - dataStart < need) {
    return makeError("{}: truncated .npy data ({} bytes, {} needs {})", what, bytes.size() - dataStart,
                     type.toString(), need);
  }
  return Tensor::fromBytes(type, std::as_bytes(std::span(bytes.data() + dataStart, need)));
}

Expected<Tensor> readNpy(const std::string& path) {
  SMELT_TRY(std::string bytes, readInputFile(path, "an .npy array"));
  return parseNpy(bytes, path);
}

Expected<std::string> serializeNpy(const Tensor& tensor) {
  const char* descr = nullptr;
  for (const DescrEntry& e : kDescrs) {
    if (e.dtype == tensor.dtype()) descr = e.descr;
  }
  if (!descr) return makeError("dtype {} has no numpy equivalent; cast it to f32 first", dtypeName(tensor.dtype()));
  std::string shape;
  for (int64_t d : tensor.shape()) shape += fmt::format("{}, ", d);
  if (tensor.rank() > 1) shape.resize(shape.size() - 2);
  if (tensor.rank() == 1) shape.resize(shape.size() - 1);
  std::string header = fmt::format("{{'descr': '{}{}', 'fortran_order': False, 'shape': ({}), }}",
                                   descr[0] == 'b' || descr[1] == '1' ? "|" : "<", descr, shape);
  // Pad with spaces so the data starts on a 64-byte boundary, ending with a newline.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char*>(tensor.raw()), tensor.byteSize());
  return out;
}

Status writeNpy(const std::string& path, const Tensor& tensor) {
  SMELT_TRY(std::string bytes, serializeNpy(tensor));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return makeError("cannot write '{}'", path);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return makeError("failed writing '{}'", path);
  return Status::success();
}

}  // namespace smelt

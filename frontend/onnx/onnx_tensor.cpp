// TensorProto -> Tensor. Every field is validated (dims, element counts, raw sizes, data types) so a
// garbled model gives an error, never a crash or an out-of-bounds read.
#include "frontend/onnx/onnx_tensor.h"

#include "ir/support/input_files.h"

#include <cstring>
#include <filesystem>
#include <limits>

namespace smelt::onnximport {

namespace {

// Tensors above this many elements are refused: no real model has them, and it keeps every size
// computation far from overflow.
constexpr int64_t kMaxElements = int64_t{1} << 40;

template <typename Field>
Expected<Tensor> fromTypedField(const TensorType& type, const Field& field, std::string_view what,
                                std::string_view fieldName) {
  if (static_cast<int64_t>(field.size()) != type.numel()) {
    return makeError("tensor '{}': {} holds {} values, its shape {} needs {}", what, fieldName, field.size(),
                     shapeToString(type.shape), type.numel());
  }
  Tensor t(type);
  for (int64_t i = 0; i < type.numel(); ++i) {
    if constexpr (std::is_floating_point_v<std::decay_t<decltype(field.Get(0))>>) {
      t.setDouble(i, static_cast<double>(field.Get(static_cast<int>(i))));
    } else {
      t.setInt(i, static_cast<int64_t>(field.Get(static_cast<int>(i))));
    }
  }
  return t;
}

// f16 and bf16 travel as their bit patterns in int32_data.
Expected<Tensor> fromBits16(const TensorType& type, const google::protobuf::RepeatedField<int32_t>& field,
                            std::string_view what) {
  if (static_cast<int64_t>(field.size()) != type.numel()) {
    return makeError("tensor '{}': int32_data holds {} values, its shape {} needs {}", what, field.size(),
                     shapeToString(type.shape), type.numel());
  }
  Tensor t(type);
  for (int64_t i = 0; i < type.numel(); ++i) {
    auto bits = static_cast<uint16_t>(field.Get(static_cast<int>(i)));
    std::memcpy(t.raw() + i * 2, &bits, 2);
  }
  return t;
}

Expected<Tensor> fromRawBytes(const TensorType& type, std::string_view bytes, std::string_view what,
                              std::string_view source) {
  if (bytes.size() != type.byteSize()) {
    return makeError("tensor '{}': {} has {} bytes, {} needs {}", what, source, bytes.size(), type.toString(),
                     type.byteSize());
  }
  SMELT_TRY(Tensor t, Tensor::fromBytes(type, std::as_bytes(std::span(bytes.data(), bytes.size()))));
  if (type.dtype == DType::boolean) {
    // Any nonzero byte is true; normalize so bool storage only ever holds 0 or 1.
    for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = t.data<uint8_t>()[i] != 0;
  }
  return t;
}

// An external tensor's bytes, from a file in the model's folder (resolveInsideFolder refuses any path leaving it).
Expected<Tensor> fromExternal(const TensorType& type, const onnx::TensorProto& proto, const std::string& modelDir,
                              std::string_view what) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  for (const auto& entry : proto.external_data()) {
    auto parseInt = [&](const std::string& s) -> Expected<int64_t> {
      if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) {
        return makeError("tensor '{}': external data '{}' is not a non-negative integer: '{}'", what, entry.key(), s);
      }
      return std::stoll(s);
    };
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset") {
      SMELT_TRY(offset, parseInt(entry.value()));
    } else if (entry.key() == "length") {
      SMELT_TRY(length, parseInt(entry.value()));
    }
  }
  std::string tensorName = fmt::format("tensor '{}'", what);
  SMELT_TRY(std::filesystem::path path, resolveInsideFolder(modelDir, location, tensorName));
  int64_t need = static_cast<int64_t>(type.byteSize());
  if (length >= 0 && length != need) {
    return makeError("tensor '{}': external data length is {} bytes, {} needs {}", what, length, type.toString(),
                     need);
  }
  SMELT_TRY(std::string bytes, readFileRange(path, offset, need, tensorName));
  return fromRawBytes(type, bytes, what, "external data");
}

}  // namespace

Expected<DType> dtypeFromOnnx(int64_t dataType, std::string_view what) {
  switch (dataType) {
    case onnx::TensorProto::FLOAT: return DType::f32;
    case onnx::TensorProto::UINT8: return DType::u8;
    case onnx::TensorProto::INT8: return DType::i8;
    case onnx::TensorProto::UINT16: return DType::u16;
    case onnx::TensorProto::INT16: return DType::i16;
    case onnx::TensorProto::INT32: return DType::i32;
    case onnx::TensorProto::INT64: return DType::i64;
    case onnx::TensorProto::BOOL: return DType::boolean;
    case onnx::TensorProto::FLOAT16: return DType::f16;
    case onnx::TensorProto::DOUBLE: return DType::f64;
    case onnx::TensorProto::UINT32: return DType::u32;
    case onnx::TensorProto::UINT64: return DType::u64;
    case onnx::TensorProto::BFLOAT16: return DType::bf16;
    case onnx::TensorProto::STRING: return makeError("'{}': string tensors are not supported", what);
    case onnx::TensorProto::COMPLEX64:
    case onnx::TensorProto::COMPLEX128: return makeError("'{}': complex tensors are not supported", what);
    default: return makeError("'{}': unknown ONNX data type {}", what, dataType);
  }
}

int32_t onnxFromDType(DType dtype) {
  switch (dtype) {
    case DType::f16: return onnx::TensorProto::FLOAT16;
    case DType::bf16: return onnx::TensorProto::BFLOAT16;
    case DType::f32: return onnx::TensorProto::FLOAT;
    case DType::f64: return onnx::TensorProto::DOUBLE;
    case DType::i8: return onnx::TensorProto::INT8;
    case DType::i16: return onnx::TensorProto::INT16;
    case DType::i32: return onnx::TensorProto::INT32;
    case DType::i64: return onnx::TensorProto::INT64;
    case DType::u8: return onnx::TensorProto::UINT8;
    case DType::u16: return onnx::TensorProto::UINT16;
    case DType::u32: return onnx::TensorProto::UINT32;
    case DType::u64: return onnx::TensorProto::UINT64;
    case DType::boolean: return onnx::TensorProto::BOOL;
  }
  return onnx::TensorProto::UNDEFINED;
}

Expected<Tensor> tensorFromProto(const onnx::TensorProto& proto, const std::string& modelDir, std::string_view what) {
  std::string label = proto.name().empty() ? std::string(what) : proto.name();
  if (!proto.has_data_type()) return makeError("tensor '{}' has no data_type", label);
  SMELT_TRY(DType dtype, dtypeFromOnnx(proto.data_type(), label));
  if (proto.has_segment()) return makeError("tensor '{}': segmented tensors are not supported", label);
  TensorType type{dtype, {}};
  int64_t numel = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0) return makeError("tensor '{}': dimension {} is negative", label, d);
    if (d > 0 && numel > kMaxElements / d) return makeError("tensor '{}': shape is too large", label);
    numel *= d;
    type.shape.push_back(d);
  }
  if (numel > kMaxElements) return makeError("tensor '{}': shape is too large", label);

  if (proto.data_location() == onnx::TensorProto::EXTERNAL) return fromExternal(type, proto, modelDir, label);
  if (proto.data_location() != onnx::TensorProto::DEFAULT) {
    return makeError("tensor '{}': unknown data_location {}", label, static_cast<int>(proto.data_location()));
  }
  if (proto.has_raw_data()) return fromRawBytes(type, proto.raw_data(), label, "raw_data");
  switch (proto.data_type()) {
    case onnx::TensorProto::FLOAT: return fromTypedField(type, proto.float_data(), label, "float_data");
    case onnx::TensorProto::DOUBLE: return fromTypedField(type, proto.double_data(), label, "double_data");
    case onnx::TensorProto::INT64: return fromTypedField(type, proto.int64_data(), label, "int64_data");
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64: return fromTypedField(type, proto.uint64_data(), label, "uint64_data");
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: return fromBits16(type, proto.int32_data(), label);
    case onnx::TensorProto::BOOL: {
      SMELT_TRY(Tensor t, fromTypedField(type, proto.int32_data(), label, "int32_data"));
      for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = t.data<uint8_t>()[i] != 0;
      return t;
    }
    default: return fromTypedField(type, proto.int32_data(), label, "int32_data");
  }
}

}  // namespace smelt::onnximport

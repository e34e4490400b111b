// See safetensors.h. Format: https://github.com/huggingface/safetensors (the header is JSON with one
// entry per tensor: {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]} relative to the byte
// after the header, plus an optional "__metadata__" map of strings).
#include "frontend/nn/safetensors.h"

#include "ir/support/input_files.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>

namespace smelt::nn {

namespace {

constexpr std::pair<DType, const char*> kNames[] = {
    {DType::f16, "F16"}, {DType::bf16, "BF16"}, {DType::f32, "F32"}, {DType::f64, "F64"}, {DType::i8, "I8"},
    {DType::i16, "I16"}, {DType::i32, "I32"},   {DType::i64, "I64"}, {DType::u8, "U8"},   {DType::u16, "U16"},
    {DType::u32, "U32"}, {DType::u64, "U64"},   {DType::boolean, "BOOL"}};

const char* nameOf(DType d) {
  for (const auto& [dtype, name] : kNames) {
    if (dtype == d) return name;
  }
  return "?";
}

std::optional<DType> dtypeNamed(const std::string& s) {
  for (const auto& [dtype, name] : kNames) {
    if (s == name) return dtype;
  }
  return std::nullopt;
}

}  // namespace

Status saveSafetensors(const std::string& path, const StateDict& state, const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const auto& [name, t] : state) {
    header[name] = {{"dtype", nameOf(t.dtype())}, {"shape", t.shape()}, {"data_offsets", {offset, offset + t.byteSize()}}};
    offset += t.byteSize();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned, as the reference writer does
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return makeError("{}: cannot write the checkpoint", tmp);
    uint64_t n = text.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& [name, t] : state) out.write(reinterpret_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.byteSize()));
    out.flush();
    if (!out) return makeError("{}: writing the checkpoint failed", tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return makeError("{}: cannot rename {} over it", path, tmp);
  return Status::success();
}

Expected<StateDict> loadSafetensors(const std::string& path, std::map<std::string, std::string>* metadata) {
  SMELT_TRY(std::string bytes, readInputFile(path, "a safetensors checkpoint"));
  return parseSafetensors(bytes, path, metadata);
}

Expected<StateDict> parseSafetensors(std::string_view bytes, std::string_view path,
                                     std::map<std::string, std::string>* metadata) {
  if (bytes.size() < 8) return makeError("{}: not a safetensors file (shorter than its header length)", path);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(bytes[static_cast<size_t>(i)])} << (8 * i);
  if (n > bytes.size() - 8) return makeError("{}: header length {} runs past the file ({} bytes)", path, n, bytes.size());
  nlohmann::json header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n),
                                                nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) return makeError("{}: the header is not a JSON object", path);
  size_t dataStart = 8 + n, dataBytes = bytes.size() - dataStart;
  StateDict state;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!metadata) continue;
      if (!entry.is_object()) return makeError("{}: __metadata__ is not a map of strings", path);
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) return makeError("{}: __metadata__ entry '{}' is not a string", path, key);
        (*metadata)[key] = value.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets") ||
        !entry["dtype"].is_string() || !entry["shape"].is_array() || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2) {
      return makeError("{}: tensor '{}': its entry needs dtype, shape and data_offsets", path, name);
    }
    std::optional<DType> dtype = dtypeNamed(entry["dtype"].get<std::string>());
    if (!dtype) return makeError("{}: tensor '{}': unsupported dtype {}", path, name, entry["dtype"].dump());
    Shape shape;
    for (const auto& d : entry["shape"]) {
      if (!d.is_number_unsigned()) return makeError("{}: tensor '{}': bad shape {}", path, name, entry["shape"].dump());
      shape.push_back(d.get<int64_t>());
    }
    if (Status limits = checkShapeLimits(shape); !limits.ok()) {
      return makeError("{}: tensor '{}': {}", path, name, limits.error().message());
    }
    const auto& offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      return makeError("{}: tensor '{}': bad data_offsets {}", path, name, offsets.dump());
    }
    auto begin = offsets[0].get<size_t>(), end = offsets[1].get<size_t>();
    TensorType type{*dtype, shape};
    if (begin > end || end > dataBytes || end - begin != type.byteSize()) {
      return makeError("{}: tensor '{}' ({}): data_offsets [{}, {}] do not fit its {} bytes in the file's {}", path,
                       name, type.toString(), begin, end, type.byteSize(), dataBytes);
    }
    SMELT_TRY(Tensor t, Tensor::fromBytes(type, std::span(reinterpret_cast<const std::byte*>(bytes.data()) + dataStart + begin, end - begin)));
    state.emplace(name, std::move(t));
  }
  return state;
}

Status loadInto(StateDict& state, const std::string& path) {
  // An empty state is a model not built yet: taking the file as it is would let the first build initialize,
  // randomly and silently, every parameter the file names otherwise (`module.fc.weight` for `fc.weight`).
  if (state.empty()) {
    return makeError("{}: the model's state is empty (the model has not been built yet), so the checkpoint cannot be "
                     "checked against it: use nn::loadCheckpoint(model, path, inputType), which makes the state "
                     "first, or nn::loadSafetensors(path) to read the file's tensors as they are",
                     path);
  }
  SMELT_TRY(StateDict loaded, loadSafetensors(path));
  {
    for (const auto& [name, t] : state) {
      auto it = loaded.find(name);
      if (it == loaded.end()) return makeError("{}: the checkpoint has no tensor '{}' ({})", path, name, t.type().toString());
      if (!(it->second.type() == t.type())) {
        return makeError("{}: tensor '{}' is {} in the checkpoint, {} in the model", path, name,
                         it->second.type().toString(), t.type().toString());
      }
    }
    for (const auto& [name, t] : loaded) {
      if (!state.count(name)) return makeError("{}: the checkpoint's tensor '{}' ({}) is not in the model", path, name, t.type().toString());
    }
  }
  state = std::move(loaded);
  return Status::success();
}

}  // namespace smelt::nn

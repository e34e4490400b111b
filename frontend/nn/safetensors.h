// Checkpoints in the safetensors format (Hugging Face's: an 8-byte little-endian header length, a
// JSON header naming each tensor's dtype, shape and byte range, then the raw little-endian data), so
// PyTorch (safetensors.torch.load_file) reads what smelt saves and smelt reads what PyTorch saves.
//   SMELT_CHECK_OK(nn::saveSafetensors("digits.safetensors", model.state));
//   SMELT_TRY(nn::LoadReport r, nn::loadCheckpoint(model, "digits.safetensors", inputType));  // checkpoint.h
#pragma once

#include "frontend/nn/graph_context.h"

#include <map>
#include <string>
#include <string_view>

namespace smelt::nn {

/// Writes every tensor of `state` (and `metadata` strings) to `path`, atomically (a temporary file,
/// then a rename).
Status saveSafetensors(const std::string& path, const StateDict& state,
                       const std::map<std::string, std::string>& metadata = {});
/// Every tensor in the file; a clear error for a malformed file (naming the tensor where one is bad).
/// `metadata`, when given, receives the file's "__metadata__" strings.
Expected<StateDict> loadSafetensors(const std::string& path, std::map<std::string, std::string>* metadata = nullptr);
/// The same from the file's bytes; `path` names it in errors.
Expected<StateDict> parseSafetensors(std::string_view bytes, std::string_view path,
                                     std::map<std::string, std::string>* metadata = nullptr);
/// Replaces `state`'s tensors by the file's. The file must hold exactly the tensors `state` has, each
/// of the same dtype and shape; a mismatch, or an empty `state` (a model not built yet: see
/// nn::loadCheckpoint), is an error naming the tensor, and leaves `state` unchanged.
Status loadInto(StateDict& state, const std::string& path);

}  // namespace smelt::nn

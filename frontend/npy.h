// Reading and writing numpy .npy files (format versions 1.0 to 3.0, little-endian, C order).
#pragma once

#include "ir/tensor.h"

#include <string>

namespace smelt {

/// Reads an .npy file. Fortran order, big-endian data, object arrays and unknown dtypes are errors.
Expected<Tensor> readNpy(const std::string& path);
/// Parses .npy bytes; `what` names the source in errors.
Expected<Tensor> parseNpy(std::string_view bytes, std::string_view what);
/// Writes `tensor` as an .npy file. bf16 has no numpy dtype and is an error.
Status writeNpy(const std::string& path, const Tensor& tensor);
/// The .npy bytes of `tensor`.
Expected<std::string> serializeNpy(const Tensor& tensor);

}  // namespace smelt

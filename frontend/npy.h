// Reading and writing numpy .npy files (format versions 1.0 to 3.0, little-endian, C order).
#pragma once

#include "ir/tensor.h"

#include <string>

namespace smelt {

/// Reads an .npy file. Fortran order, big-endian data, object arrays and unknown dtypes are errors. bf16
/// is ml_dtypes' bfloat16 as numpy saves it, two-byte void ('<V2'), and is written that way:
/// np.load(path).view(ml_dtypes.bfloat16) reads it back.
Expected<Tensor> readNpy(const std::string& path);
/// Parses .npy bytes; `what` names the source in errors.
Expected<Tensor> parseNpy(std::string_view bytes, std::string_view what);
/// Writes `tensor` as an .npy file.
Status writeNpy(const std::string& path, const Tensor& tensor);
/// The .npy bytes of `tensor`.
Expected<std::string> serializeNpy(const Tensor& tensor);

}  // namespace smelt

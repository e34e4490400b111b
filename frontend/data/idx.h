// MNIST's IDX files: a big-endian header (0, 0, type code, rank; then each dim as u32) and the
// elements, row-major. Read as they are (u8 images and labels, or any IDX element type), then
// converted for training.
//   SMELT_TRY(Tensor images, readIdx("data/digits/train-images-idx3-ubyte"));   // u8 [N, 8, 8]
//   Tensor x = imagesToFloat(images);                                              // f32 [N, 1, 8, 8] in [0, 1]
#pragma once

#include "ir/support/expected.h"
#include "ir/tensor.h"

#include <string>
#include <string_view>

namespace smelt::data {

/// The file's tensor (u8, i8, i16, i32, f32 or f64 by its type code); a clear error naming the file
/// for a bad magic number, an unknown type, or a size that does not match the header.
Expected<Tensor> readIdx(const std::string& path);
/// The same from the file's bytes; `path` names it in errors.
Expected<Tensor> parseIdx(std::string_view bytes, std::string_view path);
/// Writes `t` (u8, i8, i16, i32, f32 or f64) as an IDX file.
Status writeIdx(const std::string& path, const Tensor& t);

/// u8 images [N, H, W] as f32 [N, 1, H, W] scaled to [0, 1] (divided by 255).
Tensor imagesToFloat(const Tensor& images);
/// Labels of any integer dtype as i64 [N].
Tensor labelsToInt64(const Tensor& labels);

}  // namespace smelt::data

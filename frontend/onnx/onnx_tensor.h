// ONNX TensorProto <-> smelt Tensor: element types, the typed and raw data fields, and external data
// files (read only from the model's own folder).
#pragma once

#include "ir/tensor.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <string_view>

namespace smelt::onnximport {

/// The smelt dtype of an ONNX TensorProto.DataType; `what` names the tensor or value in errors.
Expected<DType> dtypeFromOnnx(int64_t dataType, std::string_view what);
/// The ONNX TensorProto.DataType of a smelt dtype.
int32_t onnxFromDType(DType dtype);

/// Converts a TensorProto. `modelDir` is the only folder external data may be read from.
Expected<Tensor> tensorFromProto(const onnx::TensorProto& proto, const std::string& modelDir,
                                 std::string_view what);

}  // namespace smelt::onnximport

// Index arithmetic shared by the converters that compose indexing ops from `gather` and `scatter_add` (ArgMax,
// GatherElements, ScatterElements, GatherND, ScatterND, TopK, Resize, the recurrent ops): index tensors built at import
// time and the flat offsets that turn an element-wise index into a numpy-take index on a flattened view.
#pragma once

#include "frontend/onnx/onnx_context.h"

namespace smelt::onnximport {

/// i64 tensor of `rank` dims, size `dim` along `axis` and 1 elsewhere, holding 0..dim-1.
Tensor iota(int64_t rank, int64_t axis, int64_t dim);

/// `idx` as i64 with negative entries counted from the end of a dimension of size `dim`.
Expected<Value*> wrapIndices(NodeContext& n, Value* idx, int64_t dim);

/// `value` (a scalar of `dtype`) broadcast to `shape` without folding it into a large constant.
Expected<Value*> filled(NodeContext& n, DType dtype, double value, const Shape& shape);

/// Flat offsets into `data` (rank r, static shape) for an ONNX element-wise index along `axis`: indices (rank r, each
/// dimension other than `axis` at most the data's) -> i64 of indices' shape holding wrap(indices) * stride[axis] + the
/// flat offset of the element's other coordinates.
Expected<Value*> elementOffsets(NodeContext& n, Value* data, Value* indices, int64_t axis);

/// GatherElements: out[i] = data[i with i[axis] replaced by indices[i]].
Expected<Value*> gatherElements(NodeContext& n, Value* data, Value* indices, int64_t axis);

/// The index of the first (or last) max (or min) along `axis`, as i64.
Expected<Value*> argExtreme(NodeContext& n, Value* x, int64_t axis, bool isMax, bool last, bool keepdims);

}  // namespace smelt::onnximport

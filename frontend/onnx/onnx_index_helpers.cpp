// Index arithmetic for the composed indexing converters (onnx_index_helpers.h).
#include "frontend/onnx/onnx_index_helpers.h"

namespace smelt::onnximport {

Tensor iota(int64_t rank, int64_t axis, int64_t dim) {
  Shape shape(static_cast<size_t>(rank), 1);
  shape[axis] = dim;
  Tensor t(TensorType{DType::i64, shape});
  for (int64_t i = 0; i < dim; ++i) t.setInt(i, i);
  return t;
}

Expected<Value*> wrapIndices(NodeContext& n, Value* idx, int64_t dim) {
  if (idx->dtype() != DType::i64) {
    SMELT_TRY(idx, n.emit("cast", {idx}, {{"to", std::string("i64")}}));
  }
  SMELT_TRY(Value * neg, n.emit("lt", {idx, n.scalar(DType::i64, 0)}));
  SMELT_TRY(Value * plus, n.emit("add", {idx, n.scalar(DType::i64, static_cast<double>(dim))}));
  return n.emit("where", {neg, plus, idx});
}

Expected<Value*> filled(NodeContext& n, DType dtype, double value, const Shape& shape) {
  return n.emit("expand", {n.scalar(dtype, value)}, {{"shape", std::vector<int64_t>(shape.begin(), shape.end())}});
}

Expected<Value*> elementOffsets(NodeContext& n, Value* data, Value* indices, int64_t axis) {
  int64_t rank = data->type().rank();
  if (indices->type().rank() != rank) {
    return makeError("indices must have the data's rank {}, got {}", rank, indices->type().toString());
  }
  if (!data->type().isStatic() || !indices->type().isStatic()) {
    return makeError("data {} and indices {} must have static shapes", data->type().toString(),
                     indices->type().toString());
  }
  std::vector<int64_t> strides = contiguousStrides(data->shape());
  const Shape& ishape = indices->shape();
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis && ishape[d] > data->shape()[d]) {
      return makeError("indices dimension {} is {}, larger than the data's {}", d, ishape[d], data->shape()[d]);
    }
  }
  // The flat offset of each index element's coordinates other than `axis`: a constant.
  Tensor offsets(TensorType{DType::i64, ishape});
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  for (int64_t flat = 0; flat < offsets.numel(); ++flat) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d) off += d == axis ? 0 : index[d] * strides[d];
    offsets.setInt(flat, off);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < ishape[d]) break;
      index[d] = 0;
    }
  }
  SMELT_TRY(Value * idx, wrapIndices(n, indices, data->shape()[axis]));
  SMELT_TRY(Value * scaled, n.emit("mul", {idx, n.scalar(DType::i64, static_cast<double>(strides[axis]))}));
  return n.emit("add", {scaled, n.constant(std::move(offsets))});
}

Expected<Value*> gatherElements(NodeContext& n, Value* data, Value* indices, int64_t axis) {
  SMELT_TRY(Value * flatIdx, elementOffsets(n, data, indices, axis));
  SMELT_TRY(Value * flatData, n.emit("reshape", {data}, {{"shape", std::vector<int64_t>{data->type().numel()}}}));
  return n.emit("gather", {flatData, flatIdx}, {{"axis", int64_t{0}}});
}

Expected<Value*> argExtreme(NodeContext& n, Value* x, int64_t axis, bool isMax, bool last, bool keepdims) {
  int64_t dim = x->shape()[axis];
  AttrMap keep{{"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t{1}}};
  SMELT_TRY(Value * m, n.emit(isMax ? "reduce_max" : "reduce_min", {x}, keep));
  SMELT_TRY(Value * hit, n.emit("eq", {x, m}));
  Value* positions = n.constant(iota(x->type().rank(), axis, dim));
  SMELT_TRY(Value * cand,
            n.emit("where", {hit, positions, n.scalar(DType::i64, last ? -1.0 : static_cast<double>(dim))}));
  AttrMap red{{"axes", std::vector<int64_t>{axis}}, {"keepdims", keepdims ? int64_t{1} : 0}};
  return n.emit(last ? "reduce_max" : "reduce_min", {cand}, red);
}

}  // namespace smelt::onnximport

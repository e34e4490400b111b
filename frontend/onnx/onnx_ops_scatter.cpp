// ScatterElements (and opset 9's Scatter), ScatterND, GatherND and ReverseSequence, composed from `gather`,
// `scatter_add` and `scatter_reduce` on a flattened view of the data: an element-wise index becomes a flat offset (elementOffsets), an N-D
// index tuple a row of the data reshaped to [rows] + trailing dims. Being compositions they run on every backend and
// are differentiable where gather and scatter_add are.
#include "frontend/onnx/onnx_index_helpers.h"

namespace smelt::onnximport {

namespace {

// How a scatter combines an update with the data it lands on: replace ("none"), add, mul, max, min.
Expected<std::string> scatterReduction(NodeContext& n) {
  std::string r = n.attrString("reduction", "none");
  if (r == "none" || r == "add" || r == "mul" || r == "max" || r == "min") return r;
  return makeError("reduction '{}' is not one of none, add, mul, max, min", r);
}

// `data` (rows along axis 0) with `updates` scattered at `rows` (numpy take indices along axis 0): added
// (scatter_add), multiplied in or compared (scatter_reduce), or replacing the rows they land on ("none"; ONNX leaves
// repeated indices undefined, and here they sum).
Expected<Value*> scatterRows(NodeContext& n, Value* data, Value* rows, Value* updates, const std::string& how) {
  if (how == "add") return n.emit("scatter_add", {data, rows, updates}, {{"axis", int64_t{0}}});
  if (how != "none") {
    return n.emit("scatter_reduce", {data, rows, updates}, {{"axis", int64_t{0}}, {"reduction", how}});
  }
  SMELT_TRY(Value * zeros, filled(n, data->dtype(), 0.0, data->shape()));
  SMELT_TRY(Value * scattered, n.emit("scatter_add", {zeros, rows, updates}, {{"axis", int64_t{0}}}));
  // Which rows some update lands on: a count per row, scattered like the updates.
  SMELT_TRY(Value * noHits, filled(n, DType::i32, 0.0, Shape{data->shape()[0]}));
  SMELT_TRY(Value * ones, filled(n, DType::i32, 1.0, rows->shape()));
  SMELT_TRY(Value * hits, n.emit("scatter_add", {noHits, rows, ones}, {{"axis", int64_t{0}}}));
  SMELT_TRY(Value * hit, n.emit("gt", {hits, n.scalar(DType::i32, 0)}));
  std::vector<int64_t> trailing;
  for (int64_t d = 1; d < data->type().rank(); ++d) trailing.push_back(d);
  if (!trailing.empty()) {
    SMELT_TRY(hit, n.emit("unsqueeze", {hit}, {{"axes", trailing}}));
  }
  return n.emit("where", {hit, scattered, data});
}

Status scatterElements(NodeContext& n) {
  SMELT_TRY(Value * data, n.input(0));
  SMELT_TRY(Value * indices, n.input(1));
  SMELT_TRY(Value * updates, n.input(2));
  SMELT_TRY(int64_t axis, normalizeAxis(n.attrInt("axis", 0), data->type().rank()));
  if (updates->shape() != indices->shape()) {
    return makeError("updates {} must have the indices' shape {}", updates->type().toString(),
                     indices->type().toString());
  }
  SMELT_TRY(std::string how, scatterReduction(n));
  SMELT_TRY(Value * offsets, elementOffsets(n, data, indices, axis));
  SMELT_TRY(Value * flat, n.emit("reshape", {data}, {{"shape", std::vector<int64_t>{data->type().numel()}}}));
  SMELT_TRY(Value * out, scatterRows(n, flat, offsets, updates, how));
  SMELT_TRY(Value * y, n.emit("reshape", {out}, {{"shape", data->shape()}}));
  return n.setOutput(0, y);
}

// An N-D index tuple indices[..., 0:k] addressing data's first k dims (after `batchDims` leading dims both share), as
// the row of data reshaped to [rows] + data.shape[batchDims + k:].
struct RowIndex {
  Value* rows = nullptr;   // i64, indices.shape[:-1]
  Value* table = nullptr;  // the data reshaped to [rows] + trailing dims
};

Expected<RowIndex> rowIndex(NodeContext& n, Value* data, Value* indices, int64_t batchDims) {
  const TensorType& dt = data->type();
  const TensorType& it = indices->type();
  if (!dt.isStatic() || !it.isStatic()) {
    return makeError("data {} and indices {} must have static shapes", dt.toString(), it.toString());
  }
  if (it.rank() < 1) return makeError("indices must have rank >= 1, got a scalar");
  int64_t k = it.shape.back();
  if (batchDims < 0 || batchDims >= std::min(dt.rank(), it.rank())) {
    return makeError("batch_dims {} must be in [0, min(data rank, indices rank))", batchDims);
  }
  if (k < 1 || batchDims + k > dt.rank()) {
    return makeError(
        "indices' last dimension {} must be in [1, data rank {} - "
        "batch_dims {}]",
        k, dt.rank(), batchDims);
  }
  for (int64_t d = 0; d < batchDims; ++d) {
    if (it.shape[d] != dt.shape[d]) {
      return makeError("batch dimension {} differs: data {} and indices {}", d, dt.toString(), it.toString());
    }
  }
  // Each index column wrapped by its own dimension, then weighted by the row stride of that dimension.
  Tensor dims(TensorType{DType::i64, {k}});
  Tensor strides(TensorType{DType::i64, {k}});
  int64_t rowsPerBatch = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    dims.setInt(j, dt.shape[batchDims + j]);
    strides.setInt(j, rowsPerBatch);
    rowsPerBatch *= dt.shape[batchDims + j];
  }
  Value* idx = indices;
  if (idx->dtype() != DType::i64) {
    SMELT_TRY(idx, n.emit("cast", {idx}, {{"to", std::string("i64")}}));
  }
  SMELT_TRY(Value * neg, n.emit("lt", {idx, n.scalar(DType::i64, 0)}));
  SMELT_TRY(Value * plus, n.emit("add", {idx, n.constant(std::move(dims))}));
  SMELT_TRY(Value * wrapped, n.emit("where", {neg, plus, idx}));
  SMELT_TRY(Value * weighted, n.emit("mul", {wrapped, n.constant(std::move(strides))}));
  AttrMap lastAxis{{"axes", std::vector<int64_t>{it.rank() - 1}}, {"keepdims", int64_t{0}}};
  SMELT_TRY(Value * rows, n.emit("reduce_sum", {weighted}, lastAxis));
  int64_t batches = 1;
  for (int64_t d = 0; d < batchDims; ++d) batches *= dt.shape[d];
  if (batchDims > 0) {
    // Batch b's rows start at b * rowsPerBatch: an offset per leading index of the rows tensor.
    Shape offShape(rows->shape().begin(), rows->shape().end());
    for (size_t d = static_cast<size_t>(batchDims); d < offShape.size(); ++d) offShape[d] = 1;
    Tensor offsets(TensorType{DType::i64, offShape});
    for (int64_t b = 0; b < batches; ++b) offsets.setInt(b, b * rowsPerBatch);
    SMELT_TRY(rows, n.emit("add", {rows, n.constant(std::move(offsets))}));
  }
  std::vector<int64_t> tableShape{batches * rowsPerBatch};
  for (int64_t d = batchDims + k; d < dt.rank(); ++d) tableShape.push_back(dt.shape[d]);
  SMELT_TRY(Value * table, n.emit("reshape", {data}, {{"shape", tableShape}}));
  return RowIndex{rows, table};
}

Status gatherND(NodeContext& n) {
  SMELT_TRY(Value * data, n.input(0));
  SMELT_TRY(Value * indices, n.input(1));
  int64_t batchDims = n.attrInt("batch_dims", 0);
  SMELT_TRY(RowIndex r, rowIndex(n, data, indices, batchDims));
  SMELT_TRY(Value * y, n.emit("gather", {r.table, r.rows}, {{"axis", int64_t{0}}}));
  return n.setOutput(0, y);  // indices.shape[:-1] + data.shape[batch_dims + k:], as ONNX's
}

Status scatterND(NodeContext& n) {
  SMELT_TRY(Value * data, n.input(0));
  SMELT_TRY(Value * indices, n.input(1));
  SMELT_TRY(Value * updates, n.input(2));
  SMELT_TRY(std::string how, scatterReduction(n));
  SMELT_TRY(RowIndex r, rowIndex(n, data, indices, 0));
  Shape expected(r.rows->shape().begin(), r.rows->shape().end());
  for (size_t d = 1; d < r.table->shape().size(); ++d) expected.push_back(r.table->shape()[d]);
  if (updates->shape() != expected) {
    return makeError("updates {} must be indices.shape[:-1] + data.shape[k:] = {}", updates->type().toString(),
                     TensorType{updates->dtype(), expected}.toString());
  }
  SMELT_TRY(Value * out, scatterRows(n, r.table, r.rows, updates, how));
  SMELT_TRY(Value * y, n.emit("reshape", {out}, {{"shape", data->shape()}}));
  return n.setOutput(0, y);
}

// ReverseSequence: along time_axis, each batch entry's first sequence_lens[b] steps reversed and the rest kept:
// GatherElements with index t < len ? len - 1 - t : t.
Status reverseSequence(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * lens, n.input(1));
  int64_t rank = x->type().rank();
  int64_t timeAxis = n.attrInt("time_axis", 0), batchAxis = n.attrInt("batch_axis", 1);
  if (rank < 2 || !((timeAxis == 0 && batchAxis == 1) || (timeAxis == 1 && batchAxis == 0))) {
    return makeError("needs rank >= 2 with time_axis, batch_axis one of (0, 1) and (1, 0); got rank {}, {} and {}",
                     rank, timeAxis, batchAxis);
  }
  if (!x->type().isStatic()) return makeError("the input {} must be static", x->type().toString());
  int64_t batch = x->shape()[batchAxis];
  if (lens->shape() != Shape{batch}) {
    return makeError("sequence_lens {} must be [{}] (the batch)", lens->type().toString(), batch);
  }
  SMELT_TRY(Value * len, n.emit("cast", {lens}, {{"to", std::string("i64")}}));
  Shape lenShape(static_cast<size_t>(rank), 1);
  lenShape[batchAxis] = batch;
  SMELT_TRY(len, n.emit("reshape", {len}, {{"shape", lenShape}}));
  Value* t = n.constant(iota(rank, timeAxis, x->shape()[timeAxis]));
  SMELT_TRY(Value * inside, n.emit("lt", {t, len}));
  SMELT_TRY(Value * lastStep, n.emit("sub", {len, n.scalar(DType::i64, 1)}));
  SMELT_TRY(Value * mirrored, n.emit("sub", {lastStep, t}));
  SMELT_TRY(Value * idx, n.emit("where", {inside, mirrored, t}));
  SMELT_TRY(Value * full, n.emit("expand", {idx}, {{"shape", x->shape()}}));
  SMELT_TRY(Value * y, gatherElements(n, x, full, timeAxis));
  return n.setOutput(0, y);
}

}  // namespace

void addScatterConverters(ConverterTable& t) {
  t["ReverseSequence"] = reverseSequence;
  t["ScatterElements"] = scatterElements;
  t["Scatter"] = scatterElements;  // opset 9-10: ScatterElements without reduction
  t["ScatterND"] = scatterND;
  t["GatherND"] = gatherND;
}

}  // namespace smelt::onnximport

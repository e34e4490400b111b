// The CPU's vendor products (GemmPlan, runtime/exec/gemm_plan.h): BLAS calls (oneDNN, OpenBLAS), and
// around them the convolutions' column matrices (im2col, im2row) and scatters (col2im).
//   if (auto plan = planGemm(node, &blas::available)) { preferUntransposedB(*plan); runGemm(*plan, ...); }
#pragma once

#include "runtime/exec/gemm_plan.h"

namespace smelt {

/// Makes `plan` transpose a transposed B itself (into a k x n columns buffer) before an untransposed
/// product, where that measured faster: f32 on oneDNN, one batch item, 512 rows or more. A linear
/// layer's x W^T at 512x2048x2048 took 11.7 ms with the transposed sgemm, 8.9 ms untransposed plus ~1 ms
/// to transpose; at 256 rows the transpose costs more than it saves.
void preferUntransposedB(GemmPlan& plan);

/// alpha * op(a) op(b) for every batch item (or the convolution without its bias) into `product`;
/// `operands` are the node's operand buffers, `columns` a buffer of plan.columnElements.
void runGemm(const GemmPlan& plan, char* const* operands, char* product, char* columns);

}  // namespace smelt

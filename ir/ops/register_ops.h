// The op registration functions, one per file in ir/ops. A new op goes into the file of its family;
// a new family adds its file here, to register_all.cpp and to ir/CMakeLists.txt.
#pragma once

namespace smelt {

class OpRegistry;

void registerConstantOps(OpRegistry& registry);       // constant
void registerUnaryOps(OpRegistry& registry);          // exp, log, relu, ...
void registerBinaryOps(OpRegistry& registry);         // add, mul, eq, and, ...
void registerElementwiseMiscOps(OpRegistry& registry);  // where, clip, cast
void registerReductionOps(OpRegistry& registry);      // reduce_sum, ..., softmax, log_softmax
void registerLinalgOps(OpRegistry& registry);         // matmul, gemm
void registerLayoutOps(OpRegistry& registry);         // transpose, reshape, flatten, squeeze, unsqueeze, expand
void registerSlicingOps(OpRegistry& registry);        // concat, slice, pad
void registerGatherScatterOps(OpRegistry& registry);  // gather, scatter_add, scatter_reduce
void registerConvOps(OpRegistry& registry);           // conv2d, conv_transpose2d, locally_connected2d
void registerPoolingOps(OpRegistry& registry);        // max_pool2d, avg_pool2d, global pools
void registerNormalizationOps(OpRegistry& registry);  // batch_norm, batch_norm_train, layer_norm
void registerSamplingOps(OpRegistry& registry);       // grid_sample, affine_grid
void registerGraphOps(OpRegistry& registry);          // rbf_kernel, graph_conv
void registerRandomOps(OpRegistry& registry);         // dropout
void registerFusedOps(OpRegistry& registry);          // fused (kernels made by the fusion pass)
void registerCollectiveOps(OpRegistry& registry);     // all_reduce

/// Registers every op above.
void registerAllOps(OpRegistry& registry);

}  // namespace smelt

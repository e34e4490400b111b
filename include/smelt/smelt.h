// smelt's public API in one header: graphs and tensors (ir/), the reference interpreter, gradients
// (GradientTape), the pass pipeline, compiled executables on any device, devices and device-resident
// tensors, placement, model loading (IR text, ONNX, .npy) and ONNX export, the
// model API (layers, losses, optimizers, training steps, checkpoints) and IDX data. An installed
// smelt (`cmake --install`) is used as
//   find_package(smelt REQUIRED)
//   target_link_libraries(app PRIVATE smelt::smelt)
//   #include <smelt/smelt.h>
// None of these headers exposes LLVM, ONNX or protobuf.
#pragma once

#include "autodiff/gradient_tape.h"
#include "frontend/data/idx.h"
#include "frontend/model_loader.h"
#include "frontend/nn/attention.h"
#include "frontend/nn/batches.h"
#include "frontend/nn/fit.h"
#include "frontend/nn/data_parallel.h"
#include "frontend/nn/checkpoint.h"
#include "frontend/nn/imported.h"
#include "frontend/nn/init.h"
#include "frontend/nn/layers.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/models.h"
#include "frontend/nn/optimizers.h"
#include "frontend/nn/progress.h"
#include "frontend/nn/safetensors.h"
#include "frontend/nn/train_step.h"
#include "frontend/npy.h"
#include "frontend/onnx/onnx_export.h"
#include "ir/builder.h"
#include "ir/collective.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/tensor.h"
#include "passes/pass_manager.h"
#include "runtime/device/device_list.h"
#include "runtime/distributed/mpi_group.h"
#include "runtime/device/device_tensor.h"
#include "runtime/exec/executable.h"
#include "runtime/exec/working_memory.h"
#include "runtime/placement/placement.h"

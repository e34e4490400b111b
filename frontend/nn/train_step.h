// A model's training step compiled once: the forward pass, the loss, its gradients (GradientTape, as
// more IR in the same graph) and the optimizer's updates, in one graph and one executable, then run
// per batch, on any device. Parameters and optimizer state stay where the step runs between steps:
// on the CPU in the model's StateDict (fed to the executable in place; each step's new values land in
// spare tensors that are then swapped in, or are written over the old ones), on a GPU or OpenCL device
// as device tensors updated in place there, so a step moves the batch in and the loss out and nothing
// else.
//   nn::Model model(net, /*seed=*/1);
//   SMELT_TRY(auto step, nn::TrainStep::create(model, nn::crossEntropy, nn::adam({}), inputType, labelType,
//                                              {.device = "cuda"}));
//   SMELT_TRY(double loss, step->run(images, labels));
//   SMELT_TRY(DeviceTensor pending, step->runAsync(imagesOnGpu, labelsOnGpu));  // no wait for the device
//   SMELT_TRY(auto predict, nn::Predictor::create(model, testInputType, {.device = "cuda"}));
//   SMELT_CHECK_OK(nn::saveSafetensors(path, model.hostState()));   // the state back on the host
#pragma once

#include "frontend/nn/data_parallel.h"
#include "frontend/nn/layers.h"
#include "frontend/nn/optimizers.h"
#include "passes/index_checks.h"
#include "runtime/device/device_tensor.h"
#include "runtime/exec/executable.h"

#include <functional>
#include <map>
#include <memory>
#include <string_view>

namespace smelt::nn {

/// A network and its state (parameters, buffers, optimizer state), made on first use from `seed`.
/// The state lives on the host (`state`) and, once a step or predictor runs on a device, on that
/// device too; each copy knows whether it is current. Training on a device leaves `state` behind
/// until hostState() (or a CPU step or predictor) copies it back; a caller that writes `state` itself
/// (a loaded checkpoint) calls stateChanged() so a device copy is made again.
struct Model {
  explicit Model(ModulePtr network, uint64_t seed = 0) : net(std::move(network)), seed(seed) {}
  ModulePtr net;
  StateDict state;
  uint64_t seed;
  /// Parameters only (no optimizer state): their count of elements.
  int64_t parameterCount() const;

  /// The state on the host, copied back from the device first if training there changed it.
  Expected<const StateDict*> syncedHostState();
  /// The same for callers that cannot fail gracefully; an error leaves `state` as it was, logged.
  const StateDict& hostState();
  /// The state on `device` (every entry of `state`), uploaded first where the device's copy is not
  /// current. The entries are shared: a step on the device updates them in place.
  Expected<DeviceTensorMap*> stateOn(const std::shared_ptr<Device>& device);
  /// Says that `state` was written on the host: a device copy is made again before its next use.
  void stateChanged();
  /// Says that the device copy was written (by a step there): `state` is stale until synced. `stepDone`
  /// when the step has finished on the device (it then counts in unsyncedSteps()).
  void deviceStateChanged(bool stepDone = true) {
    hostCurrent_ = false;
    if (stepDone) ++unsyncedSteps_;
  }
  /// Steps taken on the device since `state` was last current (what losing the device would lose).
  int64_t unsyncedSteps() const { return unsyncedSteps_; }
  /// Says that the device holding the state was lost: its copy is dropped, and `state`, as last
  /// synced, is the model's state again (the steps since are lost: unsyncedSteps() before the call).
  void deviceStateLost();

 private:
  std::shared_ptr<Device> stateDevice_;
  DeviceTensorMap deviceState_;
  bool hostCurrent_ = true;
  bool deviceCurrent_ = false;
  int64_t unsyncedSteps_ = 0;
};

using LossFn = std::function<Value*(GraphContext& ctx, Value* output, Value* target)>;

struct TrainStepOptions {
  /// Where the step runs: "cpu" (or "llvm"), "opencl", "cuda[:N]", "hip[:N]", "auto" (measured
  /// placement); empty: compile.device, else setDefaultDevice()'s, else $SMELT_DEVICE, else the CPU.
  std::string device;
  /// Gradients scaled to this global L2 norm at most (0: no clipping).
  double clipNorm = 0;
  /// Learning rate by step; empty: the optimizer's own, constant.
  Schedule schedule;
  /// Data-parallel training over the process's collective group (frontend/nn/data_parallel.h): gradients
  /// averaged over the ranks before clipping and the update, the state broadcast from rank 0 at creation.
  DistributedOptions distributed;
  /// The dtype products and convolutions compute in: f32, or bf16 for mixed precision as PyTorch's autocast (the
  /// parameters and optimizer state stay f32 masters; products, forward and backward, run in bf16; everything
  /// else in f32; Builder::setAutocast). f16 needs loss scaling, which is not built: an error.
  DType precision = DType::f32;
  /// Gradient accumulation: the optimizer updates once every `accumulate` runs, from the mean of their
  /// gradients (kept in the state as "accum.<parameter>"); the runs before run a step without the update, and a
  /// data-parallel step communicates only in the updating one. A run's batch is then a micro-batch.
  int64_t accumulate = 1;
  /// Bytes the compiled step's intermediate values may take at their planned peak (CompileReport::plannedBytes), 0
  /// for no limit: forward values are recomputed in the backward pass until the peak fits (passes/rematerialize.h),
  /// the cheapest per byte first. Compiling fails when no plan fits, listing the largest buffers at the peak and the
  /// smallest budget found. Parameters, optimizer state, inputs and outputs are the caller's and not counted, nor is
  /// the scratch of the largest vendor product (CompileReport::arenaBytes has it).
  int64_t memoryBudget = 0;
  CompileOptions compile;
};

/// The parameter that carries a training step's check counts from run to run.
inline constexpr std::string_view kCheckCountsName = "__check_counts";

/// A batch size's compiled step or forward pass, and the tensors it reuses from run to run.
struct CompiledBatch {
  std::unique_ptr<Executable> exe;
  std::vector<std::string> stateNames;  // the state each output after loss and output updates
  TensorMap scalars;                    // the per-step scalar inputs (learning rate, step, ...)
  std::vector<const Tensor*> inputs;    // the executable's inputs by position (batch ones set per run)
  std::vector<Tensor> outputs;
  // On a device: the batch and the scalars uploaded into the same tensors every step, by position.
  std::vector<DeviceTensor> deviceInputs;
  std::vector<DeviceTensor> deviceOutputs;
  std::vector<Tensor> uploadedScalars;  // the values last uploaded into deviceInputs, by position
  // A training step's index checks (labels in range, indices a gather can read): a batch that raises one
  // updates nothing, and the step counts such batches where it runs, per check and in all (the parameter
  // kCheckCountsName, output checkOutput), read at the next synchronizing call.
  std::vector<IndexCheck> checks;
  size_t checkOutput = 0;
  Tensor checkCounts;              // on the CPU
  DeviceTensor deviceCheckCounts;  // on a device
  bool updating = true;       // whether its runs update (false: gradient accumulation's runs without the update)
  bool countsUnread = false;  // whether steps ran since its counts were last read
};

class TrainStep {
 public:
  /// Builds and compiles the step for batches of `input` and `target` types.
  static Expected<std::unique_ptr<TrainStep>> create(Model& model, LossFn loss, OptimizerPtr optimizer,
                                                     const TensorType& input, const TensorType& target,
                                                     TrainStepOptions options = {});
  /// One step: returns the batch's loss; `output`, when given, receives the model's output. A batch
  /// smaller than the one the step was created for (an epoch's partial last batch) trains too: the
  /// first of each size compiles its own step (logged with SMELT_LOG=info), sharing the model's
  /// state and the optimizer's step count, so Adam's bias correction goes on across sizes.
  Expected<double> run(const Tensor& input, const Tensor& target, Tensor* output = nullptr);
  /// One step on a batch already on the step's device, queued without waiting for it: the loss comes back
  /// as a device tensor (toHost() waits for it), so steps queue up behind each other and, where the device
  /// records its work (CUDA graphs), each is one launch. Fed the same tensors (each batch copied into them:
  /// DeviceTensor::copyFrom) the step replays as it was recorded. A batch a check rejects (a label out of range) trains nothing and
  /// its loss is NaN; the error naming the check comes from the next sync() or run(). On the CPU the step
  /// runs before the call returns, checks included.
  Expected<DeviceTensor> runAsync(const DeviceTensor& input, const DeviceTensor& target);
  /// Waits for the steps runAsync queued; an error names a check that rejected batches among them (those
  /// batches trained nothing) and how many.
  Status sync();
  /// Optimizer updates applied (batches a check rejected do not count once sync() or run() has seen them).
  int64_t steps() const { return steps_; }
  /// The learning rate the next step uses.
  double learningRate() const;
  /// The step for the batch size it was created for.
  const Graph& graph() const { return full().exe->graph(); }
  const CompileReport& report() const { return full().exe->report(); }
  /// The device it runs on ("cpu", "cuda:0").
  const std::string& deviceId() const { return full().exe->deviceId(); }
  /// The batch sizes compiled so far (1 until a smaller batch comes).
  int compiledBatchSizes() const { return static_cast<int>(byBatch_.size()); }
  /// Steps replayed as one launch (CUDA graphs: Executable::replays) so far.
  int64_t replays() const;

 private:
  TrainStep() = default;
  const CompiledBatch& full() const { return byBatch_.at(input_.rank() > 0 ? input_.shape[0] : 0); }
  /// Whether the target has one entry per example (else it is the same for every batch).
  bool targetBatched() const { return target_.rank() > 0 && input_.rank() > 0 && target_.shape[0] == input_.shape[0]; }
  /// Builds and compiles the step for batches of `batch` examples (with gradient accumulation, `accumulateOnly`:
  /// the variant that adds the gradients to the accumulators and does not update).
  Status compileBatch(int64_t batch, bool accumulateOnly = false);
  Expected<double> runOnHost(CompiledBatch& c, const Tensor& input, const Tensor& target, Tensor* output);
  Expected<double> runOnDevice(CompiledBatch& c, const Tensor& input, const Tensor& target, Tensor* output);
  /// One step on the device, without the recovery from a lost device runOnDevice adds.
  Expected<double> runDeviceStep(CompiledBatch& c, const Tensor& input, const Tensor& target, Tensor* output);
  /// The compiled step for a batch of these types (compiled on first use), its scalars set for the next run.
  Expected<CompiledBatch*> prepareRun(const TensorType& input, const TensorType& target);
  /// Runs the device step on tensors there (`input`, `target`, the scalars uploaded), without waiting.
  Status enqueueDeviceStep(CompiledBatch& c, const DeviceTensor& input, const DeviceTensor& target);
  /// After a step that failed because its device was lost: the model back at its host copy, every compiled
  /// batch compiled again; returns `lost` with what was lost.
  Error recoverFromLostDevice(CompiledBatch& c, const Error& lost);
  /// Counts the run just done on the host or queued on a device.
  void countRun(const CompiledBatch& c);
  /// The batches `c`'s checks rejected since they were last read (waits for its device), as an error naming
  /// the check; the counts start again from 0. `counted`: whether countRun() counted those runs already.
  Status readChecks(CompiledBatch& c, bool counted);
  Model* model_ = nullptr;
  /// The full batch's collectives, one line each (data-parallel steps).
  std::vector<std::string> collectiveSchedule_;
  LossFn loss_;
  OptimizerPtr optimizer_;
  TrainStepOptions options_;
  Schedule schedule_;
  TensorType input_, target_;  // for the full batch
  std::vector<InputRange> inputRanges_;  // what the loss requires of the fed input and target
  std::map<int64_t, CompiledBatch> byBatch_;
  std::map<int64_t, CompiledBatch> accumulateByBatch_;  // gradient accumulation's steps without the update
  int64_t steps_ = 0;  // optimizer updates
  int64_t runs_ = 0;   // batches run (micro-batches with gradient accumulation)
  bool queued_ = false;  // whether runAsync queued steps since the last sync()
};

/// The model's forward pass for evaluation as a graph of its own, its parameters holding the model's
/// current values (copied back from a device first): what exportOnnxFile (frontend/onnx/onnx_export.h)
/// writes for another runtime, or a file `smelt` reads after printGraph.
///   SMELT_TRY(Graph g, nn::inferenceGraph(model, TensorType{DType::f32, {1, 784}}));
///   SMELT_CHECK_OK(exportOnnxFile(g, "model.onnx"));
Expected<Graph> inferenceGraph(Model& model, const TensorType& input);

/// The model's forward pass for evaluation (batch norm on running statistics, no dropout).
class Predictor {
 public:
  /// On options.device, as for TrainStep (a model trained on a device predicts from its state there).
  /// A batch smaller than `input`'s runs too, compiled once per size on first use.
  static Expected<std::unique_ptr<Predictor>> create(Model& model, const TensorType& input,
                                                     const CompileOptions& options = {});
  Expected<Tensor> run(const Tensor& input);
  /// The same into `output` (reused when its type matches: no allocation, no copy).
  Status run(const Tensor& input, Tensor& output);
  /// The device it runs on.
  const std::string& deviceId() const { return byBatch_.at(input_.rank() > 0 ? input_.shape[0] : 0).exe->deviceId(); }
  int compiledBatchSizes() const { return static_cast<int>(byBatch_.size()); }

 private:
  Predictor() = default;
  Status compileBatch(int64_t batch);
  Model* model_ = nullptr;
  CompileOptions options_;
  TensorType input_;
  std::map<int64_t, CompiledBatch> byBatch_;
};

}  // namespace smelt::nn

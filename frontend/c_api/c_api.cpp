// smelt's C API (include/smelt/c_api.h) over ModelExecutable and the model API's TrainStep. Every
// entry point catches what the C++ below could throw, so nothing unwinds through a C caller.
#include "smelt/c_api.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "frontend/model_executable.h"
#include "frontend/model_loader.h"
#include "frontend/nn/imported.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/safetensors.h"
#include "frontend/nn/train_step.h"

using namespace smelt;

namespace {

thread_local std::string lastError;

smelt_status fail(smelt_status status, std::string message) {
  lastError = std::move(message);
  return status;
}
smelt_status fail(const Error& e) { return fail(SMELT_FAILED, e.message()); }

/// Runs `body`, turning an escaped exception into SMELT_FAILED with its message.
template <typename F>
smelt_status guarded(const char* call, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return fail(SMELT_FAILED, fmt::format("{}: {}", call, e.what()));
  } catch (...) {
    return fail(SMELT_FAILED, fmt::format("{}: an unknown error", call));
  }
}

constexpr std::array<DType, 13> kDTypes = {DType::f32, DType::f64, DType::f16,    DType::bf16, DType::i8,
                                           DType::i16, DType::i32, DType::i64,    DType::u8,   DType::u16,
                                           DType::u32, DType::u64, DType::boolean};

std::optional<DType> dtypeOf(smelt_dtype d) {
  const auto i = static_cast<size_t>(d);
  if (i >= kDTypes.size()) return std::nullopt;
  return kDTypes[i];
}

smelt_dtype cDTypeOf(DType d) {
  for (size_t i = 0; i < kDTypes.size(); ++i) {
    if (kDTypes[i] == d) return static_cast<smelt_dtype>(i);
  }
  return SMELT_F32;  // every DType is in kDTypes
}

/// The type `t` describes, checked: a known dtype, at most kMaxRank extents, none negative, and
/// `bytes` exactly the elements' size (no overflow on the way).
Expected<TensorType> typeOf(const smelt_tensor& t, const char* what) {
  std::optional<DType> dtype = dtypeOf(t.dtype);
  if (!dtype) return makeError("{}: unknown dtype {}", what, static_cast<int>(t.dtype));
  if (t.rank > static_cast<size_t>(kMaxRank)) return makeError("{}: rank {} is above {}", what, t.rank, kMaxRank);
  if (t.rank > 0 && !t.shape) return makeError("{}: rank {} with no shape", what, t.rank);
  Shape shape(t.shape, t.shape + t.rank);
  for (int64_t d : shape) {
    if (d < 0) return makeError("{}: negative extent in shape {}", what, shapeToString(shape));
  }
  if (Status limits = checkShapeLimits(shape); !limits.ok()) return limits.error().withContext(what);
  TensorType type{*dtype, shape};
  const int64_t want = type.byteSize();
  if (static_cast<uint64_t>(want) != t.bytes) {
    return makeError("{}: {} is {} bytes, given {}", what, type.toString(), want, t.bytes);
  }
  if (want > 0 && !t.data) return makeError("{}: no data for {}", what, type.toString());
  return type;
}

Expected<Tensor> tensorOf(const smelt_tensor* t, const char* what) {
  if (!t) return makeError("{}: NULL tensor", what);
  SMELT_TRY(TensorType type, typeOf(*t, what));
  return Tensor::fromBytes(type, {static_cast<const std::byte*>(t->data), t->bytes});
}

/// `t` as a view of `tensor`'s memory (and `shape`'s, which the caller keeps alive with it).
void view(const Tensor& tensor, std::vector<int64_t>& shape, smelt_tensor* t) {
  shape.assign(tensor.shape().begin(), tensor.shape().end());
  t->dtype = cDTypeOf(tensor.dtype());
  t->rank = shape.size();
  t->shape = shape.data();
  t->data = tensor.raw();
  t->bytes = static_cast<size_t>(tensor.byteSize());
}

std::string deviceOf(const char* device) { return device ? device : ""; }

}  // namespace

struct smelt_model {
  std::unique_ptr<ModelExecutable> exe;
  TensorMap inputs;
  std::vector<Tensor> outputs;
  std::vector<std::vector<int64_t>> outputShapes;
  std::vector<std::string> inputNames, outputNames;

  /// The names of the graph the last compile made (none until one did).
  void learnNames() {
    if (exe->compiledValues() == 0) return;  // a model that needs an input's value, before its first run
    const Graph& g = exe->last().graph();
    inputNames.clear();
    outputNames.clear();
    for (const Value* v : g.inputs()) inputNames.push_back(v->name());
    for (const GraphOutput& o : g.outputs()) outputNames.push_back(o.name);
  }
};

struct smelt_train_step {
  std::unique_ptr<nn::Model> model;
  std::unique_ptr<nn::TrainStep> step;
  std::unique_ptr<nn::Predictor> predictor;
  TensorType inputType;
  Tensor prediction;
  std::vector<int64_t> predictionShape;
};

extern "C" {

int smelt_c_api_version(void) { return SMELT_C_API_VERSION; }

const char* smelt_version(void) { return SMELT_PACKAGE_VERSION; }

const char* smelt_last_error(void) { return lastError.c_str(); }

smelt_status smelt_model_load(const char* path, const char* device, smelt_model** model) {
  return guarded("smelt_model_load", [&] {
    if (!model) return fail(SMELT_INVALID_ARGUMENT, "smelt_model_load: NULL result pointer");
    *model = nullptr;
    if (!path) return fail(SMELT_INVALID_ARGUMENT, "smelt_model_load: NULL path");
    CompileOptions options;
    options.device = deviceOf(device);
    Expected<std::unique_ptr<ModelExecutable>> exe = ModelExecutable::load(path, options);
    if (!exe.ok()) return fail(exe.error());
    auto m = std::make_unique<smelt_model>();
    m->exe = std::move(*exe);
    m->learnNames();
    *model = m.release();
    return SMELT_OK;
  });
}

void smelt_model_destroy(smelt_model* model) { delete model; }

size_t smelt_model_input_count(const smelt_model* model) { return model ? model->inputNames.size() : 0; }
size_t smelt_model_output_count(const smelt_model* model) { return model ? model->outputNames.size() : 0; }

const char* smelt_model_input_name(const smelt_model* model, size_t index) {
  return model && index < model->inputNames.size() ? model->inputNames[index].c_str() : nullptr;
}
const char* smelt_model_output_name(const smelt_model* model, size_t index) {
  return model && index < model->outputNames.size() ? model->outputNames[index].c_str() : nullptr;
}

smelt_status smelt_model_set_input(smelt_model* model, const char* name, const smelt_tensor* tensor) {
  return guarded("smelt_model_set_input", [&] {
    if (!model || !name) return fail(SMELT_INVALID_ARGUMENT, "smelt_model_set_input: NULL model or name");
    const bool known = model->inputNames.empty() ||
                       std::find(model->inputNames.begin(), model->inputNames.end(), name) != model->inputNames.end();
    if (!known) {
      return fail(SMELT_INVALID_ARGUMENT,
                  fmt::format("smelt_model_set_input: the model has no input '{}' (its inputs: {})", name,
                              fmt::join(model->inputNames, ", ")));
    }
    Expected<Tensor> t = tensorOf(tensor, fmt::format("input '{}'", name).c_str());
    if (!t.ok()) return fail(SMELT_INVALID_ARGUMENT, t.error().message());
    model->inputs.insert_or_assign(name, std::move(*t));
    return SMELT_OK;
  });
}

smelt_status smelt_model_run(smelt_model* model) {
  return guarded("smelt_model_run", [&] {
    if (!model) return fail(SMELT_INVALID_ARGUMENT, "smelt_model_run: NULL model");
    for (const std::string& name : model->inputNames) {
      if (!model->inputs.count(name)) {
        return fail(SMELT_INVALID_ARGUMENT, fmt::format("smelt_model_run: input '{}' was not set", name));
      }
    }
    Expected<std::vector<Tensor>> out = model->exe->run(model->inputs);
    if (!out.ok()) return fail(out.error());
    model->outputs = std::move(*out);
    model->outputShapes.assign(model->outputs.size(), {});
    model->learnNames();
    return SMELT_OK;
  });
}

smelt_status smelt_model_output(const smelt_model* model, size_t index, smelt_tensor* output) {
  return guarded("smelt_model_output", [&] {
    if (!model || !output) return fail(SMELT_INVALID_ARGUMENT, "smelt_model_output: NULL model or output");
    if (index >= model->outputs.size()) {
      return fail(SMELT_INVALID_ARGUMENT,
                  model->outputs.empty()
                      ? std::string("smelt_model_output: the model has not run")
                      : fmt::format("smelt_model_output: output {} of {}", index, model->outputs.size()));
    }
    auto& m = const_cast<smelt_model&>(*model);
    view(m.outputs[index], m.outputShapes[index], output);
    return SMELT_OK;
  });
}

smelt_status smelt_train_step_create(const char* model_path, const smelt_train_options* options,
                                     const smelt_tensor* input, const smelt_tensor* target, smelt_train_step** step) {
  return guarded("smelt_train_step_create", [&] {
    if (!step) return fail(SMELT_INVALID_ARGUMENT, "smelt_train_step_create: NULL result pointer");
    *step = nullptr;
    if (!model_path || !options || !input || !target) {
      return fail(SMELT_INVALID_ARGUMENT, "smelt_train_step_create: NULL model path, options, input or target");
    }
    // Only the types are read: the data may be NULL.
    smelt_tensor inputType = *input, targetType = *target;
    inputType.data = targetType.data = "";
    Expected<TensorType> in = typeOf(inputType, "input"), tg = typeOf(targetType, "target");
    if (!in.ok()) return fail(SMELT_INVALID_ARGUMENT, in.error().message());
    if (!tg.ok()) return fail(SMELT_INVALID_ARGUMENT, tg.error().message());
    const std::string loss = options->loss ? options->loss : "";
    nn::LossFn lossFn;
    if (loss == "cross_entropy") {
      lossFn = nn::crossEntropy;
    } else if (loss == "nll") {
      lossFn = [](nn::GraphContext& ctx, Value* probs, Value* labels) {
        return nn::nllLoss(ctx, ctx.b().log(probs), labels);
      };
    } else if (loss == "mse") {
      lossFn = nn::mseLoss;
    } else {
      return fail(SMELT_INVALID_ARGUMENT,
                  fmt::format("smelt_train_step_create: unknown loss '{}' (cross_entropy, nll, mse)", loss));
    }
    const std::string optimizer = options->optimizer ? options->optimizer : "";
    nn::OptimizerPtr opt;
    if (optimizer == "sgd") {
      opt =
          nn::sgd({.lr = options->learning_rate, .momentum = options->momentum, .weightDecay = options->weight_decay});
    } else if (optimizer == "adam") {
      opt = nn::adam({.lr = options->learning_rate, .weightDecay = options->weight_decay});
    } else {
      return fail(SMELT_INVALID_ARGUMENT,
                  fmt::format("smelt_train_step_create: unknown optimizer '{}' (sgd, adam)", optimizer));
    }
    if (!(options->learning_rate > 0)) {
      return fail(SMELT_INVALID_ARGUMENT, fmt::format("smelt_train_step_create: learning rate {} (it must be positive)",
                                                      options->learning_rate));
    }
    Expected<Graph> graph = loadModel(model_path);
    if (!graph.ok()) return fail(graph.error());
    auto s = std::make_unique<smelt_train_step>();
    s->model = std::make_unique<nn::Model>(nn::imported(std::make_shared<Graph>(std::move(*graph))));
    s->inputType = *in;
    nn::TrainStepOptions stepOptions;
    stepOptions.device = deviceOf(options->device);
    Expected<std::unique_ptr<nn::TrainStep>> created =
        nn::TrainStep::create(*s->model, lossFn, std::move(opt), *in, *tg, stepOptions);
    if (!created.ok()) return fail(created.error());
    s->step = std::move(*created);
    *step = s.release();
    return SMELT_OK;
  });
}

void smelt_train_step_destroy(smelt_train_step* step) { delete step; }

smelt_status smelt_train_step_run(smelt_train_step* step, const smelt_tensor* input, const smelt_tensor* target,
                                  double* loss) {
  return guarded("smelt_train_step_run", [&] {
    if (!step) return fail(SMELT_INVALID_ARGUMENT, "smelt_train_step_run: NULL step");
    Expected<Tensor> x = tensorOf(input, "input"), y = tensorOf(target, "target");
    if (!x.ok()) return fail(SMELT_INVALID_ARGUMENT, x.error().message());
    if (!y.ok()) return fail(SMELT_INVALID_ARGUMENT, y.error().message());
    Expected<double> l = step->step->run(*x, *y);
    if (!l.ok()) return fail(l.error());
    if (loss) *loss = *l;
    return SMELT_OK;
  });
}

smelt_status smelt_train_step_predict(smelt_train_step* step, const smelt_tensor* input, smelt_tensor* output) {
  return guarded("smelt_train_step_predict", [&] {
    if (!step || !output) return fail(SMELT_INVALID_ARGUMENT, "smelt_train_step_predict: NULL step or output");
    Expected<Tensor> x = tensorOf(input, "input");
    if (!x.ok()) return fail(SMELT_INVALID_ARGUMENT, x.error().message());
    if (!step->predictor) {
      CompileOptions options;
      options.device = step->step->deviceId();
      Expected<std::unique_ptr<nn::Predictor>> p = nn::Predictor::create(*step->model, step->inputType, options);
      if (!p.ok()) return fail(p.error());
      step->predictor = std::move(*p);
    }
    Status ran = step->predictor->run(*x, step->prediction);
    if (!ran.ok()) return fail(ran.error());
    view(step->prediction, step->predictionShape, output);
    return SMELT_OK;
  });
}

smelt_status smelt_train_step_save(smelt_train_step* step, const char* path) {
  return guarded("smelt_train_step_save", [&] {
    if (!step || !path) return fail(SMELT_INVALID_ARGUMENT, "smelt_train_step_save: NULL step or path");
    Expected<const nn::StateDict*> state = step->model->syncedHostState();
    if (!state.ok()) return fail(state.error());
    Status saved = nn::saveSafetensors(path, **state);
    if (!saved.ok()) return fail(saved.error());
    return SMELT_OK;
  });
}

int64_t smelt_train_step_count(const smelt_train_step* step) { return step ? step->step->steps() : 0; }

}  // extern "C"

/* smelt's C API: plain C99 over libsmelt.so, for callers that reach native code through a C ABI (C#'s
 * P/Invoke, Python's ctypes, Rust, Go). Load a model (ONNX or IR text), compile it for a device, feed
 * inputs from host memory, run, read outputs; train a model file with a loss and an optimizer and
 * save its checkpoint. docs/c_api.md shows it from C, Python and C#.
 *
 *   smelt_model* model = NULL;
 *   if (smelt_model_load("mlp.onnx", "cpu", &model) != SMELT_OK) {
 *     fprintf(stderr, "%s\n", smelt_last_error());
 *     return 1;
 *   }
 *   int64_t shape[2] = {4, 784};
 *   smelt_tensor x = {SMELT_F32, 2, shape, pixels, sizeof pixels};
 *   smelt_model_set_input(model, "input", &x);
 *   smelt_model_run(model);
 *   smelt_tensor y;
 *   smelt_model_output(model, 0, &y);   // y.data stays valid until the next run or destroy
 *   smelt_model_destroy(model);
 *
 * Errors: every call that can fail returns a smelt_status; the message of the last failure on the
 * calling thread is smelt_last_error() (thread-local; it names the file, input, node or layer and the
 * problem). Nothing is thrown across the ABI and no call aborts on bad input.
 * Ownership: handles are opaque, made by a *_load / *_create call and freed by the matching *_destroy
 * (NULL is accepted). Strings and outputs returned belong to the handle.
 * Threads: a handle is used by one thread at a time; different handles may run at once on different
 * threads (they share the process's kernel cache and device pools, which are thread-safe). */
#ifndef SMELT_C_API_H
#define SMELT_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header's API: a caller may check it against smelt_c_api_version(). */
#define SMELT_C_API_VERSION 1

typedef enum smelt_status {
  SMELT_OK = 0,
  /* A NULL handle or pointer, an unknown name, a shape or byte count that does not fit. */
  SMELT_INVALID_ARGUMENT = 1,
  /* Anything else the call could not do (a file that does not load, a compile or run that failed). */
  SMELT_FAILED = 2
} smelt_status;

typedef enum smelt_dtype {
  SMELT_F32 = 0,
  SMELT_F64 = 1,
  SMELT_F16 = 2, /* IEEE binary16, as uint16_t */
  SMELT_BF16 = 3, /* bfloat16, as uint16_t */
  SMELT_I8 = 4,
  SMELT_I16 = 5,
  SMELT_I32 = 6,
  SMELT_I64 = 7,
  SMELT_U8 = 8,
  SMELT_U16 = 9,
  SMELT_U32 = 10,
  SMELT_U64 = 11,
  SMELT_BOOL = 12 /* one byte per element, 0 or 1 */
} smelt_dtype;

/* A dense, row-major tensor in host memory: `rank` extents at `shape`, `bytes` bytes at `data` (the
 * product of the extents times the dtype's size). As an argument it is read during the call only. */
typedef struct smelt_tensor {
  smelt_dtype dtype;
  size_t rank;
  const int64_t* shape;
  const void* data;
  size_t bytes;
} smelt_tensor;

/* SMELT_C_API_VERSION of the library, and its release ("0.1.0"). */
int smelt_c_api_version(void);
const char* smelt_version(void);
/* The message of the calling thread's last failed call ("" if none failed yet). */
const char* smelt_last_error(void);

/* ---- Models: load, feed, run, read ---- */
typedef struct smelt_model smelt_model;

/* Loads `path` (.onnx, or IR text) and compiles it for `device`: "cpu", "opencl", "cuda", "cuda:1",
 * "hip", "auto"; NULL or "" for the default ($SMELT_DEVICE, else the CPU). A model with symbolic
 * dimensions (a dynamic batch) compiles once per size it is fed; one that needs an input's value (a
 * Reshape's shape given as an input) compiles per distinct value on its first run. */
smelt_status smelt_model_load(const char* path, const char* device, smelt_model** model);
void smelt_model_destroy(smelt_model* model);

/* The graph's inputs and outputs, by position (names are the file's). A model that needs an input's
 * value knows its inputs only after its first run: until then the counts are 0. */
size_t smelt_model_input_count(const smelt_model* model);
size_t smelt_model_output_count(const smelt_model* model);
/* NULL when `index` is out of range. */
const char* smelt_model_input_name(const smelt_model* model, size_t index);
const char* smelt_model_output_name(const smelt_model* model, size_t index);

/* Copies `tensor` as the input `name` for the next runs (until set again). */
smelt_status smelt_model_set_input(smelt_model* model, const char* name, const smelt_tensor* tensor);
/* Runs on the inputs set (every one of the graph's inputs must be). */
smelt_status smelt_model_run(smelt_model* model);
/* Output `index` of the last run: its dtype, shape and bytes, owned by the model and valid until its
 * next run or its destroy. */
smelt_status smelt_model_output(const smelt_model* model, size_t index, smelt_tensor* output);

/* ---- Training a model file ---- */
typedef struct smelt_train_step smelt_train_step;

typedef struct smelt_train_options {
  /* "cross_entropy" (the model's output is logits, the target class indices, i64), "nll" (the output
   * is probabilities; the loss of their log against class indices), "mse" (the target has the
   * output's shape). */
  const char* loss;
  /* "sgd" (with momentum, weight_decay) or "adam" (with weight_decay; beta 0.9, 0.999). */
  const char* optimizer;
  double learning_rate;
  double momentum;
  double weight_decay;
  /* As smelt_model_load's; NULL or "" for the default. */
  const char* device;
} smelt_train_options;

/* The training step of the model in `model_path` (its first input takes the batch, its first output
 * is what the loss reads; its float initializers or parameters are trained from their values), for
 * batches of `input`'s and `target`'s shapes and dtypes (their data is not read). Smaller batches of
 * the same shapes train too (an epoch's last partial batch). */
smelt_status smelt_train_step_create(const char* model_path, const smelt_train_options* options,
                                     const smelt_tensor* input, const smelt_tensor* target,
                                     smelt_train_step** step);
void smelt_train_step_destroy(smelt_train_step* step);
/* One step on a batch: updates the parameters and writes the batch's loss to `loss` (may be NULL). */
smelt_status smelt_train_step_run(smelt_train_step* step, const smelt_tensor* input, const smelt_tensor* target,
                                  double* loss);
/* The model's output for `input` in evaluation mode, from the trained parameters: owned by the step,
 * valid until its next predict or its destroy. */
smelt_status smelt_train_step_predict(smelt_train_step* step, const smelt_tensor* input, smelt_tensor* output);
/* Writes the parameters and the optimizer's state as a safetensors checkpoint. */
smelt_status smelt_train_step_save(smelt_train_step* step, const char* path);
/* Steps taken so far. */
int64_t smelt_train_step_count(const smelt_train_step* step);

#ifdef __cplusplus
}
#endif

#endif /* SMELT_C_API_H */

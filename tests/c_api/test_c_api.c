/* The C API (include/smelt/c_api.h) from a C99 program: a model file loaded, fed, run and read at two
 * batch sizes against the same arithmetic done here; a classifier trained to separate a linearly
 * separable set, predicted and checkpointed; and bad calls answered with statuses and messages that
 * name the problem; and four threads, each with a model handle of its own, running at once with their own
 * batch sizes, each reading its own last error (as c_api.h documents). Built in the tree (ctest c_api/c) and against the installed package
 * (tests/package/check_package.sh). Usage: test_c_api [DEVICE ...] (default: cpu). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <smelt/c_api.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;

#define EXPECT(cond)                                                                  \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: FAILED: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              smelt_last_error());                                                    \
      ++failures;                                                                     \
    }                                                                                 \
  } while (0)

/* Logits = x W + b for a symbolic batch N. */
static const char* kModel =
    "graph @classifier(%x: f32[N,2]) {\n"
    "  param %w: f32[2,3] = [0.5, -0.25, 0.125, 0.75, 0.0, -0.5]\n"
    "  param %b: f32[3] = [0.1, 0.2, -0.3]\n"
    "  %0 = matmul(%x, %w) : f32[N,3]\n"
    "  %1 = add(%0, %b) : f32[N,3]\n"
    "  return logits = %1\n"
    "}\n";
static const float kW[6] = {0.5f, -0.25f, 0.125f, 0.75f, 0.0f, -0.5f};
static const float kB[3] = {0.1f, 0.2f, -0.3f};

static void writeFile(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  fputs(text, f);
  fclose(f);
}

static unsigned long long state = 88172645463325252ULL;
/* Uniform in [-1, 1) (xorshift64). */
static float uniform(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return (float)((double)(state >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static void checkInference(const char* path, const char* device) {
  smelt_model* model = NULL;
  if (smelt_model_load(path, device, &model) != SMELT_OK) {
    fprintf(stderr, "%s: %s\n", device, smelt_last_error());
    ++failures;
    return;
  }
  EXPECT(smelt_model_input_count(model) == 1);
  EXPECT(smelt_model_output_count(model) == 1);
  EXPECT(strcmp(smelt_model_input_name(model, 0), "x") == 0);
  EXPECT(strcmp(smelt_model_output_name(model, 0), "logits") == 0);
  EXPECT(smelt_model_input_name(model, 1) == NULL);
  /* Reading an output before any run is an error, not a crash. */
  smelt_tensor out;
  EXPECT(smelt_model_output(model, 0, &out) == SMELT_INVALID_ARGUMENT);
  EXPECT(strstr(smelt_last_error(), "has not run") != NULL);
  int64_t batches[2] = {4, 7};
  for (int k = 0; k < 2; ++k) {
    int64_t n = batches[k];
    float x[14];
    for (int64_t i = 0; i < n * 2; ++i) x[i] = uniform();
    int64_t shape[2] = {n, 2};
    smelt_tensor in = {SMELT_F32, 2, shape, x, (size_t)(n * 2) * sizeof(float)};
    EXPECT(smelt_model_set_input(model, "x", &in) == SMELT_OK);
    EXPECT(smelt_model_run(model) == SMELT_OK);
    EXPECT(smelt_model_output(model, 0, &out) == SMELT_OK);
    EXPECT(out.dtype == SMELT_F32);
    EXPECT(out.rank == 2 && out.shape[0] == n && out.shape[1] == 3);
    EXPECT(out.bytes == (size_t)(n * 3) * sizeof(float));
    const float* y = (const float*)out.data;
    for (int64_t r = 0; r < n; ++r) {
      for (int c = 0; c < 3; ++c) {
        double want = (double)x[r * 2] * kW[c] + (double)x[r * 2 + 1] * kW[3 + c] + kB[c];
        EXPECT(fabs((double)y[r * 3 + c] - want) < 1e-5);
      }
    }
  }
  /* Bad inputs: an unknown name, a byte count that does not match, a negative extent, NULLs. */
  float x[8] = {0};
  int64_t shape[2] = {4, 2};
  smelt_tensor in = {SMELT_F32, 2, shape, x, sizeof x};
  EXPECT(smelt_model_set_input(model, "images", &in) == SMELT_INVALID_ARGUMENT);
  EXPECT(strstr(smelt_last_error(), "'images'") != NULL && strstr(smelt_last_error(), "x") != NULL);
  in.bytes = 12;
  EXPECT(smelt_model_set_input(model, "x", &in) == SMELT_INVALID_ARGUMENT);
  EXPECT(strstr(smelt_last_error(), "32 bytes, given 12") != NULL);
  int64_t negative[2] = {-4, 2};
  smelt_tensor bad = {SMELT_F32, 2, negative, x, sizeof x};
  EXPECT(smelt_model_set_input(model, "x", &bad) == SMELT_INVALID_ARGUMENT);
  EXPECT(strstr(smelt_last_error(), "negative") != NULL);
  smelt_tensor wrongType = {SMELT_F64, 2, shape, x, sizeof x};
  EXPECT(smelt_model_set_input(model, "x", &wrongType) == SMELT_INVALID_ARGUMENT);
  EXPECT(smelt_model_set_input(model, "x", NULL) == SMELT_INVALID_ARGUMENT);
  EXPECT(smelt_model_set_input(NULL, "x", &in) == SMELT_INVALID_ARGUMENT);
  EXPECT(smelt_model_run(NULL) == SMELT_INVALID_ARGUMENT);
  /* A wrongly shaped input set through the C API reaches the executable's check, which names it. */
  int64_t threeCols[2] = {2, 3};
  float six[6] = {0};
  smelt_tensor wide = {SMELT_F32, 2, threeCols, six, sizeof six};
  EXPECT(smelt_model_set_input(model, "x", &wide) == SMELT_OK);
  EXPECT(smelt_model_run(model) == SMELT_FAILED);
  EXPECT(strstr(smelt_last_error(), "x") != NULL);
  smelt_model_destroy(model);
}

/* One thread's share of checkThreads: its own handle, batch sizes and random inputs; a bad input's error
 * is its own (smelt_last_error is per thread), while the other threads' runs succeed. */
typedef struct {
  const char* path;
  const char* device;
  unsigned seed;
  int failures;
} ThreadWork;

#define THREAD_EXPECT(work, cond)                                                         \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stderr, "%s:%d: FAILED in a thread: %s (last error: %s)\n", __FILE__, __LINE__, \
              #cond, smelt_last_error());                                                 \
      ++(work)->failures;                                                                 \
    }                                                                                     \
  } while (0)

static void* runThread(void* arg) {
  ThreadWork* work = (ThreadWork*)arg;
  smelt_model* model = NULL;
  THREAD_EXPECT(work, smelt_model_load(work->path, work->device, &model) == SMELT_OK);
  if (!model) return NULL;
  unsigned long long rng = 0x9E3779B97F4A7C15ULL * (work->seed + 1);
  for (int i = 0; i < 40; ++i) {
    const int64_t n = 1 + (int64_t)((work->seed + (unsigned)i) % 7);
    float x[14];
    for (int64_t k = 0; k < n * 2; ++k) {
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      x[k] = (float)((double)(rng >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
    }
    int64_t shape[2] = {n, 2};
    smelt_tensor in = {SMELT_F32, 2, shape, x, (size_t)(n * 2) * sizeof(float)};
    if (i == 20) {
      /* This thread's error, named as its own. */
      THREAD_EXPECT(work, smelt_model_set_input(model, "thread_input", &in) == SMELT_INVALID_ARGUMENT);
      THREAD_EXPECT(work, strstr(smelt_last_error(), "'thread_input'") != NULL);
    }
    THREAD_EXPECT(work, smelt_model_set_input(model, "x", &in) == SMELT_OK);
    THREAD_EXPECT(work, smelt_model_run(model) == SMELT_OK);
    smelt_tensor out;
    THREAD_EXPECT(work, smelt_model_output(model, 0, &out) == SMELT_OK);
    THREAD_EXPECT(work, out.rank == 2 && out.shape[0] == n && out.shape[1] == 3);
    const float* y = (const float*)out.data;
    for (int64_t r = 0; r < n && out.rank == 2 && out.shape[0] == n; ++r) {
      for (int c = 0; c < 3; ++c) {
        double want = (double)x[r * 2] * kW[c] + (double)x[r * 2 + 1] * kW[3 + c] + kB[c];
        THREAD_EXPECT(work, fabs((double)y[r * 3 + c] - want) < 1e-5);
      }
    }
  }
  smelt_model_destroy(model);
  return NULL;
}

static void checkThreads(const char* path, const char* device) {
  enum { kThreads = 4 };
  pthread_t threads[kThreads];
  ThreadWork work[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    ThreadWork w = {path, device, (unsigned)t, 0};
    work[t] = w;
    EXPECT(pthread_create(&threads[t], NULL, runThread, &work[t]) == 0);
  }
  for (int t = 0; t < kThreads; ++t) {
    pthread_join(threads[t], NULL);
    failures += work[t].failures;
  }
  /* The main thread's last error is untouched by the threads' errors. */
  EXPECT(strstr(smelt_last_error(), "thread_input") == NULL);
}

/* Class of a point: which of three sectors it falls in by the sign of two lines. */
static int64_t classOf(float a, float b) { return a + b > 0 ? (a - b > 0 ? 0 : 1) : 2; }

static void checkTraining(const char* path, const char* device, const char* checkpoint) {
  enum { kBatch = 32 };
  int64_t xShape[2] = {kBatch, 2}, yShape[1] = {kBatch};
  float x[kBatch * 2];
  int64_t y[kBatch];
  smelt_tensor input = {SMELT_F32, 2, xShape, NULL, sizeof x};
  smelt_tensor target = {SMELT_I64, 1, yShape, NULL, sizeof y};
  smelt_train_options options = {"cross_entropy", "sgd", 0.5, 0.9, 0.0, device};
  smelt_train_step* step = NULL;
  if (smelt_train_step_create(path, &options, &input, &target, &step) != SMELT_OK) {
    fprintf(stderr, "%s: %s\n", device, smelt_last_error());
    ++failures;
    return;
  }
  input.data = x;
  target.data = y;
  double first = 0, last = 0;
  for (int s = 0; s < 60; ++s) {
    for (int i = 0; i < kBatch; ++i) {
      x[2 * i] = uniform();
      x[2 * i + 1] = uniform();
      y[i] = classOf(x[2 * i], x[2 * i + 1]);
    }
    double loss = -1;
    EXPECT(smelt_train_step_run(step, &input, &target, &loss) == SMELT_OK);
    EXPECT(loss >= 0);
    if (s == 0) first = loss;
    last = loss;
  }
  EXPECT(last < first * 0.5);
  /* A partial batch trains too. */
  int64_t partialX[2] = {5, 2}, partialY[1] = {5};
  smelt_tensor px = {SMELT_F32, 2, partialX, x, 10 * sizeof(float)};
  smelt_tensor py = {SMELT_I64, 1, partialY, y, 5 * sizeof(int64_t)};
  EXPECT(smelt_train_step_run(step, &px, &py, NULL) == SMELT_OK);
  EXPECT(smelt_train_step_count(step) == 61);
  /* Predictions on fresh points: mostly the right sector. */
  int hits = 0;
  for (int i = 0; i < kBatch; ++i) {
    x[2 * i] = uniform();
    x[2 * i + 1] = uniform();
    y[i] = classOf(x[2 * i], x[2 * i + 1]);
  }
  smelt_tensor logits;
  EXPECT(smelt_train_step_predict(step, &input, &logits) == SMELT_OK);
  EXPECT(logits.rank == 2 && logits.shape[0] == kBatch && logits.shape[1] == 3);
  const float* l = (const float*)logits.data;
  for (int i = 0; i < kBatch; ++i) {
    int best = 0;
    for (int c = 1; c < 3; ++c) best = l[i * 3 + c] > l[i * 3 + best] ? c : best;
    hits += best == y[i];
  }
  EXPECT(hits >= kBatch * 3 / 4);
  /* Labels outside the classes are an error naming them, not a loss. */
  y[0] = 7;
  EXPECT(smelt_train_step_run(step, &input, &target, NULL) == SMELT_FAILED);
  EXPECT(strstr(smelt_last_error(), "7") != NULL);
  EXPECT(smelt_train_step_save(step, checkpoint) == SMELT_OK);
  FILE* f = fopen(checkpoint, "rb");
  EXPECT(f != NULL);
  if (f) {
    fseek(f, 0, SEEK_END);
    EXPECT(ftell(f) > 100);
    fclose(f);
  }
  smelt_train_step_destroy(step);
  printf("%s: trained from loss %.4f to %.4f; %d of %d fresh points right\n", device, first, last, hits, kBatch);
}

static void checkBadCalls(const char* path) {
  smelt_model* model = (smelt_model*)1;
  EXPECT(smelt_model_load("/nonexistent/model.onnx", "cpu", &model) == SMELT_FAILED);
  EXPECT(model == NULL);
  EXPECT(strstr(smelt_last_error(), "/nonexistent/model.onnx") != NULL);
  EXPECT(smelt_model_load(path, "no_such_backend", &model) == SMELT_FAILED);
  EXPECT(strstr(smelt_last_error(), "no_such_backend") != NULL);
  EXPECT(smelt_model_load(NULL, "cpu", &model) == SMELT_INVALID_ARGUMENT);
  EXPECT(smelt_model_load(path, "cpu", NULL) == SMELT_INVALID_ARGUMENT);
  smelt_model_destroy(NULL);
  smelt_train_step_destroy(NULL);
  int64_t xShape[2] = {4, 2}, yShape[1] = {4};
  smelt_tensor input = {SMELT_F32, 2, xShape, NULL, 8 * sizeof(float)};
  smelt_tensor target = {SMELT_I64, 1, yShape, NULL, 4 * sizeof(int64_t)};
  smelt_train_options options = {"hinge", "sgd", 0.1, 0, 0, NULL};
  smelt_train_step* step = (smelt_train_step*)1;
  EXPECT(smelt_train_step_create(path, &options, &input, &target, &step) == SMELT_INVALID_ARGUMENT);
  EXPECT(step == NULL);
  EXPECT(strstr(smelt_last_error(), "hinge") != NULL);
  options.loss = "cross_entropy";
  options.optimizer = "lbfgs";
  EXPECT(smelt_train_step_create(path, &options, &input, &target, &step) == SMELT_INVALID_ARGUMENT);
  EXPECT(strstr(smelt_last_error(), "lbfgs") != NULL);
  options.optimizer = "adam";
  options.learning_rate = 0;
  EXPECT(smelt_train_step_create(path, &options, &input, &target, &step) == SMELT_INVALID_ARGUMENT);
  /* A target that does not fit the loss: the model API's message. */
  options.learning_rate = 0.01;
  int64_t wrongY[1] = {3};
  smelt_tensor badTarget = {SMELT_I64, 1, wrongY, NULL, 3 * sizeof(int64_t)};
  EXPECT(smelt_train_step_create(path, &options, &input, &badTarget, &step) == SMELT_FAILED);
  EXPECT(smelt_train_step_run(NULL, &input, &target, NULL) == SMELT_INVALID_ARGUMENT);
  EXPECT(smelt_train_step_count(NULL) == 0);
}

int main(int argc, char** argv) {
  EXPECT(smelt_c_api_version() == SMELT_C_API_VERSION);
  EXPECT(strlen(smelt_version()) > 0);
  char dir[] = "/tmp/smelt_c_api_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char path[256], checkpoint[256];
  snprintf(path, sizeof path, "%s/classifier.ir", dir);
  snprintf(checkpoint, sizeof checkpoint, "%s/classifier.safetensors", dir);
  writeFile(path, kModel);
  checkBadCalls(path);
  const char* fallback[] = {"cpu"};
  const char** devices = argc > 1 ? (const char**)(argv + 1) : fallback;
  const int count = argc > 1 ? argc - 1 : 1;
  for (int d = 0; d < count; ++d) {
    checkInference(path, devices[d]);
    checkThreads(path, devices[d]);
    checkTraining(path, devices[d], checkpoint);
  }
  remove(checkpoint);
  remove(path);
  rmdir(dir);
  if (failures) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("c api: all checks passed\n");
  return 0;
}

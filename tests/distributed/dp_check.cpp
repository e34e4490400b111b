// smelt_dp_check MODE, run by mpirun on N ranks (tests/distributed/run_dp_checks.sh):
//   equal     data-parallel steps of an MLP, a CNN and a CNN with batch norms synchronized over the ranks (Adam,
//             three batches of 24 examples, each rank its shard) give the parameters, optimizer state and running
//             statistics one process computes on the whole batches (f32, 1e-5 relative), and the same on every
//             rank bit for bit; and one SGD step of an f64 MLP and an f64 CNN with a synchronized batch norm, built
//             as graphs (the model API's parameters are f32): gradients and updated parameters equal one
//             process's on the whole batch (1e-12 relative);
//   mismatch  rank 1 builds a wider model: creating the step fails on every rank naming the first collective
//             that differs;
//   stuck     rank 1 stops answering before the first collective: rank 0 fails within the timeout
//             ($SMELT_COLLECTIVE_TIMEOUT) naming rank 1;
//   stuck0    rank 0 stops answering: rank 1 fails within the timeout naming rank 0;
//   killed    rank 1 dies (SIGKILL) after its first step: the job ends (the script checks how soon and that
//             rank 1 is named);
//   stalled   rank 1's communication thread stalls inside its first collective, after every rank arrived
//             (SMELT_FAULTS=stall=1): each rank's watchdog ends it after the timeout, naming the collective.
// Each rank prints one line per check ("rank R: ok ..." or "rank R: FAIL ...") and exits 0 when its checks pass.
#include "autodiff/gradient_tape.h"
#include "frontend/nn/data_parallel.h"
#include "frontend/nn/layers.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/optimizers.h"
#include "frontend/nn/train_step.h"
#include "runtime/device/fault_injection.h"
#include "runtime/distributed/mpi_group.h"
#include "runtime/exec/executable.h"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

using namespace smelt;

namespace {

constexpr int64_t kBatch = 24;

struct Case {
  std::string name;
  std::function<nn::ModulePtr()> net;
  Shape example;  // one example's shape
  int64_t classes;
};

// The same batches on every rank (seeded), never all zeros.
std::pair<Tensor, Tensor> batchOf(const Case& c, int step) {
  Shape shape{kBatch};
  shape.insert(shape.end(), c.example.begin(), c.example.end());
  Tensor x(TensorType{DType::f32, shape}), y(TensorType{DType::i64, {kBatch}});
  std::mt19937_64 rng(1000 + static_cast<uint64_t>(step));
  std::normal_distribution<double> normal;
  for (int64_t i = 0; i < x.numel(); ++i) x.setDouble(i, normal(rng));
  for (int64_t i = 0; i < kBatch; ++i) y.setInt(i, static_cast<int64_t>(rng() % static_cast<uint64_t>(c.classes)));
  return {x, y};
}

// Trains `steps` steps on batches (sharded when distributed); the final state.
Expected<nn::StateDict> train(const Case& c, bool distributed, int rank, int size) {
  nn::Model model(c.net(), 3);
  auto [begin, end] = distributed ? nn::shardRows(kBatch, rank, size) : std::pair<int64_t, int64_t>{0, kBatch};
  Shape xs{end - begin};
  xs.insert(xs.end(), c.example.begin(), c.example.end());
  nn::TrainStepOptions options;
  options.distributed.enabled = distributed;
  options.distributed.firstBucketBytes = 512;  // several buckets even for these small models
  options.distributed.bucketBytes = 4096;
  // Batch norms over the whole batch, as the one process has them (the other cases have none).
  options.distributed.syncBatchNorm = true;
  SMELT_TRY(auto step,
            nn::TrainStep::create(model, nn::crossEntropy, nn::adam({.lr = 0.01}), TensorType{DType::f32, xs},
                                  TensorType{DType::i64, {end - begin}}, options));
  for (int s = 0; s < 3; ++s) {
    auto [x, y] = batchOf(c, s);
    Tensor xs = distributed ? nn::shardOf(x, rank, size) : x, ys = distributed ? nn::shardOf(y, rank, size) : y;
    SMELT_TRY(double loss, step->run(xs, ys));
    (void)loss;
  }
  SMELT_TRY(const nn::StateDict* state, model.syncedHostState());
  return *state;
}

bool equalCase(const Case& c, CollectiveGroup& group) {
  const int rank = group.rank(), size = group.size();
  auto distributed = train(c, true, rank, size);
  if (!distributed.ok()) {
    fmt::print("rank {}: FAIL {}: {}\n", rank, c.name, distributed.error().message());
    return false;
  }
  // One process on the whole batches (no collectives: the step is not distributed).
  auto single = train(c, false, rank, size);
  if (!single.ok()) {
    fmt::print("rank {}: FAIL {} (one process): {}\n", rank, c.name, single.error().message());
    return false;
  }
  double worst = 0;
  std::string worstName;
  for (const auto& [name, want] : *single) {
    const Tensor& got = distributed->at(name);
    double scale = 1e-3;
    for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::abs(want.getDouble(i)));
    for (int64_t i = 0; i < want.numel(); ++i) {
      double err = std::abs(got.getDouble(i) - want.getDouble(i)) / scale;
      if (err > worst) worst = err, worstName = name;
    }
  }
  // Every rank holds rank 0's numbers exactly.
  bool same = true;
  for (auto& [name, t] : *distributed) {
    Tensor root = t;
    if (!group.broadcast(root, 0).ok() || std::memcmp(root.raw(), t.raw(), t.byteSize()) != 0) same = false;
  }
  bool ok = worst < 1e-5 && same;
  fmt::print(
      "rank {}: {} {} on {} ranks: {} state tensors, worst relative difference from one process {:.1e} ({}), "
      "{}\n",
      rank, ok ? "ok" : "FAIL", c.name, size, single->size(), worst, worstName,
      same ? "identical on every rank" : "DIFFERENT from rank 0's");
  return ok;
}

// The f64 cases: graphs built with the Builder, parameters as inputs, a mean squared error against targets.
struct F64Case {
  std::string name;
  Shape example, target;
  std::vector<std::pair<std::string, Shape>> params;
  // The model's output from x and the parameters (in `params` order); `synced`: batch statistics over the ranks.
  std::function<Value*(Builder&, Value* x, const std::vector<Value*>& p, bool synced)> forward;
};

// Batch norm without affine running statistics: over the ranks' batches (their per-channel mean and mean
// square averaged by one all_reduce, as BatchNorm::synchronized) or this process's.
Value* batchNorm(Builder& b, Value* x, Value* scale, Value* bias, bool synced) {
  AttrMap reduce{{"axes", std::vector<int64_t>{0, 2, 3}}, {"keepdims", int64_t{1}}};
  Value* mean = b.op("reduce_mean", {x}, reduce);
  Value* square = b.op("reduce_mean", {b.square(x)}, reduce);
  if (synced) {
    Value* moments = b.op("all_reduce", {b.op("concat", {mean, square}, {{"axis", int64_t{0}}})},
                          {{"op", std::string("mean")}});
    auto row = [&](int64_t i) {
      return b.op("slice", {moments}, {{"starts", std::vector<int64_t>{i}}, {"ends", std::vector<int64_t>{i + 1}},
                                       {"axes", std::vector<int64_t>{0}}});
    };
    mean = row(0);
    square = row(1);
  }
  Value* variance = b.sub(square, b.square(mean));
  const int64_t c = x->type().shape[1];
  Value* normalized = b.mul(b.sub(x, mean), b.op("rsqrt", {b.add(variance, b.scalarLike(1e-5, variance))}));
  return b.add(b.mul(normalized, b.reshape(scale, {1, c, 1, 1})), b.reshape(bias, {1, c, 1, 1}));
}

// One SGD step's graph on `rows` examples: outputs the (averaged, when distributed) gradients and the parameters
// updated with them.
Expected<Graph> sgdStep(const F64Case& c, int64_t rows, bool distributed) {
  Graph g;
  Shape xs{rows}, ys{rows};
  xs.insert(xs.end(), c.example.begin(), c.example.end());
  ys.insert(ys.end(), c.target.begin(), c.target.end());
  Value* x = g.addInput("x", {DType::f64, xs});
  Value* y = g.addInput("y", {DType::f64, ys});
  std::vector<Value*> params;
  for (const auto& [name, shape] : c.params) params.push_back(g.addInput(name, {DType::f64, shape}));
  GradientTape tape(g);
  for (Value* p : params) tape.watch(p);
  Builder b(g);
  Value* diff = b.sub(c.forward(b, x, params, distributed), y);
  Value* loss = b.op("reduce_mean", {b.square(diff)});
  SMELT_TRY(std::vector<Value*> grads, tape.gradient(loss, params));
  tape.stopRecording();
  if (distributed) {
    nn::DistributedOptions options;
    options.firstBucketBytes = 256;  // several buckets
    options.bucketBytes = 2048;
    grads = nn::averageOverRanks(b, grads, options);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    g.addOutput("grad." + c.params[i].first, grads[i]);
    g.addOutput("new." + c.params[i].first, b.sub(params[i], b.scale(grads[i], 0.1)));
  }
  SMELT_CHECK_OK(b.status());
  // Each wait at its first use, as TrainStep runs them: the sums must not depend on where the waits run.
  if (distributed) SMELT_CHECK_OK(nn::runWaitsLate(g));
  return g;
}

Tensor randomF64(const Shape& shape, uint64_t seed) {
  Tensor t(TensorType{DType::f64, shape});
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  for (int64_t i = 0; i < t.numel(); ++i) t.setDouble(i, normal(rng));
  return t;
}

Expected<std::vector<Tensor>> runStep(const F64Case& c, int rank, int size, bool distributed) {
  auto [begin, end] = distributed ? nn::shardRows(kBatch, rank, size) : std::pair<int64_t, int64_t>{0, kBatch};
  SMELT_TRY(Graph g, sgdStep(c, end - begin, distributed));
  Shape xs{kBatch}, ys{kBatch};
  xs.insert(xs.end(), c.example.begin(), c.example.end());
  ys.insert(ys.end(), c.target.begin(), c.target.end());
  Tensor x = randomF64(xs, 1), y = randomF64(ys, 2);
  TensorMap feeds{{"x", distributed ? nn::shardOf(x, rank, size) : x},
                  {"y", distributed ? nn::shardOf(y, rank, size) : y}};
  uint64_t seed = 10;
  for (const auto& [name, shape] : c.params) feeds.emplace(name, randomF64(shape, seed++));
  SMELT_TRY(auto exe, Executable::compile(g));
  return exe->run(feeds);
}

bool equalF64Case(const F64Case& c, CollectiveGroup& group) {
  const int rank = group.rank(), size = group.size();
  auto distributed = runStep(c, rank, size, true);
  auto single = distributed.ok() ? runStep(c, rank, size, false) : distributed;
  if (!single.ok()) {
    fmt::print("rank {}: FAIL {}: {}\n", rank, c.name, single.error().message());
    return false;
  }
  double worst = 0;
  for (size_t o = 0; o < single->size(); ++o) {
    const Tensor &want = (*single)[o], &got = (*distributed)[o];
    double scale = 1e-12;
    for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::abs(want.getDouble(i)));
    for (int64_t i = 0; i < want.numel(); ++i) worst = std::max(worst, std::abs(got.getDouble(i) - want.getDouble(i)) / scale);
  }
  bool ok = worst < 1e-12;
  fmt::print("rank {}: {} {} (f64) on {} ranks: {} gradients and updated parameters, worst relative difference from "
             "one process {:.1e}\n",
             rank, ok ? "ok" : "FAIL", c.name, size, single->size(), worst);
  return ok;
}

/// Rank `stopped` stops answering before the first collective; the other rank's training must fail within the
/// timeout ($SMELT_COLLECTIVE_TIMEOUT) with `words` in its error. The process then ends the job (mpirun stops the
/// sleeping rank): exit 3 says the check passed.
int oneRankStops(int stopped, const Case& c, CollectiveGroup& group, const char* words, const char* what) {
  const int rank = group.rank();
  if (rank == stopped) {
    std::this_thread::sleep_for(std::chrono::seconds(60));  // stops answering; the job ends first
    return 0;
  }
  auto start = std::chrono::steady_clock::now();
  auto r = train(c, true, rank, group.size());
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  bool ok = !r.ok() && r.error().message().find(words) != std::string::npos;
  fmt::print("rank {}: {} {}, after {:.1f} s: {}\n", rank, ok ? "ok" : "FAIL", what, waited,
             r.ok() ? "no error" : r.error().message());
  std::fflush(stdout);
  std::_Exit(ok ? 3 : 1);
}

// The sums themselves, at sizes the ring all-reduce takes (a bucket just past its threshold, one of several
// chunks per segment that does not divide by the ranks), in f32 and f64: started while the caller computes (sleeps,
// asking allReduceDone) and blocking, two in flight at once. Each element against the sum of every rank's value
// (each rank draws every rank's data from the same seeds), and every rank's bits against rank 0's.
bool sumsCase(CollectiveGroup& group) {
  const int rank = group.rank(), size = group.size();
  // splitmix64 of (seed, rank, index) as a value in [-1, 1): cheap enough for a million elements per rank.
  auto valueOf = [](int r, int64_t i, uint64_t seed) {
    uint64_t z = seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(r) * 0xbf58476d1ce4e5b9ULL +
                 static_cast<uint64_t>(i) * 0x94d049bb133111ebULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1p-52 - 1.0;
  };
  bool ok = true;
  std::string worstLine;
  double worst = 0;
  uint64_t seed = 1;
  for (DType dtype : {DType::f32, DType::f64}) {
    std::vector<Tensor> sums;
    for (int64_t count : {int64_t{4097}, int64_t{1000003}}) sums.emplace_back(TensorType{dtype, {count}});
    for (Tensor& t : sums) {
      for (int64_t i = 0; i < t.numel(); ++i) t.setDouble(i, valueOf(rank, i, seed));
      ++seed;
    }
    // The first two started together (the caller sleeps meanwhile), the second two blocking.
    std::vector<Tensor> blocking = sums;
    for (Tensor& t : blocking) {
      for (int64_t i = 0; i < t.numel(); ++i) t.setDouble(i, valueOf(rank, i, seed));
      ++seed;
    }
    std::vector<int64_t> handles;
    for (Tensor& t : sums) {
      auto h = group.startAllReduceSum(t.raw(), t.numel(), t.dtype());
      if (!h.ok()) {
        fmt::print("rank {}: FAIL ring sums: {}\n", rank, h.error().message());
        return false;
      }
      handles.push_back(*h);
    }
    for (int64_t h : handles) {
      while (!group.allReduceDone(h)) std::this_thread::sleep_for(std::chrono::microseconds(300));
      if (Status s = group.finishAllReduce(h); !s.ok()) {
        fmt::print("rank {}: FAIL ring sums: {}\n", rank, s.error().message());
        return false;
      }
    }
    for (Tensor& t : blocking) {
      if (Status s = group.allReduceSum(t); !s.ok()) {
        fmt::print("rank {}: FAIL ring sums: {}\n", rank, s.error().message());
        return false;
      }
    }
    sums.insert(sums.end(), blocking.begin(), blocking.end());
    const uint64_t firstSeed = seed - sums.size();
    const double bound = dtype == DType::f32 ? 1e-6 : 1e-14;
    for (size_t k = 0; k < sums.size(); ++k) {
      const Tensor& got = sums[k];
      for (int64_t i = 0; i < got.numel(); ++i) {
        double want = 0, scale = 0;
        for (int r = 0; r < size; ++r) {
          const double v = valueOf(r, i, firstSeed + k);
          want += v;
          scale += std::abs(v);
        }
        const double err = std::abs(got.getDouble(i) - want) / scale;
        if (err > bound) ok = false;
        if (err > worst) {
          worst = err;
          worstLine = fmt::format("{} element {} of {}", got.type().toString(), i, got.numel());
        }
      }
      Tensor root = got;
      if (!group.broadcast(root, 0).ok() || std::memcmp(root.raw(), got.raw(), got.byteSize()) != 0) ok = false;
    }
  }
  fmt::print("rank {}: {} ring sums on {} ranks: 8 sums of 4097 and 1000003 f32 and f64 elements, worst relative "
             "error {:.1e} ({}), {}\n",
             rank, ok ? "ok" : "FAIL", size, worst, worstLine, ok ? "identical on every rank" : "wrong or DIFFERENT");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "equal";
  auto world = joinMpiWorld();
  if (!world.ok()) {
    fmt::print("FAIL: {}\n", world.error().message());
    return 1;
  }
  CollectiveGroup& group = **world;
  const int rank = group.rank();
  // The timeout the group keeps to is the one the NCCL watchdog is handed too.
  if (const char* t = std::getenv("SMELT_COLLECTIVE_TIMEOUT"); t && group.timeoutSeconds() != std::strtod(t, nullptr)) {
    fmt::print("FAIL: the group's timeout is {} s, SMELT_COLLECTIVE_TIMEOUT {}\n", group.timeoutSeconds(), t);
    return 1;
  }
  Case mlp{"mlp",
           [] {
             return nn::sequential({nn::linear(10, 32), nn::tanh(), nn::linear(32, 16), nn::relu(), nn::linear(16, 4)});
           },
           {10},
           4};
  Case cnn{"cnn",
           [] {
             return nn::sequential({nn::conv2d(2, 6, 3, {.padding = 1}), nn::relu(), nn::maxPool2d(2),
                                    nn::conv2d(6, 8, 3, {.stride = 2, .padding = 1}), nn::gelu(), nn::flatten(),
                                    nn::linear(8 * 2 * 2, 5)});
           },
           {2, 8, 8},
           5};
  Case batchNormCnn{"cnn with synchronized batch norm",
                    [] {
                      // No bias before a batch norm (as ResNets have it): its gradient is zero up to rounding,
                      // which Adam's normalized step would turn into arbitrary updates.
                      return nn::sequential({nn::conv2d(2, 6, 3, {.padding = 1, .bias = false}), nn::batchNorm(6),
                                             nn::relu(),
                                             nn::conv2d(6, 8, 3, {.stride = 2, .padding = 1, .bias = false}),
                                             nn::batchNorm(8),
                                             nn::tanh(), nn::flatten(), nn::linear(8 * 4 * 4, 5)});
                    },
                    {2, 8, 8},
                    5};
  F64Case mlp64{"mlp",
                {10},
                {4},
                {{"w1", {10, 32}}, {"b1", {32}}, {"w2", {32, 4}}, {"b2", {4}}},
                [](Builder& b, Value* x, const std::vector<Value*>& p, bool) {
                  Value* h = b.op("tanh", {b.add(b.op("matmul", {x, p[0]}), p[1])});
                  return b.add(b.op("matmul", {h, p[2]}), p[3]);
                }};
  F64Case cnn64{"cnn with synchronized batch norm",
                {2, 8, 8},
                {5},
                {{"k", {6, 2, 3, 3}}, {"scale", {6}}, {"bias", {6}}, {"w", {6, 5}}},
                [](Builder& b, Value* x, const std::vector<Value*>& p, bool synced) {
                  Value* conv = b.op("conv2d", {x, p[0]}, {{"padding", std::vector<int64_t>{1, 1, 1, 1}}});
                  Value* h = b.op("relu", {batchNorm(b, conv, p[1], p[2], synced)});
                  Value* pooled = b.op("reduce_mean", {h}, {{"axes", std::vector<int64_t>{2, 3}}});
                  return b.op("matmul", {pooled, p[3]});
                }};
  if (mode == "equal") {
    bool ok = equalCase(mlp, group);
    ok = equalCase(cnn, group) && ok;
    ok = equalCase(batchNormCnn, group) && ok;
    ok = equalF64Case(mlp64, group) && ok;
    ok = equalF64Case(cnn64, group) && ok;
    ok = sumsCase(group) && ok;
    std::fflush(stdout);
    return ok ? 0 : 1;
  }
  if (mode == "mismatch") {
    Case other = mlp;
    if (rank == 1)
      other.net = [] {
        return nn::sequential({nn::linear(10, 33), nn::tanh(), nn::linear(33, 16), nn::relu(), nn::linear(16, 4)});
      };
    auto r = train(other, true, rank, group.size());
    bool ok = !r.ok() && r.error().message().find("differs from rank 0's") != std::string::npos;
    fmt::print("rank {}: {} mismatched schedules: {}\n", rank, ok ? "ok" : "FAIL",
               r.ok() ? "no error" : r.error().message());
    std::fflush(stdout);
    return ok ? 0 : 1;
  }
  if (mode == "stuck") return oneRankStops(1, mlp, group, "rank(s) 1 did not arrive", "a rank that stops answering");
  if (mode == "stuck0") return oneRankStops(0, mlp, group, "rank 0 did not start it", "a rank 0 that stops answering");
  if (mode == "killed") {
    // Rank 1 dies between two steps' collectives; rank 0 goes on until the job ends under it.
    nn::Model model(mlp.net(), 3);
    auto [begin, end] = nn::shardRows(kBatch, rank, group.size());
    nn::TrainStepOptions options;
    options.distributed.enabled = true;
    auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::sgd({.lr = 0.01}), TensorType{DType::f32, {end - begin, 10}},
                                      TensorType{DType::i64, {end - begin}}, options);
    if (!step.ok()) {
      fmt::print("rank {}: FAIL {}\n", rank, step.error().message());
      return 1;
    }
    for (int s = 0; s < 1000; ++s) {
      if (rank == 1 && s == 1) {
        fmt::print("rank 1: dying after one step\n");
        std::fflush(stdout);
        std::raise(SIGKILL);
      }
      auto [x, y] = batchOf(mlp, s % 3);
      auto loss = (*step)->run(nn::shardOf(x, rank, group.size()), nn::shardOf(y, rank, group.size()));
      if (!loss.ok()) {
        fmt::print("rank {}: stopped at step {}: {}\n", rank, s, loss.error().message());
        std::fflush(stdout);
        std::_Exit(4);
      }
    }
    fmt::print("rank {}: FAIL trained 1000 steps with a dead rank\n", rank);
    return 1;
  }
  if (mode == "stalled") {
    if (rank == 1) (void)faultInjector().configure("stall=1");
    auto r = train(mlp, true, rank, group.size());
    fmt::print("rank {}: FAIL the stalled collective returned: {}\n", rank, r.ok() ? "no error" : r.error().message());
    return 1;
  }
  fmt::print("unknown mode '{}'\n", mode);
  return 2;
}

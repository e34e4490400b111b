// smelt_dp_check MODE, run by mpirun on N ranks (tests/distributed/run_dp_checks.sh):
//   equal     data-parallel steps of an MLP, a CNN and a CNN with batch norms synchronized over the ranks (Adam,
//             three batches of 24 examples, each rank its shard) give the parameters, optimizer state and running
//             statistics one process computes on the whole batches (f32, 1e-5 relative), and the same on every
//             rank bit for bit;
//   mismatch  rank 1 builds a wider model: creating the step fails on every rank naming the first collective
//             that differs;
//   stuck     rank 1 stops answering before the first collective: rank 0 fails within the timeout
//             ($SMELT_COLLECTIVE_TIMEOUT) naming rank 1.
// Each rank prints one line per check ("rank R: ok ..." or "rank R: FAIL ...") and exits 0 when its checks pass.
#include "frontend/nn/data_parallel.h"
#include "frontend/nn/layers.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/optimizers.h"
#include "frontend/nn/train_step.h"
#include "runtime/distributed/mpi_group.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
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
  if (mode == "equal") {
    bool ok = equalCase(mlp, group);
    ok = equalCase(cnn, group) && ok;
    ok = equalCase(batchNormCnn, group) && ok;
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
  if (mode == "stuck") {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(60));  // stops answering; the job ends first
      return 0;
    }
    auto start = std::chrono::steady_clock::now();
    auto r = train(mlp, true, rank, group.size());
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bool ok = !r.ok() && r.error().message().find("rank(s) 1 did not arrive") != std::string::npos;
    fmt::print("rank {}: {} a rank that stops answering, after {:.1f} s: {}\n", rank, ok ? "ok" : "FAIL", waited,
               r.ok() ? "no error" : r.error().message());
    std::fflush(stdout);
    std::_Exit(ok ? 3 : 1);  // ends the job (mpirun stops the other ranks): 3 says the check passed
  }
  fmt::print("unknown mode '{}'\n", mode);
  return 2;
}

// smelt_dp_overlap [--only NAME] [--steps K] [--bucket-mb MB]: how much of a data-parallel training step's
// communication hides behind its computation (issue 21), run by mpirun on N ranks (1 included), each rank on the
// workload's whole batch (weak scaling, as DistributedDataParallel is used): mlp_train_step (784-1024-1024-10, batch
// 256, Adam) and resnet18_train_step (batch 16 of 3x64x64, SGD with momentum), the workloads of smelt_train_steps. Each
// rank times, in three phases every rank runs at once (K steps each, the same on every rank, as every step
// communicates):
//   compute_ms  the step without communication (a TrainStep of its own, not distributed): the slowest rank's
//               median (compute_ms_each: every rank's), as a synchronous step waits for that rank,
//   comm_ms     the data-parallel step's buckets (read from its graph's all_reduce_start nodes: same sizes, same
//               order) all-reduced alone through the same collective group, started together and then waited
//               for, as the step does,
//   step_ms     the data-parallel step,
// and rank 0 prints `workload NAME`, `ranks N`, `buckets B`, `bucket_mb S,S,...` and the three medians (1 rank:
// compute_ms only). The hidden fraction is (compute + comm - step) / comm: 1 when the step takes no longer
// than its computation, 0 when the communication adds all its time. --bucket-mb sets DistributedOptions::bucketBytes
// (25 MB by default, as DDP's).
#include "benchmarks/native/training_data.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/models.h"
#include "frontend/nn/train_step.h"
#include "runtime/distributed/mpi_group.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace smelt;

namespace {

/// DistributedOptions::bucketBytes (--bucket-mb); 0: the default.
int64_t bucketBytes = 0;

using bench::labels;
using bench::randomNormal;

int fail(const Error& e) {
  fmt::print(stderr, "smelt_dp_overlap: {}\n", e.message());
  return 1;
}

/// Every rank arrives before any goes on (an all-reduce of one number), so the phases start together.
Status barrier(CollectiveGroup& group) {
  Tensor token = Tensor::scalar(DType::f32, 0.0);
  return group.allReduceSum(token);
}

/// This process's processor time so far (every thread, user and system), in milliseconds.
double processCpuMs() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto ms = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3; };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

/// The median of `steps` timed runs of `fn` after two untimed ones, every rank starting together.
Expected<double> medianMs(CollectiveGroup* group, int steps, const std::function<Status()>& fn) {
  std::vector<double> ms;
  for (int i = -2; i < steps; ++i) {
    if (group) SMELT_CHECK_OK(barrier(*group));
    auto t0 = std::chrono::steady_clock::now();
    SMELT_CHECK_OK(fn());
    if (i >= 0) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}

int measure(const char* name, const std::function<nn::ModulePtr()>& makeModule,
            const std::function<nn::OptimizerPtr()>& makeOptimizer, const TensorType& input, int64_t classes, int steps,
            const std::shared_ptr<CollectiveGroup>& group) {
  const bool distributed = group && group->size() > 1;
  Tensor x = randomNormal(input, 1 + static_cast<uint64_t>(group ? group->rank() : 0));
  Tensor y = labels(input.shape[0], classes);
  TensorType target{DType::i64, {input.shape[0]}};
  auto run = [&](nn::TrainStep& step) -> Status {
    SMELT_TRY(double loss, step.run(x, y));
    (void)loss;
    return Status::success();
  };

  nn::Model localModel(makeModule(), 0);
  auto local = nn::TrainStep::create(localModel, nn::crossEntropy, makeOptimizer(), input, target);
  if (!local.ok()) return fail(local.error());
  auto compute = medianMs(distributed ? group.get() : nullptr, steps, [&] { return run(**local); });
  if (!compute.ok()) return fail(compute.error());
  // Every rank's median: a synchronous step waits for the slowest rank every time, so that rank's computation is
  // what the communication can hide behind (a rank on a slower core is imbalance, not communication).
  std::vector<double> perRank{*compute};
  if (distributed) {
    Tensor all(TensorType{DType::f64, {group->size()}});
    for (int r = 0; r < group->size(); ++r) all.setDouble(r, r == group->rank() ? *compute : 0.0);
    if (Status s = group->allReduceSum(all); !s.ok()) return fail(s.error());
    perRank.clear();
    for (int r = 0; r < group->size(); ++r) perRank.push_back(all.getDouble(r));
  }
  if (!group || group->rank() == 0) {
    std::vector<std::string> each;
    for (double ms : perRank) each.push_back(fmt::format("{:.2f}", ms));
    fmt::print("workload {}\nranks {}\ncompute_ms {:.4f}\ncompute_ms_each {}\n", name, group ? group->size() : 1,
               *std::max_element(perRank.begin(), perRank.end()), fmt::join(each, ","));
    std::fflush(stdout);
  }
  if (!distributed) return 0;

  nn::Model model(makeModule(), 0);
  nn::TrainStepOptions options;
  options.distributed.enabled = true;
  if (bucketBytes > 0) options.distributed.bucketBytes = bucketBytes;
  auto step = nn::TrainStep::create(model, nn::crossEntropy, makeOptimizer(), input, target, options);
  if (!step.ok()) return fail(step.error());
  // The step's buckets, in the order it starts them.
  std::vector<Tensor> buckets;
  std::vector<std::string> mb;
  for (const auto& node : (*step)->graph().nodes()) {
    if (node->opName() != "all_reduce_start") continue;
    buckets.emplace_back(node->operand(0)->type());
    mb.push_back(fmt::format("{:.2f}", static_cast<double>(buckets.back().byteSize()) / (1 << 20)));
  }
  auto comm = medianMs(group.get(), steps, [&]() -> Status {
    std::vector<int64_t> handles;
    for (Tensor& bucket : buckets) {
      SMELT_TRY(int64_t h, group->startAllReduceSum(bucket.raw(), bucket.numel(), bucket.dtype()));
      handles.push_back(h);
    }
    for (int64_t h : handles) SMELT_CHECK_OK(group->finishAllReduce(h));
    return Status::success();
  });
  if (!comm.ok()) return fail(comm.error());
  // The processor time the same all-reduces take (the communication thread, and the kernel's TCP work this process
  // is charged for) while the caller sleeps rather than waits: what a step that computes on every core pays for
  // its communication in computation time, which no overlap hides.
  const double cpuBefore = processCpuMs();
  auto idle = medianMs(group.get(), steps, [&]() -> Status {
    std::vector<int64_t> handles;
    for (Tensor& bucket : buckets) {
      SMELT_TRY(int64_t h, group->startAllReduceSum(bucket.raw(), bucket.numel(), bucket.dtype()));
      handles.push_back(h);
    }
    for (int64_t h : handles) {
      while (!group->allReduceDone(h)) std::this_thread::sleep_for(std::chrono::microseconds(200));
      SMELT_CHECK_OK(group->finishAllReduce(h));
    }
    return Status::success();
  });
  if (!idle.ok()) return fail(idle.error());
  const double commCpuMs = (processCpuMs() - cpuBefore) / (steps + 2);
  auto stepMs = medianMs(group.get(), steps, [&] { return run(**step); });
  if (!stepMs.ok()) return fail(stepMs.error());
  if (group->rank() == 0) {
    fmt::print("buckets {}\nbucket_mb {}\ncomm_ms {:.4f}\ncomm_cpu_ms {:.4f}\nstep_ms {:.4f}\n", buckets.size(),
               fmt::join(mb, ","), *comm, commCpuMs, *stepMs);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  int steps = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--bucket-mb")) bucketBytes = static_cast<int64_t>(std::atof(argv[i + 1]) * (1 << 20));
  }
  std::shared_ptr<CollectiveGroup> group;
  if (launchedByMpi()) {
    auto world = joinMpiWorld();
    if (!world.ok()) return fail(world.error());
    group = *world;
  }
  auto wanted = [&](const char* name) { return only.empty() || only == name; };
  if (wanted("mlp_train_step") &&
      measure(
          "mlp_train_step",
          [] {
            return nn::sequential(
                {nn::linear(784, 1024), nn::relu(), nn::linear(1024, 1024), nn::relu(), nn::linear(1024, 10)});
          },
          [] { return nn::adam({.lr = 1e-3}); }, TensorType{DType::f32, {256, 784}}, 10, steps > 0 ? steps : 30,
          group)) {
    return 1;
  }
  if (wanted("resnet18_train_step") &&
      measure(
          "resnet18_train_step", [] { return nn::resnet18(1000); },
          [] { return nn::sgd({.lr = 0.01, .momentum = 0.9}); }, TensorType{DType::f32, {16, 3, 64, 64}}, 1000,
          steps > 0 ? steps : 8, group)) {
    return 1;
  }
  return 0;
}

// smelt_allreduce_bandwidth MODE MEGABYTES REPEATS, run by mpirun on N ranks: the time of an in-place sum over the
// ranks of an f32 buffer of MEGABYTES, through smelt's collective group (MODE smelt: joinMpiWorld's
// allReduceSum, as the all_reduce op calls it) or MPI_Allreduce called directly (MODE mpi), each repeat after a
// barrier; rank 0 prints `median_ms M`, `min_ms M` and `algbw_gbs G` lines (algorithm bandwidth: bytes / time).
#include "runtime/distributed/mpi_group.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace smelt;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: smelt_allreduce_bandwidth smelt|mpi MEGABYTES REPEATS\n");
    return 2;
  }
  std::string mode = argv[1];
  const auto count = static_cast<int64_t>(std::atof(argv[2]) * (1 << 20) / 4);
  const int repeats = std::atoi(argv[3]);
  std::vector<double> ms;
  int rank = 0;
  if (mode == "mpi") {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::vector<float> buffer(static_cast<size_t>(count), 1.0f);
    for (int r = -2; r < repeats; ++r) {  // two warm-up runs
      MPI_Barrier(MPI_COMM_WORLD);
      auto start = std::chrono::steady_clock::now();
      MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (r >= 0)
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    MPI_Finalize();
  } else {
    auto world = joinMpiWorld();
    if (!world.ok()) {
      std::fprintf(stderr, "%s\n", world.error().message().c_str());
      return 1;
    }
    rank = (*world)->rank();
    Tensor buffer(TensorType{DType::f32, {count}});
    Tensor token = Tensor::scalar(DType::f32, 0.0);
    for (int r = -2; r < repeats; ++r) {
      if (!(*world)->allReduceSum(token).ok()) return 1;  // the barrier
      auto start = std::chrono::steady_clock::now();
      if (!(*world)->allReduceSum(buffer).ok()) return 1;
      if (r >= 0)
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
  }
  if (rank == 0) {
    std::sort(ms.begin(), ms.end());
    double median = ms[ms.size() / 2];
    std::printf("median_ms %.4f\nmin_ms %.4f\nalgbw_gbs %.3f\n", median, ms.front(),
                static_cast<double>(count) * 4 / (median * 1e-3) / 1e9);
  }
  return 0;
}

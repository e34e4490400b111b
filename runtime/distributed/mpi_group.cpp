// MPI as the collective group (mpi_group.h).
#include "runtime/distributed/mpi_group.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace smelt {

namespace {

constexpr int kArrivalTag = 7301;

MPI_Datatype mpiType(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;
  }
}

/// One thread owns MPI (MPI_THREAD_FUNNELED): callers queue work and wait for its result.
class MpiGroup final : public CollectiveGroup {
 public:
  explicit MpiGroup(double timeout) : timeout_(timeout) {
    std::promise<Status> started;
    auto ready = started.get_future();
    thread_ = std::thread([this, &started] { serve(started); });
    startStatus_ = ready.get();
  }
  ~MpiGroup() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  const Status& startStatus() const { return startStatus_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status allReduceSum(Tensor& tensor) override {
    MPI_Datatype type = mpiType(tensor.dtype());
    if (type == MPI_DATATYPE_NULL)
      return makeError("all_reduce: {} is not supported (f32, f64)", tensor.type().toString());
    return run([&]() -> Status {
      // Every rank has arrived (or this is an error naming who has not): the blocking collective, with MPI's
      // own algorithm for the size, cannot wait on a rank that is not coming.
      SMELT_CHECK_OK(awaitArrivals("all_reduce", tensor.type()));
      return sum(tensor.raw(), type, tensor.type());
    });
  }

  // The sum runs in place on the communication thread while the caller goes on; finishAllReduce waits for it.
  Expected<int64_t> startAllReduceSum(void* data, int64_t count, DType dtype) override {
    const TensorType type{dtype, {count}};
    MPI_Datatype mpi = mpiType(dtype);
    if (mpi == MPI_DATATYPE_NULL) return makeError("all_reduce: {} is not supported (f32, f64)", type.toString());
    auto result = std::make_shared<std::promise<Status>>();
    int64_t handle = nextStarted_++;
    started_.emplace(handle, result->get_future());
    enqueue([this, result, mpi, data, type] {
      Status arrived = awaitArrivals("all_reduce", type);
      result->set_value(arrived.ok() ? sum(data, mpi, type) : arrived);
    });
    return handle;
  }

  Status finishAllReduce(int64_t handle) override {
    auto it = started_.find(handle);
    if (it == started_.end()) return makeError("all-reduce #{} was not started or already finished", handle);
    ++waiting_;
    Status done = it->second.get();
    --waiting_;
    started_.erase(it);
    return done;
  }

  Status broadcast(Tensor& tensor, int root) override {
    return run([&]() -> Status {
      SMELT_CHECK_OK(awaitArrivals("broadcast", tensor.type()));
      if (MPI_Bcast(tensor.raw(), static_cast<int>(tensor.byteSize()), MPI_BYTE, root, MPI_COMM_WORLD) != MPI_SUCCESS) {
        return makeError("{}: MPI_Bcast failed", describe("broadcast", tensor.type()));
      }
      return Status::success();
    });
  }

 private:
  void enqueue(std::function<void()> work) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(work));
    }
    wake_.notify_all();
  }

  // Runs `work` on the communication thread, after everything queued before it, and waits for it.
  Status run(std::function<Status()> work) {
    auto done = std::make_shared<std::promise<Status>>();
    auto result = done->get_future();
    enqueue([done, work = std::move(work)] { done->set_value(work()); });
    ++waiting_;
    Status status = result.get();
    --waiting_;
    return status;
  }

  void serve(std::promise<Status>& started) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      started.set_value(makeError("MPI_Init_thread failed"));
      return;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // Errors come back as codes, turned into messages here rather than aborting the job inside MPI.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    started.set_value(Status::success());
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) break;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
    MPI_Finalize();
  }

  // The in-place sum over the ranks. MPI_Allreduce, not MPI_Iallreduce driven by tests: Open MPI's blocking
  // algorithms reached 2.5x the non-blocking one's bandwidth on 25 MB (shared memory), and over TCP between two
  // hosts (10 Gbit/s) the data-parallel steps took no longer with it (MLP 43 ms against 46, ResNet-18 359 ms
  // against 361, tests every 20 us with sleeps between).
  Status sum(void* data, MPI_Datatype mpi, const TensorType& type) {
    if (MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(type.numel()), mpi, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
      return makeError("{}: MPI_Allreduce failed", describe("all_reduce", type));
    }
    return Status::success();
  }

  // Between two tests of the ranks' arrival. While the caller computes (it started a collective and went on),
  // sleeps after a few yields: spinning would take the core the step computes on, for as long as the slowest
  // rank takes to arrive. While the caller waits for the result, nothing else needs the core: yields only.
  void pause(int polls) const {
    if (polls < 16 || waiting_ > 0) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  std::string describe(const char* what, const TensorType& t) const {
    return fmt::format("rank {}: {} #{} of {}", rank_, what, sequence_, t.toString());
  }

  // Before each collective every rank tells rank 0 it arrived; rank 0 waits for all of them, so a rank that
  // died or stopped answering is named rather than waited for forever.
  Status awaitArrivals(const char* what, const TensorType& t) {
    ++sequence_;
    if (rank_ != 0) {
      long long seq = sequence_;
      if (MPI_Send(&seq, 1, MPI_LONG_LONG, 0, kArrivalTag, MPI_COMM_WORLD) != MPI_SUCCESS) {
        return makeError("{}: could not reach rank 0", describe(what, t));
      }
      return Status::success();
    }
    std::vector<long long> seqs(static_cast<size_t>(size_), 0);
    std::vector<MPI_Request> requests(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    for (int r = 1; r < size_; ++r) {
      MPI_Irecv(&seqs[static_cast<size_t>(r)], 1, MPI_LONG_LONG, r, kArrivalTag, MPI_COMM_WORLD,
                &requests[static_cast<size_t>(r)]);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_);
    for (int polls = 0;; ++polls) {
      std::vector<int> missing;
      for (int r = 1; r < size_; ++r) {
        int done = 0;
        if (requests[static_cast<size_t>(r)] != MPI_REQUEST_NULL) {
          MPI_Test(&requests[static_cast<size_t>(r)], &done, MPI_STATUS_IGNORE);
        } else {
          done = 1;
        }
        if (!done) missing.push_back(r);
      }
      if (missing.empty()) break;
      if (std::chrono::steady_clock::now() > deadline) {
        return makeError(
            "{}: rank(s) {} did not arrive within {} s (dead or stuck; $SMELT_COLLECTIVE_TIMEOUT sets the "
            "timeout)",
            describe(what, t), fmt::join(missing, ", "), timeout_);
      }
      pause(polls);
    }
    for (int r = 1; r < size_; ++r) {
      if (seqs[static_cast<size_t>(r)] != sequence_) {
        return makeError("{}: rank {} is at collective #{} (the ranks' collective schedules differ)", describe(what, t),
                         r, seqs[static_cast<size_t>(r)]);
      }
    }
    return Status::success();
  }

  double timeout_;
  int rank_ = 0, size_ = 1;
  long long sequence_ = 0;
  Status startStatus_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  // Started all-reduces by handle (only the caller's thread touches this map).
  std::map<int64_t, std::future<Status>> started_;
  int64_t nextStarted_ = 0;
  bool stopping_ = false;
  // Callers waiting for a collective's result (see pause).
  std::atomic<int> waiting_{0};
};

}  // namespace

bool launchedByMpi() { return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE"); }

Expected<std::shared_ptr<CollectiveGroup>> joinMpiWorld(MpiWorldOptions options) {
  if (const char* t = std::getenv("SMELT_COLLECTIVE_TIMEOUT")) {
    char* end = nullptr;
    double v = std::strtod(t, &end);
    if (end == t || *end || !(v > 0))
      return makeError("SMELT_COLLECTIVE_TIMEOUT must be a positive number of seconds, got '{}'", t);
    options.timeoutSeconds = v;
  }
  auto group = std::make_shared<MpiGroup>(options.timeoutSeconds);
  SMELT_CHECK_OK(group->startStatus());
  setCollectiveGroup(group);
  return std::shared_ptr<CollectiveGroup>(group);
}

}  // namespace smelt

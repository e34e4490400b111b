// MPI as the collective group (mpi_group.h).
#include "runtime/distributed/mpi_group.h"

#include <mpi.h>
#if defined(__linux__)
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/device/fault_injection.h"
#include "runtime/distributed/ring_all_reduce.h"

namespace smelt {

namespace {

constexpr int kArrivalTag = 7301;
// Rank 0's answer to each rank's arrival: go, or why the collective will not run.
constexpr int kGoTag = 7302;
enum Answer : int { kGo = 0, kSchedulesDiffer = 1, kOthersMissing = 2 };

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
  MpiGroup(double timeout, int communicationNice) : timeout_(timeout), communicationNice_(communicationNice) {
    std::promise<Status> started;
    auto ready = started.get_future();
    thread_ = std::thread([this, &started] { serve(started); });
    startStatus_ = ready.get();
    watchdog_ = std::thread([this] { watch(); });
  }
  ~MpiGroup() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    {
      std::lock_guard lock(watchMutex_);
      watching_ = false;
    }
    watchWake_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
  }
  const Status& startStatus() const { return startStatus_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  double timeoutSeconds() const override { return timeout_; }

  Status allReduceSum(Tensor& tensor) override {
    MPI_Datatype type = mpiType(tensor.dtype());
    if (type == MPI_DATATYPE_NULL)
      return makeError("all_reduce: {} is not supported (f32, f64)", tensor.type().toString());
    return run([&]() -> Status {
      // Every rank has arrived (or this is an error naming who has not): the blocking collective, with MPI's
      // own algorithm for the size, waits only on ranks that are there (the watchdog ends one that hangs).
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

  bool allReduceDone(int64_t handle) const override {
    auto it = started_.find(handle);
    return it != started_.end() && it->second.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

  Status broadcast(Tensor& tensor, int root) override {
    return run([&]() -> Status {
      SMELT_CHECK_OK(awaitArrivals("broadcast", tensor.type()));
      Blocking blocking(*this, describe("broadcast", tensor.type()));
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

  // This thread's priority (MpiWorldOptions::communicationNice; never raised above the process's) and time slice.
  void setPriority() const {
#if defined(__linux__)
    const auto self = static_cast<id_t>(syscall(SYS_gettid));
    errno = 0;
    const int current = getpriority(PRIO_PROCESS, self);
    if (errno == 0 && current < communicationNice_) setpriority(PRIO_PROCESS, self, communicationNice_);
    // A short time slice (Linux 6.12's EEVDF honours sched_runtime for normal threads; older kernels ignore it): a
    // thread that sleeps between short tests then preempts the step's thread as soon as it wakes, so a bucket's
    // messages move while the step computes instead of at its next time slice.
    struct {
      uint32_t size, sched_policy;
      uint64_t sched_flags;
      int32_t sched_nice;
      uint32_t sched_priority;
      uint64_t sched_runtime, sched_deadline, sched_period;
      uint32_t util_min, util_max;
    } attr{};
    attr.size = sizeof attr;
    attr.sched_policy = SCHED_OTHER;
    attr.sched_nice = getpriority(PRIO_PROCESS, self);
    attr.sched_runtime = static_cast<uint64_t>(kCommunicationSliceMicroseconds) * 1000;
    syscall(SYS_sched_setattr, self, &attr, 0);  // a kernel without it keeps its default slice
#endif
  }

  void serve(std::promise<Status>& started) {
    setPriority();
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      started.set_value(makeError("MPI_Init_thread failed"));
      return;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // Errors come back as codes, turned into messages here rather than aborting the job inside MPI.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    // The ring's messages in a tag space of their own (the duplicate keeps the error handler).
    if (MPI_Comm_dup(MPI_COMM_WORLD, &ringComm_) != MPI_SUCCESS) {
      started.set_value(makeError("MPI_Comm_dup failed"));
      return;
    }
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
    MPI_Comm_free(&ringComm_);
    MPI_Finalize();
  }

  // The in-place sum over the ranks: a gradient bucket as the chunked ring (ring_all_reduce.h says why not
  // MPI_Allreduce), which sleeps between its tests while the caller computes; a small sum (a synchronized batch
  // norm's statistics: latency, not bandwidth, and its caller waits) as MPI_Allreduce. Every rank makes the same
  // choice: it depends on the size alone, which the ranks' schedules agree on (a blocking and a non-blocking
  // collective never match, and ranks choosing by their own state, a caller waiting or not, deadlocked).
  Status sum(void* data, MPI_Datatype mpi, const TensorType& type) {
    Blocking blocking(*this, describe("all_reduce", type));
    if (size_ > 1 && static_cast<int64_t>(type.byteSize()) >= kRingMinBytes) {
      Status done = ringAllReduceSum(ringComm_, data, type.numel(), mpi, [this] { idle(); }, ringScratch_);
      if (!done.ok()) return makeError("{}: {}", describe("all_reduce", type), done.error().message());
      return done;
    }
    if (MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(type.numel()), mpi, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
      return makeError("{}: MPI_Allreduce failed", describe("all_reduce", type));
    }
    return Status::success();
  }

  // Between two tests of a ring all-reduce's messages. While the caller computes, a sleep: the data waits in the
  // kernel's socket buffers meanwhile, and the step keeps its core. While it waits for the sum, a yield.
  void idle() const {
    if (waiting_ > 0) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(kRingPollMicroseconds));
    }
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

  // Before each collective every rank tells rank 0 it arrived and waits for rank 0's answer; rank 0 waits for all
  // of them, then answers. So a rank that died or stopped answering is named by rank 0, and a rank 0 that stopped
  // by the others, rather than waited for forever; a rank that hangs once the collective runs is the watchdog's.
  Status awaitArrivals(const char* what, const TensorType& t) {
    ++sequence_;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_);
    if (rank_ != 0) {
      long long seq = sequence_;
      if (MPI_Send(&seq, 1, MPI_LONG_LONG, 0, kArrivalTag, MPI_COMM_WORLD) != MPI_SUCCESS) {
        return makeError("{}: could not reach rank 0", describe(what, t));
      }
      int answer = kGo;
      MPI_Request request = MPI_REQUEST_NULL;
      MPI_Irecv(&answer, 1, MPI_INT, 0, kGoTag, MPI_COMM_WORLD, &request);
      for (int polls = 0;; ++polls) {
        int done = 0;
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        if (done) break;
        if (std::chrono::steady_clock::now() > deadline) {
          // The receive stays posted: this rank is ending with the error, and MPI with it.
          return makeError("{}: rank 0 did not start it within {} s (dead or stuck; $SMELT_COLLECTIVE_TIMEOUT sets the "
                           "timeout)",
                           describe(what, t), timeout_);
        }
        pause(polls);
      }
      if (answer == kSchedulesDiffer) {
        return makeError("{}: rank 0 found the ranks at different collectives (the ranks' collective schedules "
                         "differ)",
                         describe(what, t));
      }
      if (answer == kOthersMissing) return makeError("{}: rank 0 gave up waiting for another rank", describe(what, t));
      return Status::success();
    }
    std::vector<long long> seqs(static_cast<size_t>(size_), 0);
    std::vector<MPI_Request> requests(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    for (int r = 1; r < size_; ++r) {
      MPI_Irecv(&seqs[static_cast<size_t>(r)], 1, MPI_LONG_LONG, r, kArrivalTag, MPI_COMM_WORLD,
                &requests[static_cast<size_t>(r)]);
    }
    // The answer to every rank that arrived (one that did not gets none: it is not listening).
    auto answer = [&](int code) {
      for (int r = 1; r < size_; ++r) {
        if (requests[static_cast<size_t>(r)] == MPI_REQUEST_NULL) MPI_Send(&code, 1, MPI_INT, r, kGoTag, MPI_COMM_WORLD);
      }
    };
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
        answer(kOthersMissing);
        return makeError(
            "{}: rank(s) {} did not arrive within {} s (dead or stuck; $SMELT_COLLECTIVE_TIMEOUT sets the "
            "timeout)",
            describe(what, t), fmt::join(missing, ", "), timeout_);
      }
      pause(polls);
    }
    for (int r = 1; r < size_; ++r) {
      if (seqs[static_cast<size_t>(r)] != sequence_) {
        answer(kSchedulesDiffer);
        return makeError("{}: rank {} is at collective #{} (the ranks' collective schedules differ)", describe(what, t),
                         r, seqs[static_cast<size_t>(r)]);
      }
    }
    answer(kGo);
    return Status::success();
  }

  // A blocking MPI call on the communication thread, for the watchdog: every rank arrived, so the call should
  // end; one that does not (a rank that hung inside it) ends this process after the timeout with its words.
  // SMELT_FAULTS=stall stalls the next one here, as such a rank would.
  class Blocking {
   public:
    Blocking(MpiGroup& group, std::string what) : group_(group) {
      {
        std::lock_guard lock(group_.watchMutex_);
        group_.blockedOn_ = std::move(what);
        group_.blockedSince_ = std::chrono::steady_clock::now();
        group_.blocked_ = true;
      }
      group_.watchWake_.notify_all();
      if (faultInjector().trigger(Fault::kCollectiveStall)) {
        std::this_thread::sleep_for(std::chrono::duration<double>(group_.timeout_ * 100 + 60));
      }
    }
    ~Blocking() {
      std::lock_guard lock(group_.watchMutex_);
      group_.blocked_ = false;
    }

   private:
    MpiGroup& group_;
  };

  // The watchdog: a blocking collective past the timeout cannot be interrupted (MPI has no cancel for one), and
  // waiting on would hang the job; this rank ends, naming the collective, and mpirun ends the others.
  void watch() {
    std::unique_lock lock(watchMutex_);
    while (watching_) {
      if (!blocked_) {
        watchWake_.wait(lock, [&] { return !watching_ || blocked_; });
        continue;
      }
      const auto since = blockedSince_;
      const auto limit = since + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     std::chrono::duration<double>(timeout_));
      watchWake_.wait_until(lock, limit, [&] { return !watching_ || !blocked_ || blockedSince_ != since; });
      if (watching_ && blocked_ && blockedSince_ == since && std::chrono::steady_clock::now() >= limit) {
        std::fprintf(stderr,
                     "smelt: %s did not complete within %g s although every rank had arrived (a rank is stuck or "
                     "died inside it; $SMELT_COLLECTIVE_TIMEOUT sets the timeout): ending rank %d\n",
                     blockedOn_.c_str(), timeout_, rank_);
        std::fflush(stderr);
        std::_Exit(1);
      }
    }
  }

  // Sums of at least this many bytes run as the ring.
  static constexpr int64_t kRingMinBytes = 16 * 1024;
  // The interval between a ring's tests while the caller computes (50, 100 and 300 us alike on ResNet-18's step over
  // 2.5 Gbit/s test hosts), and the communication thread's time slice.
  static constexpr int kRingPollMicroseconds = 100;
  static constexpr int kCommunicationSliceMicroseconds = 100;

  double timeout_;
  int communicationNice_;
  MPI_Comm ringComm_ = MPI_COMM_NULL;
  std::vector<std::byte> ringScratch_;
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
  // The watchdog and what it watches (Blocking).
  std::thread watchdog_;
  std::mutex watchMutex_;
  std::condition_variable watchWake_;
  bool watching_ = true;
  bool blocked_ = false;
  std::string blockedOn_;
  std::chrono::steady_clock::time_point blockedSince_;
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
  auto group = std::make_shared<MpiGroup>(options.timeoutSeconds, options.communicationNice);
  SMELT_CHECK_OK(group->startStatus());
  setCollectiveGroup(group);
  return std::shared_ptr<CollectiveGroup>(group);
}

}  // namespace smelt

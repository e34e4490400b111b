// The chunked ring all-reduce (ring_all_reduce.h).
//
// Rank r of N, steps t = 0 .. 2N-3: at step t it sends segment (r - t) mod N to rank r + 1 and receives segment
// (r - t - 1) mod N from rank r - 1. In the first N - 1 steps (reduce-scatter) what arrives is added to its own
// copy, so after them rank r holds the whole sum of segment r + 1; in the last N - 1 (all-gather) what arrives is a
// finished sum and lands in place. Each segment travels as C chunks, each chunk on its own through the steps: chunk
// c's step t + 1 is sent as soon as its step t arrived, whatever the other chunks do.
#include "runtime/distributed/ring_all_reduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace smelt {

namespace {

template <typename T>
void addInto(void* dst, const void* src, int64_t n) {
  // Disjoint (a scratch half and the buffer): restrict lets the compiler vectorize the loop.
  T* __restrict__ d = static_cast<T*>(dst);
  const T* __restrict__ s = static_cast<const T*>(src);
  for (int64_t i = 0; i < n; ++i) d[i] += s[i];
}

/// One in-flight message: which step and chunk, and whether it is the receive.
struct Message {
  int step;
  int chunk;
  bool receive;
};

class Ring {
 public:
  Ring(MPI_Comm comm, int size, int rank, std::byte* data, int64_t count, MPI_Datatype type, int64_t elementSize,
       std::vector<std::byte>& scratch)
      : comm_(comm), n_(size), r_(rank), data_(data), count_(count), type_(type), elementSize_(elementSize),
        steps_(2 * (size - 1)) {
    const int64_t segment = (count + n_ - 1) / n_;
    chunks_ = static_cast<int>(std::clamp<int64_t>(segment * elementSize / kRingChunkBytes, 1, 4096));
    int* tagUpperBound = nullptr;
    int found = 0;
    MPI_Comm_get_attr(comm, MPI_TAG_UB, &tagUpperBound, &found);
    const int64_t maxTag = found && tagUpperBound ? *tagUpperBound : 32767;
    chunks_ = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(chunks_, maxTag / steps_)));
    segmentElements_ = segment;
    scratch.resize(static_cast<size_t>(2 * segment * elementSize));
    scratch_ = scratch.data();
    sendDone_.assign(static_cast<size_t>(steps_ * chunks_), 0);
    deferredReceive_.assign(static_cast<size_t>(chunks_), -1);
  }

  Status run(const std::function<void()>& idle) {
    for (int c = 0; c < chunks_; ++c) {
      SMELT_CHECK_OK(postReceive(0, c));
      SMELT_CHECK_OK(postSend(0, c));
    }
    const int64_t expected = 2LL * steps_ * chunks_;
    std::vector<int> indices;
    while (completed_ < expected) {
      indices.resize(requests_.size());
      int done = 0;
      if (MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &done, indices.data(),
                       MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
        return makeError("ring all-reduce: MPI_Testsome failed on rank {}", r_);
      }
      if (done == MPI_UNDEFINED || done == 0) {
        idle();
        continue;
      }
      // Completed requests leave the arrays before their follow-ups are posted.
      std::vector<Message> finished;
      for (int k = 0; k < done; ++k) finished.push_back(messages_[static_cast<size_t>(indices[static_cast<size_t>(k)])]);
      size_t kept = 0;
      for (size_t i = 0; i < requests_.size(); ++i) {
        if (requests_[i] == MPI_REQUEST_NULL) continue;
        requests_[kept] = requests_[i];
        messages_[kept] = messages_[i];
        ++kept;
      }
      requests_.resize(kept);
      messages_.resize(kept);
      for (const Message& m : finished) {
        ++completed_;
        SMELT_CHECK_OK(m.receive ? received(m.step, m.chunk) : sent(m.step, m.chunk));
      }
    }
    return Status::success();
  }

 private:
  int segmentOf(int step, bool receive) const {
    const int s = (r_ - step - (receive ? 1 : 0)) % n_;
    return s < 0 ? s + n_ : s;
  }
  /// The elements [begin, end) of chunk `c` of segment `s`.
  std::pair<int64_t, int64_t> chunkRange(int s, int c) const {
    const int64_t begin = count_ * s / n_, end = count_ * (s + 1) / n_, length = end - begin;
    return {begin + length * c / chunks_, begin + length * (c + 1) / chunks_};
  }
  std::byte* at(int64_t element) const { return data_ + element * elementSize_; }
  /// Where step `step`'s receive of chunk `c` lands: a scratch half (alternating by step) while reducing, else
  /// the buffer itself.
  std::byte* receiveTarget(int step, int c) const {
    const auto [begin, end] = chunkRange(segmentOf(step, true), c);
    if (step >= n_ - 1) return at(begin);
    const int s = segmentOf(step, true);
    const int64_t offset = begin - count_ * s / n_;
    return scratch_ + ((step % 2) * segmentElements_ + offset) * elementSize_;
  }

  Status post(int step, int c, bool receive) {
    const auto [begin, end] = chunkRange(segmentOf(step, receive), c);
    if (end - begin > std::numeric_limits<int>::max()) {
      return makeError("ring all-reduce: a chunk of {} elements is too large for one MPI message", end - begin);
    }
    const int tag = step * chunks_ + c;
    const int peer = receive ? (r_ + n_ - 1) % n_ : (r_ + 1) % n_;
    MPI_Request request = MPI_REQUEST_NULL;
    const int rc = receive ? MPI_Irecv(receiveTarget(step, c), static_cast<int>(end - begin), type_, peer, tag, comm_,
                                       &request)
                           : MPI_Isend(at(begin), static_cast<int>(end - begin), type_, peer, tag, comm_, &request);
    if (rc != MPI_SUCCESS) {
      return makeError("ring all-reduce: {} of step {} chunk {} failed on rank {} (peer {})",
                       receive ? "MPI_Irecv" : "MPI_Isend", step, c, r_, peer);
    }
    requests_.push_back(request);
    messages_.push_back({step, c, receive});
    return Status::success();
  }
  Status postSend(int step, int c) { return post(step, c, false); }
  /// An all-gather receive lands where this rank sent the same chunk from N - 1 steps before: not until that send
  /// has completed (MPI owns a send's buffer until then).
  Status postReceive(int step, int c) {
    const int earlierSend = step + 1 - n_;
    if (step >= n_ - 1 && earlierSend >= 0 && !sendDone_[static_cast<size_t>(earlierSend * chunks_ + c)]) {
      deferredReceive_[static_cast<size_t>(c)] = step;
      return Status::success();
    }
    return post(step, c, true);
  }

  Status received(int step, int c) {
    if (step < n_ - 1) {
      const auto [begin, end] = chunkRange(segmentOf(step, true), c);
      const std::byte* incoming = receiveTarget(step, c);
      if (elementSize_ == 4) {
        addInto<float>(at(begin), incoming, end - begin);
      } else {
        addInto<double>(at(begin), incoming, end - begin);
      }
    }
    if (step + 1 < steps_) {
      SMELT_CHECK_OK(postSend(step + 1, c));
      SMELT_CHECK_OK(postReceive(step + 1, c));
    }
    return Status::success();
  }
  Status sent(int step, int c) {
    sendDone_[static_cast<size_t>(step * chunks_ + c)] = 1;
    const int waiting = deferredReceive_[static_cast<size_t>(c)];
    if (waiting >= 0 && waiting + 1 - n_ == step) {
      deferredReceive_[static_cast<size_t>(c)] = -1;
      return post(waiting, c, true);
    }
    return Status::success();
  }

  MPI_Comm comm_;
  int n_, r_;
  std::byte* data_;
  int64_t count_;
  MPI_Datatype type_;
  int64_t elementSize_;
  int steps_;
  int chunks_ = 1;
  int64_t segmentElements_ = 0;
  std::byte* scratch_ = nullptr;
  std::vector<MPI_Request> requests_;
  std::vector<Message> messages_;
  std::vector<char> sendDone_;
  std::vector<int> deferredReceive_;
  int64_t completed_ = 0;
};

}  // namespace

Status ringAllReduceSum(MPI_Comm comm, void* data, int64_t count, MPI_Datatype type,
                        const std::function<void()>& idle, std::vector<std::byte>& scratch) {
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  if (size == 1 || count == 0) return Status::success();
  int64_t elementSize = 0;
  if (type == MPI_FLOAT) {
    elementSize = 4;
  } else if (type == MPI_DOUBLE) {
    elementSize = 8;
  } else {
    return makeError("ring all-reduce: only MPI_FLOAT and MPI_DOUBLE are summed");
  }
  Ring ring(comm, size, rank, static_cast<std::byte*>(data), count, type, elementSize, scratch);
  return ring.run(idle);
}

}  // namespace smelt

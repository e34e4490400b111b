// Gradient averaging, state broadcast and the schedule check of data-parallel training (data_parallel.h).
#include "frontend/nn/data_parallel.h"

#include "passes/plan_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace smelt::nn {

namespace {

// Makes `b` emit right after the last node producing any of `values` (the graph's end when that is the last node).
void emitAfterProducers(Builder& b, const std::vector<Value*>& values) {
  Graph& g = b.graph();
  const auto& nodes = g.nodes();
  size_t last = 0;
  bool any = false;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const Value* v : values) {
      if (v->producer() == nodes[i].get()) last = i, any = true;
    }
  }
  if (any && last + 1 < nodes.size()) {
    g.setInsertionPoint(nodes[last + 1].get());
  } else {
    g.clearInsertionPoint();
  }
}

}  // namespace

std::vector<Value*> averageOverRanks(Builder& b, const std::vector<Value*>& grads, const DistributedOptions& options,
                                     std::vector<std::string>* schedule) {
  std::vector<Value*> averaged(grads.size(), nullptr);
  struct Started {
    std::vector<size_t> members;
    Value* started;
    int64_t tag;
  };
  std::vector<Started> inFlight;
  // Buckets fill in the order the backward pass produces the gradients (the last layers' first, but not
  // always in the reverse of the parameters' order: a model's state lists them by name), so that each
  // bucket is complete as early as it can be.
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < b.graph().numNodes(); ++i) position.emplace(b.graph().nodes()[i].get(), i);
  auto producedAt = [&](size_t i) -> int64_t {
    const Node* producer = grads[i]->producer();
    return producer ? static_cast<int64_t>(position.at(producer)) : -1;
  };
  std::vector<size_t> order;
  for (size_t i = grads.size(); i-- > 0;) {
    if (grads[i]) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return producedAt(x) < producedAt(y); });
  size_t next = 0;
  int bucketIndex = 0;
  while (next < order.size()) {
    const int64_t limit = bucketIndex == 0 ? options.firstBucketBytes : options.bucketBytes;
    DType dtype = grads[order[next]]->dtype();
    std::vector<size_t> members;
    int64_t bytes = 0, elements = 0;
    // A bucket holds one dtype, at least one gradient, and stops before passing its size.
    while (next < order.size() && grads[order[next]]->dtype() == dtype) {
      const TensorType& t = grads[order[next]]->type();
      int64_t size = static_cast<int64_t>(t.byteSize());
      if (!members.empty() && bytes + size > limit) break;
      members.push_back(order[next++]);
      bytes += size;
      elements += t.numel();
    }
    // Inside the bucket, the gradients whose bytes are whole arena alignments first (the order inside a bucket
    // changes nothing about when it starts): each then begins at an aligned offset, where the memory planner lays
    // its producer's buffer straight into the bucket and the slice of the sum read by its update stays in place,
    // so the concat and slices copy nothing. A gradient of another size (a bias of 10) after them all.
    std::stable_partition(members.begin(), members.end(), [&](size_t m) {
      return static_cast<int64_t>(grads[m]->type().byteSize()) % kArenaAlignment == 0;
    });
    // The bucket starts as soon as its last gradient exists, so the rest of the backward pass runs while it
    // travels; its wait comes after the whole backward pass, just before the update reads it.
    std::vector<Value*> memberGrads;
    for (size_t m : members) memberGrads.push_back(grads[m]);
    emitAfterProducers(b, memberGrads);
    std::vector<Value*> flat;
    for (size_t m : members) flat.push_back(b.reshape(grads[m], {grads[m]->type().numel()}));
    Value* bucket = flat.size() == 1 ? flat[0] : b.op("concat", flat, {{"axis", int64_t{0}}});
    Value* started = b.op("all_reduce_start", {bucket}, {{"op", std::string("mean")}, {"tag", int64_t{bucketIndex}}});
    b.graph().clearInsertionPoint();
    inFlight.push_back({members, started, bucketIndex});
    if (schedule) {
      schedule->push_back(fmt::format("all_reduce #{}: {} {} elements ({} gradients)", bucketIndex, elements,
                                      dtypeName(dtype), members.size()));
    }
    ++bucketIndex;
  }
  for (const Started& s : inFlight) {
    Value* mean = b.op("all_reduce_wait", {s.started}, {{"op", std::string("mean")}, {"tag", s.tag}});
    int64_t offset = 0;
    for (size_t m : s.members) {
      int64_t n = grads[m]->type().numel();
      Value* part = s.members.size() == 1
                        ? mean
                        : b.op("slice", {mean},
                               {{"starts", std::vector<int64_t>{offset}}, {"ends", std::vector<int64_t>{offset + n}}});
      averaged[m] = b.reshape(part, grads[m]->shape());
      offset += n;
    }
  }
  return averaged;
}

Status runWaitsLate(Graph& graph) {
  // Each node's rank: the last all_reduce_wait it depends on (in the order the waits run), -1 for none. Every
  // node's rank is at least its operands', so ordering the nodes by rank, stably, keeps every operand before
  // its users: a valid order that runs each wait right before the first node that needs it.
  std::unordered_map<const Node*, int> rank;
  int waits = 0;
  std::vector<const Node*> order;
  for (const auto& node : graph.nodes()) {
    int r = node->opName() == "all_reduce_wait" ? waits++ : -1;
    for (const Value* operand : node->operands()) {
      if (operand->producer()) r = std::max(r, rank.at(operand->producer()));
    }
    rank.emplace(node.get(), r);
    order.push_back(node.get());
  }
  if (waits == 0) return Status::success();
  std::stable_sort(order.begin(), order.end(), [&](const Node* x, const Node* y) { return rank.at(x) < rank.at(y); });
  return graph.reorderNodes(order);
}

Status broadcastState(StateDict& state, CollectiveGroup& group) {
  for (auto& [name, tensor] : state) {
    Status s = group.broadcast(tensor, 0);
    if (!s.ok()) return makeError("broadcasting '{}' from rank 0: {}", name, s.error().message());
  }
  return Status::success();
}

Status checkSchedule(const std::vector<std::string>& schedule, CollectiveGroup& group) {
  std::string mine;
  for (const std::string& line : schedule) mine += line + "\n";
  // Rank 0's schedule, its length first.
  Tensor length = Tensor::scalar(DType::f64, static_cast<double>(mine.size()));
  SMELT_CHECK_OK(group.broadcast(length, 0));
  auto rootSize = static_cast<size_t>(length.getDouble(0));
  Tensor text(TensorType{DType::u8, {static_cast<int64_t>(rootSize)}});
  if (group.rank() == 0) std::copy(mine.begin(), mine.end(), reinterpret_cast<char*>(text.raw()));
  SMELT_CHECK_OK(group.broadcast(text, 0));
  std::string root(reinterpret_cast<const char*>(text.raw()), rootSize);
  // Every rank learns whether any differs before any step runs.
  Tensor differs = Tensor::scalar(DType::f64, root == mine ? 0.0 : 1.0);
  SMELT_CHECK_OK(group.allReduceSum(differs));
  if (differs.getDouble(0) == 0) return Status::success();
  if (root == mine) return makeError("rank {}: another rank's collective schedule differs from rank 0's", group.rank());
  auto lines = [](const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t end; (end = s.find('\n', start)) != std::string::npos; start = end + 1)
      out.push_back(s.substr(start, end - start));
    return out;
  };
  std::vector<std::string> a = lines(mine), r = lines(root);
  size_t i = 0;
  while (i < a.size() && i < r.size() && a[i] == r[i]) ++i;
  return makeError("rank {}: the collective schedule differs from rank 0's at collective #{}: here '{}', rank 0 '{}'",
                   group.rank(), i, i < a.size() ? a[i] : "none", i < r.size() ? r[i] : "none");
}

Tensor shardOf(const Tensor& batch, int rank, int size) {
  Shape shape = batch.shape();
  if (shape.empty() || shape[0] == 0) return batch;
  auto [begin, end] = shardRows(shape[0], rank, size);
  const size_t rowBytes = batch.byteSize() / static_cast<size_t>(shape[0]);
  shape[0] = end - begin;
  Tensor out(TensorType{batch.dtype(), shape});
  std::memcpy(out.raw(), batch.raw() + static_cast<size_t>(begin) * rowBytes, out.byteSize());
  return out;
}

std::pair<int64_t, int64_t> shardRows(int64_t rows, int rank, int size) {
  int64_t base = rows / size, extra = rows % size;
  int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

}  // namespace smelt::nn

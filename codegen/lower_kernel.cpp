// Lowering a node to a kernel: the domain comes from the fusion analysis (describeKernel), each output
// is computed at its index by composing the lowering facets of the ops that produce it, and stored.
// Values inside the kernel are computed where they are first needed; the builder hoists and shares
// them, so a per-row reduction used by a store loop runs once per row, before it.
#include "codegen/lower_kernel.h"

#include "codegen/kernel_builder.h"
#include "codegen/kernel_passes.h"
#include "passes/fusion_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace smelt::codegen {

namespace {

class Lowerer {
 public:
  Lowerer(const Graph& graph, const Node& node, const Node* external = nullptr)
      : graph_(graph), node_(node), external_(external), b_(kernel_) {}

  Expected<Kernel> run(std::string_view pipeline) {
    SMELT_CHECK_OK(collect());
    kernel_.name = fmt::format("{}_{}", node_.opName(), node_.number());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Value* v = inputs_[i];
      kernel_.buffers.push_back({fmt::format("p{}", i), v->dtype(), v->type().numel(), false});
      inputBuffer_[v] = static_cast<int>(i);
    }
    for (size_t r = 0; r < outputs_.size(); ++r) {
      const Value* v = outputs_[r];
      kernel_.buffers.push_back({fmt::format("r{}", r), v->dtype(), v->type().numel(), true});
    }
    if (external_) {
      const Value* v = external_->result(0);
      kernel_.name += "_epilogue";
      kernel_.buffers.push_back({"acc", v->dtype(), v->type().numel(), false});
    }
    chooseDomain();
    for (size_t d = 0, o = 0; d < full_.size(); ++d) {
      if (isReducedAxis(d)) continue;
      kernel_.domain.push_back(full_[d]);
      outerIndex_.push_back(b_.outer(static_cast<int>(o++)));
    }
    if (axes_.empty()) {
      // Every result is computed before any is stored: a result may be written in place over an
      // operand (the memory planner allows it when the kernel reads that operand only at the written
      // index), and a later result must not read the overwritten element.
      std::vector<std::pair<KValue, KValue>> pending;  // (offset, value)
      for (const Value* out : outputs_) {
        SMELT_TRY(std::vector<KValue> index, outputIndex(out));
        pending.emplace_back(linearOffset(b_, index, out->shape()), valueAt(out, index));
      }
      for (size_t r = 0; r < pending.size(); ++r) {
        b_.store(static_cast<int>(inputs_.size() + r), pending[r].first, pending[r].second);
      }
    } else {
      for (size_t r = 0; r < outputs_.size(); ++r) {
        SMELT_CHECK_OK(storeOutput(outputs_[r], static_cast<int>(inputs_.size() + r)));
      }
    }
    SMELT_CHECK_OK(b_.status());
    SMELT_CHECK_OK(runKernelPasses(kernel_, pipeline));
    return std::move(kernel_);
  }

  /// The value of `v` (a body input, a constant or a member's result) at `index` (v's own shape).
  KValue valueAt(const Value* v, std::span<const KValue> index) {
    if (auto it = inputBuffer_.find(v); it != inputBuffer_.end()) {
      return b_.load(it->second, linearOffset(b_, index, v->shape()));
    }
    const Node* producer = v->producer();
    if (!producer) {
      b_.fail(makeError("{}: value {} is neither an input nor computed in the kernel", label(), v->name()));
      return {};
    }
    if (producer->opName() == "constant") return constantValue(*producer);
    if (producer == external_) return externalValue(index);
    std::vector<int32_t> key;
    for (KValue k : index) key.push_back(k.id);
    auto memoKey = std::make_pair(producer, key);
    if (auto it = memo_.find(memoKey); it != memo_.end()) {
      const Memo& m = it->second;
      if (m.depth <= b_.currentDepth() && b_.blockAt(m.depth) == m.block) return m.values[v->resultIndex()];
    }
    std::vector<KValue> results = lowerNode(*producer, index);
    if (results.size() != producer->results().size()) return {};
    int depth = 0;
    for (KValue r : results) depth = std::max(depth, r.valid() ? b_.depthOf(r) : 0);
    memo_[memoKey] = {results, depth, b_.blockAt(depth)};
    return results[v->resultIndex()];
  }

 private:
  /// One application's view for its lowering facet.
  class NodeContext final : public LoweringContext {
   public:
    NodeContext(Lowerer& l, const Node& n, std::span<const KValue> index, std::string label)
        : l_(l), n_(n), index_(index.begin(), index.end()) {
      for (const Value* o : n.operands()) operandTypes_.push_back(o->type());
      for (const Value* r : n.results()) resultTypes_.push_back(r->type());
      call_.emplace(n.op(), std::move(label), operandTypes_, n.attrs(), resultTypes_);
    }
    KernelEmitter& emit() override { return l_.b_; }
    const OpCall& call() const override { return *call_; }
    std::span<const KValue> index() const override { return index_; }
    KValue operand(size_t i, std::span<const KValue> index) override { return l_.valueAt(n_.operand(i), index); }

   private:
    Lowerer& l_;
    const Node& n_;
    std::vector<KValue> index_;
    std::vector<TensorType> operandTypes_, resultTypes_;
    std::optional<OpCall> call_;
  };

  std::vector<KValue> lowerNode(const Node& n, std::span<const KValue> index) {
    const Graph& owner = body_ ? *body_ : graph_;
    std::string nodeLabel = owner.labelOf(n);
    if (!n.op().lower) {
      b_.fail(makeError("{}: {} has no kernel lowering", label(), nodeLabel));
      return {};
    }
    NodeContext ctx(*this, n, index, nodeLabel);
    auto values = n.op().lower(ctx);
    if (!values) {
      b_.fail(values.error().withContext(label()));
      return {};
    }
    if (values->size() != n.results().size()) {
      b_.fail(makeError("{}: {}'s lowering gave {} values for {} results", label(), nodeLabel, values->size(),
                        n.results().size()));
      return {};
    }
    for (size_t r = 0; r < values->size(); ++r) {
      KValue& v = (*values)[r];
      // Lowerings compute in whatever type is convenient; the result has the node's dtype.
      if (v.valid() && v.dtype != n.result(r)->dtype()) v = b_.cast(v, n.result(r)->dtype());
    }
    return std::move(*values);
  }

  /// The externally computed anchor at `index`: alpha * op(a) op(b) from the extra buffer, plus
  /// beta * c for a gemm with a c.
  KValue externalValue(std::span<const KValue> index) {
    const Value* result = external_->result(0);
    int buffer = static_cast<int>(inputs_.size() + outputs_.size());
    KValue acc = b_.load(buffer, linearOffset(b_, index, result->shape()));
    using Kind = ProductFacet::Kind;
    const ProductFacet& facet = *external_->op().product;
    bool hasAddend = facet.addend >= 0 && external_->numOperands() > static_cast<size_t>(facet.addend);
    if ((facet.kind == Kind::Conv || facet.kind == Kind::ConvTranspose) && hasAddend) {
      // The bias, per output channel (index 1 of NCHW).
      KValue channel[1] = {index[1]};
      KValue bias = valueAt(external_->operand(2), channel);
      if (bias.dtype != result->dtype()) bias = b_.cast(bias, result->dtype());
      return b_.add(acc, bias);
    }
    if (facet.kind != Kind::Gemm || !hasAddend) return acc;
    double beta = std::get<double>(external_->attrs().at("beta"));
    if (beta == 0) return acc;
    const Value* c = external_->operand(2);
    KValue term = valueAt(c, broadcastIndex(b_, index, c->shape()));
    if (c->dtype() != result->dtype()) term = b_.cast(term, result->dtype());
    if (beta != 1) term = b_.mul(term, b_.constant(beta, result->dtype()));
    return b_.add(acc, term);
  }

  KValue constantValue(const Node& c) {
    const Tensor& t = std::get<Tensor>(c.attrs().at("value"));
    if (t.numel() != 1) {
      b_.fail(makeError("{}: a constant of {} elements inside a kernel (only scalars are copied in)", label(),
                        t.numel()));
      return {};
    }
    if (isFloat(t.dtype())) return b_.constant(t.getDouble(0), t.dtype());
    return b_.intConstant(t.getInt(0), t.dtype());
  }

  Status collect() {
    if (node_.opName() == "constant") return makeError("{}: constants are not kernels", label());
    if (node_.opName() == "fused") {
      body_ = std::get<GraphRef>(node_.attrs().at("body")).get();
      if (!body_) return makeError("{}: fused node without a body", label());
      for (const Value* v : body_->inputs()) inputs_.push_back(v);
      for (const GraphOutput& o : body_->outputs()) outputs_.push_back(o.value);
    } else {
      for (const Value* v : node_.operands()) inputs_.push_back(v);
      for (const Value* v : node_.results()) outputs_.push_back(v);
    }
    kernel_.provenance = kernelProvenance(graph_, node_);
    return Status::success();
  }

  void chooseDomain() {
    KernelSummary s = describeKernel(node_);
    // A lone op that is not a reduction runs over its first result's shape.
    full_ = s.kind == KernelKind::Reduce || body_ ? s.domain.shape : outputs_[0]->shape();
    axes_ = s.kind == KernelKind::Reduce ? s.domain.axes : std::vector<int64_t>{};
  }

  bool isReducedAxis(size_t d) const {
    return std::find(axes_.begin(), axes_.end(), static_cast<int64_t>(d)) != axes_.end();
  }

  Shape keptShape() const {
    Shape s = full_;
    for (int64_t a : axes_) s[static_cast<size_t>(a)] = 1;
    return s;
  }

  /// Stores output `v` into buffer `buffer` over its whole shape.
  Status storeOutput(const Value* v, int buffer) {
    const Shape& shape = v->shape();
    if (!axes_.empty() && shape == full_) {
      // Full-level result of a reduce kernel: a loop nest over the reduced axes per row.
      std::vector<KValue> index(full_.size());
      for (size_t d = 0, o = 0; d < full_.size(); ++d) {
        if (!isReducedAxis(d)) index[d] = outerIndex_[o++];
      }
      storeNest(v, buffer, index, 0);
      return b_.status();
    }
    SMELT_TRY(std::vector<KValue> index, outputIndex(v));
    KValue value = valueAt(v, index);
    b_.store(buffer, linearOffset(b_, index, shape), value);
    return b_.status();
  }

  /// The index of output `v` at the current outer point (loop kernels: the point itself; reduce
  /// kernels: the row, in kept or dropped form).
  Expected<std::vector<KValue>> outputIndex(const Value* v) {
    const Shape& shape = v->shape();
    std::vector<KValue> index;
    if (axes_.empty() && shape == full_) {
      index = outerIndex_;
    } else if (!axes_.empty() && shape == keptShape()) {
      for (size_t d = 0, o = 0; d < full_.size(); ++d) index.push_back(isReducedAxis(d) ? b_.index(0) : outerIndex_[o++]);
    } else if (!axes_.empty() && shape.size() == outerIndex_.size()) {
      index = outerIndex_;
    } else {
      return makeError("{}: result {} does not fit the kernel's domain {}", label(), TensorType{v->dtype(), shape}.toString(),
                       TensorType{v->dtype(), full_}.toString());
    }
    return index;
  }

  void storeNest(const Value* v, int buffer, std::vector<KValue>& index, size_t axis) {
    if (axis == axes_.size()) {
      KValue value = valueAt(v, index);
      b_.store(buffer, linearOffset(b_, index, v->shape()), value);
      return;
    }
    auto d = static_cast<size_t>(axes_[axis]);
    b_.loop(full_[d], {}, [&](KValue i, std::span<const KValue>) {
      index[d] = i;
      storeNest(v, buffer, index, axis + 1);
      return std::vector<KValue>{};
    });
  }

  std::string label() const { return graph_.labelOf(node_); }

  struct Memo {
    std::vector<KValue> values;
    int depth = 0;
    const KBlock* block = nullptr;
  };

  const Graph& graph_;
  const Node& node_;
  const Node* external_ = nullptr;  // computed outside the kernel (lowerEpilogue)
  const Graph* body_ = nullptr;
  Kernel kernel_;
  KernelBuilder b_;
  std::vector<const Value*> inputs_, outputs_;
  std::map<const Value*, int> inputBuffer_;
  Shape full_;
  std::vector<int64_t> axes_;
  std::vector<KValue> outerIndex_;
  std::map<std::pair<const Node*, std::vector<int32_t>>, Memo> memo_;
};

}  // namespace

Expected<Kernel> lowerToKernel(const Graph& graph, const Node& node, std::string_view pipeline) {
  return Lowerer(graph, node).run(pipeline);
}

Expected<Kernel> lowerEpilogue(const Graph& graph, const Node& node, const Node& anchor) {
  return Lowerer(graph, node, &anchor).run(kLoweringKernelPipeline);
}

bool canLower(const Node& node) {
  if (node.opName() == "fused") {
    const GraphRef& body = std::get<GraphRef>(node.attrs().at("body"));
    if (!body) return false;
    for (const auto& n : body->nodes()) {
      if (n->opName() != "constant" && !n->op().lower) return false;
    }
    return true;
  }
  return node.opName() != "constant" && node.op().lower != nullptr;
}

}  // namespace smelt::codegen

// The random-graph generator (random_graph.h). Every choice comes from one std::mt19937_64 seeded by the
// caller, so a seed reproduces its graph exactly. Candidate nodes go through Graph::addNode, whose
// inference rejects invalid operands or attributes; a rejected candidate costs one attempt.
#include "tests/passes/random_graph.h"

#include "autodiff/backward.h"
#include "ir/op_registry.h"
#include "tests/support/random_tensors.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace smelt::testing {
namespace {

using Ints = std::vector<int64_t>;


class Generator {
 public:
  Generator(uint64_t seed, const RandomGraphOptions& options) : rng_(seed), options_(options), graph_("random") {
    for (const OpDef* op : OpRegistry::global().all()) {
      if (op->fusion != FusionKind::Elementwise) continue;
      if (op->name == "where" || op->name == "clip" || op->name == "cast" || op->name == "dropout") continue;
      bool simple = op->operands.size() >= 1 && op->operands.size() <= 2 &&
                    std::all_of(op->operands.begin(), op->operands.end(),
                                [](const OperandSpec& s) { return s.arity == Arity::Single; }) &&
                    std::all_of(op->attrs.begin(), op->attrs.end(), [](const AttrSpec& a) { return a.defaultValue; });
      if (!simple) continue;
      (op->operands.size() == 1 ? unary_ : binary_).push_back(op->name);
    }
  }

  Graph run() {
    int r = uniform(0, 9);
    mainType_ = r < 7 ? DType::f64 : r < 9 ? DType::f32 : DType::i32;
    makeInputs();
    int target = uniform(options_.minNodes, options_.maxNodes);
    for (int attempts = 0; static_cast<int>(graph_.numNodes()) < target && attempts < 40 * target; ++attempts) step();
    if (graph_.numNodes() == 0) constantOf(Tensor::scalar(mainType_, 1.0));
    makeOutputs();
    if (chance(options_.gradientProbability)) addGradients();
    return std::move(graph_);
  }

 private:
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename T>
  const T& pick(const std::vector<T>& v) { return v[static_cast<size_t>(uniform(0, static_cast<int>(v.size()) - 1))]; }

  // A value from the pool, favouring recent ones so chains grow deep.
  Value* anyValue() {
    int n = static_cast<int>(pool_.size());
    if (chance(0.6)) return pool_[static_cast<size_t>(uniform(std::max(0, n - 4), n - 1))];
    return pool_[static_cast<size_t>(uniform(0, n - 1))];
  }
  Value* valueWhere(auto pred) {
    std::vector<Value*> ok;
    for (Value* v : pool_) if (pred(v)) ok.push_back(v);
    return ok.empty() ? nullptr : pick(ok);
  }

  Shape randomShape(int maxRank = 3) {
    Shape s(static_cast<size_t>(uniform(0, maxRank)));
    for (auto& d : s) d = uniform(1, 4);
    return s;
  }
  // A shape that broadcasts against `s`: leading dims dropped, some dims 1, sometimes a scalar.
  Shape broadcastableTo(const Shape& s) {
    if (chance(0.2)) return {};
    Shape out(s.begin() + uniform(0, static_cast<int>(s.size())), s.end());
    for (auto& d : out) if (chance(0.3)) d = 1;
    return out;
  }

  Value* add(std::string_view op, std::vector<Value*> operands, AttrMap attrs = {}) {
    auto node = graph_.addNode(op, std::move(operands), std::move(attrs));
    if (!node.ok()) return nullptr;
    for (Value* v : (*node)->results()) pool_.push_back(v);
    return (*node)->result();
  }

  Value* constantOf(Tensor t) {
    Value* v = graph_.constant(std::move(t));
    pool_.push_back(v);
    return v;
  }
  // A constant broadcastable against `like`: mostly the special scalars 0, 1, -0.0.
  Value* constantFor(Value* like) {
    DType t = like->dtype() == DType::boolean ? mainType_ : like->dtype();
    if (chance(0.6)) {
      static const double kSpecial[] = {0.0, 1.0, -0.0, 1.0, 2.0, -1.0, 0.5};
      double x = kSpecial[uniform(0, 6)];
      if (!chance(0.7)) {  // the special value spread over a broadcastable (or equal) shape
        Shape s = chance(0.5) ? like->shape() : broadcastableTo(like->shape());
        std::vector<double> values(static_cast<size_t>(numElements(s)), x);
        return constantOf(Tensor::fromDoubles(TensorType{t, s}, values));
      }
      return constantOf(Tensor::scalar(t, x));
    }
    Shape s = chance(0.5) ? like->shape() : broadcastableTo(like->shape());
    return constantOf(randomTensor(TensorType{t, s}, rng_()));
  }

  void makeInputs() {
    Shape base = randomShape();
    int n = uniform(1, 3);
    for (int i = 0; i < n; ++i) {
      DType t = mainType_;
      if (chance(0.1)) t = pick(std::vector<DType>{DType::f64, DType::f32, DType::i32});
      Shape s = i == 0 ? base : chance(0.2) ? randomShape() : broadcastableTo(base);
      pool_.push_back(graph_.addInput("x" + std::to_string(i), TensorType{t, s}));
    }
  }

  // One attempt at one random node.
  void step() {
    Value* x = anyValue();
    int rank = static_cast<int>(x->shape().size());
    auto axis = [&] { return static_cast<int64_t>(uniform(-rank, std::max(0, rank - 1))); };
    switch (uniform(0, 20)) {
      case 0: case 1: case 2:
        add(pick(unary_), {x});
        break;
      case 3: case 4: case 5: {
        Value* y = chance(0.35) ? constantFor(x) : chance(0.15) ? x : anyValue();
        if (chance(0.5)) std::swap(x, y);
        add(pick(binary_), {x, y});
        break;
      }
      case 6: {  // duplicate an existing node: same op, operands and attributes (cse)
        if (graph_.numNodes() == 0) break;
        const Node& n = *pick(graph_.nodes());
        if (n.opName() == "constant" && chance(0.5)) { constantOf(std::get<Tensor>(n.attrs().at("value"))); break; }
        add(n.opName(), n.operands(), n.attrs());
        break;
      }
      case 7: {
        Value* cond = valueWhere([](Value* v) { return v->dtype() == DType::boolean; });
        if (!cond || chance(0.3)) cond = add(pick(std::vector<std::string>{"lt", "gt", "eq", "ge"}), {x, constantFor(x)});
        if (!cond) break;
        Value* y = chance(0.4) ? constantFor(x) : anyValue();
        add("where", {cond, x, y});
        break;
      }
      case 8: {
        double lo = pick(std::vector<double>{-1.0, -0.5, 0.0, -0.0});
        AttrMap a{{"min", lo}, {"max", lo + pick(std::vector<double>{0.0, 0.5, 1.0, 2.0})}};
        if (chance(0.3)) a.erase(chance(0.5) ? "min" : "max");
        add("clip", {x}, a);
        break;
      }
      case 9:
        add("cast", {x}, {{"to", std::string(dtypeName(pick(std::vector<DType>{DType::f64, DType::f32, DType::i32, x->dtype()})))}});
        break;
      case 10: {
        static const std::vector<std::string> kReduce = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
                                                         "reduce_prod", "reduce_logsumexp", "reduce_variance"};
        Ints axes;
        for (int d = 0; d < rank; ++d) if (chance(0.5)) axes.push_back(chance(0.5) ? d : d - rank);
        std::shuffle(axes.begin(), axes.end(), rng_);
        add(pick(kReduce), {x}, {{"axes", axes}, {"keepdims", int64_t{chance(0.5)}}});
        break;
      }
      case 11:
        add(chance(0.7) ? "softmax" : "log_softmax", {x}, {{"axis", axis()}});
        break;
      case 12: {
        Value* b = nullptr;
        if (rank >= 1 && chance(0.6)) {
          int64_t k = x->shape().back();
          Shape s = chance(0.3) ? Shape{k} : Shape{k, uniform(1, 4)};
          if (chance(0.2)) s.insert(s.begin(), uniform(1, 2));
          b = constantOf(randomTensor(TensorType{x->dtype(), s}, rng_()));
        } else {
          b = anyValue();
        }
        add("matmul", {x, b});
        break;
      }
      case 13: {
        Ints perm(static_cast<size_t>(rank));
        for (int d = 0; d < rank; ++d) perm[static_cast<size_t>(d)] = d;
        std::shuffle(perm.begin(), perm.end(), rng_);
        add("transpose", {x}, chance(0.1) ? AttrMap{} : AttrMap{{"perm", perm}});
        break;
      }
      case 14: {  // reshape: the element count split into random factors, maybe with a -1
        int64_t n = x->type().numel();
        Ints factors;
        for (int64_t p = 2; n > 1; ++p) while (n % p == 0) { factors.push_back(p); n /= p; }
        Ints shape;
        for (int64_t f : factors) {
          if (shape.empty() || chance(0.5)) shape.push_back(f); else shape.back() *= f;
        }
        for (int i = uniform(0, 2); i > 0; --i) shape.insert(shape.begin() + uniform(0, static_cast<int>(shape.size())), 1);
        std::shuffle(shape.begin(), shape.end(), rng_);
        if (!shape.empty() && chance(0.3)) shape[static_cast<size_t>(uniform(0, static_cast<int>(shape.size()) - 1))] = -1;
        add(chance(0.85) ? "reshape" : "flatten", {x}, chance(0.85) ? AttrMap{{"shape", shape}} : AttrMap{{"axis", axis()}});
        break;
      }
      case 15: {
        if (chance(0.5)) {
          Ints axes;
          for (int d = 0; d < rank; ++d) if (x->shape()[static_cast<size_t>(d)] == 1 && chance(0.6)) axes.push_back(d);
          add("squeeze", {x}, {{"axes", axes}});
        } else {
          Ints axes{uniform(-rank - 1, rank)};
          if (chance(0.3)) axes.push_back(uniform(0, rank + 1));
          add("unsqueeze", {x}, {{"axes", axes}});
        }
        break;
      }
      case 16: {
        Ints shape = x->shape();
        for (auto& d : shape) if (d == 1 && chance(0.6)) d = uniform(1, 3);
        if (chance(0.4)) shape.insert(shape.begin(), uniform(1, 3));
        add("expand", {x}, {{"shape", shape}});
        break;
      }
      case 17: {
        std::vector<Value*> parts{x};
        for (int i = uniform(0, 2); i > 0; --i) parts.push_back(chance(0.4) ? x : anyValue());
        add("concat", parts, {{"axis", axis()}});
        break;
      }
      case 18: {
        Ints starts, ends, axes, steps;
        for (int d = 0; d < rank; ++d) {
          if (!chance(0.6)) continue;
          int dim = static_cast<int>(x->shape()[static_cast<size_t>(d)]);
          int64_t step = pick(Ints{1, 1, 2, -1});
          axes.push_back(chance(0.5) ? d : d - rank);
          starts.push_back(step > 0 ? uniform(-dim - 1, dim) : uniform(-1, dim));
          ends.push_back(step > 0 ? uniform(-dim, dim + 2) : uniform(-dim - 2, dim - 1));
          steps.push_back(step);
        }
        AttrMap a{{"starts", starts}, {"ends", ends}, {"axes", axes}};
        if (chance(0.7)) a["steps"] = steps;
        add("slice", {x}, a);
        break;
      }
      case 19: {
        Ints pads(static_cast<size_t>(2 * rank));
        bool zero = chance(0.2);
        for (auto& p : pads) p = zero ? 0 : uniform(0, 2);
        add("pad", {x}, {{"pads", pads}, {"mode", pick(std::vector<std::string>{"constant", "constant", "reflect", "edge"})},
                         {"value", pick(std::vector<double>{0.0, -0.0, 1.5})}});
        break;
      }
      case 20: {
        if (rank == 0) break;
        int64_t ax = axis();
        int64_t dim = x->shape()[static_cast<size_t>(ax < 0 ? ax + rank : ax)];
        Shape s = randomShape(2);
        DType it = chance(0.5) ? DType::i64 : DType::i32;
        Tensor idx(TensorType{it, s});
        for (int64_t i = 0; i < idx.numel(); ++i) idx.setInt(i, uniform(static_cast<int>(-dim), static_cast<int>(dim - 1)));
        add("gather", {x, constantOf(std::move(idx))}, {{"axis", ax}});
        break;
      }
    }
  }

  // Outputs: the last value and a few random others; whatever they do not reach is a dead branch.
  void makeOutputs() {
    std::vector<Value*> outs{graph_.nodes().back()->result()};
    for (int i = uniform(0, 2); i > 0; --i) {
      Value* v = graph_.nodes()[static_cast<size_t>(uniform(0, static_cast<int>(graph_.numNodes()) - 1))]->result();
      if (std::find(outs.begin(), outs.end(), v) == outs.end() || chance(0.3)) outs.push_back(v);
    }
    for (size_t i = 0; i < outs.size(); ++i) graph_.addOutput("y" + std::to_string(i), outs[i]);
  }

  // The gradient of the sum of the float outputs w.r.t. the float inputs, built on a clone so a failure
  // (an op without a gradient rule) leaves the forward graph untouched.
  void addGradients() {
    Graph g = graph_.clone();
    std::vector<Value*> targets, seeds, sources;
    for (const GraphOutput& o : g.outputs()) if (isFloat(o.value->dtype())) targets.push_back(o.value);
    for (Value* in : g.inputs()) if (isFloat(in->dtype())) sources.push_back(in);
    if (targets.empty() || sources.empty()) return;
    seeds.assign(targets.size(), nullptr);
    auto grads = buildGradients(g, targets, seeds, sources);
    if (!grads.ok()) return;
    for (size_t i = 0; i < grads->size(); ++i) g.addOutput("d" + sources[i]->name(), (*grads)[i]);
    graph_ = std::move(g);
  }

  std::mt19937_64 rng_;
  RandomGraphOptions options_;
  Graph graph_;
  DType mainType_ = DType::f64;
  std::vector<Value*> pool_;
  std::vector<std::string> unary_, binary_;
};

}  // namespace

Graph randomGraph(uint64_t seed, const RandomGraphOptions& options) { return Generator(seed, options).run(); }

}  // namespace smelt::testing

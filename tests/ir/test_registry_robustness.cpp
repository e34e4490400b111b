// Registry-wide robustness: every op's inference (its verifier) and reference must turn absurd
// attributes, odd shapes and mismatched dtypes into errors, never crashes, hangs or overflows. Built
// from each op's IR example, so a new op is covered with no test code of its own. The sanitizer build
// runs this too, which is where a missing bounds check shows.
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/parser.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <limits>
#include <random>
#include <unordered_map>

using namespace smelt;

namespace {

constexpr int64_t kInts[] = {std::numeric_limits<int64_t>::min(), -(int64_t{1} << 41), -7, -2, -1, 0, 1, 2, 3, 5,
                             (int64_t{1} << 40) + 1, std::numeric_limits<int64_t>::max()};
constexpr double kFloats[] = {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::infinity(),
                              -1e300, -1.0, 0.0, 1e-300, 0.5, 1.0, 2.0, 1e300, std::numeric_limits<double>::infinity()};

Attribute randomAttribute(const AttrSpec& spec, std::mt19937_64& rng) {
  auto pickInt = [&] { return kInts[rng() % std::size(kInts)]; };
  auto pickFloat = [&] { return kFloats[rng() % std::size(kFloats)]; };
  switch (spec.kind) {
    case AttrKind::Int: return pickInt();
    case AttrKind::Float: return pickFloat();
    case AttrKind::String: {
      static const char* strings[] = {"", "bogus", "f32", "i64", "bool", "constant", "reflect", "edge", "tanh",
                                      "nearest", "bicubic", "border", "reflection", "symmetric", "none"};
      return std::string(strings[rng() % std::size(strings)]);
    }
    case AttrKind::Ints: {
      std::vector<int64_t> v(rng() % 7);
      for (int64_t& x : v) x = rng() % 3 == 0 ? pickInt() : static_cast<int64_t>(rng() % 5) - 1;
      return v;
    }
    case AttrKind::Floats: {
      std::vector<double> v(rng() % 5);
      for (double& x : v) x = pickFloat();
      return v;
    }
    case AttrKind::Tensor: return Tensor::scalar(DType::f32, pickFloat());
    case AttrKind::Graph: return GraphRef{};  // a missing body: the op must refuse it, not crash
  }
  return int64_t{0};
}

TensorType randomVariant(const TensorType& type, std::mt19937_64& rng) {
  TensorType t = type;
  switch (rng() % 4) {
    case 0: break;  // keep: exercises attribute mutations alone
    case 1: {       // new extents, same rank (zero-size dimensions included)
      for (int64_t& d : t.shape) d = static_cast<int64_t>(rng() % 5);
      break;
    }
    case 2: {  // rank one up or down
      if (!t.shape.empty() && rng() % 2) {
        t.shape.pop_back();
      } else {
        t.shape.push_back(1 + static_cast<int64_t>(rng() % 3));
      }
      break;
    }
    case 3: t.dtype = kAllDTypes[rng() % std::size(kAllDTypes)]; break;
  }
  return t;
}

}  // namespace

TEST_CASE("every op survives absurd attributes, odd shapes and wrong dtypes") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  size_t built = 0, ran = 0, rejected = 0;
  for (int round = 0; round < 200; ++round) {
    for (const OpDef* op : OpRegistry::global().all()) {
      std::vector<DType> dtypes = op->dtypes.list();
      auto example = parseGraph(op->exampleIn(dtypes[rng() % dtypes.size()]));
      REQUIRE(example.ok());
      CAPTURE(op->name);
      // Replay the example into a fresh graph with mutated input types and attributes of `op`.
      Graph g("fuzz");
      std::unordered_map<const Value*, Value*> map;
      for (const Value* in : example->inputs()) map[in] = g.addInput(in->name(), randomVariant(in->type(), rng));
      for (const Value* p : example->parameters()) map[p] = g.addParameter(p->name(), p->initialValue());
      bool ok = true;
      for (const auto& node : example->nodes()) {
        std::vector<Value*> operands;
        for (const Value* o : node->operands()) operands.push_back(map.at(o));
        AttrMap attrs = node->attrs();
        if (&node->op() == op) {
          for (const AttrSpec& spec : op->attrs) {
            if (rng() % 2) attrs[spec.name] = randomAttribute(spec, rng);
          }
        }
        auto added = g.addNode(node->opName(), operands, attrs);
        if (!added) {
          CHECK(added.error().message().find(node->opName()) != std::string::npos);
          ok = false;
          ++rejected;
          break;
        }
        for (size_t i = 0; i < node->results().size(); ++i) map[node->result(i)] = (*added)->result(i);
      }
      if (!ok) continue;
      ++built;
      // Verification passed: the reference must run or fail cleanly. Skip only what would not fit in
      // memory (shapes up to 2^40 elements are legal IR).
      bool small = true;
      for (const auto& node : g.nodes()) {
        for (const Value* r : node->results()) small = small && r->type().numel() <= (1 << 20);
      }
      if (!small) continue;
      for (const GraphOutput& out : example->outputs()) g.addOutput(out.name, map.at(out.value));
      auto result = interpret(g, testing::randomFeeds(g, rng()));
      if (result) ++ran;
    }
  }
  MESSAGE("built " << built << " mutated graphs, ran " << ran << ", rejected " << rejected);
  CHECK(built > 0);
  CHECK(rejected > 0);
}

// cse: merges nodes that compute the same thing: same op, same operands in the same order, equal
// attributes (attrEquals: floats and tensors compared bit for bit). The first node stays; uses of a later twin move to it.
// The twin is left in place, unused, for dce to remove (so `--passes=cse` alone shows what merged).
//   %0 = exp(%x) : f32[4]               %0 = exp(%x) : f32[4]
//   %1 = exp(%x) : f32[4]        ->     %1 = exp(%x) : f32[4]      // dead now
//   %2 = add(%0, %1) : f32[4]           %2 = add(%0, %0) : f32[4]
// Every smelt op is a pure function of its operands and attributes (dropout draws its mask from its
// seed attribute), so any two such nodes may merge.
#include "ir/printer.h"
#include "passes/passes.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_map>

namespace smelt {

namespace {

void combine(size_t& seed, size_t value) { seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2); }

// Tensors hash their first bytes only: equal prefixes are rare for distinct constants, and hashing
// megabytes of weights for every lookup would cost more than the bit-exact compare that follows.
constexpr size_t kTensorHashBytes = 256;

size_t hashAttribute(const Attribute& attr) {
  size_t h = attr.index();
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          combine(h, std::hash<int64_t>{}(v));
        } else if constexpr (std::is_same_v<T, double>) {
          combine(h, std::hash<double>{}(v));
        } else if constexpr (std::is_same_v<T, std::string>) {
          combine(h, std::hash<std::string>{}(v));
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>> || std::is_same_v<T, std::vector<double>>) {
          for (auto x : v) combine(h, std::hash<decltype(x)>{}(x));
        } else if constexpr (std::is_same_v<T, GraphRef>) {
          // Bodies of fused kernels: equal bodies print the same (attrEquals compares the text).
          if (v) combine(h, std::hash<std::string>{}(toText(*v)));
        } else {
          auto bytes = v.bytes();
          std::string_view prefix(reinterpret_cast<const char*>(bytes.data()),
                                  std::min(bytes.size(), kTensorHashBytes));
          combine(h, std::hash<std::string_view>{}(prefix));
          combine(h, bytes.size());
          combine(h, static_cast<size_t>(v.type().dtype));
        }
      },
      attr);
  return h;
}

size_t hashNode(const Node& node) {
  size_t h = std::hash<const OpDef*>{}(&node.op());
  for (const Value* operand : node.operands()) combine(h, std::hash<const Value*>{}(operand));
  for (const auto& [name, attr] : node.attrs()) {
    combine(h, std::hash<std::string>{}(name));
    combine(h, hashAttribute(attr));
  }
  return h;
}

bool sameComputation(const Node& a, const Node& b) {
  if (&a.op() != &b.op() || a.operands() != b.operands() || a.attrs().size() != b.attrs().size()) return false;
  // Attributes are complete (defaults filled in) and sorted, so they pair up by position.
  auto ia = a.attrs().begin();
  for (auto ib = b.attrs().begin(); ib != b.attrs().end(); ++ia, ++ib) {
    if (ia->first != ib->first || !attrEquals(ia->second, ib->second)) return false;
  }
  // Same op, operands and attributes give the same result types; checked anyway (replaceAllUsesWith
  // requires it) so a surprising op cannot produce an ill-typed graph.
  return a.resultTypes() == b.resultTypes();
}

class CommonSubexpressionElimination final : public Pass {
 public:
  std::string_view name() const override { return "cse"; }
  std::string_view summary() const override {
    return "Merges nodes with the same op, operands and attributes (the later one is left for dce)";
  }
  Expected<bool> run(Graph& graph, PassContext& context) override {
    // One forward walk suffices: when a node merges, its users now name the survivor, so users that
    // become identical are found when the walk reaches them.
    std::unordered_multimap<size_t, Node*> seen;
    int64_t merged = 0;
    for (const auto& owned : graph.nodes()) {
      Node* node = owned.get();
      size_t h = hashNode(*node);
      Node* twin = nullptr;
      auto [begin, end] = seen.equal_range(h);
      for (auto it = begin; it != end && !twin; ++it) {
        if (sameComputation(*it->second, *node)) twin = it->second;
      }
      if (!twin) {
        seen.emplace(h, node);
        continue;
      }
      bool used = false;
      for (size_t i = 0; i < node->results().size(); ++i) {
        Value* result = node->result(i);
        bool isOutput = std::any_of(graph.outputs().begin(), graph.outputs().end(),
                                    [&](const GraphOutput& out) { return out.value == result; });
        used |= isOutput || !result->users().empty();
        graph.replaceAllUsesWith(result, twin->result(i));
      }
      // A twin nobody used is not counted: dce's job, and counting it would make `changed` lie.
      if (used) ++merged;
    }
    if (merged) context.count("nodes merged", merged);
    return merged > 0;
  }
};

}  // namespace

std::unique_ptr<Pass> createCommonSubexpressionElimination() {
  return std::make_unique<CommonSubexpressionElimination>();
}

}  // namespace smelt

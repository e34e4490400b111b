// Binding symbolic dimensions (see dims.h).
#include "ir/dims.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>

namespace smelt {

bool typeAccepts(const TensorType& declared, const TensorType& fed) {
  if (declared.dtype != fed.dtype || declared.rank() != fed.rank()) return false;
  for (size_t d = 0; d < declared.shape.size(); ++d) {
    if (!isSymbolic(declared.shape[d]) && declared.shape[d] != fed.shape[d]) return false;
  }
  return true;
}

std::string bindingToString(const DimBinding& binding) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : binding) parts.push_back(fmt::format("{}={}", name, value));
  return fmt::format("{}", fmt::join(parts, ", "));
}

Status parseDimAssignment(std::string_view text, DimBinding& binding) {
  size_t eq = text.find('=');
  std::string_view name = text.substr(0, eq), number = eq == std::string_view::npos ? "" : text.substr(eq + 1);
  if (eq == std::string_view::npos || !isValidSymbolName(name)) {
    return makeError("--dim '{}': expected NAME=EXTENT, like N=8", text);
  }
  int64_t value = -1;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size() || value < 0 || value > kMaxElements) {
    return makeError("--dim '{}': '{}' is no extent (0 to 2^40)", text, number);
  }
  if (auto [it, added] = binding.emplace(name, value); !added && it->second != value) {
    return makeError("--dim {}: given twice, as {} and {}", name, it->second, value);
  }
  return Status::success();
}

namespace {

Status checkInRange(const Graph& graph, const std::string& symbol, int64_t value, std::string_view where) {
  Graph::DimRange r = graph.dimRange(symbol);
  if (value < r.min || value > r.max) {
    return makeError("graph @{}: {}{} = {} is outside its range [{}, {}]", graph.name(), where, symbol, value, r.min,
                     r.max);
  }
  return Status::success();
}

}  // namespace

Status DimBinder::bind(const std::string& symbol, int64_t extent, const std::string& where) {
  if (auto [it, added] = binding_.emplace(symbol, extent); !added && it->second != extent) {
    return makeError("graph @{}: {} is {} = {}, but {} made {} = {}", graph_.name(), where, symbol, extent,
                     boundBy_[symbol], symbol, it->second);
  }
  boundBy_.emplace(symbol, where);
  return checkInRange(graph_, symbol, extent, where + ": ");
}

Status DimBinder::bindInput(const Value& input, const TensorType& fed) {
  const Shape& declared = input.shape();
  if (fed.shape.size() != declared.size()) {
    return makeError("graph @{}: input '{}' is declared {}, fed rank {} ({})", graph_.name(), input.name(),
                     input.type().toString(), fed.shape.size(), shapeToString(fed.shape));
  }
  for (size_t d = 0; d < declared.size(); ++d) {
    std::string where = fmt::format("input '{}' dimension #{}", input.name(), d);
    if (isPlainSymbol(declared[d])) {
      SMELT_CHECK_OK(bind(dimSymbolName(declared[d]), fed.shape[d], where));
    } else if (isSymbolic(declared[d])) {
      products_.push_back({declared[d], fed.shape[d], std::move(where)});
    } else if (fed.shape[d] != declared[d]) {
      return makeError("graph @{}: input '{}' is declared {}, fed {} (dimension #{})", graph_.name(), input.name(),
                       input.type().toString(), shapeToString(fed.shape), d);
    }
  }
  return Status::success();
}

Expected<DimBinding> bindingFromInputs(const Graph& graph, std::span<const TensorType> fed) {
  if (fed.size() != graph.inputs().size()) {
    return makeError("graph @{}: {} input types given, it has {} inputs", graph.name(), fed.size(),
                     graph.inputs().size());
  }
  DimBinder binder(graph);
  for (size_t i = 0; i < fed.size(); ++i) SMELT_CHECK_OK(binder.bindInput(*graph.inputs()[i], fed[i]));
  return binder.binding();
}

Expected<int64_t> evaluateExtent(int64_t extent, const DimBinding& binding) {
  return evaluateSymbolicExtent(extent, [&](const std::string& name) -> std::optional<int64_t> {
    auto it = binding.find(name);
    return it == binding.end() ? std::nullopt : std::optional<int64_t>(it->second);
  });
}

Expected<DimBinding> DimBinder::binding() {
  // One declared extent may wait on a symbol another one solves: repeat while any is solved.
  for (bool solved = true; solved;) {
    solved = false;
    for (const FedProduct& p : products_) {
      SMELT_TRY(Solution solution, solve(p));
      if (!solution) continue;
      SMELT_CHECK_OK(bind(solution->first, solution->second, p.where));
      solved = true;
    }
  }
  for (const FedProduct& p : products_) {
    Expected<int64_t> value = evaluateExtent(p.declared, binding_);
    if (!value.ok()) {
      return makeError("graph @{}: {} is declared {}, whose symbols no input binds alone", graph_.name(), p.where,
                       extentToString(p.declared));
    }
    if (*value != p.fed) {
      return makeError("graph @{}: {} is declared {} = {} at {}, fed {}", graph_.name(), p.where,
                       extentToString(p.declared), *value, bindingToString(binding_), p.fed);
    }
  }
  return binding_;
}

Expected<DimBinder::Solution> DimBinder::solve(const FedProduct& p) const {
  // Solvable: one unbound symbol, in one term, to the first power and outside every floor quotient;
  // the other terms and the term's other factors evaluate.
  std::vector<std::string> unbound;
  for (const std::string& s : extentSymbols(p.declared)) {
    if (!binding_.count(s)) unbound.push_back(s);
  }
  if (unbound.size() != 1) return Solution();
  const int64_t symbol = dimSymbol(unbound[0]);
  const ExtentSum sum = extentSum(p.declared);
  __int128 rest = sum.constant, multiplier = 0;
  for (const ExtentSum::Term& t : sum.terms) {
    __int128 value = t.coefficient;
    int64_t powers = 0;
    for (int64_t atom : t.atoms) {
      if (atom == symbol) {
        ++powers;
        continue;
      }
      Expected<int64_t> v = evaluateExtent(atom, binding_);
      if (!v.ok()) return Solution();  // the symbol is inside a floor quotient
      value *= *v;
      if (value > kMaxElements || value < -kMaxElements) {
        return makeError("graph @{}: {} is declared {}, more than 2^40 at {}", graph_.name(), p.where,
                         extentToString(p.declared), bindingToString(binding_));
      }
    }
    if (powers > 1 || (powers == 1 && multiplier != 0)) return Solution();
    if (powers == 1) {
      multiplier = value;
    } else {
      rest += value;
    }
  }
  const __int128 left = static_cast<__int128>(p.fed) - rest;
  if (rest == 0 && (multiplier <= 0 || left % multiplier != 0)) {
    return makeError("graph @{}: {} is declared {}, fed {}, which is no multiple of {}", graph_.name(), p.where,
                     extentToString(p.declared), p.fed, static_cast<int64_t>(multiplier));
  }
  if (multiplier == 0 || left % multiplier != 0 || left / multiplier < 0) {
    return makeError("graph @{}: {} is declared {}, fed {}, which no {} makes", graph_.name(), p.where,
                     extentToString(p.declared), p.fed, unbound[0]);
  }
  return Solution({unbound[0], static_cast<int64_t>(left / multiplier)});
}

Status checkBinding(const Graph& graph, const DimBinding& binding) {
  std::vector<std::string> symbols = graph.symbolicDims();
  for (const auto& [name, value] : binding) {
    if (std::find(symbols.begin(), symbols.end(), name) == symbols.end()) {
      return makeError("graph @{}: has no symbolic dimension {} (it has: {})", graph.name(), name,
                       symbols.empty() ? std::string("none") : fmt::format("{}", fmt::join(symbols, ", ")));
    }
  }
  for (const std::string& s : symbols) {
    auto it = binding.find(s);
    if (it == binding.end())
      return makeError("graph @{}: dimension {} is not bound (--dim {}=EXTENT)", graph.name(), s, s);
    SMELT_CHECK_OK(checkInRange(graph, s, it->second, ""));
  }
  return Status::success();
}

Expected<Graph> withInputTypes(const Graph& graph,
                               const std::function<Expected<TensorType>(const TensorType&)>& typeOf,
                               const std::function<void(AttrMap&)>& attrs,
                               const std::function<std::string(const Node&)>& explain) {
  Graph out(graph.name());
  std::unordered_map<const Value*, Value*> map;
  for (const Value* v : graph.inputs()) {
    SMELT_TRY(TensorType t, typeOf(v->type()));
    map[v] = out.addInput(v->name(), std::move(t));
  }
  for (const Value* v : graph.parameters()) map[v] = out.addParameterLike(*v);
  for (const auto& node : graph.nodes()) {
    std::vector<Value*> operands;
    for (const Value* o : node->operands()) operands.push_back(map.at(o));
    AttrMap a = node->attrs();
    if (attrs) attrs(a);
    Expected<Node*> added = out.addNode(node->opName(), std::move(operands), std::move(a), node->sourceName());
    if (!added.ok()) {
      std::string why = explain ? explain(*node) : std::string();
      return why.empty() ? added.error() : makeError("{}; {}", added.error().message(), why);
    }
    Node* n = *added;
    for (size_t r = 0; r < node->results().size(); ++r) map[node->result(r)] = n->result(r);
  }
  for (const GraphOutput& o : graph.outputs()) out.addOutput(o.name, map.at(o.value));
  return out;
}

namespace {

/// "its operands are declared f32[N,3] and f32[M,3], bound N=3, M=5: symbols an op unifies must be
/// bound to one extent", or "" when the node's operands hold fewer than two symbols.
std::string unifiedSymbols(const Node& node, const DimBinding& binding) {
  std::vector<std::string> types, symbols, bound;  // symbols in the order the operands hold them
  for (const Value* o : node.operands()) {
    types.push_back(o->type().toString());
    for (int64_t d : o->type().shape) {
      for (const std::string& name : extentSymbols(d)) {
        if (std::find(symbols.begin(), symbols.end(), name) != symbols.end()) continue;
        symbols.push_back(name);
        auto it = binding.find(name);
        bound.push_back(it == binding.end() ? name + " unbound" : fmt::format("{}={}", name, it->second));
      }
    }
  }
  if (symbols.size() < 2) return "";
  return fmt::format("its operands are declared {}, bound {}: symbols an op unifies must be bound to one extent",
                     fmt::join(types, " and "), fmt::join(bound, ", "));
}

}  // namespace

Expected<Graph> bindDims(const Graph& graph, const DimBinding& binding) {
  SMELT_CHECK_OK(checkBinding(graph, binding));
  // Every symbol of a product is bound: products are made from the inputs' and parameters' symbols.
  // One that is not (written by hand into an attribute) is left for the op's inference to refuse.
  auto bind = [&](int64_t& d) {
    if (Expected<int64_t> value = evaluateExtent(d, binding); value.ok()) d = *value;
  };
  auto explain = [&](const Node& node) { return unifiedSymbols(node, binding); };
  SMELT_TRY(Graph bound, withInputTypes(
                             graph,
                             [&](TensorType t) -> Expected<TensorType> {
                               for (int64_t& d : t.shape) bind(d);
                               SMELT_CHECK_OK(checkShapeLimits(t.shape));
                               return t;
                             },
                             [&](AttrMap& attrs) {
                               for (auto& [name, value] : attrs) {
                                 if (auto* ints = std::get_if<std::vector<int64_t>>(&value)) {
                                   for (int64_t& d : *ints) bind(d);
                                 }
                               }
                             },
                             explain));
  // Inference at the bound sizes may succeed where the symbols' unification does not hold (N=1 and
  // M=5 broadcast): each result must be its symbolic type, bound.
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& symbolic = *graph.nodes()[i];
    const Node& fixed = *bound.nodes()[i];
    for (size_t r = 0; r < symbolic.results().size(); ++r) {
      TensorType want = symbolic.result(r)->type();
      for (int64_t& d : want.shape) bind(d);
      if (want == fixed.result(r)->type()) continue;
      const std::string why = unifiedSymbols(symbolic, binding);
      return makeError("{}: result {} is {} at this binding, not {}{}{}", graph.labelOf(symbolic), r,
                       fixed.result(r)->type().toString(), symbolic.result(r)->type().toString(),
                       why.empty() ? "" : "; ", why);
    }
  }
  return bound;
}

}  // namespace smelt

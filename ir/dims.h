// Binding a graph's symbolic dimensions (ir/type.h): from the shapes fed to a run, or given by name
// (`smelt --dim N=8`), into a static graph every pass, backend and plan takes.
//   SMELT_TRY(DimBinding b, bindingFromInputs(graph, {x.type()}));  // {"N": 40}
//   SMELT_TRY(Graph fixed, bindDims(graph, b));                     // f32[N,784] is now f32[40,784]
#pragma once

#include "ir/graph.h"

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace smelt {

/// Values of symbolic dimensions by name: {"N": 40}.
using DimBinding = std::map<std::string, int64_t>;

/// Whether a tensor of type `fed` may feed a value declared `declared`: the same dtype and rank, and
/// equal extents where `declared` has counts (a symbolic extent takes any; bindingFromInputs checks
/// that one symbol gets one extent, in its range).
bool typeAccepts(const TensorType& declared, const TensorType& fed);

/// "N=40, T=7"; "" when empty.
std::string bindingToString(const DimBinding& binding);

/// Parses "N=8" into `binding` (the CLI's --dim); an error says what is wrong.
Status parseDimAssignment(std::string_view text, DimBinding& binding);

/// The value of `extent` at `binding`: a count itself, a symbol its bound value, a polynomial over
/// symbols its value at theirs (ir/type.h). An error names a symbol the binding lacks, or a value
/// past kMaxElements.
Expected<int64_t> evaluateExtent(int64_t extent, const DimBinding& binding);

/// Builds a binding from several sources (`--dim` options, then the inputs fed), remembering which one
/// bound each symbol so a disagreement names both.
class DimBinder {
 public:
  explicit DimBinder(const Graph& graph) : graph_(graph) {}
  /// `symbol` = `extent`, bound by `where` ("--dim", "input 'x' dimension #0"): an error if another
  /// source bound it to another extent, or the extent is outside the symbol's range.
  Status bind(const std::string& symbol, int64_t extent, const std::string& where);
  /// The symbols of `input`'s declared type from the type fed to it; a rank or static extent that
  /// differs from the declared one is an error naming the input. A product of symbols ("4*N") is
  /// checked by binding(), once every source has bound what it can.
  Status bindInput(const Value& input, const TensorType& fed);
  /// The binding, once each polynomial extent in a fed input's type is checked against the extent
  /// fed: equal to its value, or, where it holds one symbol nothing else bound, to the first power
  /// (f32[4*N] fed 12, f32[T+1] fed 8), that symbol's value solved from it (N = 3, T = 7). One that
  /// disagrees is an error naming the input.
  Expected<DimBinding> binding();

 private:
  struct FedProduct {
    int64_t declared;
    int64_t fed;
    std::string where;
  };
  /// The symbol a fed extent solves, with its value, when it holds one unbound symbol (linearly, in
  /// one term); nullopt when it does not yet; an error when no value makes it the fed extent.
  using Solution = std::optional<std::pair<std::string, int64_t>>;
  Expected<Solution> solve(const FedProduct& p) const;
  const Graph& graph_;
  DimBinding binding_;
  std::map<std::string, std::string> boundBy_;
  std::vector<FedProduct> products_;
};

/// The binding the types fed to a graph's inputs give (one per input, in order): each symbolic extent
/// of an input's declared type takes the fed extent. A fed rank or static extent that differs from the
/// declared one, a symbol fed two different extents, or an extent outside the symbol's range is an
/// error naming the input, the dimension and the values.
Expected<DimBinding> bindingFromInputs(const Graph& graph, std::span<const TensorType> fed);

/// Fails unless `binding` gives every symbolic dimension of `graph` an extent in its range, and names
/// no symbol the graph lacks.
Status checkBinding(const Graph& graph, const DimBinding& binding);

/// A copy of `graph` whose inputs have the types `typeOf` gives for their own, every node's types
/// inferred again from them (an op refusing them is an error naming the node, followed by what
/// `explain` says of the source node when given); `attrs`, when given, rewrites each node's attributes
/// first.
Expected<Graph> withInputTypes(const Graph& graph,
                               const std::function<Expected<TensorType>(const TensorType&)>& typeOf,
                               const std::function<void(AttrMap&)>& attrs = {},
                               const std::function<std::string(const Node&)>& explain = {});

/// A static copy of `graph`: every symbolic extent of its inputs, and of its nodes' integer attributes
/// (expand's shape over a symbolic batch), replaced by its bound value, and every node's types
/// inferred again from them. Symbols an op unified (add of f32[N] and f32[M]) must be bound to one
/// extent: otherwise the error names the node, both symbols and their values.
Expected<Graph> bindDims(const Graph& graph, const DimBinding& binding);

}  // namespace smelt

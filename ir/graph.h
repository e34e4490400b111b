// The graph: typed values produced by nodes, graph inputs, parameters (trainable, with initial values)
// and named outputs. Nodes are kept in a valid execution order (every operand defined before use).
#pragma once

#include "ir/attribute.h"
#include "ir/op_registry.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace smelt {

class Node;
class Graph;

/// Where a value comes from.
enum class ValueKind { Input, Parameter, Result };

/// A typed SSA value: a graph input, a parameter, or a result of a node.
class Value {
 public:
  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  ValueKind kind() const { return kind_; }
  /// The producing node, or null for inputs and parameters.
  Node* producer() const { return producer_; }
  int resultIndex() const { return resultIndex_; }
  /// Inputs and parameters: their unique name. Results: empty.
  const std::string& name() const { return name_; }
  /// Parameters only: the initial value and whether training updates it. Copies of a graph (clone,
  /// passes that rebuild it) share one immutable initial value instead of copying the tensor. Once
  /// released (Graph::releaseParameterValues) there is none: initialValue() is an empty tensor and
  /// whoever runs the graph must feed the parameter.
  const Tensor& initialValue() const;
  bool hasInitialValue() const { return initial_ != nullptr; }
  bool trainable() const { return trainable_; }
  void setInitialValue(Tensor value) { initial_ = std::make_shared<const Tensor>(std::move(value)); }
  /// The nodes that use this value, one entry per use.
  const std::vector<Node*>& users() const { return users_; }

 private:
  friend class Graph;
  TensorType type_;
  ValueKind kind_ = ValueKind::Result;
  Node* producer_ = nullptr;
  int resultIndex_ = 0;
  std::string name_;
  std::shared_ptr<const Tensor> initial_;
  bool trainable_ = false;
  std::vector<Node*> users_;
};

/// One application of a registered op.
class Node {
 public:
  const OpDef& op() const { return *op_; }
  const std::string& opName() const { return op_->name; }
  const std::vector<Value*>& operands() const { return operands_; }
  Value* operand(size_t i) const { return operands_[i]; }
  size_t numOperands() const { return operands_.size(); }
  const std::vector<Value*>& results() const { return results_; }
  Value* result(size_t i = 0) const { return results_[i]; }
  /// Complete attributes: every declared attribute is present, defaults filled in.
  const AttrMap& attrs() const { return attrs_; }
  /// The name the node had where it came from (an ONNX node name), or empty.
  const std::string& sourceName() const { return sourceName_; }
  void setSourceName(std::string name) { sourceName_ = std::move(name); }
  /// The result types as inferred when the node was built.
  std::vector<TensorType> resultTypes() const;
  /// The printed number of the node's first result (%N), kept current by the graph.
  size_t number() const { return number_; }

 private:
  friend class Graph;
  const OpDef* op_ = nullptr;
  size_t number_ = 0;
  std::vector<Value*> operands_;
  std::vector<Value*> results_;
  AttrMap attrs_;
  std::string sourceName_;
};

/// A named graph output.
struct GraphOutput {
  std::string name;
  Value* value = nullptr;
};

/// Told about every node added to a graph; the GradientTape (autodiff issue) records through this.
class GraphObserver {
 public:
  virtual ~GraphObserver() = default;
  virtual void onNodeAdded(Node* node) = 0;
};

/// A static, typed dataflow graph built define-then-run.
class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  /// A deep copy (values, nodes and parameter values).
  Graph clone() const;

  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  /// The values a symbolic dimension of this graph may take ("dim N in [1, 256]" in the text IR);
  /// a symbol without a declared range takes any extent from 1 to kMaxElements.
  struct DimRange {
    int64_t min = 1;
    int64_t max = kMaxElements;
    bool operator==(const DimRange&) const = default;
  };
  DimRange dimRange(const std::string& symbol) const;
  void setDimRange(const std::string& symbol, DimRange range) { dimRanges_[symbol] = range; }
  const std::map<std::string, DimRange>& dimRanges() const { return dimRanges_; }
  /// The symbolic dimensions of the inputs' and parameters' types, in order of first appearance.
  std::vector<std::string> symbolicDims() const;

  /// Adds a graph input. Names of inputs and parameters must be unique (see isNameTaken).
  Value* addInput(std::string name, TensorType type);
  /// Adds a parameter with an initial value.
  Value* addParameter(std::string name, Tensor initial, bool trainable = true);
  /// A parameter without an initial value: whoever runs the graph feeds it on every run (the model
  /// API's graphs, whose values live in the model's state).
  Value* addFedParameter(std::string name, TensorType type, bool trainable = true);
  /// A parameter like `other` (another graph's): its name, type and trainability, sharing its initial
  /// value (no copy), or none when that was released.
  Value* addParameterLike(const Value& other);
  /// Drops every parameter's initial value (this graph's share of it): for graphs whose parameters are
  /// always fed, so that only the feeds hold the values.
  void releaseParameterValues();
  /// Adds a node after all existing ones: checks operand count, attribute names and kinds, fills in
  /// default attributes, runs the op's inference (which verifies), and creates the results.
  Expected<Node*> addNode(std::string_view op, std::vector<Value*> operands, AttrMap attrs = {},
                          std::string sourceName = {});
  /// addNode for single-result ops, returning the result.
  Expected<Value*> apply(std::string_view op, std::vector<Value*> operands, AttrMap attrs = {});
  /// Adds a `constant` node holding `value`.
  Value* constant(Tensor value);
  /// Appends a named output.
  void addOutput(std::string name, Value* value);
  void setOutputValue(size_t index, Value* value);
  void clearOutputs() { outputs_.clear(); }

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& parameters() const { return parameters_; }
  const std::vector<GraphOutput>& outputs() const { return outputs_; }
  /// Nodes in execution order.
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  size_t numNodes() const { return nodes_.size(); }

  Value* findInput(std::string_view name) const;
  Value* findParameter(std::string_view name) const;
  bool isNameTaken(std::string_view name) const { return findInput(name) || findParameter(name); }

  /// Points every use of `from` (node operands and outputs) at `to`. Types must match.
  void replaceAllUsesWith(Value* from, Value* to);
  /// Points `user`'s operands that are `from` at `to` (every other use of `from` stays). Types must match.
  void replaceUsesIn(Node* user, Value* from, Value* to);
  /// Removes nodes whose results are unused and not outputs; returns how many were removed.
  size_t removeDeadNodes();
  /// Puts the nodes in `order` (every node once, each after the producers of its operands): the execution
  /// order a scheduling decision chose. An error, changing nothing, for an order that is not one.
  Status reorderNodes(const std::vector<const Node*>& order);

  /// The label errors use for `node`: "conv2d %7" where %7 is its first result's printed number,
  /// followed by its source name when it has one.
  std::string labelOf(const Node& node) const;
  /// The same label for a node about to be added as result number `number`.
  static std::string formatLabel(std::string_view opName, size_t number, std::string_view sourceName);

  /// New nodes go right before `node` (keeping the execution order valid for rewrites that replace
  /// `node`'s results) until clearInsertionPoint(); by default they go after all existing nodes.
  void setInsertionPoint(const Node* node) { insertBefore_ = node; }
  void clearInsertionPoint() { insertBefore_ = nullptr; }

  void addObserver(GraphObserver* observer) { observers_.push_back(observer); }
  void removeObserver(GraphObserver* observer);

 private:
  Value* newValue();
  /// Recomputes every node's printed number after an insertion or removal mid-graph.
  void renumber();
  std::string name_;
  std::map<std::string, DimRange> dimRanges_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<Value*> inputs_;
  std::vector<Value*> parameters_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<GraphOutput> outputs_;
  std::vector<GraphObserver*> observers_;
  std::vector<std::unique_ptr<Node>> garbage_;  // removed nodes, kept so stale pointers never dangle
  const Node* insertBefore_ = nullptr;
  size_t resultCount_ = 0;  // results of all nodes: the next appended node's number
};

}  // namespace smelt

// Graph construction and editing.
#include "ir/graph.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace smelt {

Value* GradientContext::x(size_t i) const { return node_.operand(i); }
Value* GradientContext::y(size_t i) const { return node_.result(i); }
size_t GradientContext::numOperands() const { return node_.numOperands(); }
int64_t GradientContext::getInt(std::string_view name) const { return std::get<int64_t>(node_.attrs().find(name)->second); }
double GradientContext::getFloat(std::string_view name) const { return std::get<double>(node_.attrs().find(name)->second); }
const std::string& GradientContext::getString(std::string_view name) const {
  return std::get<std::string>(node_.attrs().find(name)->second);
}
const std::vector<int64_t>& GradientContext::getInts(std::string_view name) const {
  return std::get<std::vector<int64_t>>(node_.attrs().find(name)->second);
}
const std::vector<double>& GradientContext::getFloats(std::string_view name) const {
  return std::get<std::vector<double>>(node_.attrs().find(name)->second);
}

std::vector<TensorType> Node::resultTypes() const {
  std::vector<TensorType> types;
  for (const Value* v : results_) types.push_back(v->type());
  return types;
}

Value* Graph::newValue() {
  values_.push_back(std::make_unique<Value>());
  return values_.back().get();
}

Value* Graph::addInput(std::string name, TensorType type) {
  Value* v = newValue();
  v->kind_ = ValueKind::Input;
  v->name_ = std::move(name);
  v->type_ = std::move(type);
  inputs_.push_back(v);
  return v;
}

Value* Graph::addParameter(std::string name, Tensor initial, bool trainable) {
  Value* v = newValue();
  v->kind_ = ValueKind::Parameter;
  v->name_ = std::move(name);
  v->type_ = initial.type();
  v->initial_ = std::make_shared<const Tensor>(std::move(initial));
  v->trainable_ = trainable;
  parameters_.push_back(v);
  return v;
}

Value* Graph::addFedParameter(std::string name, TensorType type, bool trainable) {
  Value* v = newValue();
  v->kind_ = ValueKind::Parameter;
  v->name_ = std::move(name);
  v->type_ = std::move(type);
  v->trainable_ = trainable;
  parameters_.push_back(v);
  return v;
}

Value* Graph::addParameterLike(const Value& other) {
  Value* v = newValue();
  v->kind_ = ValueKind::Parameter;
  v->name_ = other.name_;
  v->type_ = other.type_;
  v->initial_ = other.initial_;
  v->trainable_ = other.trainable_;
  parameters_.push_back(v);
  return v;
}

void Graph::releaseParameterValues() {
  for (Value* v : parameters_) v->initial_.reset();
}

const Tensor& Value::initialValue() const {
  static const Tensor none;
  return initial_ ? *initial_ : none;
}

std::string Graph::formatLabel(std::string_view opName, size_t number, std::string_view sourceName) {
  std::string label = fmt::format("{} %{}", opName, number);
  if (!sourceName.empty()) label += fmt::format(" (\"{}\")", sourceName);
  return label;
}

// Labels are built for every node the interpreter, verifier and autodiff visit, so the number is kept
// on the node rather than counted here.
std::string Graph::labelOf(const Node& node) const {
  return formatLabel(node.opName(), node.number(), node.sourceName());
}

void Graph::renumber() {
  resultCount_ = 0;
  for (const auto& n : nodes_) {
    n->number_ = resultCount_;
    resultCount_ += n->results().size();
  }
}

Expected<Node*> Graph::addNode(std::string_view opName, std::vector<Value*> operands, AttrMap attrs,
                               std::string sourceName) {
  std::string label = formatLabel(opName, insertBefore_ ? insertBefore_->number() : resultCount_, sourceName);
  const OpDef* op = OpRegistry::global().find(opName);
  if (!op) return makeError("{}: unknown op '{}'", label, opName);
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i]) return makeError("{}: operand #{} is missing", label, i);
  }
  SMELT_TRY(AttrMap complete, completeAttributes(*op, label, operands.size(), std::move(attrs)));
  std::vector<TensorType> operandTypes;
  for (Value* v : operands) operandTypes.push_back(v->type());
  OpCall call(*op, label, operandTypes, complete);
  SMELT_TRY(std::vector<TensorType> resultTypes, inferResultTypes(call));

  auto node = std::make_unique<Node>();
  node->op_ = op;
  node->operands_ = std::move(operands);
  node->attrs_ = std::move(complete);
  node->sourceName_ = std::move(sourceName);
  for (size_t i = 0; i < resultTypes.size(); ++i) {
    Value* v = newValue();
    v->kind_ = ValueKind::Result;
    v->type_ = std::move(resultTypes[i]);
    v->producer_ = node.get();
    v->resultIndex_ = static_cast<int>(i);
    node->results_.push_back(v);
  }
  for (Value* v : node->operands_) v->users_.push_back(node.get());
  Node* added = node.get();
  if (insertBefore_) {
    auto at = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n.get() == insertBefore_; });
    nodes_.insert(at, std::move(node));
    renumber();
  } else {
    node->number_ = resultCount_;
    resultCount_ += node->results_.size();
    nodes_.push_back(std::move(node));
  }
  for (GraphObserver* o : observers_) o->onNodeAdded(added);
  return added;
}

Expected<Value*> Graph::apply(std::string_view op, std::vector<Value*> operands, AttrMap attrs) {
  SMELT_TRY(Node * node, addNode(op, std::move(operands), std::move(attrs)));
  if (node->results().size() != 1) {
    return makeError("{}: has {} results; use addNode", labelOf(*node), node->results().size());
  }
  return node->result();
}

Value* Graph::constant(Tensor value) {
  AttrMap attrs;
  attrs.emplace("value", std::move(value));
  auto node = addNode("constant", {}, std::move(attrs));
  // A constant node takes any tensor; failure here means the registry lost its constant op.
  return node.ok() ? node.value()->result() : nullptr;
}

void Graph::addOutput(std::string name, Value* value) { outputs_.push_back({std::move(name), value}); }

void Graph::setOutputValue(size_t index, Value* value) { outputs_.at(index).value = value; }

Value* Graph::findInput(std::string_view name) const {
  for (Value* v : inputs_) {
    if (v->name() == name) return v;
  }
  return nullptr;
}

Value* Graph::findParameter(std::string_view name) const {
  for (Value* v : parameters_) {
    if (v->name() == name) return v;
  }
  return nullptr;
}

void Graph::replaceAllUsesWith(Value* from, Value* to) {
  if (from == to) return;
  for (Node* user : from->users_) {
    for (Value*& operand : user->operands_) {
      if (operand == from) operand = to;
    }
  }
  // Each use is one entry; a node using `from` twice appears twice and its operands are both moved.
  for (Node* user : from->users_) to->users_.push_back(user);
  from->users_.clear();
  for (GraphOutput& out : outputs_) {
    if (out.value == from) out.value = to;
  }
}

void Graph::replaceUsesIn(Node* user, Value* from, Value* to) {
  if (from == to) return;
  for (Value*& operand : user->operands_) {
    if (operand != from) continue;
    operand = to;
    to->users_.push_back(user);
    // One entry per use: drop one of `from`'s entries for this user.
    auto entry = std::find(from->users_.begin(), from->users_.end(), user);
    if (entry != from->users_.end()) from->users_.erase(entry);
  }
}

size_t Graph::removeDeadNodes() {
  std::unordered_set<const Value*> live;
  for (const GraphOutput& out : outputs_) live.insert(out.value);
  std::vector<bool> keep(nodes_.size(), false);
  for (size_t i = nodes_.size(); i-- > 0;) {
    Node* node = nodes_[i].get();
    bool used = std::any_of(node->results_.begin(), node->results_.end(),
                            [&](const Value* v) { return live.count(v) > 0; });
    if (!used) continue;
    keep[i] = true;
    for (Value* operand : node->operands_) live.insert(operand);
  }
  size_t removed = 0;
  std::vector<std::unique_ptr<Node>> kept;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (keep[i]) {
      kept.push_back(std::move(nodes_[i]));
      continue;
    }
    Node* dead = nodes_[i].get();
    for (Value* operand : dead->operands_) {
      auto& users = operand->users_;
      auto it = std::find(users.begin(), users.end(), dead);
      if (it != users.end()) users.erase(it);
    }
    ++removed;
  }
  // Values of removed nodes stay allocated but unreachable; they die with the graph.
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!keep[i]) garbage_.push_back(std::move(nodes_[i]));
  }
  nodes_ = std::move(kept);
  renumber();
  return removed;
}

Status Graph::reorderNodes(const std::vector<const Node*>& order) {
  if (order.size() != nodes_.size())
    return makeError("reorderNodes: {} nodes given, the graph has {}", order.size(), nodes_.size());
  std::unordered_map<const Node*, size_t> current;
  for (size_t i = 0; i < nodes_.size(); ++i) current.emplace(nodes_[i].get(), i);
  std::unordered_set<const Node*> placed;
  for (const Node* node : order) {
    if (!current.count(node) || placed.count(node))
      return makeError("reorderNodes: a node is {}", current.count(node) ? "given twice" : "not in the graph");
    for (const Value* operand : node->operands()) {
      if (operand->producer() && !placed.count(operand->producer()))
        return makeError("reorderNodes: {} would run before {}, which produces its operand", labelOf(*node),
                         labelOf(*operand->producer()));
    }
    placed.insert(node);
  }
  std::vector<std::unique_ptr<Node>> reordered;
  reordered.reserve(nodes_.size());
  for (const Node* node : order) reordered.push_back(std::move(nodes_[current.at(node)]));
  nodes_ = std::move(reordered);
  renumber();
  return Status::success();
}

void Graph::removeObserver(GraphObserver* observer) {
  observers_.erase(std::remove(observers_.begin(), observers_.end(), observer), observers_.end());
}

Graph::DimRange Graph::dimRange(const std::string& symbol) const {
  auto it = dimRanges_.find(symbol);
  return it == dimRanges_.end() ? DimRange{} : it->second;
}

std::vector<std::string> Graph::symbolicDims() const {
  std::vector<std::string> names;
  auto collect = [&](const Value* v) {
    for (int64_t d : v->shape()) {
      for (const std::string& name : extentSymbols(d)) {
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      }
    }
  };
  for (const Value* v : inputs_) collect(v);
  for (const Value* v : parameters_) collect(v);
  return names;
}

Graph Graph::clone() const {
  Graph copy(name_);
  copy.dimRanges_ = dimRanges_;
  std::unordered_map<const Value*, Value*> map;
  for (Value* v : inputs_) map[v] = copy.addInput(v->name(), v->type());
  for (Value* v : parameters_) map[v] = copy.addParameterLike(*v);
  for (const auto& node : nodes_) {
    auto n = std::make_unique<Node>();
    n->op_ = node->op_;
    n->attrs_ = node->attrs_;
    n->sourceName_ = node->sourceName_;
    for (Value* operand : node->operands_) n->operands_.push_back(map.at(operand));
    for (Value* r : node->results_) {
      Value* v = copy.newValue();
      v->kind_ = ValueKind::Result;
      v->type_ = r->type();
      v->producer_ = n.get();
      v->resultIndex_ = r->resultIndex();
      n->results_.push_back(v);
      map[r] = v;
    }
    for (Value* operand : n->operands_) operand->users_.push_back(n.get());
    copy.nodes_.push_back(std::move(n));
  }
  copy.renumber();
  for (const GraphOutput& out : outputs_) copy.addOutput(out.name, map.at(out.value));
  return copy;
}

}  // namespace smelt

// The global op registry and attribute completion.
#include "ir/op_registry.h"

#include "ir/ops/register_ops.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace smelt {

const AttrSpec* OpDef::findAttr(std::string_view attrName) const {
  for (const AttrSpec& a : attrs) {
    if (a.name == attrName) return &a;
  }
  return nullptr;
}

size_t OpDef::minOperands() const {
  size_t n = 0;
  for (const OperandSpec& o : operands) n += o.arity == Arity::Optional || o.arity == Arity::AnyNumber ? 0 : 1;
  return n;
}

size_t OpDef::maxOperands() const {
  for (const OperandSpec& o : operands) {
    if (o.arity == Arity::Variadic || o.arity == Arity::AnyNumber) return SIZE_MAX;
  }
  return operands.size();
}

const OpRegistry& OpRegistry::global() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    registerAllOps(*r);
    r->finalize();
    return r;
  }();
  return *registry;
}

const OpDef* OpRegistry::find(std::string_view name) const {
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), name,
                             [](const OpDef* op, std::string_view n) { return op->name < n; });
  return it != sorted_.end() && (*it)->name == name ? *it : nullptr;
}

void OpRegistry::add(OpDef def) {
  for (const auto& op : ops_) {
    if (op->name == def.name) {
      // Two declarations of one op is a programming error in ir/ops, caught by every test run.
      std::fprintf(stderr, "smelt: op '%s' is registered twice\n", def.name.c_str());
      std::abort();
    }
  }
  ops_.push_back(std::make_unique<OpDef>(std::move(def)));
}

void OpRegistry::finalize() {
  for (const auto& op : ops_) sorted_.push_back(op.get());
  std::sort(sorted_.begin(), sorted_.end(), [](const OpDef* a, const OpDef* b) { return a->name < b->name; });
}

Expected<std::vector<TensorType>> inferResultTypes(const OpCall& call) {
  for (size_t i = 0; i < call.numOperands(); ++i) {
    const TensorType& t = call.operand(i);
    if (!t.isStatic() && !call.op().symbolicDims) {
      return call.error("operand #{} is {}: {} does not take symbolic dimensions yet; bind them first (ir/dims.h)", i,
                        t.toString(), call.op().name);
    }
  }
  SMELT_TRY(std::vector<TensorType> results, call.op().infer(call));
  for (size_t i = 0; i < results.size(); ++i) {
    if (Status limits = checkShapeLimits(results[i].shape); !limits) {
      return call.error("result #{}: {}", i, limits.error().message());
    }
  }
  return results;
}

Expected<AttrMap> completeAttributes(const OpDef& op, std::string_view label, size_t numOperands, AttrMap attrs) {
  if (numOperands < op.minOperands() || numOperands > op.maxOperands()) {
    std::string expected = op.minOperands() == op.maxOperands() ? std::to_string(op.minOperands())
                           : op.maxOperands() == SIZE_MAX
                               ? fmt::format("at least {}", op.minOperands())
                               : fmt::format("{} to {}", op.minOperands(), op.maxOperands());
    return makeError("{}: expects {} operands, got {}", label, expected, numOperands);
  }
  for (const auto& [name, value] : attrs) {
    const AttrSpec* spec = op.findAttr(name);
    if (!spec) return makeError("{}: unknown attribute '{}'", label, name);
    AttrKind kind = attrKind(value);
    if (kind == spec->kind) continue;
    // Ints are accepted where floats are expected (alpha = 1), and int lists where float lists are.
    if (spec->kind == AttrKind::Float && kind == AttrKind::Int) {
      attrs[name] = static_cast<double>(std::get<int64_t>(value));
    } else if (spec->kind == AttrKind::Floats && kind == AttrKind::Ints) {
      const auto& ints = std::get<std::vector<int64_t>>(value);
      attrs[name] = std::vector<double>(ints.begin(), ints.end());
    } else if (spec->kind == AttrKind::Ints && kind == AttrKind::Floats && std::get<std::vector<double>>(value).empty()) {
      attrs[name] = std::vector<int64_t>{};
    } else {
      return makeError("{}: attribute '{}' must be {}, got {}", label, name, attrKindName(spec->kind),
                       attrKindName(kind));
    }
  }
  for (const AttrSpec& spec : op.attrs) {
    if (attrs.count(spec.name)) continue;
    if (!spec.defaultValue) return makeError("{}: missing required attribute '{}'", label, spec.name);
    attrs.emplace(spec.name, *spec.defaultValue);
  }
  return attrs;
}

std::string substituteDType(std::string text, std::string_view dtype) {
  for (size_t at = text.find("$T"); at != std::string::npos; at = text.find("$T", at + dtype.size())) {
    text.replace(at, 2, dtype);
  }
  return text;
}

std::string OpDef::exampleIn(DType dtype) const { return substituteDType(example, dtypeName(dtype)); }

}  // namespace smelt

// `smelt ops [--markdown]`: every registered op with the dtypes and backends it supports; --markdown
// prints the index of docs/ops.md (scripts/ops_reference.py splices it there; ctest checks it is current).
// `smelt ops --example NAME [--dtype T]` prints the op's registry example as IR text: a graph to start
// from, and what tests/onnx/check_export_every_op.py exports op by op.
#include "ir/op_registry.h"
#include "ir/printer.h"
#include "runtime/exec/executable.h"
#include "tools/smelt/commands.h"

#include <fmt/ranges.h>

namespace smelt::cli {

namespace {

/// docs/ops.md's names for the usual dtype sets, else the list.
std::string dtypeGroup(const DTypeSet& set) {
  using namespace dtypes;
  const std::pair<DTypeSet, const char*> groups[] = {
      {kAll, "all"},        {kNumeric, "numeric"}, {kSignedNumeric, "signed"}, {kFloat, "float"},
      {kInteger, "int"},    {kBool, "bool"},       {kIndex, "index"},
  };
  for (const auto& group : groups) {
    if (group.first.toString() == set.toString()) return group.second;
  }
  return set.toString();
}

std::string_view fusionName(FusionKind kind) {
  switch (kind) {
    case FusionKind::Elementwise: return "elementwise";
    case FusionKind::Broadcast: return "broadcast";
    case FusionKind::Injective: return "injective";
    case FusionKind::View: return "view";
    case FusionKind::Reduction: return "reduction";
    case FusionKind::Opaque: return "opaque";
  }
  return "?";
}

std::string_view productName(ProductFacet::Kind kind) {
  switch (kind) {
    case ProductFacet::Kind::Matmul: return "matmul";
    case ProductFacet::Kind::Gemm: return "gemm";
    case ProductFacet::Kind::Conv: return "conv";
    case ProductFacet::Kind::ConvTranspose: return "conv_transpose";
    case ProductFacet::Kind::ConvWeightGrad: return "conv_weight_grad";
  }
  return "?";
}

std::string escapeCell(std::string text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

/// One row of the index: what the registry entry declares.
std::string markdownRow(const OpDef& op) {
  std::vector<std::string> operands, attrs;
  for (const OperandSpec& o : op.operands) {
    const char* suffix = o.arity == Arity::Optional ? "?" : o.arity == Arity::Single ? "" : "...";
    operands.push_back(o.name + suffix);
  }
  for (const AttrSpec& a : op.attrs) {
    std::string text = fmt::format("{}: {}", a.name, attrKindName(a.kind));
    if (a.defaultValue) text += " = " + printAttribute(*a.defaultValue);
    attrs.push_back(text);
  }
  std::string role(fusionName(op.fusion));
  if (op.product) role = fmt::format("product ({})", productName(op.product->kind));
  if (op.collective) role = "collective";
  std::string how = op.gradient ? "rule" : op.decompose ? "decomposition" : "none";
  std::string attributes = escapeCell(fmt::format("{}", fmt::join(attrs, "; ")));
  return fmt::format("| {} | {} | {} | {} | {} | {} | {} |", op.name, fmt::join(operands, ", "), attributes,
                     dtypeGroup(op.dtypes), role, how, op.lower ? "kernel" : op.decompose ? "decomposed" : "reference");
}

/// The example of `name` in `dtype` (empty: f32 where the op takes it, else its first dtype).
int printExample(const std::string& name, const std::string& dtype) {
  const OpDef* op = OpRegistry::global().find(name);
  if (!op) {
    fmt::print(stderr, "smelt ops: no op named {}\n", "'" + escapeControlCharacters(name) + "'");
    return 2;
  }
  if (op->example.empty()) {
    fmt::print(stderr, "smelt ops: {} has no example\n", name);
    return 2;
  }
  std::string chosen = dtype;
  if (chosen.empty()) chosen = dtypeName(op->dtypes.contains(DType::f32) ? DType::f32 : op->dtypes.list().front());
  auto parsed = parseDType(chosen);
  if (!parsed || !op->dtypes.contains(*parsed)) {
    fmt::print(stderr, "smelt ops: {} takes {}, not {}\n", name, op->dtypes.toString(), "'" + escapeControlCharacters(chosen) + "'");
    return 2;
  }
  std::string text = op->exampleIn(*parsed);
  fmt::print("{}{}", text, text.ends_with('\n') ? "" : "\n");
  return 0;
}

}  // namespace

Action addOpsCommand(CLI::App& app) {
  auto markdown = std::make_shared<bool>(false);
  auto example = std::make_shared<std::string>();
  auto dtype = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("ops", "List the registered ops: name, dtypes, backends, differentiable");
  cmd->add_flag("--markdown", *markdown,
                "Print docs/ops.md's index: operands, attributes with defaults, dtypes, fusion role, gradient and "
                "lowering of every op, as its registry entry declares them");
  cmd->add_option("--example", *example, "Print the op's example graph as IR text (the one the registry tests run)");
  cmd->add_option("--dtype", *dtype, "With --example: the dtype to write it in (default f32 where the op takes it)");
  return [markdown, example, dtype]() {
    if (!example->empty()) return printExample(*example, *dtype);
    if (*markdown) {
      fmt::print("| op | operands | attributes | dtypes | role | gradient | runs as |\n");
      fmt::print("|---|---|---|---|---|---|---|\n");
      for (const OpDef* op : OpRegistry::global().all()) fmt::print("{}\n", markdownRow(*op));
      return 0;
    }
    for (const OpDef* op : OpRegistry::global().all()) {
      // The interpreter runs every op with a reference; the compiled backends every op with a kernel
      // lowering, or whose decomposition they compile (elsewhere the node runs on the interpreter).
      std::vector<std::string> backends;
      if (op->reference) backends.push_back("reference");
      if (op->lower || op->decompose) {
        for (const std::string& b : backendNames()) {
          if (b != "reference" && b != "auto") backends.push_back(b);
        }
      }
      // Joined first: a width applied to fmt::join pads every element, not the list.
      fmt::print("{:<20} dtypes={:<48} backends={:<32} differentiable={}\n", op->name, op->dtypes.toString(),
                 fmt::format("{}", fmt::join(backends, ",")), op->differentiable() ? "yes" : "no");
    }
    return 0;
  };
}

}  // namespace smelt::cli

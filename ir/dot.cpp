// DOT printer.
#include "ir/dot.h"

#include <unordered_map>

namespace smelt {

namespace {
std::string escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

std::string toDot(const Graph& graph) {
  std::string out = fmt::format("digraph \"{}\" {{\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n", escape(graph.name()));
  std::unordered_map<const Value*, std::string> source;
  int id = 0;
  for (const Value* v : graph.inputs()) {
    std::string n = fmt::format("v{}", id++);
    out += fmt::format("  {} [shape=ellipse, label=\"%{}\\n{}\"];\n", n, escape(v->name()), v->type().toString());
    source[v] = n;
  }
  for (const Value* v : graph.parameters()) {
    std::string n = fmt::format("v{}", id++);
    out += fmt::format("  {} [shape=box, style=dashed, label=\"{} %{}\\n{}\"];\n", n, v->trainable() ? "param" : "state",
                       escape(v->name()), v->type().toString());
    source[v] = n;
  }
  for (const auto& node : graph.nodes()) {
    std::string n = fmt::format("n{}", id++);
    out += fmt::format("  {} [shape=box, label=\"{}\"];\n", n, escape(graph.labelOf(*node)));
    for (const Value* operand : node->operands()) {
      out += fmt::format("  {} -> {} [label=\"{}\"];\n", source[operand], n, operand->type().toString());
    }
    for (const Value* r : node->results()) source[r] = n;
  }
  for (const GraphOutput& o : graph.outputs()) {
    std::string n = fmt::format("o{}", id++);
    out += fmt::format("  {} [shape=ellipse, style=bold, label=\"{}\"];\n", n, escape(o.name));
    out += fmt::format("  {} -> {} [label=\"{}\"];\n", source[o.value], n, o.value->type().toString());
  }
  out += "}\n";
  return out;
}

}  // namespace smelt

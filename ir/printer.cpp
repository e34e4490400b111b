// IR text printer. Format (see docs/ir.md):
//   graph @mlp(%x: f32[32,784]) {
//     param %w: f32[784,128] = x"..."
//     %0 = matmul(%x, %w) : f32[32,128]
//     return y = %0
//   }
#include "ir/printer.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <unordered_map>

namespace smelt {

namespace {

bool isIdentifier(std::string_view name) {
  if (name.empty()) return false;
  auto isStart = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  auto isBody = [&](char c) { return isStart(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '.'; };
  if (!isStart(name[0])) return false;
  for (char c : name) {
    if (!isBody(c)) return false;
  }
  return true;
}

template <typename F>
std::string shortest(F value) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, res.ptr);
}

// One element of a tensor in list form: exact shortest decimal for floats.
std::string printElement(const Tensor& t, int64_t i) {
  return dispatchDType(t.dtype(), [&]<typename T>(TypeTag<T>) -> std::string {
    T v = t.data<T>()[i];
    if constexpr (std::is_same_v<T, bool>) {
      return v ? "true" : "false";
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      float f = static_cast<float>(v);
      if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
      return shortest(f);
    } else if constexpr (std::is_floating_point_v<T>) {
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      return shortest(v);
    } else {
      return std::to_string(v);
    }
  });
}

bool hasNaN(const Tensor& t) {
  if (!isFloat(t.dtype())) return false;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.getDouble(i);
    if (v != v) return true;
  }
  return false;
}

std::string hexBody(std::span<const std::byte> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out = "x\"";
  out.reserve(bytes.size() * 2 + 3);
  for (std::byte b : bytes) {
    out += digits[static_cast<unsigned>(b) >> 4];
    out += digits[static_cast<unsigned>(b) & 15];
  }
  out += '"';
  return out;
}

// Writes large tensors to the side file and hands back `file("name", offset)` literals.
class ExternalData {
 public:
  explicit ExternalData(const PrintOptions& options) : options_(options) {}
  Status open() {
    if (options_.externalDataPath.empty()) return Status::success();
    out_.open(options_.externalDataPath, std::ios::binary | std::ios::trunc);
    if (!out_) return makeError("cannot write external data file '{}'", options_.externalDataPath);
    auto slash = options_.externalDataPath.find_last_of('/');
    base_ = slash == std::string::npos ? options_.externalDataPath : options_.externalDataPath.substr(slash + 1);
    return Status::success();
  }
  std::string body(const Tensor& t) {
    if (!out_.is_open() || t.byteSize() <= options_.externalThreshold) return printTensorBody(t, options_);
    size_t pad = (64 - offset_ % 64) % 64;
    static const char zeros[64] = {};
    out_.write(zeros, static_cast<std::streamsize>(pad));
    offset_ += pad;
    std::string lit = fmt::format("file({}, {})", quoteString(base_), offset_);
    out_.write(reinterpret_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.byteSize()));
    offset_ += t.byteSize();
    return lit;
  }
  Status close() {
    if (!out_.is_open()) return Status::success();
    out_.close();
    if (!out_) return makeError("failed writing external data file '{}'", options_.externalDataPath);
    return Status::success();
  }

 private:
  const PrintOptions& options_;
  std::ofstream out_;
  std::string base_;
  size_t offset_ = 0;
};

std::string printAttributeWith(const Attribute& attr, const PrintOptions& options, ExternalData* external) {
  return std::visit(
      [&](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<V, double>) {
          return printFloat(v);
        } else if constexpr (std::is_same_v<V, std::string>) {
          return quoteString(v);
        } else if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
          // A symbolic dimension in a list (a reshape or expand to a symbolic shape) prints as its name.
          std::vector<std::string> parts;
          for (int64_t d : v) parts.push_back(extentToString(d));
          return fmt::format("[{}]", fmt::join(parts, ", "));
        } else if constexpr (std::is_same_v<V, std::vector<double>>) {
          std::vector<std::string> parts;
          for (double d : v) parts.push_back(printFloat(d));
          return fmt::format("[{}]", fmt::join(parts, ", "));
        } else if constexpr (std::is_same_v<V, GraphRef>) {
          // Graph bodies print as nested regions after the node (printGraphInto); this form is for
          // messages only.
          return v ? toText(*v) : std::string("<no graph>");
        } else {
          // Without values, a constant of more than a few elements prints as `...` too (a dump's
          // weights folded into constants would otherwise be megabytes of hex).
          constexpr int64_t kShownWithoutValues = 16;
          std::string body = !options.printParameterValues && v.numel() > kShownWithoutValues ? "..."
                             : external ? external->body(v)
                                        : printTensorBody(v, options);
          return fmt::format("dense<{}> {}", v.type().toString(), body);
        }
      },
      attr);
}

}  // namespace

std::string quoteString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string printName(std::string_view name) { return isIdentifier(name) ? std::string(name) : quoteString(name); }

std::string printFloat(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string s = shortest(value);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string printTensorBody(const Tensor& tensor, const PrintOptions& options) {
  if (tensor.numel() <= options.maxListElements && !hasNaN(tensor)) {
    std::vector<std::string> parts;
    for (int64_t i = 0; i < tensor.numel(); ++i) parts.push_back(printElement(tensor, i));
    return fmt::format("[{}]", fmt::join(parts, ", "));
  }
  return hexBody(tensor.bytes());
}

std::string printTensorLiteral(const Tensor& tensor, const PrintOptions& options) {
  return fmt::format("dense<{}> {}", tensor.type().toString(), printTensorBody(tensor, options));
}

std::string printAttribute(const Attribute& attr, const PrintOptions& options) {
  return printAttributeWith(attr, options, nullptr);
}

namespace {

// Prints `graph` with every line after the first indented by `indent`; nested graphs (the bodies of
// fused kernels) print the same way, two spaces deeper, with their own value numbering.
void printGraphInto(std::string& out, const Graph& graph, const PrintOptions& options, ExternalData& external,
                    const std::string& indent) {
  std::unordered_map<const Value*, std::string> names;
  std::vector<std::string> args;
  for (const Value* v : graph.inputs()) {
    names[v] = "%" + printName(v->name());
    args.push_back(fmt::format("{}: {}", names[v], v->type().toString()));
  }
  out += fmt::format("graph @{}({}) {{\n", printName(graph.name()), fmt::join(args, ", "));
  for (const auto& [symbol, range] : graph.dimRanges()) {
    out += fmt::format("{}  dim {} in [{}, {}]\n", indent, symbol, range.min, range.max);
  }
  for (const Value* v : graph.parameters()) {
    names[v] = "%" + printName(v->name());
    // A parameter without a value (fed on every run, as the model API's are) prints without `= body`.
    std::string body = !v->hasInitialValue()         ? ""
                       : options.printParameterValues ? " = " + external.body(v->initialValue())
                                                      : " = ...";
    out += fmt::format("{}  {} {}: {}{}\n", indent, v->trainable() ? "param" : "state", names[v],
                       v->type().toString(), body);
  }
  int number = 0;
  for (const auto& node : graph.nodes()) {
    std::vector<std::string> results, types, operands;
    for (const Value* r : node->results()) {
      names[r] = fmt::format("%{}", number++);
      results.push_back(names[r]);
      types.push_back(r->type().toString());
    }
    for (const Value* o : node->operands()) {
      auto it = names.find(o);
      operands.push_back(it != names.end() ? it->second : "%<undefined>");
    }
    std::string attrs;
    std::vector<std::pair<std::string, const Graph*>> regions;
    for (const auto& [name, value] : node->attrs()) {
      if (const GraphRef* body = std::get_if<GraphRef>(&value)) {
        if (*body) regions.emplace_back(name, body->get());
        continue;
      }
      const AttrSpec* spec = node->op().findAttr(name);
      if (spec && spec->defaultValue && attrEquals(*spec->defaultValue, value)) continue;
      if (!attrs.empty()) attrs += ", ";
      attrs += fmt::format("{} = {}", printName(name), printAttributeWith(value, options, &external));
    }
    out += fmt::format("{}  {} = {}({})", indent, fmt::join(results, ", "), node->opName(), fmt::join(operands, ", "));
    if (!attrs.empty()) out += fmt::format(" {{{}}}", attrs);
    out += fmt::format(" : {}", fmt::join(types, ", "));
    if (!node->sourceName().empty()) out += fmt::format(" loc({})", quoteString(node->sourceName()));
    // Graph-valued attributes follow as nested regions: `name = graph @k(...) { ... }`.
    for (const auto& [name, body] : regions) {
      out += fmt::format(" {} = ", printName(name));
      printGraphInto(out, *body, options, external, indent + "  ");
    }
    if (regions.empty()) out += '\n';
  }
  std::vector<std::string> rets;
  for (const GraphOutput& o : graph.outputs()) {
    auto it = names.find(o.value);
    rets.push_back(fmt::format("{} = {}", printName(o.name), it != names.end() ? it->second : "%<undefined>"));
  }
  out += rets.empty() ? fmt::format("{}  return\n", indent) : fmt::format("{}  return {}\n", indent, fmt::join(rets, ", "));
  out += indent + "}\n";
}

}  // namespace

Expected<std::string> printGraph(const Graph& graph, const PrintOptions& options) {
  ExternalData external(options);
  SMELT_CHECK_OK(external.open());
  std::string out;
  printGraphInto(out, graph, options, external, "");
  SMELT_CHECK_OK(external.close());
  return out;
}

std::string toText(const Graph& graph) {
  auto text = printGraph(graph);
  return text.ok() ? text.value() : "<print failed: " + text.error().message() + ">";
}

}  // namespace smelt

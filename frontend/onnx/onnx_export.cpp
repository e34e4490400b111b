// ONNX export (see onnx_export.h): one pass over the graph in node order, each node written as the
// ONNX nodes of opset 17 that compute it, fused nodes through their bodies.
#include "frontend/onnx/onnx_export.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <numbers>
#include <unordered_map>
#include <unordered_set>

#include "frontend/onnx/onnx_tensor.h"
#include "ir/builder.h"
#include "ir/window2d.h"

namespace smelt {

namespace {

constexpr int64_t kOpset = 17;

/// Attribute `name` of `node`, or its op's default; null when neither exists.
const Attribute* attrOf(const Node& node, std::string_view name) {
  if (auto it = node.attrs().find(name); it != node.attrs().end()) return &it->second;
  const AttrSpec* spec = node.op().findAttr(name);
  return spec && spec->defaultValue ? &*spec->defaultValue : nullptr;
}
int64_t intAttr(const Node& n, std::string_view name) { return std::get<int64_t>(*attrOf(n, name)); }
double floatAttr(const Node& n, std::string_view name) { return std::get<double>(*attrOf(n, name)); }
const std::vector<int64_t>& intsAttr(const Node& n, std::string_view name) {
  return std::get<std::vector<int64_t>>(*attrOf(n, name));
}
const std::string& stringAttr(const Node& n, std::string_view name) { return std::get<std::string>(*attrOf(n, name)); }

void setType(onnx::TypeProto* type, const TensorType& t) {
  auto* tt = type->mutable_tensor_type();
  tt->set_elem_type(onnximport::onnxFromDType(t.dtype));
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.shape) {
    if (isSymbolic(d)) {
      shape->add_dim()->set_dim_param(dimSymbolName(d));
    } else {
      shape->add_dim()->set_dim_value(d);
    }
  }
}

void fillTensor(onnx::TensorProto* proto, const std::string& name, const Tensor& t) {
  proto->set_name(name);
  proto->set_data_type(onnximport::onnxFromDType(t.dtype()));
  for (int64_t d : t.shape()) proto->add_dims(d);
  // Raw little-endian bytes: smelt's layout (bool as one byte, f16/bf16 as 16-bit patterns) is ONNX's.
  proto->set_raw_data(reinterpret_cast<const char*>(t.raw()), static_cast<size_t>(t.byteSize()));
}

class Exporter {
 public:
  explicit Exporter(onnx::GraphProto& g) : g_(g) {}

  Status run(const Graph& graph) {
    g_.set_name(graph.name().empty() ? "smelt" : graph.name());
    for (const Value* in : graph.inputs()) {
      SMELT_CHECK_OK(claim(in->name(), "graph input"));
      names_[in] = in->name();
      for (size_t axis = 0; axis < in->shape().size(); ++axis) {
        if (isSymbolic(in->shape()[axis]))
          symbols_.try_emplace(in->shape()[axis], in->name(), static_cast<int64_t>(axis));
      }
      auto* info = g_.add_input();
      info->set_name(in->name());
      setType(info->mutable_type(), in->type());
    }
    for (const Value* p : graph.parameters()) {
      if (!p->hasInitialValue()) {
        return makeError("parameter {} has no value to export (its values were released, or it is fed per run)",
                         p->name());
      }
      SMELT_CHECK_OK(claim(p->name(), "parameter"));
      names_[p] = p->name();
      fillTensor(g_.add_initializer(), p->name(), p->initialValue());
    }
    SMELT_CHECK_OK(nodes(graph));
    for (const GraphOutput& o : graph.outputs()) {
      const std::string& from = names_.at(o.value);
      if (from != o.name) {
        SMELT_CHECK_OK(claim(o.name, "graph output"));
        node("Identity", {from}, {o.name});
      }
      auto* info = g_.add_output();
      info->set_name(o.name);
      setType(info->mutable_type(), o.value->type());
    }
    return Status::success();
  }

 private:
  /// Reserves `name` for one value; a second claim is an error naming both uses.
  Status claim(const std::string& name, std::string_view what) {
    if (!used_.insert(name).second) return makeError("{} '{}': the name is taken by another value", what, name);
    return Status::success();
  }
  std::string fresh(std::string_view hint) {
    std::string name;
    do {
      name = fmt::format("smelt_{}_{}", hint, counter_++);
    } while (used_.count(name));
    used_.insert(name);
    return name;
  }
  onnx::NodeProto* node(std::string_view op, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    auto* n = g_.add_node();
    n->set_op_type(std::string(op));
    n->set_name(fmt::format("n{}", g_.node_size() - 1));
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return n;
  }
  static void attr(onnx::NodeProto* n, std::string_view name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(std::string(name));
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto* n, std::string_view name, double v) {
    auto* a = n->add_attribute();
    a->set_name(std::string(name));
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
  }
  static void attr(onnx::NodeProto* n, std::string_view name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(std::string(name));
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr(onnx::NodeProto* n, std::string_view name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(std::string(name));
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  /// An initializer holding `t`.
  std::string constant(const Tensor& t, std::string_view hint = "const") {
    std::string name = fresh(hint);
    fillTensor(g_.add_initializer(), name, t);
    return name;
  }
  std::string ints(const std::vector<int64_t>& v) {
    return constant(Tensor::of<int64_t>({static_cast<int64_t>(v.size())}, v), "ints");
  }
  std::string scalar(DType dtype, double v) { return constant(Tensor::scalar(dtype, v), "scalar"); }
  /// `shape` as an i64 tensor: a constant, or with symbolic extents read from the graph input that
  /// has each (Shape of it, one axis) and concatenated with the counts around them.
  Expected<std::string> shapeTensor(const Shape& shape) {
    if (std::none_of(shape.begin(), shape.end(), isSymbolic)) return ints(shape);
    std::vector<std::string> pieces;
    for (int64_t d : shape) {
      if (!isSymbolic(d)) {
        pieces.push_back(ints({d}));
        continue;
      }
      SMELT_TRY(std::string piece, symbolicExtent(d));
      pieces.push_back(std::move(piece));
    }
    return op("Concat", pieces, [](onnx::NodeProto* p) { attr(p, "axis", int64_t{0}); });
  }
  /// A symbolic extent as an i64[1]: read from a graph input that has it, or its polynomial ("4*N",
  /// "T+1", "(H+1)/2") made with Mul, Add and Div (a floor division: extents are never negative) from
  /// the inputs that have its symbols.
  Expected<std::string> symbolicExtent(int64_t d) {
    if (auto it = symbols_.find(d); it != symbols_.end()) {
      // Named copies, not a structured binding: clang 14 cannot capture those in the lambda below.
      const std::string input = it->second.first;
      const int64_t axis = it->second.second;
      return op("Shape", {input}, [&](onnx::NodeProto* p) {
        attr(p, "start", axis);
        attr(p, "end", axis + 1);
      });
    }
    if (isPlainSymbol(d)) return makeError("symbolic dimension {} is no graph input's", dimSymbolName(d));
    if (std::optional<FloorQuotient> q = floorQuotientOf(d)) {
      SMELT_TRY(std::string numerator, symbolicExtent(q->numerator));
      return op("Div", {numerator, ints({q->divisor})});
    }
    const ExtentSum sum = extentSum(d);
    std::string total;
    for (const ExtentSum::Term& term : sum.terms) {
      std::string product = term.coefficient == 1 ? "" : ints({term.coefficient});
      for (int64_t atom : term.atoms) {
        SMELT_TRY(std::string factor, symbolicExtent(atom));
        product = product.empty() ? factor : op("Mul", {product, factor});
      }
      total = total.empty() ? product : op("Add", {total, product});
    }
    return sum.constant == 0 ? total : op("Add", {total, ints({sum.constant})});
  }
  /// One ONNX node of `op` writing a fresh value, whose name it returns.
  std::string op(std::string_view type, const std::vector<std::string>& in,
                 const std::function<void(onnx::NodeProto*)>& attrs = {}) {
    std::string out = fresh("t");
    onnx::NodeProto* n = node(type, in, {out});
    if (attrs) attrs(n);
    return out;
  }

  Status nodes(const Graph& graph) {
    for (const auto& n : graph.nodes()) {
      std::vector<std::string> in, out;
      for (const Value* v : n->operands()) in.push_back(names_.at(v));
      for (const Value* r : n->results()) {
        out.push_back(fresh("v"));
        names_[r] = out.back();
      }
      Status s = emit(*n, in, out);
      if (!s.ok()) return s.error().withContext(graph.labelOf(*n));
    }
    return Status::success();
  }

  /// A fused node: its body's nodes, its inputs bound to the operands and its outputs to the results.
  Status inlineBody(const Graph& body, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    if (body.inputs().size() != in.size() || body.outputs().size() != out.size()) {
      return makeError("a fused body with {} inputs and {} outputs for {} operands and {} results",
                       body.inputs().size(), body.outputs().size(), in.size(), out.size());
    }
    for (size_t i = 0; i < in.size(); ++i) names_[body.inputs()[i]] = in[i];
    SMELT_CHECK_OK(nodes(body));
    for (size_t i = 0; i < out.size(); ++i) node("Identity", {names_.at(body.outputs()[i].value)}, {out[i]});
    return Status::success();
  }

  Status emit(const Node& n, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    const std::string& name = n.opName();
    static const std::map<std::string, std::string, std::less<>> direct = {{"neg", "Neg"},
                                                                           {"reciprocal", "Reciprocal"},
                                                                           {"sqrt", "Sqrt"},
                                                                           {"abs", "Abs"},
                                                                           {"sign", "Sign"},
                                                                           {"floor", "Floor"},
                                                                           {"ceil", "Ceil"},
                                                                           {"exp", "Exp"},
                                                                           {"log", "Log"},
                                                                           {"sin", "Sin"},
                                                                           {"cos", "Cos"},
                                                                           {"tan", "Tan"},
                                                                           {"tanh", "Tanh"},
                                                                           {"erf", "Erf"},
                                                                           {"sigmoid", "Sigmoid"},
                                                                           {"relu", "Relu"},
                                                                           {"softplus", "Softplus"},
                                                                           {"not", "Not"},
                                                                           {"add", "Add"},
                                                                           {"sub", "Sub"},
                                                                           {"mul", "Mul"},
                                                                           {"div", "Div"},
                                                                           {"pow", "Pow"},
                                                                           {"min", "Min"},
                                                                           {"max", "Max"},
                                                                           {"eq", "Equal"},
                                                                           {"lt", "Less"},
                                                                           {"le", "LessOrEqual"},
                                                                           {"gt", "Greater"},
                                                                           {"ge", "GreaterOrEqual"},
                                                                           {"and", "And"},
                                                                           {"or", "Or"},
                                                                           {"xor", "Xor"},
                                                                           {"where", "Where"},
                                                                           {"matmul", "MatMul"},
                                                                           {"stop_gradient", "Identity"},
                                                                           {"check_range", "Identity"},
                                                                           {"global_avg_pool2d", "GlobalAveragePool"},
                                                                           {"global_max_pool2d", "GlobalMaxPool"}};
    const DType dt = n.result(0)->dtype();
    if (auto it = direct.find(name); it != direct.end()) {
      node(it->second, in, out);
      return Status::success();
    }
    if (name == "constant") {
      fillTensor(g_.add_initializer(), out[0], std::get<Tensor>(*attrOf(n, "value")));
      return Status::success();
    }
    if (name == "fused") return inlineBody(*std::get<GraphRef>(*attrOf(n, "body")), in, out);
    if (name == "ne") {
      node("Not", {op("Equal", in)}, out);
    } else if (name == "rsqrt") {
      node("Reciprocal", {op("Sqrt", in)}, out);
    } else if (name == "silu") {
      node("Mul", {in[0], op("Sigmoid", in)}, out);
    } else if (name == "leaky_relu" || name == "elu") {
      attr(node(name == "elu" ? "Elu" : "LeakyRelu", in, out), "alpha", floatAttr(n, "alpha"));
    } else if (name == "selu") {
      auto* s = node("Selu", in, out);
      attr(s, "alpha", floatAttr(n, "alpha"));
      attr(s, "gamma", floatAttr(n, "gamma"));
    } else if (name == "gelu") {
      // x * 0.5 * (1 + erf(x / sqrt(2))), or the tanh form.
      std::string inner;
      if (stringAttr(n, "approximate") == "tanh") {
        std::string cube = op("Mul", {in[0], op("Mul", {in[0], in[0]})});
        std::string poly = op("Add", {in[0], op("Mul", {cube, scalar(dt, 0.044715)})});
        inner = op("Tanh", {op("Mul", {poly, scalar(dt, std::sqrt(2.0 / std::numbers::pi))})});
      } else {
        inner = op("Erf", {op("Mul", {in[0], scalar(dt, 1.0 / std::numbers::sqrt2)})});
      }
      std::string half = op("Mul", {in[0], scalar(dt, 0.5)});
      node("Mul", {half, op("Add", {inner, scalar(dt, 1.0)})}, out);
    } else if (name == "clip") {
      node("Clip", {in[0], scalar(dt, floatAttr(n, "min")), scalar(dt, floatAttr(n, "max"))}, out);
    } else if (name == "cast") {
      attr(node("Cast", in, out), "to", static_cast<int64_t>(onnximport::onnxFromDType(dt)));
    } else if (name == "gemm") {
      auto* g = node("Gemm", in, out);
      attr(g, "alpha", floatAttr(n, "alpha"));
      attr(g, "beta", floatAttr(n, "beta"));
      attr(g, "transA", intAttr(n, "trans_a"));
      attr(g, "transB", intAttr(n, "trans_b"));
    } else if (name == "reduce_sum") {
      const auto& axes = intsAttr(n, "axes");
      std::vector<std::string> inputs = {in[0]};
      if (!axes.empty()) inputs.push_back(ints(axes));
      attr(node("ReduceSum", inputs, out), "keepdims", intAttr(n, "keepdims"));
    } else if (name == "reduce_mean" || name == "reduce_max" || name == "reduce_min" || name == "reduce_prod" ||
               name == "reduce_logsumexp") {
      static const std::map<std::string, std::string, std::less<>> reductions = {
          {"reduce_mean", "ReduceMean"},
          {"reduce_max", "ReduceMax"},
          {"reduce_min", "ReduceMin"},
          {"reduce_prod", "ReduceProd"},
          {"reduce_logsumexp", "ReduceLogSumExp"}};
      auto* r = node(reductions.at(name), in, out);
      if (!intsAttr(n, "axes").empty()) attr(r, "axes", intsAttr(n, "axes"));
      attr(r, "keepdims", intAttr(n, "keepdims"));
    } else if (name == "reduce_variance" || name == "reduce_stddev") {
      SMELT_CHECK_OK(variance(n, in, out));
    } else if (name == "softmax" || name == "log_softmax") {
      attr(node(name == "softmax" ? "Softmax" : "LogSoftmax", in, out), "axis", intAttr(n, "axis"));
    } else if (name == "transpose") {
      std::vector<int64_t> perm = intsAttr(n, "perm");
      if (perm.empty()) {
        for (int64_t d = n.operand(0)->type().rank() - 1; d >= 0; --d) perm.push_back(d);
      }
      attr(node("Transpose", in, out), "perm", perm);
    } else if (name == "reshape") {
      SMELT_TRY(std::string shape, shapeTensor(n.result(0)->shape()));
      attr(node("Reshape", {in[0], shape}, out), "allowzero", int64_t{1});
    } else if (name == "flatten") {
      attr(node("Flatten", in, out), "axis", intAttr(n, "axis"));
    } else if (name == "squeeze" || name == "unsqueeze") {
      std::vector<std::string> inputs = {in[0]};
      if (!intsAttr(n, "axes").empty()) inputs.push_back(ints(intsAttr(n, "axes")));
      node(name == "squeeze" ? "Squeeze" : "Unsqueeze", inputs, out);
    } else if (name == "expand") {
      SMELT_TRY(std::string shape, shapeTensor(n.result(0)->shape()));
      node("Expand", {in[0], shape}, out);
    } else if (name == "concat") {
      attr(node("Concat", in, out), "axis", intAttr(n, "axis"));
    } else if (name == "slice") {
      std::vector<std::string> inputs = {in[0], ints(intsAttr(n, "starts")), ints(intsAttr(n, "ends"))};
      const auto& axes = intsAttr(n, "axes");
      const auto& steps = intsAttr(n, "steps");
      if (!axes.empty() || !steps.empty()) {
        std::vector<int64_t> all(intsAttr(n, "starts").size());
        for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
        inputs.push_back(ints(axes.empty() ? all : axes));
      }
      if (!steps.empty()) inputs.push_back(ints(steps));
      node("Slice", inputs, out);
    } else if (name == "pad") {
      auto* p = node("Pad", {in[0], ints(intsAttr(n, "pads")), scalar(dt, floatAttr(n, "value"))}, out);
      attr(p, "mode", stringAttr(n, "mode"));
    } else if (name == "gather") {
      attr(node("Gather", in, out), "axis", intAttr(n, "axis"));
    } else if (name == "conv2d") {
      auto* c = node("Conv", in, out);
      attr(c, "strides", intsAttr(n, "stride"));
      attr(c, "pads", intsAttr(n, "padding"));
      attr(c, "dilations", intsAttr(n, "dilation"));
      attr(c, "group", intAttr(n, "groups"));
      const Shape& w = n.operand(1)->shape();
      attr(c, "kernel_shape", std::vector<int64_t>{w[2], w[3]});
    } else if (name == "conv_transpose2d") {
      SMELT_CHECK_OK(convTranspose(n, in, out));
    } else if (name == "conv2d_weight_grad") {
      SMELT_CHECK_OK(convWeightGrad(n, in, out));
    } else if (name == "max_pool2d_indices") {
      // ONNX's indices are flat over the whole input; smelt's over each (n, c) plane.
      const Shape& xs = n.operand(0)->shape();
      std::string flat = fresh("indices");
      auto* p = node("MaxPool", in, {fresh("pooled"), flat});
      attr(p, "kernel_shape", intsAttr(n, "kernel"));
      attr(p, "strides", intsAttr(n, "stride").empty() ? intsAttr(n, "kernel") : intsAttr(n, "stride"));
      attr(p, "pads", intsAttr(n, "padding"));
      attr(p, "dilations", intsAttr(n, "dilation"));
      attr(p, "ceil_mode", intAttr(n, "ceil_mode"));
      if (isSymbolic(xs[2]) || isSymbolic(xs[3])) return makeError("max_pool2d_indices of symbolic spatial sizes");
      node("Mod", {flat, constant(Tensor::scalar(DType::i64, static_cast<double>(xs[2] * xs[3])))}, out);
    } else if (name == "max_pool2d_backward") {
      SMELT_CHECK_OK(maxPoolBackward(n, in, out));
    } else if (name == "scatter_add") {
      SMELT_CHECK_OK(scatter(n, in, out, "add"));
    } else if (name == "scatter_reduce") {
      const std::string& how = std::get<std::string>(n.attrs().at("reduction"));
      // ScatterND's max and min reductions came with opset 18; mul with 16.
      if (how != "mul") return makeError("scatter_reduce {} has no ONNX form in opset {} (ScatterND's {} is opset 18)", how, kOpset, how);
      SMELT_CHECK_OK(scatter(n, in, out, how));
    } else if (name == "max_pool2d" || name == "avg_pool2d") {
      if (n.results().size() != 1) return makeError("a pool with indices has no one-node ONNX form here");
      const auto& kernel = intsAttr(n, "kernel");
      std::vector<int64_t> stride = intsAttr(n, "stride");
      if (stride.empty()) stride = kernel;
      auto* p = node(name == "max_pool2d" ? "MaxPool" : "AveragePool", in, out);
      attr(p, "kernel_shape", kernel);
      attr(p, "strides", stride);
      attr(p, "pads", intsAttr(n, "padding"));
      attr(p, "ceil_mode", intAttr(n, "ceil_mode"));
      if (name == "max_pool2d") {
        attr(p, "dilations", intsAttr(n, "dilation"));
      } else {
        attr(p, "count_include_pad", intAttr(n, "count_include_pad"));
      }
    } else if (name == "batch_norm") {
      attr(node("BatchNormalization", in, out), "epsilon", floatAttr(n, "epsilon"));
    } else if (name == "layer_norm") {
      SMELT_CHECK_OK(layerNorm(n, in, out));
    } else if (name == "dropout") {
      // In training mode with a ratio of 0 (torchvision's Swin exports its attention dropout so) it keeps
      // everything: the identity, as in inference.
      if (intAttr(n, "training") != 0 && floatAttr(n, "ratio") != 0) {
        return makeError("dropout in training mode has no deterministic ONNX form");
      }
      node("Identity", {in[0]}, {out[0]});
      if (out.size() > 1) {
        // The mask keeps everything: true of x's shape.
        auto* c = node("ConstantOfShape", {op("Shape", {in[0]})}, {out[1]});
        auto* a = c->add_attribute();
        a->set_name("value");
        a->set_type(onnx::AttributeProto::TENSOR);
        fillTensor(a->mutable_t(), "", Tensor::of<bool>({1}, {true}));
      }
    } else if (name == "range") {
      const Tensor& start = std::get<Tensor>(*attrOf(n, "start"));
      const Tensor& delta = std::get<Tensor>(*attrOf(n, "delta"));
      const int64_t length = intsAttr(n, "shape")[0];
      if (isSymbolic(length)) return makeError("a range of symbolic length (bind it first: --dim)");
      Tensor limit =
          Tensor::scalar(start.dtype(), start.getDouble(0) + static_cast<double>(length) * delta.getDouble(0));
      node("Range", {constant(start.reshaped({})), constant(limit), constant(delta.reshaped({}))}, out);
    } else if (n.op().decompose) {
      SMELT_CHECK_OK(decomposed(n, in, out));
    } else {
      return makeError("{} has no ONNX equivalent in the exporter", name);
    }
    return Status::success();
  }

  /// ConvTranspose. onnxruntime refuses an output_padding not below the stride, which smelt (as PyTorch) takes
  /// where the dilation is larger: such padding comes off the end padding instead (the same rows of the
  /// same full output), and where the end padding is smaller, the rows past the full output (the bias
  /// alone) are padded on after a ConvTranspose without bias.
  Status convTranspose(const Node& n, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    std::vector<int64_t> pads = intsAttr(n, "padding"), outputPadding = intsAttr(n, "output_padding");
    const std::vector<int64_t>& stride = intsAttr(n, "stride");
    int64_t beyond[2] = {0, 0};
    for (size_t a = 0; a < 2; ++a) {
      if (outputPadding[a] < stride[a]) continue;
      const int64_t end = pads[2 + a] - outputPadding[a];
      pads[2 + a] = std::max<int64_t>(end, 0);
      beyond[a] = std::max<int64_t>(-end, 0);
      outputPadding[a] = 0;
    }
    const bool padAfter = beyond[0] > 0 || beyond[1] > 0;
    const std::vector<std::string> inputs = padAfter ? std::vector<std::string>{in[0], in[1]} : in;
    const std::vector<std::string> results = padAfter ? std::vector<std::string>{fresh("t")} : out;
    auto* c = node("ConvTranspose", inputs, results);
    attr(c, "strides", stride);
    attr(c, "pads", pads);
    attr(c, "dilations", intsAttr(n, "dilation"));
    attr(c, "group", intAttr(n, "groups"));
    attr(c, "output_padding", outputPadding);
    const Shape& w = n.operand(1)->shape();
    attr(c, "kernel_shape", std::vector<int64_t>{w[2], w[3]});
    if (!padAfter) return Status::success();
    std::string padded = op("Pad", {results[0], ints({0, 0, 0, 0, 0, 0, beyond[0], beyond[1]})});
    if (in.size() < 3) {
      node("Identity", {padded}, out);
    } else {
      node("Add", {padded, op("Reshape", {in[2], ints({1, -1, 1, 1})})}, out);
    }
    return Status::success();
  }

  /// A composite op with no ONNX form of its own (grid_sample, batch_norm_train, graph_conv, ...): its
  /// registry decomposition, the primitives the compiler runs, built in a graph of its own and inlined
  /// like a fused body.
  Status decomposed(const Node& n, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    Graph body(fmt::format("{}_decomposed", n.opName()));
    std::vector<Value*> operands;
    for (size_t i = 0; i < n.operands().size(); ++i) {
      operands.push_back(body.addInput(fmt::format("operand{}", i), n.operand(i)->type()));
    }
    Builder b(body);
    std::vector<Value*> copy = b.ops(n.opName(), operands, n.attrs());
    if (!b.ok()) return b.status();
    std::vector<Value*> results = n.op().decompose(b, *copy.front()->producer());
    if (!b.ok()) return b.status().error().withContext("decomposing it for export");
    if (results.size() != out.size()) {
      return makeError("its decomposition has {} results, the op {}", results.size(), out.size());
    }
    for (size_t i = 0; i < results.size(); ++i) body.addOutput(fmt::format("result{}", i), results[i]);
    body.removeDeadNodes();
    SMELT_CHECK_OK(inlineBody(body, in, out));
    // The body dies here: its values' names must not outlive it (a later body may reuse the addresses).
    for (const Value* v : body.inputs()) names_.erase(v);
    for (const auto& node : body.nodes()) {
      for (const Value* r : node->results()) names_.erase(r);
    }
    return Status::success();
  }

  /// max_pool2d's input gradient: each dy added at its window's maximum, a ScatterElements (reduction add) over
  /// each (n, c) plane flattened, [N, C, H*W].
  Status maxPoolBackward(const Node& n, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    const Shape& dys = n.operand(0)->shape();
    const Shape& xs = n.result(0)->shape();
    if (isSymbolic(xs[2]) || isSymbolic(xs[3]) || isSymbolic(dys[2]) || isSymbolic(dys[3])) {
      return makeError("max_pool2d_backward of symbolic spatial sizes");
    }
    SMELT_TRY(std::string planes, shapeTensor(Shape{xs[0], xs[1], xs[2] * xs[3]}));
    SMELT_TRY(std::string windows, shapeTensor(Shape{dys[0], dys[1], dys[2] * dys[3]}));
    SMELT_TRY(std::string full, shapeTensor(xs));
    std::string zeros = op("ConstantOfShape", {planes}, [&](onnx::NodeProto* c) {
      auto* a = c->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      fillTensor(a->mutable_t(), "", Tensor(TensorType{n.result(0)->dtype(), {1}}));
    });
    // The reference's rule for any index: only one naming a tap of its own window counts (an index from
    // max_pool2d_indices always does). The others are masked out here, as the kernels skip them.
    const auto& kernel = intsAttr(n, "kernel");
    const Window2d win = *Window2d::fromAttrs(n.attrs(), kernel[0], kernel[1], /*strideDefaultsToKernel=*/true);
    const DType i64 = DType::i64;
    auto index = [&](int64_t v) { return scalar(i64, static_cast<double>(v)); };
    auto all = [&](std::vector<std::string> terms) {
      std::string acc = terms.front();
      for (size_t t = 1; t < terms.size(); ++t) acc = op("And", {acc, terms[t]});
      return acc;
    };
    std::string named = in[1];
    std::vector<std::string> checks = {op("GreaterOrEqual", {named, index(0)}), op("Less", {named, index(xs[2] * xs[3])})};
    const std::string coordinate[2] = {op("Div", {named, index(xs[3])}), op("Mod", {named, index(xs[3])})};
    for (int a = 0; a < 2; ++a) {
      // The tap's offset in window (y, x): the coordinate + pad - y*stride, against [1,1,OH,1] / [1,1,1,OW] starts.
      const int64_t count = dys[2 + static_cast<size_t>(a)];
      Tensor starts(TensorType{i64, a == 0 ? Shape{1, 1, count, 1} : Shape{1, 1, 1, count}});
      for (int64_t o = 0; o < count; ++o) starts.setInt(o, o * win.stride[a] - win.padBegin[a]);
      std::string offset = op("Sub", {coordinate[a], constant(starts, "window_starts")});
      checks.push_back(op("GreaterOrEqual", {offset, index(0)}));
      checks.push_back(op("LessOrEqual", {offset, index((win.kernel[a] - 1) * win.dilation[a])}));
      if (win.dilation[a] > 1) checks.push_back(op("Equal", {op("Mod", {offset, index(win.dilation[a])}), index(0)}));
    }
    std::string taken = all(checks);
    std::string dy = op("Where", {taken, in[0], scalar(n.operand(0)->dtype(), 0)});
    std::string at = op("Where", {taken, named, index(0)});
    std::string scattered =
        op("ScatterElements", {zeros, op("Reshape", {at, windows}), op("Reshape", {dy, windows})},
           [](onnx::NodeProto* sc) {
             attr(sc, "axis", int64_t{2});
             attr(sc, "reduction", std::string("add"));
           });
    node("Reshape", {scattered, full}, out);
    return Status::success();
  }

  /// scatter_add and scatter_reduce (numpy add.at along `axis`, any index shape; or mul): the axis moved first and
  /// the index dims of the updates flattened in front, a ScatterND with that reduction of one-coordinate tuples,
  /// moved back.
  Status scatter(const Node& n, const std::vector<std::string>& in, const std::vector<std::string>& out,
                 const std::string& reduction) {
    const Shape& xs = n.operand(0)->shape();
    const Shape& is = n.operand(1)->shape();
    auto rank = static_cast<int64_t>(xs.size()), q = static_cast<int64_t>(is.size());
    int64_t axis = intAttr(n, "axis");
    if (axis < 0) axis += rank;
    if (!isStatic(is) || isSymbolic(xs[static_cast<size_t>(axis)])) {
      return makeError("{} with symbolic indices or a symbolic scattered axis", n.opName());
    }
    int64_t count = 1;
    for (int64_t d : is) count *= d;
    std::vector<int64_t> toFront{axis}, back(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis) toFront.push_back(d);
    }
    for (int64_t d = 0; d < rank; ++d) back[static_cast<size_t>(toFront[static_cast<size_t>(d)])] = d;
    auto transpose = [&](const std::string& v, const std::vector<int64_t>& perm) {
      return op("Transpose", {v}, [&](onnx::NodeProto* t) { attr(t, "perm", perm); });
    };
    std::string data = axis == 0 ? in[0] : transpose(in[0], toFront);
    // updates: x.shape[:axis] + indices.shape + x.shape[axis+1:] -> [count] + x.shape[:axis] + x.shape[axis+1:].
    std::vector<int64_t> updPerm;
    for (int64_t d = axis; d < axis + q; ++d) updPerm.push_back(d);
    for (int64_t d = 0; d < axis; ++d) updPerm.push_back(d);
    for (int64_t d = axis + q; d < rank - 1 + q; ++d) updPerm.push_back(d);
    std::string upd = q > 0 && axis > 0 ? transpose(in[2], updPerm) : in[2];
    Shape updShape{count};
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis) updShape.push_back(xs[static_cast<size_t>(d)]);
    }
    SMELT_TRY(std::string updTarget, shapeTensor(updShape));
    upd = op("Reshape", {upd, updTarget});
    std::string idx = op(
        "Reshape",
        {op("Cast", {in[1]}, [](onnx::NodeProto* c) { attr(c, "to", static_cast<int64_t>(onnx::TensorProto::INT64)); }),
         ints({count, 1})});
    std::string extent = constant(Tensor::scalar(DType::i64, static_cast<double>(xs[static_cast<size_t>(axis)])));
    std::string zero = constant(Tensor::scalar(DType::i64, 0.0));
    idx = op("Where", {op("Less", {idx, zero}), op("Add", {idx, extent}), idx});  // negative indices wrap
    std::string summed = op("ScatterND", {data, idx, upd}, [&](onnx::NodeProto* sc) { attr(sc, "reduction", reduction); });
    if (axis == 0) {
      node("Identity", {summed}, out);
    } else {
      attr(node("Transpose", {summed}, out), "perm", back);
    }
    return Status::success();
  }

  /// conv2d's weight gradient dw[o, c, kh, kw] = sum over n, oh, ow of x_padded[n, c, oh*s + kh*d, ow*s + kw*d] *
  /// dy[n, o, oh, ow]: per group, a Conv of x with the batch and channel axes swapped ([C, N, H, W]) by dy likewise
  /// swapped ([O, N, OH, OW]) as the kernel, with stride and dilation exchanged; the result [C, O, >=KH, >=KW] is
  /// cut to the kernel and swapped back.
  Status convWeightGrad(const Node& n, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    const Shape& xs = n.operand(0)->shape();
    const Shape& dys = n.operand(1)->shape();
    const std::vector<int64_t>& kernel = intsAttr(n, "kernel");
    int64_t groups = intAttr(n, "groups");
    if (!isStatic(xs) || !isStatic(dys)) return makeError("conv2d_weight_grad of symbolic shapes (bind them: --dim)");
    int64_t c = xs[1] / groups, o = dys[1] / groups;
    auto swapBatchAndChannels = [](onnx::NodeProto* t) { attr(t, "perm", std::vector<int64_t>{1, 0, 2, 3}); };
    std::string xT = op("Transpose", {in[0]}, swapBatchAndChannels);
    std::string dyT = op("Transpose", {in[1]}, swapBatchAndChannels);
    std::vector<std::string> parts;
    for (int64_t g = 0; g < groups; ++g) {
      auto part = [&](const std::string& v, int64_t size) {
        return groups == 1 ? v : op("Slice", {v, ints({g * size}), ints({(g + 1) * size}), ints({0})});
      };
      std::string conv = op("Conv", {part(xT, c), part(dyT, o)}, [&](onnx::NodeProto* cv) {
        attr(cv, "strides", intsAttr(n, "dilation"));
        attr(cv, "dilations", intsAttr(n, "stride"));
        attr(cv, "pads", intsAttr(n, "padding"));
      });
      std::string cut = op("Slice", {conv, ints({0, 0}), ints(kernel), ints({2, 3})});
      parts.push_back(op("Transpose", {cut}, swapBatchAndChannels));
    }
    if (groups == 1) {
      node("Identity", {parts[0]}, out);
    } else {
      attr(node("Concat", parts, out), "axis", int64_t{0});
    }
    return Status::success();
  }

  /// sum((x - mean)^2) / (n - correction) over the axes, its square root for the standard deviation.
  Status variance(const Node& n, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    const Shape& shape = n.operand(0)->shape();
    std::vector<int64_t> axes = intsAttr(n, "axes");
    if (axes.empty()) {
      for (size_t d = 0; d < shape.size(); ++d) axes.push_back(static_cast<int64_t>(d));
    }
    int64_t count = 1;
    for (int64_t a : axes) {
      const int64_t d = shape[static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(shape.size()) : a)];
      if (isSymbolic(d)) return makeError("a variance over a symbolic dimension (bind it first: --dim)");
      count *= d;
    }
    const DType dt = n.result(0)->dtype();
    std::string mean = op("ReduceMean", in, [&](onnx::NodeProto* p) {
      attr(p, "axes", axes);
      attr(p, "keepdims", int64_t{1});
    });
    std::string d = op("Sub", {in[0], mean});
    std::string sum = op("ReduceSum", {op("Mul", {d, d}), ints(axes)},
                         [&](onnx::NodeProto* p) { attr(p, "keepdims", intAttr(n, "keepdims")); });
    const double divisor = static_cast<double>(count - intAttr(n, "correction"));
    if (n.opName() == "reduce_variance") {
      node("Div", {sum, scalar(dt, divisor)}, out);
    } else {
      node("Sqrt", {op("Div", {sum, scalar(dt, divisor)})}, out);
    }
    return Status::success();
  }

  /// LayerNormalization (opset 17) needs a scale: ones of the normalized shape when the node has none.
  Status layerNorm(const Node& n, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    const Shape& shape = n.operand(0)->shape();
    int64_t axis = intAttr(n, "axis");
    if (axis < 0) axis += static_cast<int64_t>(shape.size());
    std::vector<std::string> inputs = in;
    if (inputs.size() == 1) {
      Shape normalized(shape.begin() + axis, shape.end());
      for (int64_t d : normalized) {
        if (isSymbolic(d)) return makeError("a layer norm over a symbolic dimension (bind it first: --dim)");
      }
      Tensor ones(TensorType{n.operand(0)->dtype(), normalized});
      for (int64_t i = 0; i < ones.numel(); ++i) ones.setDouble(i, 1.0);
      inputs.push_back(constant(ones, "ones"));
    }
    auto* l = node("LayerNormalization", inputs, out);
    attr(l, "axis", axis);
    attr(l, "epsilon", floatAttr(n, "epsilon"));
    return Status::success();
  }

  onnx::GraphProto& g_;
  std::unordered_map<const Value*, std::string> names_;
  std::unordered_set<std::string> used_;
  /// Each symbolic dimension's first graph input and axis.
  std::map<int64_t, std::pair<std::string, int64_t>> symbols_;
  int counter_ = 0;
};

}  // namespace

bool onnxExportAvailable() { return true; }

Expected<std::string> exportOnnxBytes(const Graph& graph) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("smelt");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  Exporter exporter(*model.mutable_graph());
  if (Status ran = exporter.run(graph); !ran.ok()) {
    return ran.error().withContext(fmt::format("exporting @{} to ONNX", graph.name()));
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return makeError("exporting @{} to ONNX: the model does not serialize", graph.name());
  return bytes;
}

Status exportOnnxFile(const Graph& graph, const std::string& path) {
  SMELT_TRY(std::string bytes, exportOnnxBytes(graph));
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) return makeError("{}: cannot write the exported model", path);
  return Status::success();
}

}  // namespace smelt

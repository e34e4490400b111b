// widen-products: a product (matmul, gemm, a convolution: OpDef::product) in bf16 or f16 becomes the same product
// in f32 over its operands widened, its result rounded back. A bf16 or f16 value is exact in f32 and the
// product then accumulates in f32, as a low-precision GEMM with f32 accumulation does (PyTorch's autocast, oneDNN,
// cuBLAS); rounding the result once is that GEMM's last step. Devices without a fast low-precision product (this
// CPU's BLAS) run it: the f32 product goes to the vendor library, where a generated bf16 kernel took 70x as long.
//   %2 = matmul(%a, %b) : bf16[4,8]     ->    %2 = cast(%a) {to = "f32"} : f32[4,6]
//                                             %3 = cast(%b) {to = "f32"} : f32[6,8]
//                                             %4 = matmul(%2, %3) : f32[4,8]
//                                             %5 = cast(%4) {to = "bf16"} : bf16[4,8]
// Options keep-dtypes=DTYPES ("bf16", "bf16+f16") and keep-ops=OPS ("matmul+gemm"): those ops' products in those
// dtypes stay (a BLAS computes them: oneDNN's bf16 GEMM on a CPU that has it).
#include "ir/builder.h"
#include "ir/op_registry.h"
#include "passes/passes.h"

#include <algorithm>

namespace smelt {

namespace {

bool isLowPrecision(DType dtype) { return dtype == DType::bf16 || dtype == DType::f16; }

class WidenProducts final : public Pass {
 public:
  std::string_view name() const override { return "widen-products"; }
  std::string_view summary() const override {
    return "Computes bf16/f16 products (matmul, gemm, convolutions) in f32 over widened operands, the result "
           "rounded back: for devices without a fast low-precision product";
  }
  Status setOption(std::string_view key, std::string_view value) override {
    if (key != "keep-dtypes" && key != "keep-ops") return Pass::setOption(key, value);
    std::vector<std::string_view> names;
    for (std::string_view rest = value; !rest.empty();) {
      size_t plus = rest.find('+');
      names.push_back(rest.substr(0, plus));
      rest = plus == std::string_view::npos ? std::string_view{} : rest.substr(plus + 1);
    }
    if (key == "keep-ops") {
      keptOps_.clear();
      for (std::string_view name : names) {
        const OpDef* op = OpRegistry::global().find(name);
        if (!op || !op->product) return makeError("keep-ops: '{}' is not a product op", name);
        keptOps_.emplace_back(name);
      }
      return Status::success();
    }
    keptDTypes_.clear();
    for (std::string_view name : names) {
      Expected<DType> dtype = parseDType(name);
      if (!dtype.ok() || !isLowPrecision(*dtype)) return makeError("keep-dtypes: '{}' is not bf16 or f16", name);
      keptDTypes_.push_back(*dtype);
    }
    return Status::success();
  }
  Expected<bool> run(Graph& graph, PassContext& context) override {
    std::vector<Node*> products;
    for (const auto& node : graph.nodes()) {
      if (node->op().product && node->results().size() == 1 && isLowPrecision(node->result()->dtype()) &&
          !kept(*node)) {
        products.push_back(node.get());
      }
    }
    for (Node* node : products) {
      DType low = node->result()->dtype();
      graph.setInsertionPoint(node);
      Builder b(graph, node->sourceName());
      std::vector<Value*> operands;
      for (Value* o : node->operands()) operands.push_back(isLowPrecision(o->dtype()) ? b.cast(o, DType::f32) : o);
      Value* wide = b.op(node->opName(), std::move(operands), node->attrs());
      Value* narrow = wide ? b.cast(wide, low) : nullptr;
      graph.clearInsertionPoint();
      SMELT_CHECK_OK(b.status());
      graph.replaceAllUsesWith(node->result(), narrow);
    }
    graph.removeDeadNodes();
    context.count("products widened", static_cast<int64_t>(products.size()));
    return !products.empty();
  }

 private:
  bool kept(const Node& node) const {
    return std::find(keptOps_.begin(), keptOps_.end(), node.opName()) != keptOps_.end() &&
           std::find(keptDTypes_.begin(), keptDTypes_.end(), node.result()->dtype()) != keptDTypes_.end();
  }
  std::vector<std::string> keptOps_;
  std::vector<DType> keptDTypes_;
};

}  // namespace

std::unique_ptr<Pass> createWidenProducts() { return std::make_unique<WidenProducts>(); }

}  // namespace smelt

// Kernels compiled once for every size (see size_general.h).
#include "codegen/size_general.h"

#include <bit>
#include <functional>

namespace smelt::codegen {

namespace {

/// One number of a kernel that may depend on the sizes: the domain's first extent, a buffer's size, a
/// constant or a loop's extent.
struct Number {
  int64_t* extent = nullptr;  // the domain's first extent, a buffer's size or a loop's extent
  KLoop* loop = nullptr;      // with extent: the loop it belongs to
  KInst* constant = nullptr;
};

/// Visits every number of `k` in one fixed order: the first extent, the buffers, then the body in
/// statement order (a loop's extent before its body).
void forEachNumber(Kernel& k, const std::function<void(const Number&)>& visit) {
  if (!k.domain.empty()) visit({.extent = &k.domain[0]});
  for (KBuffer& b : k.buffers) visit({.extent = &b.numel});
  std::function<void(KBlock&)> walk = [&](KBlock& block) {
    for (KStmt& s : block.stmts) {
      if (auto* i = std::get_if<KInst>(&s); i && i->kind == KInstKind::Const) {
        visit({.constant = i});
      } else if (auto* l = std::get_if<std::shared_ptr<KLoop>>(&s)) {
        visit({.extent = &(*l)->extent, .loop = l->get()});
        walk((*l)->body);
      }
    }
  };
  walk(k.body);
}

/// A copy of `k` whose loops and statements are its own (KLoop is shared by pointer).
Kernel deepCopy(const Kernel& k) {
  Kernel copy = k;
  std::function<void(KBlock&)> own = [&](KBlock& block) {
    for (KStmt& s : block.stmts) {
      if (auto* l = std::get_if<std::shared_ptr<KLoop>>(&s)) {
        *l = std::make_shared<KLoop>(**l);
        own((*l)->body);
      }
    }
  };
  own(copy.body);
  return copy;
}

/// `k`'s numbers (a float's bits) and its text without them.
std::pair<std::string, std::vector<int64_t>> numbersOf(const Kernel& k) {
  Kernel bare = deepCopy(k);
  std::vector<int64_t> numbers;
  forEachNumber(bare, [&](const Number& n) {
    if (n.extent) {
      numbers.push_back(*n.extent);
      *n.extent = 0;
    } else if (isFloat(n.constant->dtype)) {
      numbers.push_back(std::bit_cast<int64_t>(n.constant->fbits));
      n.constant->fbits = 0;
    } else {
      numbers.push_back(n.constant->ibits);
      n.constant->ibits = 0;
    }
  });
  // Restrict pointers are not in the text but are in what is compiled.
  return {printKernel(bare) + (k.disjointBuffers ? "disjoint\n" : ""), std::move(numbers)};
}

/// What a param's slot holds for `number` (numbersOf's form) of dtype `t`.
int64_t slotValue(int64_t number, DType t) {
  if (t == DType::f32) return std::bit_cast<uint32_t>(static_cast<float>(std::bit_cast<double>(number)));
  return number;  // an integer's value, an f64's bits
}

}  // namespace

std::optional<SizeGeneralKernel> generalizeSizes(const Kernel& a, const Kernel& b) {
  SizeGeneralKernel g;
  auto [skeletonB, numbersB] = numbersOf(b);
  std::tie(g.skeleton, g.numbers) = numbersOf(a);
  if (g.skeleton != skeletonB || g.numbers.size() != numbersB.size()) return std::nullopt;
  for (size_t i = 0; i < g.numbers.size(); ++i) g.varies.push_back(g.numbers[i] != numbersB[i]);

  g.kernel = deepCopy(a);
  Kernel& k = g.kernel;
  std::vector<KInst> extentParams;
  bool representable = true;
  size_t index = 0;
  auto addParam = [&](size_t number, DType t) {
    g.paramNumbers.push_back(number);
    g.paramTypes.push_back(t);
    return g.params() - 1;
  };
  forEachNumber(k, [&](const Number& n) {
    const size_t at = index++;
    if (!g.varies[at]) return;
    if (n.loop) {
      // Read at the kernel's start: a param has no operands, and every renderer reads them there.
      KInst p{.kind = KInstKind::Param, .dtype = DType::i64, .result = static_cast<int32_t>(k.types.size())};
      p.ibits = addParam(at, DType::i64);
      k.types.push_back(DType::i64);
      n.loop->extentValue = p.result;
      n.loop->extent = 0;
      extentParams.push_back(p);
    } else if (n.extent) {
      // The domain's first extent comes with each launch; no renderer reads a buffer's size.
      *n.extent = kRunTimeExtent;
    } else {
      const DType t = n.constant->dtype;
      if (t == DType::f16 || t == DType::bf16) representable = false;
      n.constant->kind = KInstKind::Param;
      n.constant->ibits = addParam(at, t);
      n.constant->fbits = 0;
    }
  });
  if (!representable) return std::nullopt;
  k.body.stmts.insert(k.body.stmts.begin(), extentParams.begin(), extentParams.end());
  if (g.params() > 0) k.buffers.push_back(KBuffer{.name = "sizes", .dtype = DType::i64, .numel = g.params()});
  return g;
}

std::optional<std::vector<int64_t>> paramsAt(const SizeGeneralKernel& general, const Kernel& concrete) {
  auto [skeleton, numbers] = numbersOf(concrete);
  if (skeleton != general.skeleton || numbers.size() != general.numbers.size()) return std::nullopt;
  for (size_t i = 0; i < numbers.size(); ++i) {
    if (!general.varies[i] && numbers[i] != general.numbers[i]) return std::nullopt;
  }
  std::vector<int64_t> values;
  for (int64_t p = 0; p < general.params(); ++p) {
    values.push_back(slotValue(numbers[general.paramNumbers[static_cast<size_t>(p)]],
                               general.paramTypes[static_cast<size_t>(p)]));
  }
  return values;
}

}  // namespace smelt::codegen

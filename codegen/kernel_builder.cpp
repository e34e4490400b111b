// KernelBuilder: placement at the outermost legal block, scoped sharing, index constant folding.
#include "codegen/kernel_builder.h"

#include <bit>
#include <unordered_set>

namespace smelt::codegen {

namespace {

bool isComparison(KBinary op) { return op >= KBinary::Lt; }
bool isLogical(KBinary op) {
  return op == KBinary::And || op == KBinary::Or || op == KBinary::Xor || op == KBinary::Shl || op == KBinary::Shr;
}

// Ids defined inside `block` (results, loop indices, carried values) and ids it reads.
void scan(const KBlock& block, std::unordered_set<int32_t>& defined, std::vector<int32_t>& used) {
  for (const KStmt& s : block.stmts) {
    if (const KInst* i = std::get_if<KInst>(&s)) {
      defined.insert(i->result);
      for (int32_t o : {i->a, i->b, i->c}) {
        if (o >= 0) used.push_back(o);
      }
    } else if (const KStore* st = std::get_if<KStore>(&s)) {
      used.push_back(st->offset);
      used.push_back(st->value);
    } else {
      const KLoop& l = *std::get<std::shared_ptr<KLoop>>(s);
      defined.insert(l.index);
      for (int32_t c : l.carried) defined.insert(c);
      for (int32_t r : l.results) defined.insert(r);
      for (int32_t i : l.init) used.push_back(i);
      for (int32_t n : l.next) used.push_back(n);
      scan(l.body, defined, used);
    }
  }
}

}  // namespace

KernelBuilder::KernelBuilder(Kernel& kernel) : kernel_(kernel) {
  blocks_.push_back(&kernel_.body);
  cse_.emplace_back();
}

void KernelBuilder::fail(Error error) {
  if (!error_) error_ = std::move(error);
}

bool KernelBuilder::checkValid(std::initializer_list<KValue> values) {
  if (error_) return false;
  for (KValue v : values) {
    if (!v.valid()) {
      fail(Error("kernel builder: an operand is invalid (an earlier emission failed)"));
      return false;
    }
  }
  return true;
}

int32_t KernelBuilder::newValue(DType dtype, int depth) {
  auto id = static_cast<int32_t>(kernel_.types.size());
  kernel_.types.push_back(dtype);
  depth_.push_back(depth);
  return id;
}

KValue KernelBuilder::emit(KInst inst, int depth) {
  Key key{static_cast<int>(inst.kind), static_cast<int>(inst.dtype), inst.a, inst.b, inst.c,
          static_cast<int>(inst.unary), static_cast<int>(inst.binary), inst.ibits,
          std::bit_cast<uint64_t>(inst.fbits)};
  // Shared with an identical instruction in this block or one enclosing it.
  for (int d = depth; d >= 0; --d) {
    auto it = cse_[static_cast<size_t>(d)].find(key);
    if (it != cse_[static_cast<size_t>(d)].end()) return {it->second, inst.dtype};
  }
  inst.result = newValue(inst.dtype, depth);
  cse_[static_cast<size_t>(depth)].emplace(key, inst.result);
  blocks_[static_cast<size_t>(depth)]->stmts.push_back(inst);
  return {inst.result, inst.dtype};
}

std::optional<int64_t> KernelBuilder::intValue(KValue v) const {
  auto it = intConstants_.find(v.id);
  if (it == intConstants_.end()) return std::nullopt;
  return it->second;
}

KValue KernelBuilder::outer(int dim) {
  KInst i{.kind = KInstKind::Outer, .dtype = DType::i64, .ibits = dim};
  return emit(i, 0);
}

KValue KernelBuilder::load(int buffer, KValue offset) {
  if (!checkValid({offset})) return {};
  DType dtype = kernel_.buffers[static_cast<size_t>(buffer)].dtype;
  KInst i{.kind = KInstKind::Load, .dtype = dtype, .a = offset.id, .ibits = buffer};
  return emit(i, depthOf(offset));
}

void KernelBuilder::store(int buffer, KValue offset, KValue value) {
  if (!checkValid({offset, value})) return;
  blocks_.back()->stmts.push_back(KStore{buffer, offset.id, value.id});
}

KValue KernelBuilder::constant(double value, DType dtype) {
  if (error_) return {};
  if (!isFloat(dtype)) {
    // Integers truncate toward zero (through int64, like fromDouble), bool is value != 0.
    if (dtype == DType::boolean) return intConstant(value != 0, dtype);
    if (value != value) return intConstant(0, dtype);
    if (value >= 9.2233720368547758e18) return intConstant(static_cast<int64_t>(static_cast<uint64_t>(value)), dtype);
    if (value <= -9.2233720368547758e18) return intConstant(INT64_MIN, dtype);
    return intConstant(static_cast<int64_t>(value), dtype);
  }
  KInst i{.kind = KInstKind::Const, .dtype = dtype, .fbits = value};
  return emit(i, 0);
}

KValue KernelBuilder::intConstant(int64_t value, DType dtype) {
  if (error_) return {};
  if (isFloat(dtype)) return constant(static_cast<double>(value), dtype);
  KInst i{.kind = KInstKind::Const, .dtype = dtype, .ibits = value};
  KValue v = emit(i, 0);
  intConstants_[v.id] = value;
  return v;
}

KValue KernelBuilder::unary(KUnary op, KValue x) {
  if (!checkValid({x})) return {};
  DType result = op == KUnary::IsNan ? DType::boolean : x.dtype;
  KInst i{.kind = KInstKind::Unary, .dtype = result, .a = x.id, .unary = op};
  return emit(i, depthOf(x));
}

KValue KernelBuilder::binary(KBinary op, KValue a, KValue b) {
  if (!checkValid({a, b})) return {};
  if (a.dtype != b.dtype) {
    fail(makeError("kernel builder: {} of {} and {}", kBinaryName(op), dtypeName(a.dtype), dtypeName(b.dtype)));
    return {};
  }
  if (isLogical(op) && isFloat(a.dtype)) {
    fail(makeError("kernel builder: {} of floats", kBinaryName(op)));
    return {};
  }
  // Index arithmetic: fold constants and identities so offsets stay readable and cheap.
  if (a.dtype == DType::i64) {
    auto ca = intValue(a), cb = intValue(b);
    auto wrap = [](uint64_t v) { return static_cast<int64_t>(v); };
    if (ca && cb) {
      uint64_t x = static_cast<uint64_t>(*ca), y = static_cast<uint64_t>(*cb);
      switch (op) {
        case KBinary::Add: return intConstant(wrap(x + y));
        case KBinary::Sub: return intConstant(wrap(x - y));
        case KBinary::Mul: return intConstant(wrap(x * y));
        case KBinary::Div:
          if (*cb > 0) return intConstant(*ca / *cb);
          break;
        case KBinary::Rem:
          if (*cb > 0) return intConstant(*ca % *cb);
          break;
        default: break;
      }
    }
    if (op == KBinary::Add && ca == 0) return b;
    if ((op == KBinary::Add || op == KBinary::Sub) && cb == 0) return a;
    if (op == KBinary::Mul && ca == 1) return b;
    if ((op == KBinary::Mul || op == KBinary::Div) && cb == 1) return a;
    if (op == KBinary::Mul && (ca == 0 || cb == 0)) return intConstant(0);
    if (op == KBinary::Rem && cb == 1) return intConstant(0);
  }
  DType result = isComparison(op) ? DType::boolean : a.dtype;
  // Commutative ops list the lower id first, so a+b and b+a are one instruction.
  if (isCommutative(op) && b.id < a.id) std::swap(a, b);
  KInst i{.kind = KInstKind::Binary, .dtype = result, .a = a.id, .b = b.id, .binary = op};
  return emit(i, std::max(depthOf(a), depthOf(b)));
}

KValue KernelBuilder::select(KValue cond, KValue ifTrue, KValue ifFalse) {
  if (!checkValid({cond, ifTrue, ifFalse})) return {};
  if (cond.dtype != DType::boolean || ifTrue.dtype != ifFalse.dtype) {
    fail(makeError("kernel builder: select({}, {}, {})", dtypeName(cond.dtype), dtypeName(ifTrue.dtype),
                   dtypeName(ifFalse.dtype)));
    return {};
  }
  if (ifTrue.id == ifFalse.id) return ifTrue;
  KInst i{.kind = KInstKind::Select, .dtype = ifTrue.dtype, .a = cond.id, .b = ifTrue.id, .c = ifFalse.id};
  return emit(i, std::max({depthOf(cond), depthOf(ifTrue), depthOf(ifFalse)}));
}

KValue KernelBuilder::cast(KValue x, DType to) {
  if (!checkValid({x})) return {};
  if (x.dtype == to) return x;
  if (auto c = intValue(x); c && !isFloat(to) && to != DType::boolean && dtypeSize(to) == 8) {
    return intConstant(*c, to);
  }
  KInst i{.kind = KInstKind::Cast, .dtype = to, .a = x.id};
  return emit(i, depthOf(x));
}

std::vector<KValue> KernelBuilder::loop(int64_t extent, std::vector<KValue> init, const LoopStep& step) {
  for (KValue v : init) {
    if (!checkValid({v})) return std::vector<KValue>(init.size());
  }
  if (extent <= 0) return init;
  auto l = std::make_shared<KLoop>();
  l->extent = extent;
  int bodyDepth = currentDepth() + 1;
  blocks_.push_back(&l->body);
  cse_.emplace_back();
  l->index = newValue(DType::i64, bodyDepth);
  std::vector<KValue> carried;
  for (KValue v : init) {
    l->init.push_back(v.id);
    l->carried.push_back(newValue(v.dtype, bodyDepth));
    carried.push_back({l->carried.back(), v.dtype});
  }
  std::vector<KValue> next = step(KValue{l->index, DType::i64}, carried);
  blocks_.pop_back();
  cse_.pop_back();
  if (error_) return std::vector<KValue>(init.size());
  if (next.size() != init.size()) {
    fail(makeError("kernel builder: a loop step returned {} values for {} carried", next.size(), init.size()));
    return std::vector<KValue>(init.size());
  }
  for (size_t k = 0; k < next.size(); ++k) {
    if (!next[k].valid() || next[k].dtype != init[k].dtype) {
      fail(Error("kernel builder: a loop step returned an invalid or mistyped value"));
      return std::vector<KValue>(init.size());
    }
    l->next.push_back(next[k].id);
  }
  // The loop goes to the outermost block where everything it reads from outside is defined.
  std::unordered_set<int32_t> defined;
  std::vector<int32_t> used;
  scan(l->body, defined, used);
  defined.insert(l->index);
  for (int32_t c : l->carried) defined.insert(c);
  for (int32_t n : l->next) used.push_back(n);
  int depth = 0;
  for (KValue v : init) depth = std::max(depth, depthOf(v));
  for (int32_t u : used) {
    if (!defined.count(u)) depth = std::max(depth, depth_[static_cast<size_t>(u)]);
  }
  std::vector<KValue> results;
  for (KValue v : init) {
    l->results.push_back(newValue(v.dtype, depth));
    results.push_back({l->results.back(), v.dtype});
  }
  blocks_[static_cast<size_t>(depth)]->stmts.push_back(std::move(l));
  return results;
}

}  // namespace smelt::codegen

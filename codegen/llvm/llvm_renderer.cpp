// Kernel description -> LLVM IR (see llvm_renderer.h for the function's shape and the semantics).
#include "codegen/llvm/llvm_renderer.h"

#include "codegen/vecmath/vector_math.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace smelt::codegen {

namespace {

using llvm::IRBuilder;
using llvm::Type;
using LValue = llvm::Value;

/// The vector-math emitter (codegen/vecmath/vector_math.h) over an IRBuilder: each call one scalar f32
/// instruction; the loop vectorizer then widens the polynomial with the rest of the loop body.
struct LlvmMathEmitter {
  using Value = llvm::Value*;
  using Int = llvm::Value*;
  using Mask = llvm::Value*;
  IRBuilder<>& b;

  Value constant(float v) { return llvm::ConstantFP::get(b.getFloatTy(), v); }
  Int iconstant(int32_t v) { return b.getInt32(static_cast<uint32_t>(v)); }
  Value add(Value x, Value y) { return b.CreateFAdd(x, y); }
  Value sub(Value x, Value y) { return b.CreateFSub(x, y); }
  Value mul(Value x, Value y) { return b.CreateFMul(x, y); }
  Value div(Value x, Value y) { return b.CreateFDiv(x, y); }
  Value fma(Value x, Value y, Value z) { return b.CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, {x, y, z}); }
  Value neg(Value x) { return b.CreateFNeg(x); }
  Value abs(Value x) { return b.CreateIntrinsic(llvm::Intrinsic::fabs, {x->getType()}, {x}); }
  Value rint(Value x) { return b.CreateIntrinsic(llvm::Intrinsic::roundeven, {x->getType()}, {x}); }
  Mask lt(Value x, Value y) { return b.CreateFCmpOLT(x, y); }
  Mask le(Value x, Value y) { return b.CreateFCmpOLE(x, y); }
  Mask gt(Value x, Value y) { return b.CreateFCmpOGT(x, y); }
  Mask ge(Value x, Value y) { return b.CreateFCmpOGE(x, y); }
  Mask eq(Value x, Value y) { return b.CreateFCmpOEQ(x, y); }
  Mask isnan(Value x) { return b.CreateFCmpUNO(x, x); }
  Mask mand(Mask x, Mask y) { return b.CreateAnd(x, y); }
  Mask mor(Mask x, Mask y) { return b.CreateOr(x, y); }
  Mask mnot(Mask x) { return b.CreateNot(x); }
  Value select(Mask m, Value x, Value y) { return b.CreateSelect(m, x, y); }
  Int asInt(Value x) { return b.CreateBitCast(x, b.getInt32Ty()); }
  Value asFloat(Int x) { return b.CreateBitCast(x, b.getFloatTy()); }
  Int iadd(Int x, Int y) { return b.CreateAdd(x, y); }
  Int isub(Int x, Int y) { return b.CreateSub(x, y); }
  Int iand(Int x, Int y) { return b.CreateAnd(x, y); }
  Int ior(Int x, Int y) { return b.CreateOr(x, y); }
  Int ixor(Int x, Int y) { return b.CreateXor(x, y); }
  Int shl(Int x, int k) { return b.CreateShl(x, static_cast<uint64_t>(k)); }
  Int sra(Int x, int k) { return b.CreateAShr(x, static_cast<uint64_t>(k)); }
  Mask ieq(Int x, Int y) { return b.CreateICmpEQ(x, y); }
  Int toInt(Value x) { return b.CreateFPToSI(x, b.getInt32Ty()); }
  Value toFloat(Int x) { return b.CreateSIToFP(x, b.getFloatTy()); }
};

class Renderer {
 public:
  Renderer(const Kernel& k, llvm::LLVMContext& ctx, const std::string& symbol)
      : k_(k), ctx_(ctx), module_(std::make_unique<llvm::Module>(symbol, ctx)), b_(ctx), symbol_(symbol),
        values_(k.types.size(), nullptr) {}

  Expected<std::unique_ptr<llvm::Module>> run(const std::string& cpu, const std::string& features) {
    auto* ptrTy = llvm::PointerType::get(ctx_, 0);
    auto* fnTy = llvm::FunctionType::get(b_.getVoidTy(), {ptrTy, b_.getInt64Ty(), b_.getInt64Ty()}, false);
    fn_ = llvm::Function::Create(fnTy, llvm::Function::ExternalLinkage, symbol_, module_.get());
    fn_->addFnAttr("target-cpu", cpu);
    fn_->addFnAttr("target-features", features);
    // AVX-512 hosts otherwise get 256-bit vectors (LLVM's prefer-256-bit tuning).
    fn_->addFnAttr("prefer-vector-width", "512");
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    LValue* buffers = fn_->getArg(0);
    for (size_t i = 0; i < k_.buffers.size(); ++i) {
      // One pointer for buffers that are the same memory (see KBuffer::sameAs): accesses at one index
      // through two pointers would get an overlap check that fails and sends the loop to scalar code.
      if (int32_t same = k_.buffers[i].sameAs; same >= 0 && static_cast<size_t>(same) < i) {
        bufferPtrs_.push_back(bufferPtrs_[static_cast<size_t>(same)]);
        continue;
      }
      LValue* slot = b_.CreateConstInBoundsGEP1_64(ptrTy, buffers, i);
      bufferPtrs_.push_back(b_.CreateLoad(ptrTy, slot, fmt::format("b{}", i)));
    }
    readParams(k_.body);
    SMELT_CHECK_OK(domainLoops(fn_->getArg(1), fn_->getArg(2)));
    b_.CreateRetVoid();
    SMELT_CHECK_OK(status_);
    std::string message;
    llvm::raw_string_ostream os(message);
    if (llvm::verifyFunction(*fn_, &os)) return makeError("kernel @{}: invalid LLVM IR: {}", k_.name, os.str());
    return std::move(module_);
  }

 private:
  // --- types -------------------------------------------------------------------------------------
  /// The register type of a dtype: bool is i1, bf16 is its 16 bits (i16), f16 is half.
  Type* regType(DType t) {
    switch (t) {
      case DType::f16: return b_.getHalfTy();
      case DType::bf16: return b_.getInt16Ty();
      case DType::f32: return b_.getFloatTy();
      case DType::f64: return b_.getDoubleTy();
      case DType::boolean: return b_.getInt1Ty();
      default: return b_.getIntNTy(static_cast<unsigned>(dtypeSize(t) * 8));
    }
  }
  /// The memory type: bool is a byte.
  Type* memType(DType t) { return t == DType::boolean ? b_.getInt8Ty() : regType(t); }
  /// The type arithmetic happens in: f32 for f16/bf16.
  Type* computeType(DType t) { return t == DType::f16 || t == DType::bf16 ? b_.getFloatTy() : regType(t); }

  LValue* toCompute(LValue* v, DType t) {
    if (t == DType::f16) return b_.CreateFPExt(v, b_.getFloatTy());
    if (t == DType::bf16) {
      LValue* wide = b_.CreateShl(b_.CreateZExt(v, b_.getInt32Ty()), 16);
      return b_.CreateBitCast(wide, b_.getFloatTy());
    }
    return v;
  }
  LValue* fromCompute(LValue* v, DType t) {
    if (t == DType::f16) return b_.CreateFPTrunc(v, b_.getHalfTy());
    if (t == DType::bf16) {
      // Round to nearest even on the top 16 bits; NaN stays a (quiet) NaN.
      LValue* bits = b_.CreateBitCast(v, b_.getInt32Ty());
      LValue* lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), 1);
      LValue* rounded = b_.CreateLShr(b_.CreateAdd(bits, b_.CreateAdd(lsb, b_.getInt32(0x7fff))), 16);
      LValue* quiet = b_.CreateOr(b_.CreateLShr(bits, 16), b_.getInt32(0x40));
      LValue* isNan = b_.CreateFCmpUNO(v, v);
      return b_.CreateTrunc(b_.CreateSelect(isNan, quiet, rounded), b_.getInt16Ty());
    }
    return v;
  }

  LValue* val(int32_t id) {
    LValue* v = values_[static_cast<size_t>(id)];
    if (!v && status_.ok()) status_ = makeError("kernel @{}: %{} used before it is defined", k_.name, id);
    return v ? v : llvm::UndefValue::get(regType(k_.types[static_cast<size_t>(id)]));
  }
  DType typeOf(int32_t id) const { return k_.types[static_cast<size_t>(id)]; }

  // --- math --------------------------------------------------------------------------------------
  LValue* intrinsic(llvm::Intrinsic::ID id, LValue* x) {
    return b_.CreateIntrinsic(id, {x->getType()}, {x});
  }
  LValue* intrinsic2(llvm::Intrinsic::ID id, LValue* x, LValue* y) {
    return b_.CreateIntrinsic(id, {x->getType()}, {x, y});
  }
  /// A libm call (expm1f / expm1, ...), for functions without an LLVM intrinsic.
  LValue* libm(const char* name, LValue* x) {
    bool isDouble = x->getType()->isDoubleTy();
    std::string fname = isDouble ? name : std::string(name) + "f";
    auto callee = module_->getOrInsertFunction(fname, llvm::FunctionType::get(x->getType(), {x->getType()}, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      f->setDoesNotThrow();
      f->setDoesNotAccessMemory();
    }
    return b_.CreateCall(callee, {x});
  }
  LValue* fconst(Type* t, double v) { return llvm::ConstantFP::get(t, v); }

  /// Integer pow's helper for `ty` (ir/int_pow.h), made once per module: square and multiply modulo
  /// 2^bits, the exponent read as unsigned (the caller handles a negative one).
  llvm::Function* intPowFunction(Type* ty) {
    std::string name = fmt::format("smelt.ipow.i{}", ty->getIntegerBitWidth());
    if (llvm::Function* f = module_->getFunction(name)) return f;
    auto* f = llvm::Function::Create(llvm::FunctionType::get(ty, {ty, ty}, false), llvm::Function::InternalLinkage,
                                     name, module_.get());
    f->addFnAttr(llvm::Attribute::AlwaysInline);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", f);
    auto* loop = llvm::BasicBlock::Create(ctx_, "loop", f);
    auto* done = llvm::BasicBlock::Create(ctx_, "done", f);
    llvm::IRBuilder<> fb(entry);
    auto zero = llvm::ConstantInt::get(ty, 0);
    auto one = llvm::ConstantInt::get(ty, 1);
    fb.CreateCondBr(fb.CreateICmpEQ(f->getArg(1), zero), done, loop);
    fb.SetInsertPoint(loop);
    llvm::PHINode* r = fb.CreatePHI(ty, 2);
    llvm::PHINode* base = fb.CreatePHI(ty, 2);
    llvm::PHINode* e = fb.CreatePHI(ty, 2);
    LValue* odd = fb.CreateICmpNE(fb.CreateAnd(e, one), zero);
    LValue* nextR = fb.CreateSelect(odd, fb.CreateMul(r, base), r);
    LValue* nextBase = fb.CreateMul(base, base);
    LValue* nextE = fb.CreateLShr(e, one);
    r->addIncoming(one, entry);
    r->addIncoming(nextR, loop);
    base->addIncoming(f->getArg(0), entry);
    base->addIncoming(nextBase, loop);
    e->addIncoming(f->getArg(1), entry);
    e->addIncoming(nextE, loop);
    fb.CreateCondBr(fb.CreateICmpEQ(nextE, zero), done, loop);
    fb.SetInsertPoint(done);
    llvm::PHINode* result = fb.CreatePHI(ty, 2);
    result->addIncoming(one, entry);
    result->addIncoming(nextR, loop);
    fb.CreateRet(result);
    return f;
  }

  LValue* floatUnary(KUnary op, LValue* x) {
    Type* t = x->getType();
    if (t->isFloatTy()) {
      // f32 (and f16/bf16, computed in f32): the vectorizable polynomials, at most 2 ulp. sin, cos and
      // tan stay on libm, whose argument reduction is exact for every input.
      LlvmMathEmitter e{b_};
      switch (op) {
        case KUnary::Exp: return vecmath::exp(e, x);
        case KUnary::Expm1: return vecmath::expm1(e, x);
        case KUnary::Log: return vecmath::log(e, x);
        case KUnary::Log1p: return vecmath::log1p(e, x);
        case KUnary::Tanh: return vecmath::tanh(e, x);
        case KUnary::Sigmoid: return vecmath::sigmoid(e, x);
        case KUnary::Erf: return vecmath::erf(e, x);
        default: break;
      }
    }
    switch (op) {
      case KUnary::Neg: return b_.CreateFNeg(x);
      case KUnary::Abs: return intrinsic(llvm::Intrinsic::fabs, x);
      case KUnary::Exp: return intrinsic(llvm::Intrinsic::exp, x);
      case KUnary::Expm1: return libm("expm1", x);
      case KUnary::Log: return intrinsic(llvm::Intrinsic::log, x);
      case KUnary::Log1p: return libm("log1p", x);
      case KUnary::Sqrt: return intrinsic(llvm::Intrinsic::sqrt, x);
      case KUnary::Rsqrt: return b_.CreateFDiv(fconst(t, 1.0), intrinsic(llvm::Intrinsic::sqrt, x));
      case KUnary::Sin: return intrinsic(llvm::Intrinsic::sin, x);
      case KUnary::Cos: return intrinsic(llvm::Intrinsic::cos, x);
      case KUnary::Tan: return libm("tan", x);
      case KUnary::Tanh: return libm("tanh", x);
      case KUnary::Erf: return libm("erf", x);
      case KUnary::Sigmoid: {
        // 1/(1+e^-x) for x >= 0, e^x/(1+e^x) below: e^ never overflows.
        LValue* e = intrinsic(llvm::Intrinsic::exp, b_.CreateFNeg(intrinsic(llvm::Intrinsic::fabs, x)));
        LValue* one = fconst(t, 1.0);
        LValue* denom = b_.CreateFAdd(one, e);
        return b_.CreateSelect(b_.CreateFCmpOGE(x, fconst(t, 0.0)), b_.CreateFDiv(one, denom), b_.CreateFDiv(e, denom));
      }
      case KUnary::Floor: return intrinsic(llvm::Intrinsic::floor, x);
      case KUnary::Ceil: return intrinsic(llvm::Intrinsic::ceil, x);
      case KUnary::RoundEven: return intrinsic(llvm::Intrinsic::roundeven, x);
      default: break;
    }
    fail(fmt::format("{} of a float", kUnaryName(op)));
    return x;
  }

  LValue* unary(const KInst& in) {
    DType t = typeOf(in.a);
    LValue* x = val(in.a);
    if (in.unary == KUnary::IsNan) {
      if (!isFloat(t)) return b_.getFalse();
      LValue* c = toCompute(x, t);
      return b_.CreateFCmpUNO(c, c);
    }
    if (isFloat(t)) return fromCompute(floatUnary(in.unary, toCompute(x, t)), t);
    switch (in.unary) {
      case KUnary::Neg: return b_.CreateNeg(x);
      case KUnary::Abs:
        if (!isSignedInt(t)) return x;
        return b_.CreateSelect(b_.CreateICmpSLT(x, llvm::ConstantInt::get(x->getType(), 0)), b_.CreateNeg(x), x);
      case KUnary::Not: return b_.CreateNot(x);
      default: break;
    }
    fail(fmt::format("{} of {}", kUnaryName(in.unary), dtypeName(t)));
    return x;
  }

  LValue* nanPropagating(bool isMax, LValue* a, LValue* c) {
    LValue* anyNan = b_.CreateOr(b_.CreateFCmpUNO(a, a), b_.CreateFCmpUNO(c, c));
    LValue* pick = isMax ? b_.CreateSelect(b_.CreateFCmpOGT(c, a), c, a) : b_.CreateSelect(b_.CreateFCmpOLT(c, a), c, a);
    return b_.CreateSelect(anyNan, llvm::ConstantFP::getNaN(a->getType()), pick);
  }

  LValue* floatBinary(KBinary op, LValue* a, LValue* c) {
    switch (op) {
      case KBinary::Add: return b_.CreateFAdd(a, c);
      case KBinary::Sub: return b_.CreateFSub(a, c);
      case KBinary::Mul: return b_.CreateFMul(a, c);
      case KBinary::Div: return b_.CreateFDiv(a, c);
      case KBinary::Rem: return b_.CreateFRem(a, c);
      case KBinary::Min: return nanPropagating(false, a, c);
      case KBinary::Max: return nanPropagating(true, a, c);
      case KBinary::Pow: return intrinsic2(llvm::Intrinsic::pow, a, c);
      case KBinary::Lt: return b_.CreateFCmpOLT(a, c);
      case KBinary::Le: return b_.CreateFCmpOLE(a, c);
      case KBinary::Gt: return b_.CreateFCmpOGT(a, c);
      case KBinary::Ge: return b_.CreateFCmpOGE(a, c);
      case KBinary::Eq: return b_.CreateFCmpOEQ(a, c);
      case KBinary::Ne: return b_.CreateFCmpUNE(a, c);
      default: break;
    }
    fail(fmt::format("{} of floats", kBinaryName(op)));
    return a;
  }

  LValue* intBinary(KBinary op, DType t, LValue* a, LValue* c) {
    bool isUnsigned = !isSignedInt(t);
    Type* ty = a->getType();
    unsigned bits = ty->getIntegerBitWidth();
    auto zero = llvm::ConstantInt::get(ty, 0);
    auto one = llvm::ConstantInt::get(ty, 1);
    auto minusOne = llvm::ConstantInt::getSigned(ty, -1);
    switch (op) {
      case KBinary::Add: return b_.CreateAdd(a, c);
      case KBinary::Sub: return b_.CreateSub(a, c);
      case KBinary::Mul: return b_.CreateMul(a, c);
      case KBinary::Div:
      case KBinary::Rem: {
        // Division by 0 gives 0; x / -1 wraps (INT_MIN / -1 = INT_MIN) and x % -1 is 0. The divisor
        // is made safe first so no instruction can trap.
        LValue* byZero = b_.CreateICmpEQ(c, zero);
        LValue* byMinusOne = isUnsigned || bits == 1 ? b_.getFalse() : b_.CreateICmpEQ(c, minusOne);
        LValue* safe = b_.CreateSelect(b_.CreateOr(byZero, byMinusOne), one, c);
        LValue* q = op == KBinary::Div ? (isUnsigned ? b_.CreateUDiv(a, safe) : b_.CreateSDiv(a, safe))
                                       : (isUnsigned ? b_.CreateURem(a, safe) : b_.CreateSRem(a, safe));
        LValue* special = op == KBinary::Div ? b_.CreateNeg(a) : static_cast<LValue*>(zero);
        return b_.CreateSelect(byZero, zero, b_.CreateSelect(byMinusOne, special, q));
      }
      case KBinary::Min:
        return b_.CreateSelect(isUnsigned ? b_.CreateICmpULT(c, a) : b_.CreateICmpSLT(c, a), c, a);
      case KBinary::Max:
        return b_.CreateSelect(isUnsigned ? b_.CreateICmpUGT(c, a) : b_.CreateICmpSGT(c, a), c, a);
      case KBinary::Pow: {
        LValue* p = b_.CreateCall(intPowFunction(ty), {a, c});
        if (isUnsigned) return p;
        // ir/int_pow.h: a negative exponent truncates 1/a^-b to 1, -1 or 0.
        LValue* ofMinusOne = b_.CreateSelect(b_.CreateICmpNE(b_.CreateAnd(c, one), zero), minusOne, one);
        LValue* truncated = b_.CreateSelect(b_.CreateICmpEQ(a, one), one,
                                            b_.CreateSelect(b_.CreateICmpEQ(a, minusOne), ofMinusOne, zero));
        return b_.CreateSelect(b_.CreateICmpSLT(c, zero), truncated, p);
      }
      case KBinary::And: return b_.CreateAnd(a, c);
      case KBinary::Or: return b_.CreateOr(a, c);
      case KBinary::Xor: return b_.CreateXor(a, c);
      case KBinary::Shl:
      case KBinary::Shr: {
        auto width = llvm::ConstantInt::get(ty, bits);
        LValue* tooFar = b_.CreateICmpUGE(c, width);
        if (op == KBinary::Shl) return b_.CreateSelect(tooFar, zero, b_.CreateShl(a, b_.CreateSelect(tooFar, zero, c)));
        if (isUnsigned) return b_.CreateSelect(tooFar, zero, b_.CreateLShr(a, b_.CreateSelect(tooFar, zero, c)));
        return b_.CreateAShr(a, b_.CreateSelect(tooFar, llvm::ConstantInt::get(ty, bits - 1), c));
      }
      case KBinary::Lt: return isUnsigned ? b_.CreateICmpULT(a, c) : b_.CreateICmpSLT(a, c);
      case KBinary::Le: return isUnsigned ? b_.CreateICmpULE(a, c) : b_.CreateICmpSLE(a, c);
      case KBinary::Gt: return isUnsigned ? b_.CreateICmpUGT(a, c) : b_.CreateICmpSGT(a, c);
      case KBinary::Ge: return isUnsigned ? b_.CreateICmpUGE(a, c) : b_.CreateICmpSGE(a, c);
      case KBinary::Eq: return b_.CreateICmpEQ(a, c);
      case KBinary::Ne: return b_.CreateICmpNE(a, c);
    }
    return a;
  }

  LValue* binary(const KInst& in) {
    DType t = typeOf(in.a);
    if (isFloat(t)) {
      LValue* r = floatBinary(in.binary, toCompute(val(in.a), t), toCompute(val(in.b), t));
      return in.dtype == DType::boolean ? r : fromCompute(r, t);
    }
    return intBinary(in.binary, t, val(in.a), val(in.b));
  }

  /// fromDouble's conversion of a double to an integer type: NaN -> 0, truncation toward zero,
  /// [2^63, 2^64) through u64, >= 2^64 -> 0, <= -2^63 -> INT64_MIN, then wrapped to the width.
  LValue* doubleToInt(LValue* x, Type* to) {
    auto* i64 = b_.getInt64Ty();
    auto* dbl = b_.getDoubleTy();
    LValue* isNan = b_.CreateFCmpUNO(x, x);
    LValue* big = b_.CreateFCmpOGE(x, fconst(dbl, 9.2233720368547758e18));
    LValue* huge = b_.CreateFCmpOGE(x, fconst(dbl, 1.8446744073709552e19));
    LValue* low = b_.CreateFCmpOLE(x, fconst(dbl, -9.2233720368547758e18));
    // Clamp before converting so neither conversion sees an out-of-range (poison) input.
    LValue* inRange = b_.CreateSelect(b_.CreateOr(b_.CreateOr(isNan, big), low), fconst(dbl, 0.0), x);
    LValue* asSigned = b_.CreateFPToSI(inRange, i64);
    LValue* bigSafe = b_.CreateSelect(b_.CreateAnd(big, b_.CreateNot(huge)), x, fconst(dbl, 0.0));
    LValue* asUnsigned = b_.CreateFPToUI(bigSafe, i64);
    LValue* r = b_.CreateSelect(isNan, b_.getInt64(0), asSigned);
    r = b_.CreateSelect(low, b_.getInt64(static_cast<uint64_t>(INT64_MIN)), r);
    r = b_.CreateSelect(big, asUnsigned, r);
    return b_.CreateTrunc(r, to);
  }

  LValue* cast(const KInst& in) {
    DType from = typeOf(in.a), to = in.dtype;
    LValue* x = val(in.a);
    if (to == DType::boolean) {
      if (isFloat(from)) {
        LValue* c = toCompute(x, from);
        return b_.CreateFCmpUNE(c, fconst(c->getType(), 0.0));
      }
      return b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
    }
    if (isFloat(to)) {
      LValue* v;
      if (isFloat(from)) {
        v = toCompute(x, from);
        // f64 -> f16/bf16 goes through f32 as the reference does (double -> float -> half).
        Type* target = computeType(to);
        v = v->getType() == target ? v
            : target->getPrimitiveSizeInBits() < v->getType()->getPrimitiveSizeInBits() ? b_.CreateFPTrunc(v, target)
                                                                                        : b_.CreateFPExt(v, target);
      } else {
        v = isSignedInt(from) ? b_.CreateSIToFP(x, computeType(to)) : b_.CreateUIToFP(x, computeType(to));
      }
      return fromCompute(v, to);
    }
    if (isFloat(from)) {
      LValue* c = toCompute(x, from);
      if (!c->getType()->isDoubleTy()) c = b_.CreateFPExt(c, b_.getDoubleTy());
      return doubleToInt(c, regType(to));
    }
    unsigned fromBits = x->getType()->getIntegerBitWidth(), toBits = regType(to)->getIntegerBitWidth();
    if (toBits < fromBits) return b_.CreateTrunc(x, regType(to));
    if (toBits == fromBits) return x;
    return isSignedInt(from) ? b_.CreateSExt(x, regType(to)) : b_.CreateZExt(x, regType(to));
  }

  LValue* constant(const KInst& in) {
    DType t = in.dtype;
    if (t == DType::f16 || t == DType::bf16) {
      return fromCompute(fconst(b_.getFloatTy(), static_cast<float>(in.fbits)), t);
    }
    if (isFloat(t)) return fconst(regType(t), in.fbits);
    if (t == DType::boolean) return b_.getInt1(in.ibits != 0);
    return llvm::ConstantInt::get(regType(t), static_cast<uint64_t>(in.ibits));
  }

  /// The run-time values of a kernel compiled for every size (KInstKind::Param), read once at entry
  /// from its last buffer: loads in the body could not be hoisted past its stores.
  void readParams(const KBlock& blk) {
    for (const KStmt& s : blk.stmts) {
      if (const auto* l = std::get_if<std::shared_ptr<KLoop>>(&s)) readParams((*l)->body);
      const KInst* in = std::get_if<KInst>(&s);
      if (!in || in->kind != KInstKind::Param) continue;
      LValue* bits = b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), bufferPtrs_.back(),
                                                                              static_cast<uint64_t>(in->ibits)));
      LValue* r = nullptr;
      if (in->dtype == DType::f32) r = b_.CreateBitCast(b_.CreateTrunc(bits, b_.getInt32Ty()), b_.getFloatTy());
      else if (in->dtype == DType::f64) r = b_.CreateBitCast(bits, b_.getDoubleTy());
      else if (in->dtype == DType::boolean) r = b_.CreateICmpNE(bits, b_.getInt64(0));
      else if (!isFloat(in->dtype)) r = b_.CreateTrunc(bits, regType(in->dtype));
      else fail(fmt::format("a {} run-time value", dtypeName(in->dtype)));
      values_[static_cast<size_t>(in->result)] = r;
    }
  }

  // --- statements --------------------------------------------------------------------------------
  LValue* elementPtr(int32_t buffer, int32_t offset) {
    DType t = k_.buffers[static_cast<size_t>(buffer)].dtype;
    return b_.CreateInBoundsGEP(memType(t), bufferPtrs_[static_cast<size_t>(buffer)], {val(offset)});
  }

  void inst(const KInst& in) {
    if (auto it = extremes_.find(in.result); it != extremes_.end()) return extremeStep(in, it->second);
    LValue* r = nullptr;
    switch (in.kind) {
      case KInstKind::Const: r = constant(in); break;
      case KInstKind::Outer: r = outer_[static_cast<size_t>(in.ibits)]; break;
      case KInstKind::Param: return;  // read at entry (readParams())
      case KInstKind::Unary: r = unary(in); break;
      case KInstKind::Binary: r = binary(in); break;
      case KInstKind::Select: r = b_.CreateSelect(val(in.a), val(in.b), val(in.c)); break;
      case KInstKind::Cast: r = cast(in); break;
      case KInstKind::Load: {
        DType t = k_.buffers[static_cast<size_t>(in.ibits)].dtype;
        r = b_.CreateLoad(memType(t), elementPtr(static_cast<int32_t>(in.ibits), in.a));
        if (t == DType::boolean) r = b_.CreateICmpNE(r, b_.getInt8(0));
        break;
      }
    }
    values_[static_cast<size_t>(in.result)] = r;
  }

  void store(const KStore& st) {
    DType t = k_.buffers[static_cast<size_t>(st.buffer)].dtype;
    LValue* v = val(st.value);
    if (t == DType::boolean) v = b_.CreateZExt(v, b_.getInt8Ty());
    b_.CreateStore(v, elementPtr(st.buffer, st.offset));
  }

  /// A float max or min carried by a loop, rendered so it vectorizes: NaN-propagating max as a compare
  /// and select is a recurrence the loop vectorizer does not take, so the loop carries maxnum (which
  /// ignores NaN, and vectorizes as a reduction) beside a flag that any NaN was seen (an or-reduction),
  /// and the result after the loop is NaN when the flag is set.
  struct Extreme {
    bool isMax = true;
    int32_t carried = -1;
    llvm::PHINode* sawNan = nullptr;
    LValue* nextSawNan = nullptr;
  };

  static void countUses(const KBlock& blk, std::unordered_map<int32_t, int>& uses) {
    for (const KStmt& s : blk.stmts) {
      if (const KInst* i = std::get_if<KInst>(&s)) {
        for (int32_t v : {i->a, i->b, i->c}) {
          if (v >= 0 && i->kind != KInstKind::Const && i->kind != KInstKind::Outer) ++uses[v];
        }
      } else if (const KStore* st = std::get_if<KStore>(&s)) {
        ++uses[st->offset];
        ++uses[st->value];
      } else {
        const KLoop& inner = *std::get<std::shared_ptr<KLoop>>(s);
        for (int32_t v : inner.init) ++uses[v];
        for (int32_t v : inner.next) ++uses[v];
        countUses(inner.body, uses);
      }
    }
  }

  /// The carried values of `l` that only feed their own float max/min update, by the update's result.
  std::unordered_map<int32_t, Extreme> findExtremes(const KLoop& l) {
    std::unordered_map<int32_t, Extreme> found;
    std::unordered_map<int32_t, int> uses;
    countUses(l.body, uses);
    for (int32_t v : l.next) ++uses[v];
    for (size_t c = 0; c < l.carried.size(); ++c) {
      int32_t carried = l.carried[c];
      if (!isFloat(typeOf(carried)) || uses[carried] != 1) continue;
      for (const KStmt& s : l.body.stmts) {
        const KInst* i = std::get_if<KInst>(&s);
        if (!i || i->result != l.next[c] || i->kind != KInstKind::Binary) continue;
        if ((i->binary == KBinary::Max || i->binary == KBinary::Min) && (i->a == carried) != (i->b == carried)) {
          found[i->result] = Extreme{i->binary == KBinary::Max, carried, nullptr, nullptr};
        }
      }
    }
    return found;
  }

  void extremeStep(const KInst& in, Extreme& x) {
    LValue* carried = val(x.carried);
    LValue* other = val(in.a == x.carried ? in.b : in.a);
    auto id = x.isMax ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum;
    // LLVM 16 vectorizes a maxnum reduction only with nnan and nsz on the call. A NaN input then makes
    // the running value poison, which the select after the loop never picks (the flag is set); the
    // order of -0 and +0 may differ from the reference's, which compares them equal.
    llvm::FastMathFlags flags;
    flags.setNoNaNs();
    flags.setNoSignedZeros();
    llvm::CallInst* step = b_.CreateBinaryIntrinsic(id, carried, other);
    step->setFastMathFlags(flags);
    values_[static_cast<size_t>(in.result)] = step;
    x.nextSawNan = b_.CreateOr(x.sawNan, b_.CreateFCmpUNO(other, other));
  }

  void loop(const KLoop& l) {
    std::unordered_map<int32_t, Extreme> extremes = findExtremes(l);
    std::unordered_map<int32_t, LValue*> initSawNan;  // a NaN initial value counts as seen
    for (auto& [result, x] : extremes) {
      size_t c = static_cast<size_t>(std::find(l.carried.begin(), l.carried.end(), x.carried) - l.carried.begin());
      LValue* init = val(l.init[c]);
      initSawNan[result] = b_.CreateFCmpUNO(init, init);
    }
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, "loop", fn_);
    auto* body = llvm::BasicBlock::Create(ctx_, "body", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, "done", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* index = b_.CreatePHI(b_.getInt64Ty(), 2);
    index->addIncoming(b_.getInt64(0), pre);
    std::vector<llvm::PHINode*> carried;
    for (size_t c = 0; c < l.carried.size(); ++c) {
      llvm::PHINode* phi = b_.CreatePHI(regType(typeOf(l.carried[c])), 2);
      phi->addIncoming(val(l.init[c]), pre);
      carried.push_back(phi);
      values_[static_cast<size_t>(l.carried[c])] = phi;
    }
    for (auto& [result, x] : extremes) {
      x.sawNan = b_.CreatePHI(b_.getInt1Ty(), 2);
      x.sawNan->addIncoming(initSawNan[result], pre);
    }
    values_[static_cast<size_t>(l.index)] = index;
    LValue* extent = l.extentValue >= 0 ? val(l.extentValue) : b_.getInt64(l.extent);
    b_.CreateCondBr(b_.CreateICmpSLT(index, extent), body, exit);
    b_.SetInsertPoint(body);
    for (auto& [result, x] : extremes) extremes_[result] = x;
    block(l.body);
    for (auto& [result, x] : extremes) {
      x = extremes_[result];
      extremes_.erase(result);
    }
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    index->addIncoming(b_.CreateAdd(index, b_.getInt64(1), "", true, true), latch);
    for (size_t c = 0; c < carried.size(); ++c) {
      LValue* next = val(l.next[c]);
      carried[c]->addIncoming(next, latch);
      // A float sum or product carried by the loop may be reassociated, so LLVM vectorizes it (lanes of
      // partial sums): results differ from the sequential order by rounding only.
      if (auto* op = llvm::dyn_cast<llvm::BinaryOperator>(next);
          op && (op->getOpcode() == llvm::Instruction::FAdd || op->getOpcode() == llvm::Instruction::FMul) &&
          (op->getOperand(0) == carried[c] || op->getOperand(1) == carried[c])) {
        op->setHasAllowReassoc(true);
      }
    }
    for (auto& [result, x] : extremes) x.sawNan->addIncoming(x.nextSawNan, latch);
    b_.CreateBr(header);
    b_.SetInsertPoint(exit);
    for (size_t c = 0; c < carried.size(); ++c) {
      LValue* r = carried[c];
      for (auto& [result, x] : extremes) {
        if (x.carried == l.carried[c]) r = b_.CreateSelect(x.sawNan, llvm::ConstantFP::getNaN(r->getType()), r);
      }
      values_[static_cast<size_t>(l.results[c])] = r;
    }
  }

  void block(const KBlock& blk) {
    for (const KStmt& s : blk.stmts) {
      if (const KInst* i = std::get_if<KInst>(&s)) inst(*i);
      else if (const KStore* st = std::get_if<KStore>(&s)) store(*st);
      else loop(*std::get<std::shared_ptr<KLoop>>(s));
    }
  }

  /// The outer points [begin, end): row by row over the leading dims, each row a plain loop over the
  /// last dim (from `col` to the row's end or to `end`).
  Status domainLoops(LValue* begin, LValue* end) {
    auto* i64 = b_.getInt64Ty();
    int64_t cols = k_.domain.empty() ? 1 : k_.domain.back();
    if (cols == 0 || k_.domainSize() == 0) return Status::success();
    // A one-dimensional domain of run-time extent is one row: [begin, end) is all of it there is.
    const bool runTimeRow = cols == kRunTimeExtent;
    if (cols < 0 && (!runTimeRow || k_.domain.size() != 1)) {
      fail("a run-time extent other than a domain's first");
      return status_;
    }
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* rowHead = llvm::BasicBlock::Create(ctx_, "row", fn_);
    auto* rowBody = llvm::BasicBlock::Create(ctx_, "row.body", fn_);
    auto* colHead = llvm::BasicBlock::Create(ctx_, "col", fn_);
    auto* colBody = llvm::BasicBlock::Create(ctx_, "col.body", fn_);
    auto* rowNext = llvm::BasicBlock::Create(ctx_, "row.next", fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "exit", fn_);
    LValue* colsV = runTimeRow ? static_cast<LValue*>(b_.CreateAdd(end, b_.getInt64(1))) : b_.getInt64(cols);
    LValue* row0 = b_.CreateSDiv(begin, colsV);
    LValue* col0 = b_.CreateSRem(begin, colsV);
    b_.CreateBr(rowHead);

    b_.SetInsertPoint(rowHead);
    llvm::PHINode* linear = b_.CreatePHI(i64, 2);
    llvm::PHINode* row = b_.CreatePHI(i64, 2);
    llvm::PHINode* colStart = b_.CreatePHI(i64, 2);
    linear->addIncoming(begin, pre);
    row->addIncoming(row0, pre);
    colStart->addIncoming(col0, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(linear, end), rowBody, done);

    b_.SetInsertPoint(rowBody);
    LValue* remaining = b_.CreateSub(end, linear);
    LValue* rowLeft = b_.CreateSub(colsV, colStart);
    LValue* count = b_.CreateSelect(b_.CreateICmpSLT(remaining, rowLeft), remaining, rowLeft);
    LValue* colEnd = b_.CreateAdd(colStart, count);
    // The leading dims' indices of this row.
    outer_.assign(k_.domain.size(), nullptr);
    LValue* rest = row;
    for (size_t d = k_.domain.size() - (k_.domain.empty() ? 0 : 1); d-- > 0;) {
      LValue* extent = b_.getInt64(k_.domain[d]);
      outer_[d] = d == 0 ? rest : b_.CreateSRem(rest, extent);
      if (d > 0) rest = b_.CreateSDiv(rest, extent);
    }
    llvm::BasicBlock* rowPre = b_.GetInsertBlock();
    b_.CreateBr(colHead);

    b_.SetInsertPoint(colHead);
    llvm::PHINode* col = b_.CreatePHI(i64, 2);
    col->addIncoming(colStart, rowPre);
    b_.CreateCondBr(b_.CreateICmpSLT(col, colEnd), colBody, rowNext);

    b_.SetInsertPoint(colBody);
    if (!k_.domain.empty()) outer_.back() = col;
    block(k_.body);
    col->addIncoming(b_.CreateAdd(col, b_.getInt64(1), "", true, true), b_.GetInsertBlock());
    b_.CreateBr(colHead);

    b_.SetInsertPoint(rowNext);
    linear->addIncoming(b_.CreateAdd(linear, count), rowNext);
    row->addIncoming(b_.CreateAdd(row, b_.getInt64(1)), rowNext);
    colStart->addIncoming(b_.getInt64(0), rowNext);
    b_.CreateBr(rowHead);

    b_.SetInsertPoint(done);
    return status_;
  }

  void fail(const std::string& what) {
    if (status_.ok()) status_ = makeError("kernel @{}: the LLVM backend cannot render {}", k_.name, what);
  }

  const Kernel& k_;
  llvm::LLVMContext& ctx_;
  std::unique_ptr<llvm::Module> module_;
  IRBuilder<> b_;
  std::string symbol_;
  llvm::Function* fn_ = nullptr;
  std::vector<LValue*> bufferPtrs_;
  std::vector<LValue*> values_;
  std::unordered_map<int32_t, Extreme> extremes_;  // float max/min updates of the loop being rendered
  std::vector<LValue*> outer_;
  Status status_ = Status::success();
};

}  // namespace

Expected<std::unique_ptr<llvm::Module>> renderLlvm(const Kernel& kernel, llvm::LLVMContext& context,
                                                   const std::string& symbol, const std::string& cpu,
                                                   const std::string& features) {
  return Renderer(kernel, context, symbol).run(cpu, features);
}

}  // namespace smelt::codegen

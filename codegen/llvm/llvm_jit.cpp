// The process-wide LLJIT: host target machine, O3 pipeline, object emission, the kernel cache, and
// symbol lookup. Compiles are serialized by one mutex (LLVM's pass pipelines are per module, but one
// TargetMachine is shared); lookups of already-loaded kernels are lock-free after the first.
#include "codegen/llvm/llvm_jit.h"

#include "codegen/cache/kernel_cache.h"
#include "codegen/llvm/llvm_renderer.h"
#include "codegen/log.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace smelt::codegen {

namespace {

std::string errorText(llvm::Error error) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << error;
  return os.str();
}

/// Bumped whenever rendering changes what a description compiles to, so old cache entries miss.
constexpr const char* kRendererVersion = "llvm-renderer-6";

}  // namespace

struct LlvmJit::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::string cpu, features, target;
  std::mutex mutex;
  std::unordered_map<std::string, KernelEntry> loaded;  // by cache digest

  Status init() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) return makeError("LLVM: cannot describe this host: {}", errorText(jtmb.takeError()));
    jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
    cpu = jtmb->getCPU();
    features = jtmb->getFeatures().getString();
    target = fmt::format("{} cpu={} features={}", jtmb->getTargetTriple().str(), cpu, features);
    auto machine = jtmb->createTargetMachine();
    if (!machine) return makeError("LLVM: cannot create a target machine: {}", errorText(machine.takeError()));
    tm = std::move(*machine);
    auto built = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
    if (!built) return makeError("LLVM: cannot create the JIT: {}", errorText(built.takeError()));
    jit = std::move(*built);
    // Kernels call libm (expm1f, erff, ...): resolve them from this process.
    auto generator = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        jit->getDataLayout().getGlobalPrefix());
    if (!generator) return makeError("LLVM: {}", errorText(generator.takeError()));
    jit->getMainJITDylib().addGenerator(std::move(*generator));
    return Status::success();
  }

  Expected<std::unique_ptr<llvm::Module>> render(const Kernel& kernel, llvm::LLVMContext& ctx, const std::string& symbol,
                                                 bool optimize) {
    SMELT_TRY(std::unique_ptr<llvm::Module> module, renderLlvm(kernel, ctx, symbol, cpu, features));
    module->setDataLayout(tm->createDataLayout());
    module->setTargetTriple(tm->getTargetTriple().str());
    if (optimize) {
      llvm::LoopAnalysisManager lam;
      llvm::FunctionAnalysisManager fam;
      llvm::CGSCCAnalysisManager cgam;
      llvm::ModuleAnalysisManager mam;
      llvm::PassBuilder pb(tm.get());
      pb.registerModuleAnalyses(mam);
      pb.registerCGSCCAnalyses(cgam);
      pb.registerFunctionAnalyses(fam);
      pb.registerLoopAnalyses(lam);
      pb.crossRegisterProxies(lam, fam, cgam, mam);
      llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
      mpm.run(*module, mam);
    }
    return module;
  }

  Expected<std::vector<std::byte>> compileObject(const Kernel& kernel, const std::string& symbol) {
    llvm::LLVMContext ctx;
    SMELT_TRY(std::unique_ptr<llvm::Module> module, render(kernel, ctx, symbol, true));
    // SMELT_LLVM_DUMP_DIR=dir keeps each optimized module as dir/<symbol>.ll (vectorization reviews).
    if (const char* dir = std::getenv("SMELT_LLVM_DUMP_DIR"); dir && *dir) {
      std::error_code ec;
      llvm::raw_fd_ostream out(fmt::format("{}/{}.ll", dir, symbol), ec);
      if (!ec) module->print(out, nullptr);
    }
    llvm::SmallVector<char, 0> object;
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager codegen;
    if (tm->addPassesToEmitFile(codegen, os, nullptr, llvm::CGFT_ObjectFile)) {
      return makeError("LLVM: the target cannot emit object files");
    }
    codegen.run(*module);
    std::vector<std::byte> bytes(object.size());
    std::memcpy(bytes.data(), object.data(), object.size());
    return bytes;
  }
};

LlvmJit::LlvmJit() : impl_(std::make_unique<Impl>()) {}
LlvmJit::~LlvmJit() = default;

Expected<LlvmJit*> LlvmJit::global() {
  static Expected<LlvmJit*> instance = []() -> Expected<LlvmJit*> {
    static LlvmJit jit;
    SMELT_CHECK_OK(jit.impl_->init());
    return &jit;
  }();
  return instance;
}

const std::string& LlvmJit::target() const { return impl_->target; }

Expected<std::string> LlvmJit::renderIr(const Kernel& kernel, bool optimize) {
  std::lock_guard lock(impl_->mutex);
  llvm::LLVMContext ctx;
  SMELT_TRY(std::unique_ptr<llvm::Module> module, impl_->render(kernel, ctx, kernel.name, optimize));
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, nullptr);
  return os.str();
}

namespace {

/// The kernel as the cache key sees it: without its name and provenance comments, so the same
/// computation in another node or graph (a repeated layer, the same op in another model) compiles
/// once and shares one symbol.
std::string keyText(const Kernel& kernel) {
  Kernel anonymous = kernel;
  anonymous.name = "k";
  anonymous.provenance.clear();
  return printKernel(anonymous);
}

}  // namespace

Expected<KernelEntry> LlvmJit::compile(const Kernel& kernel, CompileInfo* info) {
  auto start = std::chrono::steady_clock::now();
  CacheKey key{.kernel = keyText(kernel), .backend = "llvm", .target = impl_->target,
               .compilerVersion = fmt::format("LLVM {} {}", LLVM_VERSION_STRING, kRendererVersion),
               .driverVersion = "", .options = "O3"};
  std::string digest = key.digest();
  std::string symbol = "smelt_k_" + digest;
  std::lock_guard lock(impl_->mutex);
  if (auto it = impl_->loaded.find(digest); it != impl_->loaded.end()) {
    if (info) *info = {true, 0, digest};
    return it->second;
  }
  KernelCache& cache = KernelCache::global();
  std::optional<std::vector<std::byte>> object = cache.lookup(key);
  bool hit = object.has_value();
  if (!hit) {
    SMELT_TRY(std::vector<std::byte> compiled, impl_->compileObject(kernel, symbol));
    cache.store(key, compiled);
    object = std::move(compiled);
  }
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(reinterpret_cast<const char*>(object->data()), object->size()), symbol);
  if (auto error = impl_->jit->addObjectFile(std::move(buffer))) {
    return makeError("LLVM: cannot load kernel @{}: {}", kernel.name, errorText(std::move(error)));
  }
  auto address = impl_->jit->lookup(symbol);
  if (!address) return makeError("LLVM: kernel @{} has no entry: {}", kernel.name, errorText(address.takeError()));
  auto entry = address->toPtr<KernelEntry>();
  impl_->loaded.emplace(digest, entry);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  logger().debug("llvm: {} kernel @{} ({}) in {:.1f} ms", hit ? "loaded cached" : "compiled", kernel.name, digest,
                 seconds * 1e3);
  if (info) *info = {hit, seconds, digest};
  return entry;
}

}  // namespace smelt::codegen

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
  // One entry per loaded object, by cache digest. The handle is weak: executables own their kernels.
  // The tracker owns the object's code; removing it unloads the code.
  struct Loaded {
    std::weak_ptr<const JitKernel> handle;
    llvm::orc::ResourceTrackerSP tracker;
    uint64_t generation = 0;
  };
  std::unordered_map<std::string, Loaded> loaded;
  uint64_t generations = 0;

  /// Unloads `digest`'s object (mutex held). Its symbol can then be defined again.
  void unload(std::unordered_map<std::string, Loaded>::iterator it) {
    if (llvm::Error error = it->second.tracker->remove()) {
      logger().warn("llvm: unloading a kernel failed: {}", errorText(std::move(error)));
    }
    loaded.erase(it);
  }

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
    // Never destroyed: kernel handles held by static objects release into it at exit.
    static LlvmJit* jit = new LlvmJit;
    SMELT_CHECK_OK(jit->impl_->init());
    return jit;
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

CacheKey LlvmJit::keyFor(const Kernel& kernel) const {
  return CacheKey{.kernel = keyText(kernel), .backend = "llvm", .target = impl_->target,
                  .compilerVersion = fmt::format("LLVM {} {}", LLVM_VERSION_STRING, kRendererVersion),
                  .driverVersion = "", .options = "O3"};
}

Expected<JitKernelHandle> LlvmJit::compile(const Kernel& kernel, CompileInfo* info) {
  auto start = std::chrono::steady_clock::now();
  CacheKey key = keyFor(kernel);
  std::string digest = key.digest();
  std::string symbol = "smelt_k_" + digest;
  std::lock_guard lock(impl_->mutex);
  if (auto it = impl_->loaded.find(digest); it != impl_->loaded.end()) {
    if (JitKernelHandle live = it->second.handle.lock()) {
      if (info) *info = {true, 0, digest};
      return live;
    }
    // Its last handle went but its release has not run yet: unload it here (the release then finds a
    // newer generation and leaves it alone), so the symbol can be defined again.
    impl_->unload(it);
  }
  KernelCache& cache = KernelCache::global();
  std::optional<std::vector<std::byte>> object = cache.lookup(key);
  bool hit = object.has_value();
  if (!hit) {
    SMELT_TRY(std::vector<std::byte> compiled, impl_->compileObject(kernel, symbol));
    cache.store(key, compiled);
    object = std::move(compiled);
  }
  llvm::orc::JITDylib& dylib = impl_->jit->getMainJITDylib();
  llvm::orc::ResourceTrackerSP tracker = dylib.createResourceTracker();
  auto addObject = [&](const std::vector<std::byte>& bytes) {
    return impl_->jit->addObjectFile(tracker, llvm::MemoryBuffer::getMemBufferCopy(
        llvm::StringRef(reinterpret_cast<const char*>(bytes.data()), bytes.size()), symbol));
  };
  if (auto error = addObject(*object)) {
    std::string why = errorText(std::move(error));
    if (!hit) return makeError("LLVM: cannot load kernel @{}: {}", kernel.name, why);
    // A cached object that passed its checksum but does not load (another linker's, or damage the
    // checksum cannot see) would fail every later run: evict it and compile afresh.
    logger().warn("llvm: the cached object of kernel @{} does not load ({}); compiling it again", kernel.name, why);
    cache.evict(key);
    hit = false;
    SMELT_TRY(object, impl_->compileObject(kernel, symbol));
    cache.store(key, *object);
    if (auto again = addObject(*object)) {
      return makeError("LLVM: cannot load kernel @{}: {}", kernel.name, errorText(std::move(again)));
    }
  }
  auto address = impl_->jit->lookup(dylib, symbol);
  if (!address) {
    std::string why = errorText(address.takeError());
    if (llvm::Error error = tracker->remove()) llvm::consumeError(std::move(error));
    return makeError("LLVM: kernel @{} has no entry: {}", kernel.name, why);
  }
  uint64_t generation = ++impl_->generations;
  Impl* impl = impl_.get();
  // The release runs when the last executable holding the kernel is dropped.
  JitKernelHandle handle(new JitKernel{address->toPtr<KernelEntry>()}, [impl, digest, generation](const JitKernel* k) {
    delete k;
    std::lock_guard release(impl->mutex);
    auto it = impl->loaded.find(digest);
    if (it != impl->loaded.end() && it->second.generation == generation) impl->unload(it);
  });
  impl_->loaded[digest] = Impl::Loaded{handle, tracker, generation};
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  logger().debug("llvm: {} kernel @{} ({}) in {:.1f} ms", hit ? "loaded cached" : "compiled", kernel.name, digest,
                 seconds * 1e3);
  if (info) *info = {hit, seconds, digest};
  return handle;
}

size_t LlvmJit::loadedKernels() {
  std::lock_guard lock(impl_->mutex);
  return impl_->loaded.size();
}

}  // namespace smelt::codegen

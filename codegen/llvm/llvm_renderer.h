// Renders a kernel description to an LLVM module holding one function
//   void @<symbol>(ptr %buffers, i64 %begin, i64 %end)
// that runs the outer points [begin, end) of the domain: rows of the leading dims, and in each row a
// plain loop over the last dim, which LLVM vectorizes. Values follow the kernel interpreter's
// semantics (codegen/kernel_interpreter.h): f16 and bf16 compute in f32 and round after every
// instruction, integers wrap, integer division by zero gives 0, float-to-int casts saturate as
// fromDouble does. Included by llvm_jit.cpp only.
#pragma once

#include "codegen/kernel.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>

namespace smelt::codegen {

/// The module for `kernel`, its function named `symbol`, every function carrying `cpu` and `features`
/// (and a preference for 512-bit vectors).
Expected<std::unique_ptr<llvm::Module>> renderLlvm(const Kernel& kernel, llvm::LLVMContext& context,
                                                   const std::string& symbol, const std::string& cpu,
                                                   const std::string& features);

}  // namespace smelt::codegen

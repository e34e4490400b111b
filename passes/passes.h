// Every pass smelt has, by factory. registeredPasses() (pass_manager.h) maps pipeline names to these;
// a new pass adds its factory here and its row there.
#pragma once

#include "passes/pass.h"

#include <memory>

namespace smelt {

std::unique_ptr<Pass> createDeadCodeElimination();          // "dce"
std::unique_ptr<Pass> createCommonSubexpressionElimination(); // "cse"
std::unique_ptr<Pass> createConstantFolding();               // "fold"
std::unique_ptr<Pass> createCanonicalize();                  // "canonicalize": algebraic rewrites
std::unique_ptr<Pass> createDecompose();                     // "decompose": composites into primitives
std::unique_ptr<Pass> createSplitReductions();               // "split-reductions": two-stage reductions
std::unique_ptr<Pass> createFuse();                          // "fuse": kernels (fusion_groups.h)
std::unique_ptr<Pass> createPlanMemory();                    // "plan-memory": arena layout (plan_memory.h)
std::unique_ptr<Pass> createWidenProducts();                 // "widen-products": bf16/f16 products in f32

}  // namespace smelt

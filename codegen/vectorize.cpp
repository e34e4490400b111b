// vectorize (see vectorize.h).
#include "codegen/vectorize.h"

#include "codegen/kernel_walk.h"

#include <unordered_set>

namespace smelt::codegen {

namespace {

bool narrow(DType t) { return t == DType::boolean || dtypeSize(t) <= 4; }

}  // namespace

bool vectorize(Kernel& kernel, int64_t minPoints) {
  if (kernel.pointsPerThread > 1 || kernel.blockThreads > 0 || kernel.domain.size() != 1 ||
      kernel.domain[0] < minPoints) {
    return false;
  }
  std::unordered_set<int32_t> point;  // the values that are the outer index itself
  for (const KStmt& s : kernel.body.stmts) {
    if (std::holds_alternative<std::shared_ptr<KLoop>>(s)) return false;
    if (const auto* i = std::get_if<KInst>(&s); i && i->kind == KInstKind::Outer) point.insert(i->result);
  }
  std::unordered_set<int32_t> stored, readElsewhere;
  for (const KStmt& s : kernel.body.stmts) {
    if (const auto* st = std::get_if<KStore>(&s)) {
      if (!point.count(st->offset) || !narrow(kernel.buffers[static_cast<size_t>(st->buffer)].dtype)) return false;
      stored.insert(memoryOf(kernel, st->buffer));
    } else if (const auto* i = std::get_if<KInst>(&s); i && i->kind == KInstKind::Load) {
      const auto buffer = static_cast<int32_t>(i->ibits);
      if (!point.count(i->a)) {
        readElsewhere.insert(memoryOf(kernel, buffer));
      } else if (!narrow(kernel.buffers[static_cast<size_t>(buffer)].dtype)) {
        return false;
      }
    }
  }
  for (int32_t b : stored) {
    if (readElsewhere.count(b)) return false;
  }
  kernel.pointsPerThread = kVectorLanes;
  return true;
}

}  // namespace smelt::codegen

// Calls every op family's registration function.
#include "ir/ops/register_ops.h"

namespace smelt {

void registerAllOps(OpRegistry& registry) {
  registerConstantOps(registry);
  registerUnaryOps(registry);
  registerBinaryOps(registry);
  registerElementwiseMiscOps(registry);
  registerReductionOps(registry);
  registerLinalgOps(registry);
  registerLayoutOps(registry);
  registerSlicingOps(registry);
  registerGatherScatterOps(registry);
  registerConvOps(registry);
  registerPoolingOps(registry);
  registerNormalizationOps(registry);
  registerSamplingOps(registry);
  registerGraphOps(registry);
  registerRandomOps(registry);
  registerFusedOps(registry);
  registerCollectiveOps(registry);
}

}  // namespace smelt

// (placeholder: this family's ops are being added)
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

namespace smelt {

void registerLayoutOps(OpRegistry& registry) {}

}  // namespace smelt

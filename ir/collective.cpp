// The process-wide collective group (ir/collective.h).
#include "ir/collective.h"

namespace smelt {

namespace {
std::shared_ptr<CollectiveGroup>& installed() {
  static std::shared_ptr<CollectiveGroup> group;
  return group;
}
}  // namespace

void setCollectiveGroup(std::shared_ptr<CollectiveGroup> group) { installed() = std::move(group); }

const std::shared_ptr<CollectiveGroup>& collectiveGroup() { return installed(); }

}  // namespace smelt

// joinMpiWorld for a build without MPI (mpi_group.h).
#include "runtime/distributed/mpi_group.h"

#include <cstdlib>

namespace smelt {

bool launchedByMpi() { return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE"); }

Expected<std::shared_ptr<CollectiveGroup>> joinMpiWorld(MpiWorldOptions) {
  return makeError("smelt was built without MPI (install libopenmpi-dev and configure again)");
}

}  // namespace smelt

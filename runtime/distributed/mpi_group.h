// The data-parallel ranks of an MPI job (Open MPI's mpirun, one process per rank, on one machine or several) as
// the process's collective group (ir/collective.h). Every MPI call runs on one communication thread, which
// initializes MPI; a collective that some rank does not reach within the timeout is an error naming the ranks
// that have not arrived (rank 0 hears each rank's arrival before every collective), never a hang.
//   SMELT_TRY(auto world, joinMpiWorld({.timeoutSeconds = 120}));   // also installs it: setCollectiveGroup
//   if (world->rank() == 0) ...
#pragma once

#include "ir/collective.h"

namespace smelt {

struct MpiWorldOptions {
  /// How long a collective may wait for every rank; $SMELT_COLLECTIVE_TIMEOUT (seconds) overrides it.
  double timeoutSeconds = 300;
};

/// Whether this process was started by an MPI launcher (mpirun sets OMPI_COMM_WORLD_SIZE or PMI_SIZE).
bool launchedByMpi();

/// Joins the job's MPI world and installs it as the collective group. An error when smelt was built without
/// MPI or MPI fails to start.
Expected<std::shared_ptr<CollectiveGroup>> joinMpiWorld(MpiWorldOptions options = {});

}  // namespace smelt

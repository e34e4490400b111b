// The data-parallel ranks of an MPI job (Open MPI's mpirun, one process per rank, on one machine or several) as
// the process's collective group (ir/collective.h). Every MPI call runs on one communication thread, which
// initializes MPI. Before every collective each rank tells rank 0 it arrived and waits for its answer: a rank
// that does not arrive within the timeout is an error on rank 0 naming it, a rank 0 that does not answer an
// error on the others; a collective that does not complete once all arrived ends its rank after the timeout (a
// watchdog, naming it: MPI cannot cancel one). Never a hang.
//   SMELT_TRY(auto world, joinMpiWorld({.timeoutSeconds = 120}));   // also installs it: setCollectiveGroup
//   if (world->rank() == 0) ...
#pragma once

#include "ir/collective.h"

namespace smelt {

struct MpiWorldOptions {
  /// How long a collective may wait for every rank; $SMELT_COLLECTIVE_TIMEOUT (seconds) overrides it.
  double timeoutSeconds = kDefaultCollectiveTimeoutSeconds;
  /// The communication thread's nice value (Linux; never below the process's own). The default, the process's
  /// priority: the thread sleeps between the short tests of a ring all-reduce while the step computes, and at nice
  /// 19 it did not run until the step waited (ResNet-18's step over 2.5 Gbit/s test hosts, 5 MB buckets: 403 ms
  /// at nice 19 against 310 at 0; docs/distributed.md).
  int communicationNice = 0;
};

/// Whether this process was started by an MPI launcher (mpirun sets OMPI_COMM_WORLD_SIZE or PMI_SIZE).
bool launchedByMpi();

/// Joins the job's MPI world and installs it as the collective group. An error when smelt was built without
/// MPI or MPI fails to start.
Expected<std::shared_ptr<CollectiveGroup>> joinMpiWorld(MpiWorldOptions options = {});

}  // namespace smelt

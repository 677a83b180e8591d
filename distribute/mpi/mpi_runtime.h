// The process's MPI environment for multi-worker runs (mpirun / srun). MPI is initialised on
// first use (with MPI_THREAD_SERIALIZED: replicas call it from their own threads, one at a time)
// and finalised at exit.
#pragma once

#include <cstdint>

namespace gantry::distribute {

struct MpiWorld {
  int rank = 0;
  int size = 1;
};
// Initialises MPI once and returns this process's place in MPI_COMM_WORLD.
MpiWorld mpi_world();

// How many processes of the job share this host (MPI_COMM_TYPE_SHARED), this one included.
int mpi_workers_on_this_host();

// Ends every process of the job with `code` (after a failure on this rank: the other ranks may
// be waiting in a collective). Returns only when MPI was never initialised.
void mpi_abort_job(int code);

}  // namespace gantry::distribute

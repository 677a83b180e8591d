#include "distribute/mpi/mpi_runtime.h"

#include <mpi.h>

#include <cstdlib>  // atexit
#include <mutex>

#include "base/error.h"

namespace gantry::distribute {

namespace {

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

MpiWorld mpi_world() {
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) return;
    int provided = 0;
    GANTRY_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) == MPI_SUCCESS,
                 "MPI: MPI_Init_thread failed");
    GANTRY_CHECK(provided >= MPI_THREAD_SERIALIZED, "MPI: expected thread support MPI_THREAD_SERIALIZED (",
                 MPI_THREAD_SERIALIZED, ") or better, found ", provided);
    std::atexit(finalize_at_exit);
  });
  MpiWorld world;
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world.size);
  return world;
}

int mpi_workers_on_this_host() {
  mpi_world();
  MPI_Comm host = MPI_COMM_NULL;
  GANTRY_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host) == MPI_SUCCESS,
               "MPI: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
  int size = 1;
  MPI_Comm_size(host, &size);
  MPI_Comm_free(&host);
  return size;
}

void mpi_abort_job(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace gantry::distribute

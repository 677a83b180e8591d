#include "distribute/communicator.h"

#include "base/error.h"

namespace gantry::distribute {

void throw_timeout(const char* collective, int rank, std::chrono::milliseconds timeout) {
  GANTRY_FAIL(collective, ": rank ", rank, " waited longer than the timeout of ", timeout.count(),
              " ms for the other ranks (a rank died or is stuck)");
}

void check_integer_reduction(ReduceKind kind, int rank) {
  GANTRY_CHECK(kind != ReduceKind::Mean, "all_reduce: rank ", rank, ": expected Sum or Max for int64 values, "
               "found Mean (an integer mean is not exact; reduce a Sum and divide)");
}

}  // namespace gantry::distribute

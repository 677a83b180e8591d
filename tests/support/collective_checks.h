// The closed-form check every communicator passes (in-process, hierarchical, MPI): usable from
// GoogleTest and from the mpirun worker, so it reports instead of asserting.
#pragma once

#include <string>

#include "distribute/communicator.h"

namespace gantry::testing {

// Every rank calls it together. Rank r contributes (r + 1) * (i + 1) at index i: all-reduce
// sum, mean and max over several lengths (0, odd, large; each three times), broadcast from
// every root, all-gather and barrier, against their closed forms, and every rank must hold the
// same bits. Returns the first mismatch, or "" when all agree.
std::string check_collectives(distribute::Communicator& comm);

// Every rank calls it together (Note [typed collectives]). int64: sums and maxima exact beyond
// float's 2^24 and double's 2^53, Mean refused with an error; int64 and byte broadcast from
// every root and all-gather against closed forms; broadcast_blob of sizes the receivers do not
// know (0, 1, odd, several chunks). Returns the first mismatch, or "" when all agree.
std::string check_typed_collectives(distribute::Communicator& comm);

}  // namespace gantry::testing

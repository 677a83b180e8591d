// Counts every heap allocation of the process (Note [counting allocations] in the .cpp), and
// optionally records where they come from (Note [allocation trace]). Linking
// allocation_counter.cpp into a binary interposes malloc & co and replaces operator new, so
// link it only into benchmarks (gan_bench), never into the library.
#pragma once

#include <cstdint>

namespace gantry::bench {

// Heap allocations so far (every malloc-family call, operator new included).
uint64_t heap_allocations();
// operator new calls so far (the C++ share of heap_allocations).
uint64_t operator_new_calls();

// GANTRY_ALLOC_TRACE=1 (and not "0") in the environment.
bool alloc_trace_requested();
// Starts recording a backtrace per counted allocation (Note [allocation trace]).
void start_alloc_trace();
// Stops recording and prints the call sites to stderr, per step over `steps` steps.
void report_alloc_trace(double steps);

}  // namespace gantry::bench

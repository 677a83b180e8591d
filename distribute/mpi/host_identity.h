// How a rank's host is named in errors: its name and its IPv4 addresses.
#pragma once

#include <string>

namespace gantry::distribute {

// "NAME, A.B.C.D[, ...]": MPI_Get_processor_name (the host name) and the IPv4 addresses of the
// host's interfaces that are up, loopback excluded (at most 3, in the kernel's order; none when
// there is no such interface). Cheap: no MPI traffic and no name lookups. The addresses are the
// host's, not necessarily the one Open MPI's TCP transport picked (btl_tcp_if_include narrows
// that); with one network per host they are the same.
std::string describe_this_host();

}  // namespace gantry::distribute

#include "distribute/mpi/host_identity.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <net/if.h>
#include <netinet/in.h>

namespace gantry::distribute {

std::string describe_this_host() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  std::string text = MPI_Get_processor_name(name, &length) == MPI_SUCCESS ? std::string(name, length) : "unknown host";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return text;
  int listed = 0;
  for (ifaddrs* a = list; a != nullptr && listed < 3; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char address[INET_ADDRSTRLEN] = {};
    if (inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr, address, sizeof address)) {
      text += ", ";
      text += address;
      ++listed;
    }
  }
  freeifaddrs(list);
  return text;
}

}  // namespace gantry::distribute

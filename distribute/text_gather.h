// Small texts (such as input pipeline positions) from every rank.
#pragma once

#include <string>
#include <vector>

#include "distribute/communicator.h"

namespace gantry::distribute {

// Every rank's `text`, in rank order. A collective: every rank calls it. The lengths travel as
// int64 and the texts as bytes, each padded to the longest.
std::vector<std::string> all_gather_text(Communicator& comm, const std::string& text);

}  // namespace gantry::distribute

// Small texts (such as input pipeline positions) from every rank, over a float communicator.
#pragma once

#include <string>
#include <vector>

#include "distribute/communicator.h"

namespace gantry::distribute {

// Every rank's `text`, in rank order. A collective: every rank calls it. Bytes travel as one
// float each (exact for 0..255), so it suits metadata of kilobytes, not bulk data.
std::vector<std::string> all_gather_text(Communicator& comm, const std::string& text);

}  // namespace gantry::distribute

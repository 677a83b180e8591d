#include "distribute/text_gather.h"

#include <algorithm>

namespace gantry::distribute {

std::vector<std::string> all_gather_text(Communicator& comm, const std::string& text) {
  float longest = static_cast<float>(text.size());
  comm.all_reduce(std::span<float>(&longest, 1), ReduceKind::Max);
  const size_t slot = static_cast<size_t>(longest) + 1;  // the length, then the bytes
  std::vector<float> mine(slot, 0.f), all(slot * comm.size());
  mine[0] = static_cast<float>(text.size());
  std::transform(text.begin(), text.end(), mine.begin() + 1,
                 [](char c) { return static_cast<float>(static_cast<unsigned char>(c)); });
  comm.all_gather(mine, all);
  std::vector<std::string> texts(comm.size());
  for (int r = 0; r < comm.size(); ++r) {
    const float* at = all.data() + slot * r;
    texts[r].resize(static_cast<size_t>(at[0]));
    std::transform(at + 1, at + 1 + texts[r].size(), texts[r].begin(),
                   [](float f) { return static_cast<char>(static_cast<unsigned char>(f)); });
  }
  return texts;
}

}  // namespace gantry::distribute

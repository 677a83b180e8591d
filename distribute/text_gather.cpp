#include "distribute/text_gather.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace gantry::distribute {

std::vector<std::string> all_gather_text(Communicator& comm, const std::string& text) {
  const size_t ranks = static_cast<size_t>(comm.size());
  const int64_t mine = static_cast<int64_t>(text.size());
  std::vector<int64_t> lengths(ranks);
  comm.all_gather(std::span<const int64_t>(&mine, 1), std::span<int64_t>(lengths));
  const size_t slot = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  std::vector<std::byte> padded(slot, std::byte{0}), all(slot * ranks);
  std::transform(text.begin(), text.end(), padded.begin(), [](char c) { return static_cast<std::byte>(c); });
  comm.all_gather(std::span<const std::byte>(padded), std::span<std::byte>(all));
  std::vector<std::string> texts(ranks);
  for (size_t r = 0; r < ranks; ++r) {
    texts[r].resize(static_cast<size_t>(lengths[r]));
    std::transform(all.begin() + slot * r, all.begin() + slot * r + texts[r].size(), texts[r].begin(),
                   [](std::byte b) { return static_cast<char>(b); });
  }
  return texts;
}

}  // namespace gantry::distribute

#include "hooks/inline_images.h"

#include "core/base64.h"
#include "core/file_io.h"

namespace gantry::hooks {

const std::string& InlineImages::data_url(const std::filesystem::path& png) {
  std::error_code ec;
  const auto modified = std::filesystem::last_write_time(png, ec);
  const uintmax_t size = ec ? 0 : std::filesystem::file_size(png, ec);
  if (ec) return none_;
  auto it = cache_.find(png);
  if (it != cache_.end() && it->second.modified == modified && it->second.size == size) return it->second.url;
  Entry entry{modified, size, "data:image/png;base64," + base64_encode(read_file(png.string()))};
  return cache_.insert_or_assign(png, std::move(entry)).first->second.url;
}

}  // namespace gantry::hooks

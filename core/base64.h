// Base64 (RFC 4648, standard alphabet, '=' padding), for images inlined into HTML as data: URLs.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace gantry {

std::string base64_encode(std::span<const uint8_t> bytes);

}  // namespace gantry

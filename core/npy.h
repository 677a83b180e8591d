// NumPy .npy files (format versions 1.0 and 2.0; 3.0 is read as 2.0 with a UTF-8 header):
// dtypes '<f4' (f32), '|u1' (u8) and '<i8' (i64), C order only. Reading validates the magic,
// version, header length, the header dict (exactly 'descr', 'fortran_order', 'shape'), the
// dtype and that the data size equals dtype size x shape; errors name the file. Writing uses
// version 1.0 (2.0 when the header does not fit) and is atomic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace gantry::nn {

Tensor parse_npy(const uint8_t* data, size_t size, const std::string& source);
Tensor read_npy(const std::string& path);

std::vector<uint8_t> serialize_npy(const Tensor& t);
void write_npy(const std::string& path, const Tensor& t);

}  // namespace gantry::nn

// A reader of TensorBoard event files for tests, independent of the writer: it parses the
// TFRecord framing itself, verifies both masked CRC-32Cs of every record (a mismatch or a torn
// record throws gantry::Error naming the file and the byte offset) and decodes each record as an
// Event with the generated protobuf classes.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "hooks/tensorboard_event.pb.h"

namespace gantry::testing {

using TbEvent = gantry::tensorboard_proto::Event;

// The data of every record in `path`, in file order.
std::vector<std::string> read_tfrecords(const std::filesystem::path& path);
// Every Event in `path`, in file order.
std::vector<TbEvent> read_events(const std::filesystem::path& path);

// The scalars of `events` as step -> tag -> value (a later value of the same step and tag wins).
std::map<int64_t, std::map<std::string, float>> scalars_by_step(const std::vector<TbEvent>& events);

}  // namespace gantry::testing

// EventFileWriter: one TensorBoard event file, `<dir>/events.out.tfevents.<time>.<host>.<n>`
// (TensorBoard reads every file whose name contains "tfevents", in name order: <time> is ten
// digits of Unix seconds, and <n> counts the event files already in `dir`, so a file started in
// the same second as the previous one still sorts after it). TFRecord records
// (hooks/tfrecord_writer.h) of `Event` messages (hooks/tensorboard_event.proto): the first is
// {wall_time, file_version: "brain.Event:2"}, then one Event per write_* call.
//
// The protobuf types stay inside the .cpp: this header is installed for plugins, the generated
// code is not.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hooks/value_histogram.h"

namespace gantry::hooks {

// An encoded image as TensorBoard's Summary.Image carries it.
struct EncodedImage {
  std::string png;  // the PNG file's bytes
  int height = 0;
  int width = 0;
  int channels = 0;  // 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA (TensorBoard's colorspace)
};

// The values of one summary Event; tags group in TensorBoard by their part before the first '/'.
struct SummaryValues {
  std::vector<std::pair<std::string, float>> scalars;
  std::vector<std::pair<std::string, EncodedImage>> images;
  std::vector<std::pair<std::string, ValueHistogram>> histograms;
  bool empty() const { return scalars.empty() && images.empty() && histograms.empty(); }
};

inline constexpr const char* kEventFileVersion = "brain.Event:2";

class EventFileWriter {
 public:
  // Creates `dir` if needed and starts a new file there (existing files are left as they are).
  explicit EventFileWriter(const std::filesystem::path& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // One Event {wall_time, step, summary} with every value.
  void write_summary(int64_t step, const SummaryValues& values);
  // One Event {wall_time, step, session_log: {status: START}}: TensorBoard then drops the events
  // it read earlier at steps >= `step` (a resumed run's restart marker).
  void write_session_start(int64_t step);
  // Makes the records written so far visible to readers.
  void flush();

  const std::filesystem::path& path() const;
  int64_t bytes_written() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The event files in `dir` in the order TensorBoard reads them (empty when there is none).
std::vector<std::filesystem::path> event_files_in(const std::filesystem::path& dir);

}  // namespace gantry::hooks

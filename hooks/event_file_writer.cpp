#include "hooks/event_file_writer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "base/error.h"
#include "hooks/tensorboard_event.pb.h"
#include "hooks/tfrecord_writer.h"

namespace gantry::hooks {

namespace proto = tensorboard_proto;

namespace {

double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::filesystem::path new_event_file_path(const std::filesystem::path& dir) {
  const auto seconds = static_cast<long long>(wall_time_now());
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%010lld", seconds);
  return dir / ("events.out.tfevents." + std::string(stamp) + "." + host_name() + "." +
                std::to_string(event_files_in(dir).size()));
}

}  // namespace

std::vector<std::filesystem::path> event_files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.is_regular_file() && entry.path().filename().string().find("tfevents") != std::string::npos)
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

struct EventFileWriter::Impl {
  explicit Impl(const std::filesystem::path& dir) : records(new_event_file_path(dir)) {}

  void write(const proto::Event& event) {
    event.SerializeToString(&buffer);
    records.write(buffer);
  }

  TfRecordWriter records;
  std::string buffer;  // reused by every event
};

EventFileWriter::EventFileWriter(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  impl_ = std::make_unique<Impl>(dir);
  proto::Event event;
  event.set_wall_time(wall_time_now());
  event.set_file_version(kEventFileVersion);
  impl_->write(event);
  flush();
}

EventFileWriter::~EventFileWriter() = default;

void EventFileWriter::write_summary(int64_t step, const SummaryValues& values) {
  proto::Event event;
  event.set_wall_time(wall_time_now());
  event.set_step(step);
  proto::Summary* summary = event.mutable_summary();
  for (const auto& [tag, value] : values.scalars) {
    proto::Summary::Value* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(value);
  }
  for (const auto& [tag, image] : values.images) {
    proto::Summary::Value* v = summary->add_value();
    v->set_tag(tag);
    proto::Summary::Image* out = v->mutable_image();
    out->set_height(image.height);
    out->set_width(image.width);
    out->set_colorspace(image.channels);
    out->set_encoded_image_string(image.png);
  }
  for (const auto& [tag, histogram] : values.histograms) {
    proto::Summary::Value* v = summary->add_value();
    v->set_tag(tag);
    proto::HistogramProto* out = v->mutable_histo();
    out->set_min(histogram.min);
    out->set_max(histogram.max);
    out->set_num(histogram.count);
    out->set_sum(histogram.sum);
    out->set_sum_squares(histogram.sum_squares);
    for (double limit : histogram.bucket_limits) out->add_bucket_limit(limit);
    for (double count : histogram.bucket_counts) out->add_bucket(count);
  }
  impl_->write(event);
}

void EventFileWriter::write_session_start(int64_t step) {
  proto::Event event;
  event.set_wall_time(wall_time_now());
  event.set_step(step);
  event.mutable_session_log()->set_status(proto::SessionLog::START);
  impl_->write(event);
}

void EventFileWriter::flush() { impl_->records.flush(); }

const std::filesystem::path& EventFileWriter::path() const { return impl_->records.path(); }

int64_t EventFileWriter::bytes_written() const { return impl_->records.bytes_written(); }

}  // namespace gantry::hooks

#include "gan/config/data_config.h"

#include <filesystem>

#include "core/json_reader.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "data/subset_dataset.h"
#include "data/mirrored_dataset.h"
#include "data/npy_dataset.h"
#include "data/transforms.h"
#include "data/zip_dataset.h"

namespace gantry::gan {

namespace {

constexpr ConfigKey kDataKeys[] = {
    string_key("type", R"("idx")", "the dataset's format").one_of("idx, image_folder, npy, zip").fixed(),
    string_key("images", "", "idx, npy: the images file").documented_default("required for idx/npy").fixed(),
    string_key("labels", R"("")", "idx, npy: the labels file").fixed(),
    string_key("root", "", "image_folder: the folder").documented_default("required for image_folder").fixed(),
    string_key("path", "", "zip: the ZIP archive").documented_default("required for zip"),
    string_key("on_decode_error", R"("error")", "image_folder: error, or skip (warn and count)").one_of("error, skip"),
    bool_key("use_labels", "false", "feed labels to a conditional GAN / ACGAN").fixed(),
    int_key("num_classes", R"({"false": 0, "true": 10})", "class count (idx/npy); written back for the others")
        .by("use_labels")
        .documented_default("10 with labels")
        .fixed(),
    int_key("max_examples", "0", "use only a fixed subset of N examples (0 = all)")
        .at_least(0)
        .expecting("0 (all) or a positive count"),
    bool_key("mirror", "false", "the dataset followed by an x-flipped copy of every image"),
    object_key("transforms", "{}", "image transforms, then scaled to [-1, 1] (data.transforms)").fixed(),
    int_key("shuffle_buffer", "10000", "0 = no shuffle; reproducible per epoch from train.seed").fixed(),
    int_key("num_parallel_calls", "2", "workers for decoding and transforms").at_least(1),
    int_key("prefetch", "2", "global batches read ahead (0 = none)"),
    array_key("image_shape", "", "[C, H, W] after the transforms; if given, must match the data")
        .documented_default("written back")
        .fixed(),
};

// Applied in this order, then the images are scaled to [-1, 1].
constexpr ConfigKey kTransformKeys[] = {
    int_key("channels", "0", "1, 3 or 4: gray, RGB, RGBA (0: as stored, alpha dropped)").fixed(),
    string_key("square", R"("none")", "center_crop: the centred square, pad: zero-padded to a square")
        .one_of("none, center_crop, pad")
        .fixed(),
    int_key("resize", "0", "square size (0 = none)").fixed(),
    int_key("center_crop", "0", "square size (0 = none)").fixed(),
    int_key("pad", "0", "pixels on every side").at_least(0).fixed(),
    bool_key("random_flip", "false", "random horizontal flips (Philox-seeded)").fixed(),
};

std::string existing_path(JsonReader& r, const std::string& key) {
  std::string path = r.read_string(key);
  GANTRY_CHECK(std::filesystem::exists(path), r.key_path(key), ": file or folder \"", path,
               "\" does not exist");
  return path;
}

// "" when absent or empty (the default written back), else an existing path.
std::string optional_path(JsonReader& r, const std::string& key) {
  std::string path = r.read_string(key);
  return path.empty() ? path : existing_path(r, key);
}

// A value the data determines, written back so tools can use the config without opening the
// data (gan_sample); a value already there must agree with the data.
void write_back_derived(JsonReader& r, const std::string& key, const nlohmann::json& derived) {
  const nlohmann::json& given = r.read(key, derived);
  GANTRY_CHECK(given == derived, r.key_path(key), ": the data gives ", derived.dump(), ", but the config says ",
               given.dump());
}

}  // namespace

std::vector<ConfigSection> data_config_sections() { return {{"data", kDataKeys}, {"data.transforms", kTransformKeys}}; }

DataConfig resolve_data_config(nlohmann::json& section, const std::string& path, int64_t global_batch, uint64_t seed) {
  JsonReader r(section, path, kDataKeys);
  std::string type = r.read_string("type");
  bool use_labels = r.read_bool("use_labels");
  // With a channel count asked for, image files keep their alpha so RGBA can become 4 channels;
  // without one they decode as stored, alpha dropped, as before.
  const bool channels_given = section.contains("transforms") && section["transforms"].is_object() &&
                              section["transforms"].value("channels", nlohmann::json(0)) != nlohmann::json(0);
  const data::ColorMode color = channels_given ? data::ColorMode::Unchanged : data::ColorMode::AsStored;
  data::DatasetPtr dataset;
  int64_t num_classes = 0;
  if (type == "idx") {
    std::string images = existing_path(r, "images");
    std::string labels = optional_path(r, "labels");
    GANTRY_CHECK(!use_labels || !labels.empty(), r.key_path("labels"), ": use_labels needs a labels file");
    dataset = data::load_idx_dataset(images, use_labels ? labels : "");
    num_classes = r.read_int("num_classes");
  } else if (type == "image_folder") {
    data::ImageFolderOptions o;
    std::string root = existing_path(r, "root");
    std::string on_error = r.read_string("on_decode_error");
    o.on_error = on_error == "skip" ? data::DecodeErrorPolicy::Skip : data::DecodeErrorPolicy::Error;
    o.color = color;
    auto folder = std::make_shared<data::ImageFolderDataset>(root, o);
    num_classes = use_labels ? folder->num_classes() : 0;
    write_back_derived(r, "num_classes", num_classes);
    dataset = folder;
  } else if (type == "zip") {
    data::ZipDatasetOptions o;
    o.color = color;
    auto zip = std::make_shared<data::ZipDataset>(existing_path(r, "path"), o);
    num_classes = use_labels ? zip->num_classes() : 0;
    write_back_derived(r, "num_classes", num_classes);
    dataset = zip;
  } else {
    std::string images = existing_path(r, "images");
    std::string labels = optional_path(r, "labels");
    dataset = data::load_npy_dataset(images, use_labels ? labels : "");
    num_classes = r.read_int("num_classes");
  }
  GANTRY_CHECK(!use_labels || dataset->has_labels(), r.key_path("use_labels"), ": the dataset has no labels");
  GANTRY_CHECK(!use_labels || num_classes > 0, r.key_path("num_classes"), ": expected a positive count");
  GANTRY_CHECK(dataset->size() > 0, r.path(), ": the dataset is empty");
  if (const int64_t max = r.read_int("max_examples"); max != 0) {
    if (max < dataset->size()) dataset = std::make_shared<data::SubsetDataset>(dataset, max);
  }
  if (r.read_bool("mirror")) dataset = std::make_shared<data::MirroredDataset>(dataset);

  // Transforms, in this order: channels, square, resize, center_crop, pad, random flip, scale to
  // [-1, 1].
  JsonReader t(r.read("transforms"), r.key_path("transforms"), kTransformKeys);
  std::vector<data::Transform> steps;
  data::Example probe = dataset->get(0);
  int64_t c = probe.image.size(0), h = probe.image.size(1), w = probe.image.size(2);
  if (int64_t ch = t.read_int("channels"); ch != 0) {
    GANTRY_CHECK(ch == 1 || ch == 3 || ch == 4, t.key_path("channels"), ": expected 1, 3 or 4, found ", ch);
    steps.push_back(data::transforms::convert_channels(ch));
    c = ch;
  }
  if (std::string square = t.read_string("square"); square != "none") {
    const bool crop = square == "center_crop";
    steps.push_back(data::transforms::to_square(crop ? data::SquareMode::CenterCrop : data::SquareMode::Pad));
    h = w = crop ? std::min(h, w) : std::max(h, w);
  }
  if (int64_t size = t.read_int("resize"); size != 0) {
    steps.push_back(data::transforms::resize(size, size));
    h = w = size;
  }
  if (int64_t size = t.read_int("center_crop"); size != 0) {
    steps.push_back(data::transforms::center_crop(size, size));
    h = w = size;
  }
  if (int64_t p = t.read_int("pad"); p != 0) {
    steps.push_back(data::transforms::pad(p));
    h += 2 * p;
    w += 2 * p;
  }
  if (t.read_bool("random_flip")) steps.push_back(data::transforms::random_horizontal_flip(seed));
  steps.push_back(data::transforms::scale_to_signed_unit());
  t.finish();

  const int64_t shuffle = r.read_int("shuffle_buffer");
  const int64_t parallel = r.read_int("num_parallel_calls");
  const int64_t prefetch = r.read_int("prefetch");
  GANTRY_CHECK(global_batch <= dataset->size(), r.path(), ": the dataset has ", dataset->size(),
               " examples, fewer than one global batch of ", global_batch);
  auto sharded = [dataset, shuffle, seed, parallel, prefetch, transform = data::transforms::compose(std::move(steps))](
                     int64_t shards, int64_t index, int64_t batch) {
    data::Pipeline p(dataset);
    if (shuffle > 0) p = p.shuffle(shuffle, seed);
    if (shards > 1) p = p.shard(shards, index);
    p = p.repeat().map(transform, static_cast<int>(parallel)).batch(batch, true);
    if (prefetch > 0) p = p.prefetch(prefetch);
    return p;
  };
  write_back_derived(r, "image_shape", nlohmann::json::array({c, h, w}));
  r.finish();
  return {sharded(1, 0, global_batch), sharded, {{c, h, w}, num_classes}};
}

DataShape read_data_shape(const nlohmann::json& data) {
  DataShape s;
  GANTRY_CHECK(data.contains("image_shape"), "data.image_shape: missing (configs written before it was added "
               "need the dataset files to be present)");
  const nlohmann::json& shape = data.at("image_shape");
  GANTRY_CHECK(shape.is_array() && shape.size() == 3, "data.image_shape: expected [C, H, W], found ", describe_json(shape));
  for (const nlohmann::json& d : shape)
    GANTRY_CHECK(d.is_number_integer() && d.get<int64_t>() > 0, "data.image_shape: expected positive sizes, found ",
                 describe_json(shape));
  s.image_shape = shape.get<std::vector<int64_t>>();
  const nlohmann::json& classes = data.contains("num_classes") ? data.at("num_classes") : nlohmann::json(0);
  GANTRY_CHECK(classes.is_number_integer() && classes.get<int64_t>() >= 0, "data.num_classes: expected a "
               "non-negative integer, found ", describe_json(classes));
  const nlohmann::json& labels = data.contains("use_labels") ? data.at("use_labels") : nlohmann::json(false);
  GANTRY_CHECK(labels.is_boolean(), "data.use_labels: expected true or false, found ", describe_json(labels));
  s.num_classes = labels.get<bool>() ? classes.get<int64_t>() : 0;
  return s;
}

}  // namespace gantry::gan

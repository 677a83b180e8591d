// gantry._gantry: the C++ library's entry points for the Python package (python/gantry/, docs/
// python.md). Each binding calls what the apps call (jobs/), so results are the apps' bit for
// bit; gantry/__init__.py builds the user-facing API on top.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <opencv2/core.hpp>

#include "arrays.h"
#include "base/threads.h"
#include "core/finite_values.h"
#include "core/json_file.h"
#include "data/image_grid.h"
#include "gan/checkpoint/checkpoint_files.h"
#include "hooks/sweep_page.h"
#include "jobs/run_generator.h"
#include "jobs/run_metrics.h"
#include "training.h"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace gantry::python {
namespace {

jobs::SampleOptions sample_options(const std::vector<int64_t>& labels, int64_t batch, float psi, int64_t cutoff,
                                   const std::string& noise_mode) {
  jobs::SampleOptions o;
  o.labels = labels;
  o.batch = batch;
  o.truncation_psi = psi;
  o.truncation_cutoff = cutoff;
  o.noise_mode = nn::parse_noise_mode(noise_mode, "noise_mode");
  return o;
}

// Images for the metrics: an array (N, C, H, W) in [-1, 1], or a path (.npy or an image folder)
// read as gan_eval reads it, at most `max_count` images (0: all); both checked alike
// (metrics::check_image_set), errors naming `argument`.
jobs::ImageSet image_set(const py::object& images, int64_t max_count, const char* argument) {
  if (images.is_none()) return {};
  if (py::isinstance<py::str>(images) || py::hasattr(images, "__fspath__")) {
    const std::string path = py::str(py::module_::import("os").attr("fspath")(images));
    py::gil_scoped_release release;
    return jobs::image_set_from_path(path, max_count, argument, jobs::ArgumentStyle::Python);
  }
  return jobs::image_set_from_array(from_numpy(images.cast<FloatArray>()), max_count, argument,
                                    jobs::ArgumentStyle::Python);
}

jobs::MetricOptions metric_options(int64_t num, int64_t num_real, int64_t batch, uint64_t seed, bool ema,
                                   int64_t kid_subsets, int64_t kid_subset_size, int64_t dc_k,
                                   const std::string& cache_dir) {
  jobs::MetricOptions o;
  o.num = num;
  o.num_real = num_real;
  o.batch = batch;
  o.seed = seed;
  o.ema = ema;
  o.kid_subsets = kid_subsets;
  o.kid_subset_size = kid_subset_size;
  o.dc_k = dc_k;
  o.cache_dir = cache_dir;
  o.style = jobs::ArgumentStyle::Python;
  jobs::check_metric_options(o);  // before a negative num or num_real could mean "all"
  return o;
}

py::object json_to_python(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

}  // namespace
}  // namespace gantry::python

PYBIND11_MODULE(_gantry, m) {
  using namespace gantry;
  using namespace gantry::python;
  m.doc() = "Gantry's C++ library, as the gantry package uses it (see gantry/__init__.py)";
  py::register_exception<Error>(m, "GantryError", PyExc_ValueError);

  m.def("set_num_threads", &set_num_threads, py::arg("n"), "The CPU thread budget of the process (as GANTRY_NUM_THREADS).");
  m.def("num_threads", [] { return num_threads(); });

  py::class_<jobs::RunGenerator>(m, "RunGenerator")
      .def(py::init([](const fs::path& model_dir, std::optional<int64_t> step, bool ema) {
             py::gil_scoped_release release;
             return new jobs::RunGenerator(model_dir, step, ema, nullptr);
           }),
           py::arg("model_dir"), py::arg("step") = py::none(), py::arg("ema") = false)
      .def("sample",
           [](jobs::RunGenerator& g, int64_t n, uint64_t seed, const std::vector<int64_t>& labels, int64_t batch,
              float psi, int64_t cutoff, const std::string& noise_mode) {
             const jobs::SampleOptions options = sample_options(labels, batch, psi, cutoff, noise_mode);
             Tensor t;
             {
               py::gil_scoped_release release;
               t = g.sample(n, seed, options);
             }
             return to_numpy(t);
           },
           py::arg("n"), py::arg("seed") = 0, py::arg("labels") = std::vector<int64_t>{}, py::arg("batch") = 256,
           py::arg("truncation_psi") = 1.0f, py::arg("truncation_cutoff") = 0, py::arg("noise_mode") = "random")
      .def("sample_from",
           [](jobs::RunGenerator& g, const FloatArray& noise, const std::vector<int64_t>& labels, int64_t batch,
              float psi, int64_t cutoff, const std::string& noise_mode) {
             const jobs::SampleOptions options = sample_options(labels, batch, psi, cutoff, noise_mode);
             Tensor z = from_numpy(noise), t;
             {
               py::gil_scoped_release release;
               t = g.sample_from(z, options);
             }
             return to_numpy(t);
           },
           py::arg("noise"), py::arg("labels") = std::vector<int64_t>{}, py::arg("batch") = 256,
           py::arg("truncation_psi") = 1.0f, py::arg("truncation_cutoff") = 0, py::arg("noise_mode") = "random")
      .def_property_readonly("noise_shape",
                             [](const jobs::RunGenerator& g) {
                               return std::vector<int64_t>(g.noise_shape().begin(), g.noise_shape().end());
                             })
      .def_property_readonly("num_classes", &jobs::RunGenerator::num_classes)
      .def_property_readonly("checkpoint", &jobs::RunGenerator::checkpoint);

  m.def("checkpoints",
        [](const fs::path& model_dir) {
          std::vector<std::pair<int64_t, fs::path>> out;
          if (!fs::exists(gan::checkpoint_dir(model_dir))) return out;
          for (const fs::path& p : jobs::run_checkpoints(model_dir, std::nullopt, true, nullptr))
            out.emplace_back(*gan::checkpoint_step(p.filename().string()), p);
          return out;
        },
        py::arg("model_dir"), "(step, path) of every checkpoint file, oldest first.");
  m.def("latest_checkpoint",
        [](const fs::path& model_dir) -> std::optional<fs::path> { return gan::latest_checkpoint(model_dir, nullptr); },
        py::arg("model_dir"), "The newest checkpoint that reads back (a torn newest one falls back), or None.");
  m.def("read_checkpoint",
        [](const fs::path& path) {
          gan::CheckpointFile file = gan::read_checkpoint_file(path);
          py::dict tensors;
          for (auto& [name, t] : file.contents.tensors)
            if (t.dtype() == DType::F32) tensors[py::str(name)] = to_numpy(t);
          py::dict metadata;
          for (auto& [k, v] : file.contents.metadata) metadata[py::str(k)] = v;
          return py::make_tuple(file.step, tensors, metadata);
        },
        py::arg("path"), "(step, {name: array}, metadata) of a checkpoint file (f32 tensors).");

  m.def("grid",
        [](const FloatArray& images, const std::string& path, int64_t columns, int64_t padding) {
          Tensor t = from_numpy(images);
          GANTRY_CHECK(t.dim() == 4 && (t.size(1) == 1 || t.size(1) == 3), "grid: expected images (N, 1 or 3, H, W), found ",
                       t.shape().str());
          check_finite(t, "grid: images");
          data::GridOptions options;
          options.columns = columns;
          options.padding = padding;
          if (!path.empty()) data::write_image_grid(path, t, options);
          cv::Mat grid = data::make_image_grid(t, options);
          if (grid.channels() == 3) {  // OpenCV's BGR to RGB for the caller
            cv::Mat rgb;
            cv::Mat channels[3];
            cv::split(grid, channels);
            std::swap(channels[0], channels[2]);
            cv::merge(channels, 3, rgb);
            grid = rgb;
          }
          std::vector<py::ssize_t> shape{grid.rows, grid.cols};
          if (grid.channels() == 3) shape.push_back(3);
          py::array_t<uint8_t> out(shape);
          std::memcpy(out.mutable_data(), grid.data, grid.total() * grid.elemSize());
          return out;
        },
        py::arg("images"), py::arg("path") = "", py::arg("columns") = 0, py::arg("padding") = 2);

  m.def("compare_image_sets",
        [](const py::object& real, const py::object& fake, const std::string& network, const std::string& metrics,
           int64_t num, int64_t num_real, int64_t batch, int64_t kid_subsets, int64_t kid_subset_size, int64_t dc_k) {
          const metrics::MetricSelection selection = metrics::MetricSelection::parse(metrics, "metrics");
          const jobs::MetricOptions options =
              metric_options(num, num_real, batch, 0, false, kid_subsets, kid_subset_size, dc_k, "");
          std::unique_ptr<metrics::FeatureNetwork> net = jobs::feature_network_from_file(network, "network");
          const jobs::ImageSet fake_images = image_set(fake, num, "fake");
          const jobs::ImageSet real_images =
              selection.needs_real() ? image_set(real, num_real > 0 ? num_real : num, "real") : jobs::ImageSet{};
          nlohmann::json row;
          {
            py::gil_scoped_release release;
            row = jobs::compare_image_sets(real_images, fake_images, selection, *net, options);
          }
          return json_to_python(row);
        },
        py::arg("real"), py::arg("fake"), py::arg("network"), py::arg("metrics") = "fid", py::arg("num") = 0,
        py::arg("num_real") = 0, py::arg("batch") = 250, py::arg("kid_subsets") = 100, py::arg("kid_subset_size") = 1000,
        py::arg("dc_k") = 5);

  m.def("evaluate_run",
        [](const fs::path& model_dir, const std::string& network, const std::string& metrics,
           std::optional<int64_t> step,
           bool all_steps, int64_t num, int64_t num_real, int64_t batch, uint64_t seed, bool ema, int64_t kid_subsets,
           int64_t kid_subset_size, int64_t dc_k, const std::string& cache_dir) {
          const metrics::MetricSelection selection = metrics::MetricSelection::parse(metrics, "metrics");
          std::unique_ptr<metrics::FeatureNetwork> net = jobs::feature_network_from_file(network, "network");
          std::vector<nlohmann::json> rows;
          {
            py::gil_scoped_release release;
            rows = jobs::evaluate_run(model_dir, jobs::run_checkpoints(model_dir, step, all_steps, nullptr), selection, *net,
                                      metric_options(num, num_real, batch, seed, ema, kid_subsets, kid_subset_size,
                                                     dc_k, cache_dir));
          }
          py::list out;
          for (const nlohmann::json& row : rows) out.append(json_to_python(row));
          return out;
        },
        py::arg("model_dir"), py::arg("network"), py::arg("metrics") = "fid", py::arg("step") = py::none(),
        py::arg("all_steps") = false, py::arg("num") = 10000, py::arg("num_real") = 0, py::arg("batch") = 250,
        py::arg("seed") = 0, py::arg("ema") = false, py::arg("kid_subsets") = 100, py::arg("kid_subset_size") = 1000,
        py::arg("dc_k") = 5, py::arg("cache_dir") = "");

  m.def("render_sweep_page",
        [](const std::string& summary_json) {
          return hooks::render_sweep_page(hooks::parse_sweep_record(nlohmann::json::parse(summary_json)));
        },
        py::arg("summary_json"), "The sweep page (hooks/sweep_page.h) of a sweep's summary.json text.");

  py::class_<TrainArguments>(m, "TrainArguments")
      .def(py::init<>())
      .def_readwrite("config_json", &TrainArguments::config_json)
      .def_readwrite("source", &TrainArguments::source)
      .def_readwrite("overrides", &TrainArguments::overrides)
      .def_readwrite("model_dir", &TrainArguments::model_dir)
      .def_readwrite("steps", &TrainArguments::steps)
      .def_readwrite("devices", &TrainArguments::devices)
      .def_readwrite("resume", &TrainArguments::resume)
      .def_readwrite("time_limit", &TrainArguments::time_limit)
      .def_readwrite("callbacks", &TrainArguments::callbacks)
      .def_readwrite("stdout", &TrainArguments::stdout_target);
  m.def("train", &train, py::arg("arguments"));
}

#include "training.h"

#include <pybind11/stl.h>

#include <atomic>
#include <csignal>
#include <sstream>

#include "base/error.h"
#include "gan/estimator/gan_estimator.h"
#include "hooks/stop_signals.h"
#include "jobs/training_run.h"
#include "python_stream.h"

namespace gantry::python {

namespace py = pybind11;

namespace {

py::dict results_dict(const gan::StepResults& r) {
  py::dict d;
  d["step"] = r.step;
  d["discriminator_loss"] = r.discriminator_loss;
  d["generator_loss"] = r.generator_loss;
  d["discriminator_components"] = r.discriminator_components;
  d["generator_components"] = r.generator_components;
  d["statistics"] = r.statistics;
  d["global_batch"] = r.global_batch;
  d["skipped_updates"] = r.skipped_updates;
  d["loss_scale_overflows"] = r.loss_scale_overflows;
  d["images_per_second"] = r.images_per_second;
  if (r.augment) d["augment_p"] = r.augment_p;
  d["seconds"] = r.time.total;
  return d;
}

// Runs the Python callbacks after each step, and turns Ctrl-C into a polite stop.
class CallbackHook final : public gan::Hook {
 public:
  CallbackHook(py::list callbacks, std::atomic<int>& stop_signal) : callbacks_(std::move(callbacks)), stop_(stop_signal) {}
  ~CallbackHook() override {
    py::gil_scoped_acquire gil;
    callbacks_ = py::list();
  }

  void after_step(gan::GanEstimator& estimator, const gan::StepResults& r) override {
    py::gil_scoped_acquire gil;
    // Python's SIGINT handler only sets a flag while the GIL is released: look at it here.
    if (PyErr_CheckSignals() != 0) {
      if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
        PyErr_Clear();
        stop_ = SIGINT;  // the GracefulStopHook stops politely at this step's end
      } else {
        error_ = std::make_unique<py::error_already_set>();
        estimator.request_stop();
        return;
      }
    }
    last_step_ = r.step;
    if (error_ || len(callbacks_) == 0) return;
    py::dict results = results_dict(r);
    for (py::handle callback : callbacks_) {
      try {
        py::object answer = callback(results);
        if (!answer.is_none() && answer.cast<bool>()) estimator.request_stop();
      } catch (py::error_already_set& e) {
        if (e.matches(PyExc_KeyboardInterrupt)) {  // Ctrl-C while a callback ran: the same polite stop
          stop_ = SIGINT;
          return;
        }
        error_ = std::make_unique<py::error_already_set>(std::move(e));
        estimator.request_stop();
        return;
      }
    }
  }

  int64_t last_step() const { return last_step_; }

  // The exception a callback raised, if any (with the GIL held).
  std::unique_ptr<py::error_already_set>& error() { return error_; }

 private:
  py::list callbacks_;
  std::atomic<int>& stop_;
  std::unique_ptr<py::error_already_set> error_;
  int64_t last_step_ = -1;
};

}  // namespace

py::dict train(const TrainArguments& args) {
  jobs::TrainingRequest request;
  try {
    request.config = nlohmann::json::parse(args.config_json);
  } catch (const nlohmann::json::exception& e) {
    GANTRY_FAIL(args.source, ": not valid JSON: ", e.what());
  }
  request.source = args.source;
  request.overrides = args.overrides;
  request.model_dir = args.model_dir;
  request.steps = args.steps;
  request.devices = args.devices;
  request.resume = args.resume;
  request.time_limit = args.time_limit;
  request.style = jobs::ArgumentStyle::Python;
  PythonStreamBuf out_buf(args.stdout_target.is_none() ? py::module_::import("sys").attr("stdout") : args.stdout_target);
  std::ostream out(&out_buf);
  std::ostringstream err;
  request.out = &out;
  request.err = &err;
  auto stop = std::make_shared<std::atomic<int>>(0);
  request.stop_signal = [stop] { return stop->load(); };
  auto hook = std::make_shared<CallbackHook>(args.callbacks, *stop);
  request.extra_hooks = {hook};

  int code;
  {
    py::gil_scoped_release release;
    code = jobs::run_training(request);
    out.flush();
  }
  if (hook->error()) {
    py::error_already_set e = std::move(*hook->error());
    hook->error().reset();
    throw e;
  }
  if (code == 2) GANTRY_FAIL(err.str());
  if (code == 1) throw std::runtime_error(err.str());
  py::dict result;
  result["status"] = code == hooks::kStoppedExitCode ? "stopped" : "done";
  result["exit_code"] = code;
  if (hook->last_step() >= 0) result["step"] = hook->last_step();
  return result;
}

}  // namespace gantry::python

// gantry.train: jobs::run_training in-process, the GIL released while it trains. Python callbacks
// run after each step (with the GIL) and see its results; one returning True, or Ctrl-C
// (KeyboardInterrupt), stops the run politely with a checkpoint of the step reached, as SIGINT
// does gan_train.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

namespace gantry::python {

struct TrainArguments {
  std::string config_json;  // the config as JSON text
  std::string source;       // its file name, or "<dict>"
  std::vector<std::string> overrides;
  std::string model_dir;
  std::optional<int64_t> steps;  // None: the config's (jobs::TrainingRequest checks a value)
  std::string devices;
  std::string resume = "auto";
  std::optional<double> time_limit;
  pybind11::list callbacks;
  pybind11::object stdout_target = pybind11::none();  // None: sys.stdout
};

// {"status": "done" | "stopped", "step": N, "reason": ...}; config errors raise GantryError with
// the message gan_train would print; an exception in a callback stops the run and is re-raised.
pybind11::dict train(const TrainArguments& args);

}  // namespace gantry::python

// A std::ostream that writes to Python's sys.stdout (or any object with write()), a line at a
// time, taking the GIL for each write: a training run's log lines then show in a notebook's
// cell, where the process's own stdout does not.
#pragma once

#include <pybind11/pybind11.h>

#include <ostream>
#include <streambuf>
#include <string>

namespace gantry::python {

class PythonStreamBuf final : public std::streambuf {
 public:
  explicit PythonStreamBuf(pybind11::object target) : target_(std::move(target)) {}
  ~PythonStreamBuf() override;

 protected:
  int_type overflow(int_type c) override;
  int sync() override;

 private:
  void flush_line();
  pybind11::object target_;
  std::string line_;
};

}  // namespace gantry::python

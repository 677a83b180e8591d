#include "python_stream.h"

namespace gantry::python {

namespace py = pybind11;

PythonStreamBuf::~PythonStreamBuf() {
  py::gil_scoped_acquire gil;
  flush_line();
  target_ = py::object();  // released with the GIL held
}

PythonStreamBuf::int_type PythonStreamBuf::overflow(int_type c) {
  if (c == traits_type::eof()) return traits_type::not_eof(c);
  line_.push_back(static_cast<char>(c));
  if (c == '\n') sync();
  return c;
}

int PythonStreamBuf::sync() {
  py::gil_scoped_acquire gil;
  flush_line();
  return 0;
}

void PythonStreamBuf::flush_line() {
  if (line_.empty()) return;
  try {
    target_.attr("write")(line_);
    if (py::hasattr(target_, "flush")) target_.attr("flush")();
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("gantry: writing the run's log");
  }
  line_.clear();
}

}  // namespace gantry::python

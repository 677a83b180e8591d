// Error type and checks. Every error says what was expected and what was found.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace gantry {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
}  // namespace detail

}  // namespace gantry

// GANTRY_CHECK(cond, "op: expected ", a, ", found ", b) throws gantry::Error when cond is false.
#define GANTRY_CHECK(cond, ...)                                              \
  do {                                                                       \
    if (!(cond)) throw ::gantry::Error(::gantry::detail::concat(__VA_ARGS__)); \
  } while (0)

#define GANTRY_FAIL(...) throw ::gantry::Error(::gantry::detail::concat(__VA_ARGS__))

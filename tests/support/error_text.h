// What an error says: tests that check an error's message (the key path, what was expected and
// what was found) catch it with error_of.
#pragma once

#include <functional>
#include <string>

#include "base/error.h"

namespace gantry::testing {

// The message of the gantry::Error `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace gantry::testing

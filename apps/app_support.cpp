#include "apps/app_support.h"

#include <iostream>

namespace gantry::apps {

int run_guarded(const char* app, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::cerr << app << ": error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gantry::apps

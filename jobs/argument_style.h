// How the caller of a job names its arguments, so a refusal names the argument as its user wrote
// it: gan_train's and gan_eval's flags ("--num-real") or the Python package's keywords
// ("num_real"). The apps and the Python module call the same jobs/ functions, which validate the
// arguments once, for both.
#pragma once

#include <string>
#include <string_view>

namespace gantry::jobs {

enum class ArgumentStyle { CommandLine, Python };

// "num_real" as `style` writes it: "--num-real" or "num_real".
inline std::string argument_name(std::string_view name, ArgumentStyle style) {
  if (style == ArgumentStyle::Python) return std::string(name);
  std::string flag = "--";
  for (char c : name) flag += c == '_' ? '-' : c;
  return flag;
}

}  // namespace gantry::jobs

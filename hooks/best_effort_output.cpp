#include "hooks/best_effort_output.h"

#include <ostream>

#include "base/error.h"

namespace gantry::hooks {

bool BestEffortOutput::write(const std::filesystem::path& file, FunctionRef<void()> write) {
  try {
    write();
  } catch (const Error& e) {
    report(file, false, e.what());
    return false;
  } catch (const std::filesystem::filesystem_error& e) {
    report(file, false, e.what());
    return false;
  }
  report(file, true, "");
  return true;
}

void BestEffortOutput::report(const std::filesystem::path& file, bool ok, const std::string& error) {
  const std::string name = file.string();
  if (ok) {
    if (failing_.erase(name) > 0 && log_) *log_ << "note: writing " << name << " works again" << std::endl;
    return;
  }
  if (!failing_.insert(name).second) return;
  if (log_)
    *log_ << "warning: could not write " << name << " (" << error << "); training goes on without it "
          << "(checkpoints are still required)" << std::endl;
}

}  // namespace gantry::hooks

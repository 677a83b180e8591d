// Where this build's files are: the golden data, the source tree, the apps, the plugins and the
// MPI launcher. They come from tests/support/test_paths.cpp.in, which CMake fills in per build
// directory, so only that one generated source carries absolute paths. As compile definitions
// on every test source they would defeat ccache for a clone in another directory
// (CCACHE_BASEDIR rewrites the paths of -I options, never the values of -D ones).
#pragma once

#include <string>

namespace gantry::testing {

std::string golden_dir();  // tests/golden/data
std::string source_dir();  // the repository root (configs/, docs/)

// The apps and plugins the e2e and browser tests run (empty where the build has none).
std::string gan_train_app();
std::string gan_sample_app();
std::string gan_devices_app();
std::string gan_report_app();
std::string gan_bench_app();
std::string gan_eval_app();
std::string gan_classifier_app();
std::string gan_dataset_app();
std::string example_plugin();    // plugins/example
std::string wrong_api_plugin();  // a plugin reporting another plugin API version

// mpirun and tests/mpi/mpi_worker.cpp; empty without GANTRY_WITH_MPI, where the tests that use
// them are not compiled.
std::string mpiexec();
std::string mpi_worker();

}  // namespace gantry::testing

# Precompiled headers (GANTRY_PCH, on by default): the standard headers nearly every source
# includes, plus nlohmann/json where most of a target's sources include it and gtest in the test
# executables, are parsed once per target instead of once per source. Measured at -O3 (gcc 12):
# 1.0-1.1 s less per source that includes only standard headers, 2.0-3.3 s less per source that
# includes json.hpp; building a target's header costs 5-8 s once.
#
# A precompiled header hides a missing #include (a source compiles because the header made the
# standard header visible). The ThreadSanitizer stage (scripts/check_sanitizers thread) builds
# with -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON and stays the check that every source includes what
# it uses (docs/hardening.md).
#
# Through ccache (.ci/run): CCACHE_SLOPPINESS must hold pch_defines,time_macros (without them
# ccache does not cache a source compiled with a precompiled header) and include_file_mtime,
# include_file_ctime (else a source compiled within a second of its .gch being written is "too
# new" to cache). CMake passes GCC's header with -include <build>/.../cmake_pch.hxx, a path that
# CCACHE_BASEDIR makes relative, so a clone in another directory still hits.
#
# GCC only. With clang (the ASan + UBSan build) CMake 3.25 passes the header as
# -Xclang -include -Xclang <absolute path>, which ccache does not rewrite: every source with a
# precompiled header then misses in a clone at another path (checked on a small project: none of
# them hit), i.e. a warm CI would rebuild most of that build. Passing the header as -include
# instead makes them hit, but clang's driver then also picks up the old .pch when the header is
# rebuilt in an existing build directory ("PCH file ... is out of date"). So clang builds keep no
# precompiled header (and need no -Xclang -fno-pch-timestamp, which ccache requires with one).
option(GANTRY_PCH "Precompile the standard, nlohmann/json and gtest headers per target (GCC)" ON)

# The 27 standard headers most included by the sources (counted December 2026).
set(GANTRY_PCH_STD <algorithm> <array> <atomic> <chrono> <cmath> <cstddef> <cstdint> <cstring>
  <filesystem> <fstream> <functional> <iostream> <limits> <map> <memory> <mutex> <optional> <set>
  <span> <sstream> <string> <string_view> <thread> <unordered_map> <utility> <variant> <vector>)
# The targets where more than 35 % of the sources include json.hpp (directly or through a
# header): below that, json in the header costs the other sources more (0.9 s each) than it saves.
set(GANTRY_PCH_JSON_TARGETS gantry_augment gantry_losses gantry_gan gantry_metrics gantry_hooks
  gantry_jobs gantry_python gantry_test_support gantry_unit_tests gantry_distributed_tests
  gantry_e2e_tests gantry_golden_tests)

# gantry_precompile(TARGET [GTEST]): TARGET's C++ sources (never CUDA ones) get the standard
# headers, json.hpp if TARGET is in GANTRY_PCH_JSON_TARGETS, and gtest/gtest.h with GTEST.
function(gantry_precompile target)
  cmake_parse_arguments(P "GTEST" "" "" ${ARGN})
  if(NOT GANTRY_PCH OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")  # GCC only: see above
    return()
  endif()
  # A target of fewer than 4 C++ sources would spend more on its header than it saves.
  get_target_property(sources ${target} SOURCES)
  list(FILTER sources INCLUDE REGEX "\\.cpp$")
  list(LENGTH sources count)
  if(count LESS 4)
    return()
  endif()
  set(headers ${GANTRY_PCH_STD})
  if(target IN_LIST GANTRY_PCH_JSON_TARGETS)
    list(APPEND headers <nlohmann/json.hpp>)
  endif()
  if(P_GTEST)
    list(APPEND headers <gtest/gtest.h>)
  endif()
  # Inside a generator expression a header's closing angle bracket must be $<ANGLE-R>.
  string(REPLACE ">" "$<ANGLE-R>" headers "${headers}")
  target_precompile_headers(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${headers}>")
endfunction()

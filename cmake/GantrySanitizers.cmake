# GANTRY_SANITIZE: build every target (libraries, apps, plugins, tests) with these sanitizers,
# e.g. "address,undefined" or "thread" (docs/hardening.md; scripts/check_sanitizers runs the
# stages). Applied before any target is defined, so nothing is left uninstrumented but the
# system libraries (oneDNN, OpenMP, OpenCV, ...). Sanitizer builds are optimised at -O1 with
# frame pointers and debug info, so reports have usable stacks and the tests still run fast.
#
# GANTRY_FUZZ: libFuzzer targets in tests/fuzz (clang only). Adds coverage instrumentation
# (-fsanitize=fuzzer-no-link) to every target so the fuzzers see the libraries' branches; use
# it together with GANTRY_SANITIZE=address,undefined so a fuzzer's crash is a sanitizer report.
set(GANTRY_SANITIZE "" CACHE STRING "Sanitizers for every target: address,undefined | thread | empty")
option(GANTRY_FUZZ "Build the libFuzzer targets in tests/fuzz (clang)" OFF)

if(GANTRY_SANITIZE)
  if(NOT GANTRY_SANITIZE MATCHES "^(address|undefined|thread|leak)(,(address|undefined|thread|leak))*$")
    message(FATAL_ERROR "GANTRY_SANITIZE: expected a comma-separated list of address, undefined, "
                        "thread, leak (e.g. address,undefined), found '${GANTRY_SANITIZE}'")
  endif()
  if(GANTRY_SANITIZE MATCHES "thread" AND GANTRY_SANITIZE MATCHES "address|leak")
    message(FATAL_ERROR "GANTRY_SANITIZE: thread cannot be combined with address or leak, "
                        "found '${GANTRY_SANITIZE}'")
  endif()
  # -fno-sanitize-recover: undefined behaviour fails the test instead of printing and going on.
  add_compile_options(-fsanitize=${GANTRY_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -g -O1)
  add_link_options(-fsanitize=${GANTRY_SANITIZE})
endif()

if(GANTRY_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GANTRY_FUZZ=ON needs clang (libFuzzer), found ${CMAKE_CXX_COMPILER_ID}: "
                        "configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

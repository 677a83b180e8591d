# The CUDA backend: kernels, cuDNN/cuBLAS wrappers, the caching allocator and the NCCL
# communicators. Included by the top-level CMakeLists only when GANTRY_WITH_CUDA
# (GantryDependencies.cmake has enabled the CUDA language and found cuDNN and NCCL).
#
# Two targets from one compilation (backend/cuda_module.h):
# - gantry_cuda_module, the module libgantry_cuda.so in <build>/lib that the registry opens the
#   first time a CUDA device is asked for. It links the CUDA libraries and nothing of Gantry: its
#   Gantry symbols resolve against the executable that opens it (gantry_link_layer_objects
#   exports them), so no process holds two copies of a registry or an allocator.
# - gantry_cuda, the same objects as a static library, for code that calls the backend directly
#   (tests/gpu links its objects in, and the loader then finds the backend in the executable).
# Position-independent code, as the objects go into a shared library.

find_package(CUDAToolkit REQUIRED)

# CUDA_STANDARD defaults to CXX_STANDARD (20), for which CMake 3.25 knows no nvcc flag and stops
# with "requires the language dialect CUDA20". Declare the flag empty and pass -std=c++20 below.
if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "")
endif()

add_library(gantry_cudnn UNKNOWN IMPORTED)
set_target_properties(gantry_cudnn PROPERTIES
  IMPORTED_LOCATION "${CUDNN_LIBRARY}" INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
add_library(gantry_nccl UNKNOWN IMPORTED)
set_target_properties(gantry_nccl PROPERTIES
  IMPORTED_LOCATION "${NCCL_LIBRARY}" INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")

file(GLOB GANTRY_CUDA_SOURCES CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/backend/cuda/*.cu ${PROJECT_SOURCE_DIR}/backend/cuda/*.cpp
  ${PROJECT_SOURCE_DIR}/distribute/nccl/nccl_*.cpp)
add_library(gantry_cuda STATIC ${GANTRY_CUDA_SOURCES})

# gantry_base for its headers (and, in the static library's users, its code); the module does
# not link it (see above).
target_link_libraries(gantry_cuda
  PUBLIC gantry_base CUDA::cudart gantry_cudnn gantry_nccl
  PRIVATE CUDA::cublas)
target_compile_definitions(gantry_cuda PUBLIC GANTRY_WITH_CUDA=1)
set_property(SOURCE ${PROJECT_SOURCE_DIR}/backend/cuda/module_entry.cpp APPEND PROPERTY
  COMPILE_DEFINITIONS GANTRY_VERSION_STRING="${PROJECT_VERSION}")
set_target_properties(gantry_cuda PROPERTIES CUDA_SEPARABLE_COMPILATION OFF
  POSITION_INDEPENDENT_CODE ON)

add_library(gantry_cuda_module MODULE $<TARGET_OBJECTS:gantry_cuda>)
target_link_libraries(gantry_cuda_module PRIVATE CUDA::cudart gantry_cudnn gantry_nccl CUDA::cublas)
set_target_properties(gantry_cuda_module PROPERTIES OUTPUT_NAME gantry_cuda
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib LINKER_LANGUAGE CXX)

gantry_set_warnings(gantry_cuda)  # host (.cpp) files: -Wall -Wextra -Wpedantic [-Werror]
gantry_precompile(gantry_cuda)  # the .cpp files only; nvcc compiles the .cu files as before
target_compile_options(gantry_cuda PRIVATE
  # CMake 3.25 does not translate CUDA_STANDARD 20 into a flag for nvcc 13.
  $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>
  # Never --use_fast_math, and no FMA contraction (nvcc contracts by default; the CPU build does
  # not): the kernels share functors with the CPU backend and must round as it does.
  $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false>
  $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>
  $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${GANTRY_WERROR}>>:-Werror=all-warnings>
  $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${GANTRY_WERROR}>>:-Xcompiler=-Werror>)

# The CUDA backend: kernels, cuDNN/cuBLAS wrappers and the caching allocator, as the static
# library gantry_cuda. Included by the top-level CMakeLists only when GANTRY_WITH_CUDA
# (GantryDependencies.cmake has enabled the CUDA language and found cuDNN and NCCL).
#
# Target graph (no cycle): gantry_cuda needs only the core value types (Shape, Device, DType,
# Error), never the engine, so it links `gantry_base` when the top level defines it; the engine
# (whose registry returns cuda::cuda_backend()) then links gantry_cuda. Until that split exists
# it falls back to gantry_engine, which compiles the same but cannot serve the registry.

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
  ${PROJECT_SOURCE_DIR}/backend/cuda/*.cu ${PROJECT_SOURCE_DIR}/backend/cuda/*.cpp)
add_library(gantry_cuda STATIC ${GANTRY_CUDA_SOURCES})

if(TARGET gantry_base)
  set(_gantry_cuda_base gantry_base)
else()
  set(_gantry_cuda_base gantry_engine)
endif()
target_link_libraries(gantry_cuda
  PUBLIC ${_gantry_cuda_base} CUDA::cudart gantry_cudnn gantry_nccl
  PRIVATE CUDA::cublas)
# Consumers test this (e.g. to compile the registry's CUDA branch).
target_compile_definitions(gantry_cuda PUBLIC GANTRY_WITH_CUDA=1)
set_target_properties(gantry_cuda PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)

gantry_set_warnings(gantry_cuda)  # host (.cpp) files: -Wall -Wextra -Wpedantic [-Werror]
target_compile_options(gantry_cuda PRIVATE
  # CMake 3.25 does not translate CUDA_STANDARD 20 into a flag for nvcc 13.
  $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>
  # Never --use_fast_math: the kernels share functors with the CPU backend and must agree.
  $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>
  $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${GANTRY_WERROR}>>:-Werror=all-warnings>
  $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${GANTRY_WERROR}>>:-Xcompiler=-Werror>)

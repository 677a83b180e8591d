# gantry_layer_library(NAME FOLDER DEPS...): a static library of FOLDER/*.cpp linking DEPS
# publicly (FOLDER may be a pattern: gan/* for a layer in floors); an interface library while
# the folder has no sources yet, so upper layers can already link it.
function(gantry_layer_library name folder)
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/*.cpp)
  if(sources)
    add_library(${name} STATIC ${sources})
    target_link_libraries(${name} PUBLIC ${ARGN})
    gantry_set_warnings(${name})
    gantry_precompile(${name})  # cmake/GantryPch.cmake
    set(GANTRY_LAYER_SCOPE_${name} PUBLIC PARENT_SCOPE)
  else()
    add_library(${name} INTERFACE)
    target_link_libraries(${name} INTERFACE ${ARGN})
    set(GANTRY_LAYER_SCOPE_${name} INTERFACE PARENT_SCOPE)
  endif()
endfunction()

# The layers, bottom to top (DESIGN.md).
set(GANTRY_LAYERS gantry_base gantry_engine gantry_nn gantry_losses gantry_distribute gantry_data gantry_augment
                  gantry_gan gantry_metrics gantry_hooks gantry_jobs)

# gantry_link_layer_objects(TARGET TOP): puts every object file of every layer up to TOP into the
# executable TARGET and exports their symbols (ENABLE_EXPORTS), for what it dlopens: plugins
# (docs/plugins.md) and the CUDA module (backend/cuda_module.h) resolve Gantry's registries, and
# whatever else of Gantry they call, against the running executable. The layer libraries are
# static, so a plain link keeps only the archive members the executable references; the objects
# (those the libraries are built from, not compiled again) put every public symbol in its
# dynamic symbol table. The archives stay on the link line (for the external dependencies) but
# no member is taken from them, as the objects already define all their symbols.
#
# Not $<LINK_LIBRARY:WHOLE_ARCHIVE,...>: CMake 3.25 repeats static libraries on the link line to
# satisfy their dependency order, and a repeated --whole-archive library is linked twice:
# "multiple definition" errors (de-duplication came only with CMake 3.29/3.31, CMP0156/CMP0179).
function(gantry_link_layer_objects target top)
  set(objects)
  foreach(lib ${GANTRY_LAYERS})
    get_target_property(type ${lib} TYPE)
    if(type STREQUAL "STATIC_LIBRARY")  # a layer without sources yet is an INTERFACE library
      list(APPEND objects $<TARGET_OBJECTS:${lib}>)
    endif()
    if(lib STREQUAL top)
      break()
    endif()
  endforeach()
  target_sources(${target} PRIVATE ${objects})
  target_link_libraries(${target} PRIVATE ${top} ${CMAKE_DL_LIBS})
  set_target_properties(${target} PROPERTIES ENABLE_EXPORTS ON)
  if(TARGET gantry_cuda_module)  # opened at run time, so built with whatever may open it
    add_dependencies(${target} gantry_cuda_module)
  endif()
endfunction()

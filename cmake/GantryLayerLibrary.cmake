# gantry_layer_library(NAME FOLDER DEPS...): a static library of FOLDER/*.cpp linking DEPS
# publicly; an interface library while the folder has no sources yet, so upper layers can
# already link it.
function(gantry_layer_library name folder)
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/*.cpp)
  if(sources)
    add_library(${name} STATIC ${sources})
    target_link_libraries(${name} PUBLIC ${ARGN})
    gantry_set_warnings(${name})
    set(GANTRY_LAYER_SCOPE_${name} PUBLIC PARENT_SCOPE)
  else()
    add_library(${name} INTERFACE)
    target_link_libraries(${name} INTERFACE ${ARGN})
    set(GANTRY_LAYER_SCOPE_${name} INTERFACE PARENT_SCOPE)
  endif()
endfunction()

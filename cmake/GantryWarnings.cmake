# Warnings for project targets; GANTRY_WERROR (on in CI) turns them into errors.
function(gantry_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-unused-parameter>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${GANTRY_WERROR}>>:-Werror>)
endfunction()

# Proves that the build refuses a wrong include (docs/design.md#code-layers): for every pair of
# layers (L, H), a file compiled with exactly L's compile command (from compile_commands.json)
# and including a header of H must preprocess if and only if L uses H, directly or through the
# layers it uses (cmake/Layers.cmake). A layer linked too widely (it sees more than it uses) or
# too narrowly (a header it uses includes what it cannot see) fails the check, as does an
# include that climbs out of its folder with "../".
#
#   cmake -DEXO_BUILD_DIR=<configured build dir> -P cmake/CheckLayers.cmake
#
# scripts/test.sh runs it after the build; ctest runs it as the test `layers`. Needs only a
# configured build dir (no object is built). Exit status 0 if every pair is as declared.
cmake_minimum_required(VERSION 3.20)

get_filename_component(source_dir "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
if(NOT EXO_BUILD_DIR)
  message(FATAL_ERROR "usage: cmake -DEXO_BUILD_DIR=<build dir> -P cmake/CheckLayers.cmake")
endif()
# The compile commands name absolute paths: a relative build dir (from the
# caller's working directory) would match none of them.
get_filename_component(EXO_BUILD_DIR "${EXO_BUILD_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
set(manifest "${EXO_BUILD_DIR}/layers/layers.cmake")
set(commands_file "${EXO_BUILD_DIR}/compile_commands.json")
foreach(input IN ITEMS "${manifest}" "${commands_file}")
  if(NOT EXISTS "${input}")
    message(FATAL_ERROR "${input} is missing: configure ${EXO_BUILD_DIR} first (scripts/build.sh)")
  endif()
endforeach()
include("${manifest}")

# closure(L): the layers L's compile command may see, L excluded.
function(exo_closure layer out)
  set(seen "")
  set(todo ${EXO_LAYER_USES_${layer}})
  while(todo)
    list(POP_FRONT todo next)
    if(NOT next IN_LIST seen)
      list(APPEND seen ${next})
      list(APPEND todo ${EXO_LAYER_USES_${next}})
    endif()
  endwhile()
  set(${out} "${seen}" PARENT_SCOPE)
endfunction()

set(problems "")

# A layer uses only layers below it: the order in which cmake/Layers.cmake defines them.
foreach(layer IN LISTS EXO_LAYERS)
  list(FIND EXO_LAYERS ${layer} rank)
  foreach(used IN LISTS EXO_LAYER_USES_${layer})
    list(FIND EXO_LAYERS ${used} used_rank)
    if(used_rank GREATER_EQUAL rank)
      list(APPEND problems "${layer} uses ${used}, which is not below it")
    endif()
  endforeach()
endforeach()

# "../" would reach another folder by the includer's own directory, past the include roots.
file(GLOB_RECURSE framework_files "${source_dir}/framework/*.hpp" "${source_dir}/framework/*.cpp")
foreach(file IN LISTS framework_files)
  file(STRINGS "${file}" climbing REGEX "^[ \t]*#[ \t]*include[ \t]*\"\\.\\./")
  if(climbing)
    file(RELATIVE_PATH shown "${source_dir}" "${file}")
    list(APPEND problems "${shown} includes a path with \"../\": include \"<layer>/<file>\"")
  endif()
endforeach()

# One compile command per layer: the first source file of its folder.
file(READ "${commands_file}" commands)
string(JSON count LENGTH "${commands}")
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON file GET "${commands}" ${i} file)
  foreach(layer IN LISTS EXO_LAYERS)
    if(NOT DEFINED command_${layer} AND file MATCHES "/framework/${layer}/[^/]+\\.cpp$")
      string(JSON command_${layer} GET "${commands}" ${i} command)
      string(JSON directory_${layer} GET "${commands}" ${i} directory)
    endif()
  endforeach()
endforeach()

set(probe_dir "${EXO_BUILD_DIR}/layers/probes")
file(REMOVE_RECURSE "${probe_dir}")
file(MAKE_DIRECTORY "${probe_dir}")
set(pairs 0)
foreach(layer IN LISTS EXO_LAYERS)
  if(NOT DEFINED command_${layer})
    list(APPEND problems "no compile command for a source of framework/${layer}/")
    continue()
  endif()
  exo_closure(${layer} visible)
  # The command preprocesses the probe instead of compiling its own file: without -o, -c and
  # the dependency file options (the build's own .d files stay untouched), and without a
  # compiler launcher (ccache).
  separate_arguments(words UNIX_COMMAND "${command_${layer}}")
  set(base "")
  set(skip_next FALSE)
  foreach(word IN LISTS words)
    if(skip_next)
      set(skip_next FALSE)
    elseif(word MATCHES "^-(o|c|MT|MF|MQ)$")
      set(skip_next TRUE)
    elseif(word MATCHES "^-(MD|MMD)$" OR (NOT base AND word MATCHES "ccache$"))
    else()
      list(APPEND base "${word}")
    endif()
  endforeach()

  foreach(other IN LISTS EXO_LAYERS)
    if(other STREQUAL layer)
      continue()
    endif()
    file(GLOB headers RELATIVE "${source_dir}/framework" "${source_dir}/framework/${other}/*.hpp")
    if(NOT headers)
      continue()
    endif()
    list(SORT headers)
    list(GET headers 0 header)
    set(probe "${probe_dir}/${layer}_includes_${other}.cpp")
    file(WRITE "${probe}" "#include \"${header}\"\n")
    execute_process(COMMAND ${base} -E -o /dev/null "${probe}"
      WORKING_DIRECTORY "${directory_${layer}}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
    math(EXPR pairs "${pairs} + 1")
    if(other IN_LIST visible)
      if(NOT rc EQUAL 0)
        string(REGEX MATCH "[^\n]*(No such file|not found)[^\n]*" why "${err}")
        string(REPLACE ";" "," why "${why}")
        list(APPEND problems "${layer} uses ${other} but cannot include ${header}: ${why}")
      endif()
    elseif(rc EQUAL 0)
      list(APPEND problems
        "${layer} can include ${header} but does not use ${other}: it is linked too widely")
    elseif(NOT err MATCHES "${header}")
      string(REGEX MATCH "[^\n]*error[^\n]*" why "${err}")
      string(REPLACE ";" "," why "${why}")
      list(APPEND problems "${layer} including ${header} failed for another reason: ${why}")
    endif()
  endforeach()
endforeach()

list(LENGTH EXO_LAYERS layer_count)
if(problems)
  list(LENGTH problems problem_count)
  foreach(problem IN LISTS problems)
    message(NOTICE "[layers] ${problem}")
  endforeach()
  message(FATAL_ERROR "[layers] ${problem_count} problem(s) in ${layer_count} layers "
                      "(${pairs} pairs checked): see cmake/Layers.cmake")
endif()
message(NOTICE "[layers] ${layer_count} layers, ${pairs} pairs: each sees exactly what it uses")

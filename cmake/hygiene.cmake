# Settings for tilescope's own targets (CONTRIBUTING.md, "Hygiene"). Included right after project();
# the work is deferred to the end of the top directory, once every target of every directory exists,
# so it applies to whatever targets the project defines. A target is ours when it is built only from
# this repository's sources: nanobind's own library, for one, is not.
#
# 1. Warnings are errors in our code. Third-party headers come in as SYSTEM includes, so their
#    warnings never fail our build. `cmake --compile-no-warning-error` turns it off for one configure
#    (e.g. trying a newer compiler). Not in GCC sanitizer builds: GCC's flow-based warnings
#    (-Wstringop-overflow, -Warray-bounds, ...) misfire on instrumented code (its manual says so; with
#    fmt 9 they fire inside fmt's own headers), and the uninstrumented Release build, which CI always
#    builds, already gates warnings.
# 2. Sanitizer builds (cmake/sanitizers.cmake) compile our code at -O1, placed after any per-target
#    -O3: instrumented -O3 builds take about four times as long, for tests that run as well at -O1.
set(_tilescope_werror_default ON)
if(TILESCOPE_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(_tilescope_werror_default OFF)
endif()
option(TILESCOPE_WERROR "Treat compiler warnings in tilescope's own code as errors" ${_tilescope_werror_default})

function(_tilescope_targets_under dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _tilescope_targets_under("${sub}" more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

function(_tilescope_built_from_our_sources target out)
  get_target_property(type ${target} TYPE)
  if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
    set(${out} FALSE PARENT_SCOPE)
    return()
  endif()
  get_target_property(dir ${target} SOURCE_DIR)
  get_target_property(sources ${target} SOURCES)
  foreach(s IN LISTS sources)
    if(s MATCHES "^\\$<")  # a generator expression (e.g. another target's objects): not a source file
      continue()
    endif()
    cmake_path(ABSOLUTE_PATH s BASE_DIRECTORY "${dir}" NORMALIZE OUTPUT_VARIABLE abs)
    cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${abs}" NORMALIZE inside)
    if(NOT inside)
      set(${out} FALSE PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} TRUE PARENT_SCOPE)
endfunction()

function(_tilescope_apply_hygiene)
  _tilescope_targets_under("${PROJECT_SOURCE_DIR}" targets)
  foreach(t IN LISTS targets)
    _tilescope_built_from_our_sources(${t} ours)
    if(NOT ours)
      continue()
    endif()
    if(TILESCOPE_WERROR)
      set_property(TARGET ${t} PROPERTY COMPILE_WARNING_AS_ERROR ON)
    endif()
    if(TILESCOPE_SANITIZE)
      target_compile_options(${t} PRIVATE -O1)
    endif()
  endforeach()
endfunction()

cmake_language(DEFER DIRECTORY "${PROJECT_SOURCE_DIR}" CALL _tilescope_apply_hygiene)

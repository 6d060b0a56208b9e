# Warnings are errors in tilescope's own code (CONTRIBUTING.md, "Hygiene"). Included at the end of
# the top CMakeLists.txt, once every target exists: it walks the targets of the whole directory tree
# and marks each one built only from this repository's sources. Targets built from third-party
# sources (nanobind's own library) are left alone, and third-party headers come in as SYSTEM
# includes, so their warnings never fail our build. `cmake --compile-no-warning-error` turns it off
# for one configure (e.g. trying a newer compiler).
option(TILESCOPE_WERROR "Treat compiler warnings in tilescope's own code as errors" ON)

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
    if(s MATCHES "^\\$<")  # a generator expression (object files of another target): not a source
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

if(TILESCOPE_WERROR)
  _tilescope_targets_under("${PROJECT_SOURCE_DIR}" _tilescope_all_targets)
  foreach(t IN LISTS _tilescope_all_targets)
    _tilescope_built_from_our_sources(${t} ours)
    if(ours)
      set_property(TARGET ${t} PROPERTY COMPILE_WARNING_AS_ERROR ON)
    endif()
  endforeach()
endif()

# Sanitizer and fuzzing builds (CONTRIBUTING.md, "Hygiene"). Included right after project(), before
# any target, so the flags reach every target of every directory. `make test-asan`, `make test-tsan`
# and `make fuzz` configure their own build directories with these options.
#
#   TILESCOPE_SANITIZE=address  ASan + UBSan, stopping at the first report, libstdc++ assertions on
#   TILESCOPE_SANITIZE=thread   TSan
#   TILESCOPE_FUZZ=ON           (clang, with address) also instruments for libFuzzer and adds the
#                               target fuzz/reader_fuzz. The sanitized tests build with GCC, not
#                               clang: clang 14 has no _Float16 on x86-64, which the tests use as an
#                               independent half-precision reference.
#
# Use CMAKE_BUILD_TYPE=Debug with these (asserts on). Our own targets are compiled at -O1 (see
# cmake/hygiene.cmake), not Debug's -O0, which would make the sanitized tests several times slower,
# and with line tables only (-g1): enough for symbolized reports, cheaper to build than -g.
set(TILESCOPE_SANITIZE "" CACHE STRING "Sanitizer build: address (ASan+UBSan) or thread (TSan)")
set_property(CACHE TILESCOPE_SANITIZE PROPERTY STRINGS "" address thread)
option(TILESCOPE_FUZZ "Build the libFuzzer target fuzz/reader_fuzz (clang, TILESCOPE_SANITIZE=address)" OFF)

if(TILESCOPE_SANITIZE STREQUAL "address")
  set(_tilescope_sanitize -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  # Bounds-checked operator[] and friends in libstdc++: ABI-compatible with the unchecked gtest library.
  add_compile_definitions(_GLIBCXX_ASSERTIONS)
elseif(TILESCOPE_SANITIZE STREQUAL "thread")
  set(_tilescope_sanitize -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT TILESCOPE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "TILESCOPE_SANITIZE must be address, thread or empty, not '${TILESCOPE_SANITIZE}'")
endif()

if(TILESCOPE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT TILESCOPE_SANITIZE STREQUAL "address")
    message(FATAL_ERROR "TILESCOPE_FUZZ needs clang (CMAKE_CXX_COMPILER=clang++) and TILESCOPE_SANITIZE=address")
  endif()
  list(APPEND _tilescope_sanitize -fsanitize=fuzzer-no-link)
endif()

if(_tilescope_sanitize)
  add_compile_options(${_tilescope_sanitize} -g1)
  add_link_options(${_tilescope_sanitize})
endif()

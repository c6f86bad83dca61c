# Helpers shared by every component.

# skrull_library(NAME SOURCES ... DEPS ...): a static library with the
# project's warnings and include root.
function(skrull_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${SKRULL_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# skrull_binary(NAME SOURCES ... DEPS ...): an executable in build/bin/.
function(skrull_binary name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${SKRULL_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
endfunction()

# skrull_test(NAME SOURCES ... DEPS ... [LABELS unit|integration|slow|gpu]
#             [TIMEOUT seconds]): one GoogleTest binary registered with CTest.
# Tests run with their working directory in the build tree and get
# SKRULL_SOURCE_DIR / SKRULL_BIN_DIR in the environment.
function(skrull_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${SKRULL_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main Threads::Threads)
  add_test(NAME ${name} COMMAND ${name} --gtest_color=no)
  set_tests_properties(${name} PROPERTIES
    LABELS "${ARG_LABELS}"
    TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "SKRULL_SOURCE_DIR=${PROJECT_SOURCE_DIR};SKRULL_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
endfunction()

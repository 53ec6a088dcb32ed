# Small helpers so each folder's CMakeLists.txt reads as a list of facts.

if(KILN_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# kiln_set_warnings(target): the warning set every Kiln target builds with.
function(kiln_set_warnings target)
  # Designated initializers that leave members at their defaults are how
  # Kiln spells options structs, so that warning stays off.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-missing-field-initializers)
  if(KILN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# kiln_add_test(NAME name SOURCES ... LIBS ...): a doctest executable
# registered with ctest. doctest_main.cpp supplies main().
function(kiln_add_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS" ${ARGN})
  if(NOT KILN_BUILD_TESTS)
    return()
  endif()
  add_executable(${T_NAME} ${T_SOURCES} ${PROJECT_SOURCE_DIR}/tests/doctest_main.cpp)
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} kiln_doctest)
  kiln_set_warnings(${T_NAME})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set_tests_properties(${T_NAME} PROPERTIES
    ENVIRONMENT "KILN_SOURCE_DIR=${PROJECT_SOURCE_DIR};KILN_BINARY_DIR=${PROJECT_BINARY_DIR}")
endfunction()

if(KILN_BUILD_TESTS)
  find_package(doctest REQUIRED)
  add_library(kiln_doctest INTERFACE)
  target_link_libraries(kiln_doctest INTERFACE doctest::doctest)
endif()

# Tests that need root, BPF or a display exit with this code after printing
# why; ctest reports them as skipped, never as passed.
set(KILN_SKIP_RETURN_CODE 77)

# kiln_skippable(test): mark a registered test as able to skip with 77.
function(kiln_skippable test)
  set_tests_properties(${test} PROPERTIES SKIP_RETURN_CODE ${KILN_SKIP_RETURN_CODE})
endfunction()

# tl_test_cases(VAR SOURCE): the names of the test cases SOURCE declares,
# in the order of its table: one row a case, TEST_CASE(name),
# TEST_CHILD(name, ...) or TEST_DEATH(name, ...) (test/unit/check.h and
# child.h), each at the start of its line.  The test folders register
# their ctest cases from these names, so a case is declared once, in its
# source; editing the source configures again.
function(tl_test_cases var source)
  get_filename_component(source ${source} ABSOLUTE)
  file(STRINGS ${source} rows
    REGEX "^[ \t]*TEST_(CASE|CHILD|DEATH)\\([A-Za-z0-9_]+[,)]")
  set(names)
  foreach(row IN LISTS rows)
    if(row MATCHES "^[ \t]*TEST_[A-Z]+\\(([A-Za-z0-9_]+)[,)]")
      list(APPEND names ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if(NOT names)
    message(FATAL_ERROR "${source}: no TEST_CASE, TEST_CHILD or TEST_DEATH rows")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${source})
  set(${var} ${names} PARENT_SCOPE)
endfunction()

# tlmalloc-install.cmake - what `cmake --install` puts where (GNUInstallDirs):
# the public headers, the three libraries, the CMake package
# (find_package(tlmalloc): tlmalloc::tlmalloc, tlmalloc::static,
# tlmalloc::dlopen) with its version file, tlmalloc.pc and the manual
# pages.  The launcher's rules are in tools/CMakeLists.txt.
#
# Components: "runtime" (shared libraries, launcher, tlmalloc(1)) and
# "devel" (headers, static library, link names, package files, tlmalloc(3)).
include(CMakePackageConfigHelpers)

set(TL_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tlmalloc)
set(TL_GENERATED_DIR ${PROJECT_BINARY_DIR}/install-generated)

# tl_install_generated(TEMPLATE OUTPUT COMPONENT [VAR VALUE]...): when
# COMPONENT is installed, configure TEMPLATE into OUTPUT with the paths of
# the prefix installed to (cmake --install --prefix DIR; see
# install-paths.cmake), so the paths written in it are right.  Each VALUE may use those paths, escaped
# ("\${TL_FULL_LIBDIR}/...").
function(tl_install_generated template output component)
  set(extra "")
  while(ARGN)
    list(POP_FRONT ARGN var value)
    string(APPEND extra "  set(${var} \"${value}\")\n")
  endwhile()
  install(CODE "
  set(TL_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(TL_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(TL_VERSION \"${PROJECT_VERSION}\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/install-paths.cmake\")
${extra}  configure_file(\"${template}\" \"${output}\" @ONLY)"
    COMPONENT ${component})
endfunction()

# Libraries and headers (not include/tlmalloc/: internal).
set_target_properties(tlmalloc_static PROPERTIES EXPORT_NAME static)
set_target_properties(tlmalloc_dlopen PROPERTIES EXPORT_NAME dlopen)
set_target_properties(tlmalloc_fast PROPERTIES EXPORT_NAME fast)
set_target_properties(tlmalloc_secure PROPERTIES EXPORT_NAME secure)
set_target_properties(tlmalloc_secure_static PROPERTIES
  EXPORT_NAME secure_static)
install(TARGETS tlmalloc tlmalloc_static tlmalloc_dlopen tlmalloc_fast
  tlmalloc_secure tlmalloc_secure_static
  EXPORT tlmalloc-targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    COMPONENT runtime NAMELINK_COMPONENT devel
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES
  ${PROJECT_SOURCE_DIR}/include/tlmalloc.h
  ${PROJECT_SOURCE_DIR}/include/ts_malloc.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT devel)

# The CMake package.
install(EXPORT tlmalloc-targets NAMESPACE tlmalloc::
  DESTINATION ${TL_PACKAGE_DIR} COMPONENT devel)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/tlmalloc-config.cmake.in
  ${TL_GENERATED_DIR}/tlmalloc-config.cmake
  INSTALL_DESTINATION ${TL_PACKAGE_DIR})
write_basic_package_version_file(
  ${TL_GENERATED_DIR}/tlmalloc-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES
  ${TL_GENERATED_DIR}/tlmalloc-config.cmake
  ${TL_GENERATED_DIR}/tlmalloc-config-version.cmake
  DESTINATION ${TL_PACKAGE_DIR} COMPONENT devel)

# pkg-config.
tl_install_generated(${PROJECT_SOURCE_DIR}/cmake/tlmalloc.pc.in
  ${TL_GENERATED_DIR}/tlmalloc.pc devel)
install(FILES ${TL_GENERATED_DIR}/tlmalloc.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT devel)

# Manual pages.  Every function of the public headers gets a one-line
# page that points at tlmalloc(3), so man tl_malloc finds it.
install(FILES ${PROJECT_SOURCE_DIR}/man/tlmalloc.1
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)
set(TL_MAN3_FILES ${PROJECT_SOURCE_DIR}/man/tlmalloc.3)
foreach(header tlmalloc.h ts_malloc.h)
  file(STRINGS ${PROJECT_SOURCE_DIR}/include/${header} declarations
    REGEX "^TL_API .*\\(")
  foreach(declaration IN LISTS declarations)
    string(REGEX MATCH "([A-Za-z0-9_]+)\\(" name "${declaration}")
    set(page ${TL_GENERATED_DIR}/man3/${CMAKE_MATCH_1}.3)
    file(WRITE ${page} ".so man3/tlmalloc.3\n")
    list(APPEND TL_MAN3_FILES ${page})
  endforeach()
endforeach()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/include/tlmalloc.h
  ${PROJECT_SOURCE_DIR}/include/ts_malloc.h)
install(FILES ${TL_MAN3_FILES}
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man3 COMPONENT devel)

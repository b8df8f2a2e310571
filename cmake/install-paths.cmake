# install-paths.cmake - included by `cmake --install` (see
# tl_install_generated in tlmalloc-install.cmake) before it configures a
# file: the paths of the prefix being installed to.
#
# In: TL_INSTALL_LIBDIR, TL_INSTALL_INCLUDEDIR (GNUInstallDirs' values).
# Out: TL_PREFIX, TL_FULL_LIBDIR and TL_FULL_INCLUDEDIR (absolute), and
# TL_PC_LIBDIR and TL_PC_INCLUDEDIR (relative to pkg-config's ${prefix}
# when inside the prefix).  DESTDIR is not part of them: they are the paths
# the files will have once the tree is in place.
set(TL_PREFIX "${CMAKE_INSTALL_PREFIX}")
foreach(dir LIBDIR INCLUDEDIR)
  set(rel "${TL_INSTALL_${dir}}")
  if(IS_ABSOLUTE "${rel}")
    set(TL_FULL_${dir} "${rel}")
    set(TL_PC_${dir} "${rel}")
  else()
    set(TL_FULL_${dir} "${TL_PREFIX}/${rel}")
    set(TL_PC_${dir} "\${prefix}/${rel}")
  endif()
endforeach()

# toolchain-aarch64.cmake - cross-build tlmalloc for arm64 (aarch64) Linux
# with glibc, with Debian's gcc-aarch64-linux-gnu and g++-aarch64-linux-gnu:
# cmake --preset aarch64, or -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake.
# When qemu-aarch64 (qemu-user) is found, ctest runs the tests under it
# with the target's libraries from TL_AARCH64_SYSROOT (cmake/qemu-run.sh);
# QEMU_PAGESIZE in a test's environment sets the OS page size it sees.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(TL_AARCH64_SYSROOT /usr/aarch64-linux-gnu CACHE PATH
  "The arm64 libraries the tests run with under qemu")
set(CMAKE_FIND_ROOT_PATH ${TL_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

find_program(TL_QEMU_AARCH64 qemu-aarch64)
if(TL_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR /bin/sh
    ${CMAKE_CURRENT_LIST_DIR}/qemu-run.sh ${TL_QEMU_AARCH64}
    ${TL_AARCH64_SYSROOT})
endif()

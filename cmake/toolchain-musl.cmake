# toolchain-musl.cmake - build tlmalloc against musl on this machine, with
# musl-gcc (Debian's musl-tools): cmake --preset musl, or
# -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-musl.cmake.  musl-gcc has no C++
# runtime, so the build is C only (platform.cmake).  Its libtlmalloc.a links
# into static musl programs, its libtlmalloc.so runs under musl's dynamic
# loader (LD_PRELOAD or linked); README "Platforms".
set(CMAKE_C_COMPILER musl-gcc)

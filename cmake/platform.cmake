# platform.cmake - the C library and the machine a build is for (README
# "Platforms").
#
#   TL_GLIBC       the C library is glibc; else musl (cmake/toolchain-musl.cmake),
#                  where C++ is left out (musl-gcc has no C++ runtime) and
#                  glibc's statistics calls are not built (src/api.c)
#   TL_CXX         C++ is enabled: the C++ tests, examples and workloads
#   TL_HOST_TESTS  the tests that run this machine's own programs (cc,
#                  python3, the shell) with the library preloaded, install
#                  it for the examples, or fuzz with clang: a native glibc
#                  build only
#   TL_CAN_RUN     the test programs can run here: a native build, or a
#                  cross build with an emulator (cmake/toolchain-aarch64.cmake)
#   TL_HAVE_UNWIND libgcc's _Unwind_Backtrace links: the heap profiler's
#                  stacks (src/profile.c).  Debian's musl-gcc links the
#                  host's libgcc_eh, built for glibc, which does not: there
#                  the profiler says so and stays off.
#   TL_SECTION_RETAIN the assembler takes the section flag "R"
#                  (SHF_GNU_RETAIN; GNU as 2.36, LLVM 13): free's probes
#                  (include/tlmalloc/fastpath.h) survive --gc-sections
#   TL_STATIC_LIBGCC the shared libraries take libgcc's unwinder in
#                  (-static-libgcc), its names hidden (--exclude-libs):
#                  no libgcc_s.so.1 loaded into every process that preloads
#                  tlmalloc (docs/design.md, "What a preload costs")
include(CheckSymbolExists)
include(CheckCSourceCompiles)
check_symbol_exists(__GLIBC__ features.h TL_GLIBC)
check_c_source_compiles("
#include <unwind.h>
static _Unwind_Reason_Code f(struct _Unwind_Context *c, void *a)
{ (void)c; (void)a; return _URC_NO_REASON; }
int main(void) { _Unwind_Backtrace(f, 0); return 0; }" TL_HAVE_UNWIND)
# (The directive is made by stringizing: no backslash to escape.)
check_c_source_compiles([=[
#define S(...) #__VA_ARGS__
__asm__(S(.pushsection tl_retain_check,"aR") ";" S(.popsection));
int main(void) { return 0; }]=] TL_SECTION_RETAIN)
set(CMAKE_REQUIRED_LINK_OPTIONS -static-libgcc -Wl,--exclude-libs,ALL)
check_c_source_compiles("int main(void) { return 0; }" TL_STATIC_LIBGCC)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(TL_GLIBC)
  enable_language(CXX)
  set(TL_CXX ON)
else()
  set(TL_CXX OFF)
  message(STATUS "tlmalloc: C library without C++ (musl): the C++ tests, "
    "examples and workloads are not built")
endif()

if(TL_GLIBC AND NOT CMAKE_CROSSCOMPILING)
  set(TL_HOST_TESTS ON)
else()
  set(TL_HOST_TESTS OFF)
endif()

if(NOT CMAKE_CROSSCOMPILING OR CMAKE_CROSSCOMPILING_EMULATOR)
  set(TL_CAN_RUN ON)
else()
  set(TL_CAN_RUN OFF)
  message(STATUS "tlmalloc: cross build without an emulator: "
    "no tests registered")
endif()

# ThreadSanitizer: the native glibc build only (its runtime is glibc's).
if(TLMALLOC_TSAN AND NOT TL_HOST_TESTS)
  message(STATUS "tlmalloc: no ThreadSanitizer variant for this platform")
  set(TLMALLOC_TSAN OFF)
endif()

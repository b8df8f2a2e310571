#!/bin/bash
# cc_compile.sh - the C compiler (driver, cc1, as, ld) compiling and
# linking tree_sum.c with tlmalloc preloaded, then the program running with
# it.  Checks both exit 0, the program's results, that the program found
# tl_version through dlsym (tlmalloc loaded, of the expected version), and
# that the driver, the compiler proper, the assembler and the linker all
# initialised libtlmalloc (from the dynamic loader's LD_DEBUG log).
# Usage: cc_compile.sh LIB VERSION
. "$(dirname "$0")/common.sh"

VERSION=${2:?usage: $0 LIB VERSION}
CC=${CC:-cc}
N=100000

traced "$WORK/ld" "$CC" -O2 -Wall -o "$WORK/tree_sum" \
	"$(dirname "$0")/tree_sum.c" -ldl || fail "$CC exited with status $?"
for prog in "$(basename "$CC")" cc1 as ld; do
	loaded_in "$WORK/ld" "$prog"
done
out=$(preloaded "$WORK/tree_sum") || fail "tree_sum exited with status $?"
expect "tree_sum output" "$out" "nodes $N
sum $((N * (N - 1) / 2))
tl_version $VERSION"


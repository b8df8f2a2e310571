#!/bin/bash
# cxx_compile.sh - g++ (driver, cc1plus, as, ld) compiling word_index.cc
# with tlmalloc preloaded, then the program running with it: both exit 0,
# the counts are right, the program's operator new is tlmalloc's, and the
# driver, cc1plus, the assembler and the linker initialised libtlmalloc.
# Usage: cxx_compile.sh LIB
. "$(dirname "$0")/common.sh"

CXX=${CXX:-g++}

traced "$WORK/ld" "$CXX" -O2 -std=c++17 -pthread -o "$WORK/word_index" \
	"$(dirname "$0")/word_index.cc" -ldl ||
	fail "$CXX exited with status $?"
for prog in "$(basename "$CXX")" cc1plus as ld; do
	loaded_in "$WORK/ld" "$prog"
done
out=$(preloaded "$WORK/word_index") ||
	fail "word_index exited with status $?"
expect "word_index output" "$out" "words $((4 * 50000))
distinct 1000
operator new libtlmalloc"

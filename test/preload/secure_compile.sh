#!/bin/bash
# secure_compile.sh - C++ compilers under the secure variant, whose checks
# must never stop a correct program: a sized delete must give the size
# `new` was asked for (exactly: docs/secure.md), and LLVM gives one at
# nearly every delete (its allocators pass size and alignment), so clang++
# compiling word_index.cc is a large sample of them; g++ too.  Each
# compiler exits 0 with no line of tlmalloc's on stderr, and the program
# it built runs under the secure variant with the right output.
# Usage: secure_compile.sh LIB CXX... (LIB: libtlmalloc-secure.so)
. "$(dirname "$0")/common.sh"

shift
[ $# -gt 0 ] || fail "no compiler given"
for cxx in "$@"; do
	name=$(basename "$cxx")
	env LD_PRELOAD="$LIB" "$cxx" -O1 -std=c++17 -pthread \
		-o "$WORK/word_index_$name" "$(dirname "$0")/word_index.cc" \
		-ldl 2>"$WORK/err" ||
		fail "$name exited with status $?: $(head -c 400 "$WORK/err")"
	! grep -q '^tlmalloc' "$WORK/err" ||
		fail "$name: $(grep '^tlmalloc' "$WORK/err" | head -c 400)"
	echo "ok $name compiled under $(basename "$LIB")"
	out=$(preloaded "$WORK/word_index_$name") ||
		fail "word_index ($name) exited with status $?"
	expect "word_index ($name) output" "$out" "words $((4 * 50000))
distinct 1000
operator new libtlmalloc"
done

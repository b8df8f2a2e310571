#!/usr/bin/env bash
# memcheck.sh - valgrind's memcheck sees through tlmalloc.
#
# usage: memcheck.sh LIB PLAIN SHARED STATIC
#   LIB     libtlmalloc.so, preloaded into PLAIN
#   PLAIN   counted.c built without tlmalloc
#   SHARED  counted.c linked with libtlmalloc.so
#   STATIC  counted.c linked with libtlmalloc.a
#
# For each of the three ways of using tlmalloc, the program first runs
# alone, where tlmalloc must serve it (its statistics at exit say so), then
# under memcheck, which must count every allocation the program made (the
# program prints its own count) and report the block of plant_leak() as
# definitely lost, with plant_leak in the stack.  Memcheck replaces the
# malloc of every object it finds by default, tlmalloc's among them
# (README.md, "valgrind and sanitizers").  Exit 77 (skipped) without valgrind.
set -u

lib=${1:?usage: $0 LIB PLAIN SHARED STATIC}
plain=${2:?} shared=${3:?} static=${4:?}

command -v valgrind >/dev/null 2>&1 || {
	echo "SKIPPED: valgrind is not installed (scripts/install-deps.sh installs it)"
	exit 77
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/tlmalloc-memcheck.XXXXXX") || fail mktemp
trap 'rm -rf "$work"' EXIT

# check NAME PRELOAD PROGRAM
check() {
	local name=$1 preload=$2 program=$3 out want got

	out=$(env ${preload:+LD_PRELOAD=$preload} TLMALLOC_SHOW_STATS=1 \
		"$program" 2>"$work/$name.stats") || fail "$name: exit $?"
	grep -q '^tlmalloc .* statistics' "$work/$name.stats" ||
		fail "$name: tlmalloc did not serve the program (no statistics)"
	want=$(echo "$out" | sed -n 's/^allocs \([0-9]*\) frees \([0-9]*\)$/\1 allocs, \2 frees/p')
	[ -n "$want" ] || fail "$name: no count from the program: $out"

	env ${preload:+LD_PRELOAD=$preload} valgrind --tool=memcheck \
		--leak-check=full --error-exitcode=99 "$program" \
		>"$work/$name.out" 2>"$work/$name.log"
	[ $? -eq 99 ] || fail "$name: memcheck found no error (the leak); log: $(cat "$work/$name.log")"
	got=$(sed -n 's/.*total heap usage: \([0-9,]*\) allocs, \([0-9,]*\) frees.*/\1 allocs, \2 frees/p' \
		"$work/$name.log" | sed "s/\([0-9]\),\([0-9]\)/\1\2/g")
	[ "$got" = "$want" ] ||
		fail "$name: memcheck counted '$got', the program made '$want'"
	grep -q 'definitely lost: 777 bytes in 1 blocks' "$work/$name.log" ||
		fail "$name: the planted leak of 777 bytes not reported: $(cat "$work/$name.log")"
	grep -A3 '777 bytes in 1 blocks are definitely lost' "$work/$name.log" |
		grep -q 'by 0x[0-9A-F]*: plant_leak (counted.c:' ||
		fail "$name: the leak not placed in plant_leak: $(cat "$work/$name.log")"
	echo "ok $name: memcheck counted $got and found the leak in plant_leak"
}

check preloaded "$lib" "$plain"
check linked_shared "" "$shared"
check linked_static "" "$static"

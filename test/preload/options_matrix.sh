#!/bin/bash
# options_matrix.sh - real programs under every library variant with the
# options that change the allocator's paths switched on together: the heap
# profiler at a high rate (with and without guarded sampling), parked heaps
# with purges at once and huge pages for every mapping, kept blocks (not
# in the secure variant, which refuses the option: unit.secure's
# kept_option_taken).  Each run must exit 0 with the right output, and
# tlmalloc may say nothing on stderr but the profiler's own reports.
# Programs: bash forking for $(...) in a loop, python_work.py (threads,
# dicts, json, worker processes forked while threads allocate) and
# word_index (std::thread, std::map, sized delete).
# Usage: options_matrix.sh LIB PYTHON3 (the variants lie beside LIB)
. "$(dirname "$0")/common.sh"

PY=${2:-python3}
DIR=$(dirname "$LIB")
HERE=$(dirname "$0")
CXX=${CXX:-g++}
"$CXX" -O2 -std=c++17 -pthread -o "$WORK/word_index" "$HERE/word_index.cc" \
	-ldl || fail "$CXX exited with status $?"

OPTS=(
	"TLMALLOC_PROFILE=1 TLMALLOC_PROFILE_RATE=512 TLMALLOC_PROFILE_SEED=7"
	"TLMALLOC_PROFILE=1 TLMALLOC_PROFILE_RATE=64 TLMALLOC_GUARDED_RATE=3"
	"TLMALLOC_PARK_HEAPS=1 TLMALLOC_PURGE_DELAY=0 TLMALLOC_GUARDED_RATE=50 TLMALLOC_HUGE_PAGES=2"
	"TLMALLOC_KEPT_BYTES=32768 TLMALLOC_PURGE_DELAY=0"
)
SHELL_WORK='for i in $(seq 1 60); do x=$(echo "$i" | tr 0-9 a-j);
	y="$y$x"; a[$i]=$(printf "%05d" "$i"); done
	echo "${#y} $(printf "%s\n" "${a[@]}" | sort -r | head -n 1)"'

# run NAME EXPECTED CMD...: CMD under the current variant and options.
run() {
	local name=$1 want=$2 out err status
	shift 2
	out=$(env $opts TLMALLOC_PROFILE_FILE="$WORK/prof" LD_PRELOAD="$lib" \
		timeout 120 "$@" 2>"$WORK/err")
	status=$?
	[ "$status" -eq 0 ] || fail "$name, $(basename "$lib"), $opts:" \
		"status $status: $(grep -v '^tlmalloc:   ' "$WORK/err" | head -c 400)"
	err=$(grep '^tlmalloc:' "$WORK/err" | grep -v -e 'leak report' \
		-e 'heap profile written' -e '^tlmalloc:   ')
	[ -z "$err" ] || fail "$name, $(basename "$lib"), $opts: $err"
	[ "$out" = "$want" ] ||
		fail "$name, $(basename "$lib"), $opts: expected '$want', got '$out'"
}

n=0
for variant in libtlmalloc libtlmalloc-fast libtlmalloc-secure \
	libtlmalloc-debug; do
	lib=$DIR/$variant.so
	[ -f "$lib" ] || fail "no $lib"
	for opts in "${OPTS[@]}"; do
		case "$variant $opts" in
		libtlmalloc-secure*KEPT_BYTES*) continue ;;
		esac
		run "bash \$(...)" "111 00060" bash -c "$SHELL_WORK"
		run python_work "dict 200000
json 200000
threads 32
fork 8
tlmalloc mapped" "$PY" "$HERE/python_work.py"
		run word_index "words $((4 * 50000))
distinct 1000
operator new libtlmalloc" "$WORK/word_index"
		n=$((n + 3))
	done
done
echo "ok $n runs: 4 variants, ${#OPTS[@]} option sets (not kept blocks in the secure variant), 3 programs"

#!/usr/bin/env bash
# profile.sh - the heap profiler as a user meets it.
#
# usage: profile.sh PROFILED LIB LAUNCHER [PPROF]
#   PROFILED  test/profile/profiled.c built
#   LIB       libtlmalloc.so (preloaded into other programs)
#   LAUNCHER  the build tree's tlmalloc launcher
#   PPROF     pprof or google-pprof; empty: its checks say they are skipped
#
# 1. The leak report at exit names the planted leak and not the blocks
#    freed (profiled freed_blocks_not_live), and pprof reads both its dumps
#    (exit and API) with symbols: -top, -traces, and -svg where graphviz is.
# 2. pprof reads the numbered dumps of a signal and of growth.
# 3. The launcher's --profile writes a profile that pprof reads.
# 4. Bad input (an unwritable file, a bad rate, a signal in use): one
#    warning line, the program runs and prints what it should, no profile.
set -u

profiled=${1:?usage: $0 PROFILED LIB LAUNCHER [PPROF]}
lib=${2:?} launcher=${3:?} pprof=${4:-}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/tlmalloc-profile.XXXXXX") || fail mktemp
trap 'rm -rf "$work"' EXIT
export TLMALLOC_PROFILE_RATE=16384 TLMALLOC_PROFILE_SEED=42

# pprof_reads FILE WORD...: pprof shows each WORD in -top and -traces.
pprof_reads() {
	local file=$1 word

	shift
	if [ -z "$pprof" ]; then
		echo "SKIPPED: pprof reading $file (no pprof: scripts/install-deps.sh installs it)"
		return 0
	fi
	"$pprof" -top -inuse_space "$profiled" "$file" >"$work/top" 2>&1 ||
		fail "pprof -top $file: $(cat "$work/top")"
	"$pprof" -traces "$profiled" "$file" >"$work/traces" 2>&1 ||
		fail "pprof -traces $file: $(cat "$work/traces")"
	for word in "$@"; do
		grep -q "$word" "$work/top" ||
			fail "pprof -top $file: no $word: $(cat "$work/top")"
		grep -q "$word" "$work/traces" ||
			fail "pprof -traces $file: no $word: $(cat "$work/traces")"
	done
	if command -v dot >/dev/null 2>&1; then
		"$pprof" -svg "$profiled" "$file" >"$work/svg" 2>&1 &&
			grep -q '<svg' "$work/svg" ||
			fail "pprof -svg $file: $(head -5 "$work/svg")"
	fi
	echo "ok pprof reads $(basename "$file"): $*"
}

# 1. leak report
TLMALLOC_PROFILE=1 TLMALLOC_PROFILE_FILE="$work/leak.heap" \
	"$profiled" freed_blocks_not_live >"$work/out" 2>"$work/err" ||
	fail "freed_blocks_not_live: $(cat "$work/out" "$work/err")"
grep -q '^tlmalloc: leak report: about [0-9]* bytes in [0-9]* blocks still allocated at exit' "$work/err" ||
	fail "no leak report: $(cat "$work/err")"
grep -q '^tlmalloc:   about [0-9]* bytes in [0-9]* blocks at plant_leak+' "$work/err" ||
	fail "the leak report does not name plant_leak: $(cat "$work/err")"
! grep -q 'alloc_f' "$work/err" ||
	fail "the leak report names the freed blocks of alloc_f: $(cat "$work/err")"
grep -q "^tlmalloc: heap profile written to $work/leak.heap" "$work/err" ||
	fail "no word of the profile's file: $(cat "$work/err")"
echo "ok the leak report names plant_leak alone"
pprof_reads "$work/leak.heap" plant_leak main
pprof_reads "$work/leak.heap.api" plant_leak main

# 2. numbered dumps
TLMALLOC_PROFILE=1 TLMALLOC_PROFILE_FILE="$work/signal.heap" TLMALLOC_PROFILE_SIGNAL=12 \
	"$profiled" signal_writes_numbered_dumps >"$work/out" 2>&1 ||
	fail "signal_writes_numbered_dumps: $(cat "$work/out")"
pprof_reads "$work/signal.heap.1" plant_leak
TLMALLOC_PROFILE=1 TLMALLOC_PROFILE_FILE="$work/growth.heap" TLMALLOC_PROFILE_GROWTH=1 \
	"$profiled" growth_writes_numbered_dumps >"$work/out" 2>&1 ||
	fail "growth_writes_numbered_dumps: $(cat "$work/out")"
pprof_reads "$work/growth.heap.2" plant_leak

# 3. the launcher
"$launcher" --library "$lib" --profile="$work/launched.%p.heap" \
	"$profiled" freed_blocks_not_live >"$work/out" 2>"$work/err" ||
	fail "launcher --profile: $(cat "$work/out" "$work/err")"
set -- "$work"/launched.*.heap
[ $# -eq 1 ] && [ -f "$1" ] || fail "launcher --profile: no launched.PID.heap: $(ls "$work")"
grep -q 'plant_leak' "$work/err" || fail "launcher --profile: no leak report"
pprof_reads "$1" plant_leak

# 4. bad input: one warning, the program runs unprofiled.
# bad NAME EXPECTED-WARNING [VAR=VALUE...]: echo runs with tlmalloc
# preloaded, profiling asked for, and the settings given.
bad() {
	local name=$1 want=$2 lines

	shift 2
	(cd "$work" && env LD_PRELOAD="$lib" TLMALLOC_PROFILE=1 \
		TLMALLOC_PROFILE_FILE="$work/bad.heap" "$@" \
		/bin/echo still running >"$work/out" 2>"$work/err") ||
		fail "$name: exit $?: $(cat "$work/err")"
	[ "$(cat "$work/out")" = "still running" ] || fail "$name: output: $(cat "$work/out")"
	lines=$(wc -l <"$work/err")
	[ "$lines" -eq 1 ] || fail "$name: $lines lines on stderr, not 1: $(cat "$work/err")"
	grep -qx "$want" "$work/err" ||
		fail "$name: warning '$(cat "$work/err")' is not '$want'"
	[ ! -s "$work/bad.heap" ] || fail "$name: a profile was written"
	rm -f "$work/bad.heap"
	echo "ok $name: $(cat "$work/err")"
}
bad unwritable_file \
	"tlmalloc: heap profile '$work/no/such/dir.heap': no such directory; heap profiling off" \
	TLMALLOC_PROFILE_FILE="$work/no/such/dir.heap"
bad bad_rate \
	"tlmalloc: TLMALLOC_PROFILE_RATE=1k: not a whole number in range; heap profiling off" \
	TLMALLOC_PROFILE_RATE=1k
bad rate_out_of_range \
	"tlmalloc: TLMALLOC_PROFILE_RATE=0: not a whole number in range; heap profiling off" \
	TLMALLOC_PROFILE_RATE=0
(
	trap '' USR2	# ignored: the disposition echo inherits
	bad signal_in_use \
		"tlmalloc: TLMALLOC_PROFILE_SIGNAL=12: the signal has a handler already (or cannot have one); heap profiling off" \
		TLMALLOC_PROFILE_SIGNAL=12
) || exit 1

# common.sh - helpers shared by the preload tests (sourced, not run).
#
# Each test gets the path of libtlmalloc.so as its first argument and runs
# real programs with LD_PRELOAD set to it: they must exit 0, print the
# right result, and really have tlmalloc mapped.

set -u

LIB=${1:?usage: $0 /path/to/libtlmalloc.so}
[ -f "$LIB" ] || { echo "FAIL: no library at $LIB" >&2; exit 1; }

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# expect NAME ACTUAL EXPECTED
expect() {
	[ "$2" = "$3" ] || fail "$1: expected '$3', got '$2'"
	echo "ok $1: $2"
}

# preloaded CMD...: run CMD with tlmalloc preloaded.
preloaded() {
	env LD_PRELOAD="$LIB" "$@"
}

# traced DIR CMD...: run CMD preloaded; the dynamic loader of every process
# it starts logs the libraries it loads into DIR/log.PID.
traced() {
	local dir=$1

	shift
	mkdir -p "$dir" || fail "mkdir $dir"
	env LD_PRELOAD="$LIB" LD_DEBUG=files LD_DEBUG_OUTPUT="$dir/log" "$@"
}

# loaded_in DIR PROGRAM: some process of PROGRAM (a name like cc1 or as)
# traced into DIR initialised libtlmalloc; fails otherwise.
loaded_in() {
	local f

	for f in "$1"/log.*; do
		[ -f "$f" ] || continue
		grep -q "needed by \([^ ]*/\)\?$2 \[" "$f" || continue
		grep -q "calling init: .*libtlmalloc" "$f" && {
			echo "ok $2 ran with libtlmalloc"
			return 0
		}
	done
	fail "no process of $2 ran with libtlmalloc"
}

# A fresh directory, removed when the test exits.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tlmalloc-preload.XXXXXX") ||
	fail "mktemp"
trap 'rm -rf "$WORK"' EXIT

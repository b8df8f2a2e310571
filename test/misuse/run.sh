#!/bin/sh
# run.sh - run one misuse program with a variant of the library preloaded
# and check its outcome.
#
# usage: run.sh LIB EXPECT PROGRAM KIND SIZE
#   abort     killed by SIGABRT after exactly one line on stderr, starting
#             "tlmalloc: " (the call, the pointer, the misuse)
#   segv      killed by SIGSEGV (a guard page or an unmapped page), with no
#             tlmalloc line
#   survived  exit 0 after printing "survived": not caught
#   any       no promise: it ends within the time limit, one way or another
# With EXPECT "show" it prints the outcome and succeeds (for filling the
# table in CMakeLists.txt).
set -u

lib=$1 expect=$2
shift 2
[ -f "$lib" ] || { echo "FAIL: no library at $lib" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# No core files from the deaths this provokes.
ulimit -c 0
# (A subshell that execs: the shell's own note of the signal, if any, goes
# to this script's stderr, not into the program's.)
(exec env LD_PRELOAD="$lib" timeout 60 "$@" >"$tmp/out" 2>"$tmp/err")
status=$?
lines=$(wc -l <"$tmp/err")
if [ "$status" -eq 124 ]; then
	outcome=hang
elif [ "$status" -eq 134 ] && [ "$lines" -eq 1 ] &&
	grep -q '^tlmalloc: ' "$tmp/err"; then
	outcome=abort
elif [ "$status" -eq 139 ] && ! grep -q tlmalloc "$tmp/err"; then
	outcome=segv
elif [ "$status" -eq 0 ] && grep -qx survived "$tmp/out"; then
	outcome=survived
else
	outcome="other (status $status)"
fi

echo "$*: $outcome"
[ -s "$tmp/err" ] && sed 's/^/  stderr: /' "$tmp/err"
case $expect in
show) exit 0 ;;
any) [ "$outcome" != hang ] ;;
*) [ "$outcome" = "$expect" ] ||
	{ echo "FAIL: expected $expect" >&2; exit 1; } ;;
esac

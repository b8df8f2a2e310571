#!/bin/sh
# fastpath.sh - instructions per malloc/free pair on the fast path, counted
# by callgrind, for glibc and for each allocator named on the command line.
#
# For each allocator and each size mix (fixed: 64 bytes; mix: 8..512 bytes;
# with -m, also new or sized: C++ new of 64 bytes with delete or sized delete)
# it runs bench/workloads/fastpath under `valgrind --tool=callgrind` twice,
# with SHORT and LONG pairs, and prints
#     (Ir(LONG) - Ir(SHORT)) / (LONG - SHORT)
# so start-up and tear-down cancel out.  The figure includes the benchmark
# loop's own instructions (the same for every allocator); a last line says
# how many, from the cost callgrind charges to main() itself under glibc.
#
# usage: bench/fastpath.sh [-b path/to/fastpath] [-s SHORT] [-l LONG]
#                          [-m 'MIX ...'] [NAME=/path/lib.so ...]
# -m: the mixes, one column each (default 'fixed mix').
# Default binary: build/bench/fastpath in the source tree; SHORT 100000,
# LONG 200000.  A library that does not exist is reported as missing.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
bin="$here/../build/bench/fastpath"
short=100000
long=200000
mixes="fixed mix"

usage() {
	echo "usage: $0 [-b fastpath-binary] [-s short] [-l long] [-m 'mix ...'] [NAME=lib.so ...]" >&2
	exit 2
}

while getopts b:s:l:m:h opt; do
	case $opt in
	b) bin=$OPTARG ;;
	m) mixes=$OPTARG ;;
	s) short=$OPTARG ;;
	l) long=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))

for arg in "$@"; do
	case $arg in
	?*=*) ;;
	*) echo "$0: '$arg' is not NAME=/path/lib.so" >&2; exit 2 ;;
	esac
done
[ -x "$bin" ] || { echo "$0: no fastpath binary at $bin (build first, or -b)" >&2; exit 2; }
[ "$long" -gt "$short" ] 2>/dev/null || { echo "$0: need LONG > SHORT" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: valgrind not found" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ir LIB MIX N [main]: instructions callgrind counts for one run, in all or
# (with "main") in main() itself; "" LIB = glibc.  A failed run returns 1,
# or 2 when the program printed nothing and the allocator said why on
# stderr (an allocator that cannot start under valgrind); its first line
# goes to stderr.
ir() {
	out="$tmp/callgrind.out"
	if ! LD_PRELOAD="$1" valgrind --tool=callgrind --callgrind-out-file="$out" \
		"$bin" --mix "$2" --iters "$3" >"$tmp/stdout" 2>"$tmp/stderr" ||
		! grep -q '^check ok' "$tmp/stdout"; then
		why=$(grep -v -e '^==[0-9]*==' -e '^[[:space:]]*$' "$tmp/stderr" | head -n 1)
		if [ ! -s "$tmp/stdout" ] && [ -n "$why" ]; then
			echo "$0: ${1:-glibc}: the program did not start: $why" >&2
			return 2
		fi
		return 1
	fi
	if [ "${4:-}" = main ]; then
		callgrind_annotate --threshold=100 "$out" |
			awk '/:main \[/ { gsub(",", "", $1); print $1; exit }'
	else
		sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out"
	fi
}

# failed STATUS: the cell of a failed run (ir's status).
failed() {
	if [ "$1" -eq 2 ]; then echo refused; else echo failed; fi
}

# per_pair LIB MIX [main]: the instructions one more pair costs.
per_pair() {
	a=$(ir "$1" "$2" "$short" "${3:-}") || { failed $?; return; }
	b=$(ir "$1" "$2" "$long" "${3:-}") || { failed $?; return; }
	awk -v a="$a" -v b="$b" -v s="$short" -v l="$long" \
		'BEGIN { if (a == "" || b == "") print "?";
			 else printf "%.1f\n", (b - a) / (l - s) }'
}

# row NAME LIB [main]: one line, a column per mix.
row() {
	line=$(printf '%-12s' "$1")
	for m in $mixes; do
		if [ -n "$2" ] && [ ! -e "$2" ]; then
			v=missing
		else
			v=$(per_pair "$2" "$m" "${3:-}")
		fi
		line="$line $(printf '%10s' "$v")"
	done
	echo "$line"
}

echo "instructions per malloc/free pair (callgrind, $short vs $long pairs)"
header=$(printf '%-12s' allocator)
for m in $mixes; do
	header="$header $(printf '%10s' "$m")"
done
echo "$header"
row glibc ""
for arg in "$@"; do
	row "${arg%%=*}" "${arg#*=}"
done
row "(loop)" "" main

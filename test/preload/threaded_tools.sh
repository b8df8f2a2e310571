#!/bin/bash
# threaded_tools.sh - multithreaded programs of the system with tlmalloc
# preloaded, their output checked against the same run without it:
#   GNU sort with --parallel=4 over 1,000,000 lines (its threads sort and
#     merge parts of one buffer; three of them allocate);
#   xz -T4 compressing 24 MiB in blocks of 1 MiB on four threads, each
#     with buffers of its own (huge blocks), then decompressing it on four,
#     which free blocks the main thread made;
#   perl building a hash of 200,000 keys and sorting them (one thread,
#     an allocation-heavy interpreter).
# Also checks that each really had libtlmalloc loaded (the dynamic loader's
# log of each process).
# Usage: threaded_tools.sh LIB XZ
. "$(dirname "$0")/common.sh"
set -o pipefail		# a program's failure, not only md5sum's

XZ=${2:?usage: $0 LIB XZ}
SORT_ARGS=(--parallel=4 -S 64M -k1,1n -k2,2n "$WORK/lines")
PERL_HASH='my %h; $h{"k" . ($_ * 7919 % 1000003)} .= "v$_" for 1 .. 200000;
	my @k = sort keys %h; print scalar(@k), " ", $k[0], " ", $k[-1], "\n"'

# 1,000,000 lines of pseudo-random keys (an LCG, so the run is the same
# every time), with repeats.
awk 'BEGIN { x = 12345; for (i = 0; i < 1000000; i++) {
	x = (x * 1103515245 + 12345) % 2147483648; print x % 9999991, i % 7 } }' \
	>"$WORK/lines" || fail "awk could not write the input"

want=$(LC_ALL=C sort "${SORT_ARGS[@]}" | md5sum) ||
	fail "sort without tlmalloc failed"
got=$(LC_ALL=C traced "$WORK/sort" sort "${SORT_ARGS[@]}" | md5sum) ||
	fail "sort exited with status $?"
expect "sort --parallel=4, md5 of its output" "$got" "$want"
loaded_in "$WORK/sort" sort

# 24 MiB that compresses in part: the lines, twice over and then some.
cat "$WORK/lines" "$WORK/lines" "$WORK/lines" >"$WORK/data" &&
	truncate -s 25165824 "$WORK/data" || fail "could not write the data"
want=$(md5sum <"$WORK/data")
traced "$WORK/xz" "$XZ" -T4 --block-size=1MiB -1 -c "$WORK/data" \
	>"$WORK/data.xz" || fail "xz -T4 exited with status $?"
loaded_in "$WORK/xz" xz
got=$(traced "$WORK/unxz" "$XZ" -T4 -d -c "$WORK/data.xz" | md5sum) ||
	fail "xz -T4 -d exited with status $?"
expect "xz -T4 round trip, md5" "$got" "$want"
loaded_in "$WORK/unxz" xz
blocks=$("$XZ" -l --robot "$WORK/data.xz" | awk '$1 == "totals" { print $3 }')
expect "xz blocks (one a MiB, so that four threads had work)" "$blocks" 24

want=$(perl -e "$PERL_HASH") || fail "perl without tlmalloc failed"
got=$(traced "$WORK/perl" perl -e "$PERL_HASH") ||
	fail "perl exited with status $?"
expect "perl hash of 200,000 keys" "$got" "$want"
loaded_in "$WORK/perl" perl

#!/bin/bash
# shell_pipeline.sh - bash, seq, awk, sort, uniq and wc with tlmalloc
# preloaded, over 300,000 generated lines.  7919 is prime to 1000, so the
# 1000 residues of i*7919 % 1000 each occur 300 times.  Also checks that
# sort, uniq, awk and head really had libtlmalloc mapped (each reads its
# own /proc/self/maps).
. "$(dirname "$0")/common.sh"

N=300000
out=$(preloaded bash -c '
	set -o pipefail
	seq 1 '"$N"' | awk "{ print (\$1 * 7919) % 1000 }" | sort |
		uniq -c | sort -rn | awk "{ print \$1 }" | sort -u | wc -l
') || fail "pipeline exited with status $?"
expect "distinct counts per residue" "$out" 1

out=$(preloaded bash -c '
	seq 1 '"$N"' | awk "{ print (\$1 * 7919) % 1000 }" | sort -n |
		uniq | wc -l
') || fail "pipeline exited with status $?"
expect "distinct residues" "$out" 1000

out=$(preloaded bash -c 'seq 1 '"$N"' | sort -rn | head -n 1') ||
	fail "sort exited with status $?"
expect "largest line" "$out" "$N"

for prog in sort uniq "awk 1" "head -n 100000"; do
	n=$(preloaded $prog /proc/self/maps | grep -c libtlmalloc)
	[ "$n" -gt 0 ] || fail "$prog ran without libtlmalloc mapped"
done
echo "ok sort, uniq, awk and head had libtlmalloc mapped"

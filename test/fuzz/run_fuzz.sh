#!/usr/bin/env bash
# run_fuzz.sh - the fuzz harness's ctest cases (test/fuzz/CMakeLists.txt).
#
#   run_fuzz.sh short FUZZER SEEDS WORKDIR SECONDS
#       fuzz for SECONDS from a fresh copy of SEEDS in WORKDIR; fails on any
#       crash, and says where libFuzzer wrote the input
#   run_fuzz.sh replay FUZZER DIR...
#       run every file in the DIRs once (an empty or missing DIR is fine)
#   run_fuzz.sh skip REASON
#       print why the fuzz cases cannot run here; exit 77 (ctest: skipped)
set -u

short() {
	local fuzzer=$1 seeds=$2 work=$3 seconds=$4
	rm -rf "$work"
	mkdir -p "$work/corpus"
	cp "$seeds"/* "$work/corpus/" 2>/dev/null
	echo "fuzz: $seconds s from $(ls "$work/corpus" | wc -l) seeds in $work"
	"$fuzzer" "$work/corpus" -max_total_time="$seconds" -rss_limit_mb=2048 \
		-timeout=30 -print_final_stats=1 -artifact_prefix="$work/" \
		> "$work/log" 2>&1
	local rc=$?
	grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::' "$work/log"
	if [ "$rc" -ne 0 ]; then
		grep -E 'CHECK FAILED|ERROR|SUMMARY|Test unit written' "$work/log"
		echo "fuzz: FAILED (exit $rc); full log: $work/log"
		echo "fuzz: replay with: $fuzzer <input>; add" \
			"FUZZ_TLMALLOC_TRACE=1 to see each step"
		return 1
	fi
	echo "fuzz: no crash"
}

replay() {
	local fuzzer=$1 files=() dir f
	shift
	for dir in "$@"; do
		[ -d "$dir" ] || continue
		for f in "$dir"/*; do
			[ -f "$f" ] && files+=("$f")
		done
	done
	if [ "${#files[@]}" -eq 0 ]; then
		echo "fuzz: no inputs to replay in: $*"
		return 0
	fi
	echo "fuzz: replaying ${#files[@]} inputs"
	local log rc
	log=$("$fuzzer" -rss_limit_mb=2048 -timeout=30 "${files[@]}" 2>&1)
	rc=$?
	echo "$log" | grep -vE '^(INFO: |Executed |Running: |\*\*\*|$)'
	if [ "$rc" -ne 0 ]; then
		echo "fuzz: FAILED (exit $rc)"
		return "$rc"
	fi
	echo "fuzz: every input passed"
}

case "${1:-}" in
short) shift; short "$@" ;;
replay) shift; replay "$@" ;;
skip) echo "fuzz: skipped: $2"; exit 77 ;;
*) echo "usage: $0 short|replay|skip ..." >&2; exit 2 ;;
esac

#!/bin/bash
# python_work.sh - python3 running python_work.py with tlmalloc preloaded:
# exits 0, prints the expected counts, and sees libtlmalloc in its maps.
# Usage: python_work.sh LIB PYTHON3
. "$(dirname "$0")/common.sh"

PY=${2:-python3}
out=$(preloaded "$PY" "$(dirname "$0")/python_work.py") ||
	fail "python3 exited with status $?"
expected="dict 200000
json 200000
threads 32
fork 8
tlmalloc mapped"
expect "python3 output" "$out" "$expected"

#!/bin/bash
# node_work.sh - node running node_work.js with tlmalloc preloaded: exits
# 0, prints the expected count, and sees libtlmalloc in its maps.
# Usage: node_work.sh LIB NODE
. "$(dirname "$0")/common.sh"

NODE=${2:?node}
out=$(preloaded "$NODE" "$(dirname "$0")/node_work.js") ||
	fail "node exited with status $?"
expected="workers 4
tlmalloc mapped"
expect "node output" "$out" "$expected"

#!/bin/bash
# rust_work.sh - rust_work.rs, compiled here with rustc, run with tlmalloc
# preloaded: exits 0, prints the expected counts, and sees libtlmalloc in
# its maps.  Usage: rust_work.sh LIB RUSTC
. "$(dirname "$0")/common.sh"

RUSTC=${2:?rustc}
"$RUSTC" -O -o "$WORK/rust_work" "$(dirname "$0")/rust_work.rs" ||
	fail "rustc exited with status $?"
out=$(preloaded "$WORK/rust_work") ||
	fail "rust_work exited with status $?"
expected="batches 800 boxes 80000
tlmalloc mapped"
expect "rust_work output" "$out" "$expected"

#!/usr/bin/env bash
# experiments.sh: the one command that reruns the classic allocator
# experiments.  Installs what is missing (scripts/install-deps.sh), builds
# tlmalloc and the workloads (CMake, Ninja, Release, in build/), then runs
# the harness (python3 -m bench.harness) with the arguments given here:
#
#   scripts/experiments.sh                      quick mode, about 15 minutes
#   scripts/experiments.sh --full               the classic full sizes
#   scripts/experiments.sh --only loop,prodcons --alloc glibc,tlmalloc
#   scripts/experiments.sh --no-security        without the misuse programs'
#                                               table (on by default, seconds)
#   scripts/experiments.sh --reps 5 --out DIR   NAME=/path/lib.so ...
#   scripts/experiments.sh --program 'python3 -c "import json"'
#                                               your own command (repeatable,
#                                               [NAME=]'CMD ARGS'), run in
#                                               this folder under every
#                                               allocator instead of the suite
#   scripts/experiments.sh --help               every harness option
#
# The report lands in results/<timestamp>/report.md (results/latest).
# Set TLMALLOC_SKIP_DEPS=1 to skip the install step, TLMALLOC_SKIP_BUILD=1
# to use build/ as it is.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# --program commands run where this script was started
export TLMALLOC_BENCH_CWD="$PWD"
cd "$root"

for arg in "$@"; do
	case "$arg" in
	-h|--help|--list) TLMALLOC_SKIP_DEPS=1 TLMALLOC_SKIP_BUILD=1 ;;
	esac
done

if [ "${TLMALLOC_SKIP_DEPS:-0}" != 1 ]; then
	echo "== installing dependencies" >&2
	scripts/install-deps.sh >&2 || echo "experiments: some dependencies" \
		"could not be installed; going on with what is there" >&2
fi

if [ "${TLMALLOC_SKIP_BUILD:-0}" != 1 ]; then
	echo "== building (build/, Release)" >&2
	generator=()
	if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null 2>&1; then
		generator=(-G Ninja)
	fi
	cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release >&2
	cmake --build build >&2
fi

echo "== running the experiments" >&2
printf -v command ' %q' "$@"
export TLMALLOC_BENCH_COMMAND="scripts/experiments.sh${command% }"
[ $# -eq 0 ] && export TLMALLOC_BENCH_COMMAND="scripts/experiments.sh"
exec python3 -m bench.harness --build "$root/build" "$@"

#!/usr/bin/env bash
# test.sh: the README's test command.  Installs what a fresh Debian/Ubuntu
# machine lacks (scripts/install-deps.sh --no-peers), builds tlmalloc, its
# tests and the workloads in build/ (Release), and runs the whole suite
# with ctest (with the ASan and UBSan variant, TLMALLOC_SANITIZE).  Extra
# arguments go to that ctest (e.g. -R preload, -L stress) and skip the
# other platforms.
#
# Before it, the other platforms (README "Platforms"), each skipped with
# the reason when its tools are missing, or all with TLMALLOC_PLATFORMS=0:
#   musl     cmake --preset musl in build-musl (musl-gcc), its whole suite
#   aarch64  cmake --preset aarch64 in build-aarch64 (gcc-aarch64-linux-gnu),
#            a bounded subset under qemu-aarch64: the API contract of the
#            shared and static library, misuse, options, huge blocks,
#            statistics, stress, the preloaded and dlopen'ed library, and
#            the pagesize.16k/64k cases
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

if [ "${TLMALLOC_SKIP_DEPS:-0}" != 1 ]; then
	scripts/install-deps.sh --no-peers >&2 ||
		echo "test: some dependencies could not be installed" >&2
fi

status=0
failed=

# platform NAME TOOL... : true when every TOOL is on PATH, else says why
# NAME is skipped.
platform() {
	local name=$1 tool
	shift
	for tool in "$@"; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "test: $name: skipped (no $tool; scripts/install-deps.sh installs it)"
			return 1
		fi
	done
}

aarch64_subset='^(unit\.(std|static|misuse|trust|huge|stats)\.|stress\.|pagesize\.|preload\.|install\.)'
if [ "${TLMALLOC_PLATFORMS:-1}" = 0 ] || [ $# -gt 0 ]; then
	echo "test: musl, aarch64: skipped (TLMALLOC_PLATFORMS=0, or ctest arguments given)"
else
	if platform musl musl-gcc ninja; then
		echo "test: musl (build-musl)"
		start=$SECONDS
		cmake --preset musl >/dev/null
		cmake --build --preset musl
		ctest --test-dir build-musl --output-on-failure --timeout 600 \
			-j2 || { status=1; failed="$failed musl"; }
		echo "test: musl: $((SECONDS - start)) s, build and tests"
	fi
	if platform aarch64 aarch64-linux-gnu-gcc aarch64-linux-gnu-g++ \
		qemu-aarch64 ninja; then
		echo "test: aarch64 under qemu (build-aarch64, a subset)"
		start=$SECONDS
		cmake --preset aarch64 >/dev/null
		cmake --build --preset aarch64
		ctest --test-dir build-aarch64 --output-on-failure --timeout 600 \
			-j2 -R "$aarch64_subset" || { status=1; failed="$failed aarch64"; }
		echo "test: aarch64: $((SECONDS - start)) s, build and tests"
	fi
fi

# The main suite last, so that its summary is the last one printed.
generator=()
if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null 2>&1; then
	generator=(-G Ninja)
fi
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
	-DTLMALLOC_SANITIZE=ON
cmake --build build
ctest --test-dir build --output-on-failure --timeout 600 "$@" || status=$?
if [ -n "$failed" ]; then
	echo "test: tests failed on:$failed (their output is above)"
fi
exit $status

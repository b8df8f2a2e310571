#!/usr/bin/env bash
# test.sh: the README's test command.  Installs what a fresh Debian/Ubuntu
# machine lacks (scripts/install-deps.sh --no-peers), builds tlmalloc, its
# tests and the workloads in build/ (Release), and runs the whole suite
# with ctest (with the ASan and UBSan variant, TLMALLOC_SANITIZE).  Extra
# arguments go to ctest (e.g. -R preload, -L stress).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

if [ "${TLMALLOC_SKIP_DEPS:-0}" != 1 ]; then
	scripts/install-deps.sh --no-peers >&2 ||
		echo "test: some dependencies could not be installed" >&2
fi

generator=()
if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null 2>&1; then
	generator=(-G Ninja)
fi
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
	-DTLMALLOC_SANITIZE=ON
cmake --build build
ctest --test-dir build --output-on-failure --timeout 600 "$@"

#!/usr/bin/env bash
# install-deps.sh: installs what building tlmalloc and running the
# experiments need, on Debian or Ubuntu, as root.  Idempotent: it asks apt
# for packages only when one is missing (and runs apt-get update once,
# then), and installs matplotlib (and pytest, for the harness tests) for
# the python3 first on PATH only when it cannot import them.  It prints
# what it found and what it did.
#
#   scripts/install-deps.sh              tools, peer allocators, matplotlib
#   scripts/install-deps.sh --no-peers   tools and matplotlib only
#   scripts/install-deps.sh --peers-only the peer allocators only
#   scripts/install-deps.sh --dry-run    say what would be installed
#
# A peer allocator package that the distribution does not have is reported
# and skipped: the experiments list that allocator as missing.  The peers
# step also builds mimalloc 3, snmalloc and rpmalloc into build/peers with
# scripts/build-peers.sh when cargo is there (a no-op when they are built
# and up to date); without cargo those three are listed as missing.
# The python step also installs ziglang 0.13.0 (Zig; TLMALLOC_ZIGLANG
# replaces the pip requirement) with pip, for the static musl
# builds of the C++ containers workload; a failure is a warning.
# TLMALLOC_TOOLS / TLMALLOC_PEERS replace the package lists (other names on
# another release).
set -u

# clang (with its libFuzzer runtime, below) builds the fuzz harness;
# binutils' nm and objdump count the fast paths' instructions (test/fastpath);
# pprof (install_pprof) reads the heap profiler's dumps in the tests; mypy
# checks the experiment harness's types (ctest harness.types); musl-tools
# builds and tests the musl variant, the aarch64 compilers and qemu-user
# the arm64 one (scripts/test.sh, README "Platforms"); xz-utils is one of
# the multithreaded programs run preloaded (preload.threaded_tools).
TOOLS=${TLMALLOC_TOOLS:-"cmake ninja-build gcc g++ binutils make pkg-config python3 strace valgrind musl-tools clang mypy gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user xz-utils"}
PEERS=${TLMALLOC_PEERS:-"libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0 libtbbmalloc2"}

want_tools=1
want_peers=1
want_python=1
dry_run=0
apt_updated=0

usage() {
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

say() {
	echo "install-deps: $*"
}

for arg in "$@"; do
	case "$arg" in
	--no-peers) want_peers=0 ;;
	--peers-only) want_tools=0; want_python=0 ;;
	--dry-run) dry_run=1 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "install-deps: unknown option: $arg" >&2; usage >&2; exit 2 ;;
	esac
done

have_apt() {
	command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1
}

is_installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		say "not root and no sudo: cannot run: $*"
		return 1
	fi
}

apt_update_once() {
	[ "$apt_updated" -eq 1 ] && return 0
	say "apt-get update"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || return 1
	apt_updated=1
}

# apt_has PKG: the package is known to apt (after an update).
apt_has() {
	apt-cache show "$1" >/dev/null 2>&1
}

# install_missing KIND PKG...: installs the missing ones among PKG.
# For KIND=peer an unknown package is a warning, not an error.
install_missing() {
	local kind=$1 missing="" pkg todo="" rc=0
	shift
	for pkg in "$@"; do
		if is_installed "$pkg"; then
			say "$kind $pkg: already installed"
		else
			missing="$missing $pkg"
		fi
	done
	[ -z "$missing" ] && return 0
	if [ "$dry_run" -eq 1 ]; then
		say "would install:$missing"
		return 0
	fi
	apt_update_once || { say "apt-get update failed"; return 1; }
	for pkg in $missing; do
		if apt_has "$pkg"; then
			todo="$todo $pkg"
		elif [ "$kind" = peer ]; then
			say "WARNING: peer package $pkg is not in this distribution; skipped (reported as missing by the experiments)"
		else
			say "ERROR: package $pkg is not in this distribution"
			rc=1
		fi
	done
	[ -z "$todo" ] && return $rc
	say "apt-get install$todo"
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends $todo >/dev/null || {
		say "ERROR: apt-get install$todo failed"
		return 1
	}
	say "installed:$todo"
	return $rc
}

# libFuzzer's runtime (libclang_rt.fuzzer) for the installed clang: the
# package libclang-rt-N-dev of clang N (Debian 12: clang 14).  Missing, the
# fuzz tests are skipped, so it is a warning, not an error.
install_fuzzer_runtime() {
	local major pkg
	if ! command -v clang >/dev/null 2>&1; then
		say "WARNING: no clang; the fuzz tests will be skipped"
		return 0
	fi
	major=$(clang -dumpversion 2>/dev/null | cut -d. -f1)
	pkg=libclang-rt-$major-dev
	if is_installed "$pkg"; then
		say "tool $pkg: already installed"
		return 0
	fi
	if [ "$dry_run" -eq 1 ]; then
		say "would install: $pkg"
		return 0
	fi
	apt_update_once && apt_has "$pkg" && install_missing tool "$pkg" ||
		say "WARNING: $pkg (libFuzzer for clang $major) not installed; the fuzz tests will be skipped"
	return 0
}

install_matplotlib() {
	if python3 -c 'import matplotlib' >/dev/null 2>&1; then
		say "matplotlib: already importable by $(command -v python3)"
		return 0
	fi
	if [ "$dry_run" -eq 1 ]; then
		say "would install matplotlib for $(command -v python3)"
		return 0
	fi
	say "pip install --quiet matplotlib (for $(command -v python3))"
	if python3 -m pip install --quiet matplotlib >/dev/null 2>&1 &&
	   python3 -c 'import matplotlib' >/dev/null 2>&1; then
		say "matplotlib: installed with pip"
		return 0
	fi
	if have_apt; then
		say "pip failed; trying apt python3-matplotlib"
		install_missing tool python3-matplotlib
		if python3 -c 'import matplotlib' >/dev/null 2>&1; then
			say "matplotlib: installed with apt"
			return 0
		fi
	fi
	say "WARNING: matplotlib not available; the report will have no plots"
	return 0
}

install_pytest() {
	if python3 -c 'import pytest' >/dev/null 2>&1; then
		say "pytest: already importable by $(command -v python3)"
		return 0
	fi
	if [ "$dry_run" -eq 1 ]; then
		say "would install pytest for $(command -v python3)"
		return 0
	fi
	if python3 -m pip install --quiet pytest >/dev/null 2>&1; then
		say "pytest: installed with pip"
	elif have_apt; then
		install_missing tool python3-pytest
	fi
	python3 -c 'import pytest' >/dev/null 2>&1 ||
		say "WARNING: pytest not available; the harness tests cannot run"
	return 0
}

# Zig (the Python package ziglang), whose clang and libc++ build the C++
# containers workload as a static musl program (bench/CMakeLists.txt):
# Debian's musl-gcc has no C++ runtime.  Zig 0.13.0, whose musl (1.2.5)
# keeps musl's own malloc (mallocng); later ones (0.17.1 at least) put
# Zig's allocator in its place.  Missing, those programs are not built and
# the experiments list them as missing.
ZIGLANG=${TLMALLOC_ZIGLANG:-ziglang==0.13.0}
install_ziglang() {
	local have
	have=$(python3 -c 'import importlib.metadata as m; print("ziglang==" + m.version("ziglang"))' 2>/dev/null)
	if [ "$have" = "$ZIGLANG" ]; then
		say "ziglang: $have already importable by $(command -v python3)"
		return 0
	fi
	if [ "$dry_run" -eq 1 ]; then
		say "would install $ZIGLANG for $(command -v python3)"
		return 0
	fi
	say "pip install --quiet $ZIGLANG (for $(command -v python3))"
	if python3 -m pip install --quiet "$ZIGLANG" >/dev/null 2>&1 &&
	   python3 -c 'import ziglang' >/dev/null 2>&1; then
		say "ziglang: installed with pip"
	else
		say "WARNING: ziglang not available; the static musl builds of the containers workload will be listed as missing"
	fi
	return 0
}

# pprof, which the heap profiler's tests run on its dumps: the Go tool,
# built with go where Go is (into /usr/local/bin), else gperftools'
# google-pprof from apt.  Missing, those checks say they are skipped.
install_pprof() {
	local go
	if command -v pprof >/dev/null 2>&1 || command -v google-pprof >/dev/null 2>&1; then
		say "tool pprof: already installed"
		return 0
	fi
	go=$(command -v go || { [ -x /usr/local/go/bin/go ] && echo /usr/local/go/bin/go; })
	if [ "$dry_run" -eq 1 ]; then
		say "would install pprof (${go:+go install}${go:-apt google-perftools})"
		return 0
	fi
	if [ -n "$go" ]; then
		say "go install github.com/google/pprof@latest (into /usr/local/bin)"
		as_root env GOBIN=/usr/local/bin "$go" install github.com/google/pprof@latest >/dev/null 2>&1 &&
			return 0
		say "WARNING: go install of pprof failed; trying apt"
	fi
	have_apt && install_missing tool google-perftools >/dev/null && return 0
	say "WARNING: no pprof; the heap profiler's pprof checks will be skipped"
	return 0
}

# The peers built from source (scripts/build-peers.sh): cargo fetches their
# sources.  A failure is a warning: the experiments list them as missing.
build_source_peers() {
	local script
	script="$(cd "$(dirname "$0")" && pwd)/build-peers.sh"
	if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
		say "WARNING: no cargo: mimalloc3, snmalloc, rpmalloc and hardened_malloc (built from source by scripts/build-peers.sh) will be listed as missing; install Rust's cargo and rerun"
		return 0
	fi
	if [ "$dry_run" -eq 1 ]; then
		say "would run $script (mimalloc3, snmalloc, rpmalloc, hardened_malloc, unless up to date)"
		return 0
	fi
	"$script" 2>&1 | sed 's/^/install-deps: /'
	[ "${PIPESTATUS[0]}" -eq 0 ] ||
		say "WARNING: scripts/build-peers.sh failed; what it did not build is listed as missing"
	return 0
}

status=0
if have_apt; then
	if [ "$want_tools" -eq 1 ]; then
		install_missing tool $TOOLS || status=1
		install_fuzzer_runtime
		install_pprof
	fi
	if [ "$want_peers" -eq 1 ]; then
		install_missing peer $PEERS || status=1
	fi
else
	say "no apt-get/dpkg here (not Debian/Ubuntu): install by hand: $TOOLS $PEERS"
fi
[ "$want_peers" -eq 1 ] && build_source_peers
if [ "$want_python" -eq 1 ]; then
	install_matplotlib
	install_pytest
	install_ziglang
fi
[ "$status" -eq 0 ] && say "done" || say "done, with errors"
exit $status

# common.sh - helpers shared by the install tests (sourced, not run).
#
# ctest passes everything through the environment (test/install/
# CMakeLists.txt): TL_PREFIX (the temporary prefix), TL_LIBDIR,
# TL_INCLUDEDIR, TL_BINDIR, TL_MANDIR (relative, GNUInstallDirs),
# TL_VERSION, TL_SOVERSION, TL_EXAMPLES (the examples/ folder),
# TL_SOURCE_DIR (the source tree), the tools
# TL_CMAKE, TL_GENERATOR, TL_MAKE_PROGRAM, TL_CC, TL_CXX, TL_PKG_CONFIG,
# TL_MAKE (the last two may be empty), and the build tree's TL_BUILD_DIR,
# TL_BUILD_LIBRARY and TL_BUILD_LAUNCHER.

set -u

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

ok() {
	echo "ok $*"
}

# skip WHY: ctest reports the test as skipped (SKIP_RETURN_CODE 77).
skip() {
	echo "SKIP: $*"
	exit 77
}

# re TEXT: TEXT quoted for a grep -E pattern (paths may hold . or +).
re() {
	printf '%s' "$1" | sed 's/[][\.*^$+?(){}|]/\\&/g'
}

# contains NAME TEXT PATTERN: TEXT has a line matching PATTERN (grep -E).
contains() {
	printf '%s\n' "$2" | grep -Eq -- "$3" ||
		fail "$1: no line matches '$3' in:
$2"
	ok "$1"
}

# lacks NAME TEXT PATTERN: no line of TEXT matches PATTERN.
lacks() {
	printf '%s\n' "$2" | grep -Eq -- "$3" &&
		fail "$1: a line matches '$3' in:
$2"
	ok "$1"
}

# same NAME ACTUAL EXPECTED
same() {
	[ "$2" = "$3" ] || fail "$1: expected '$3', got '$2'"
	ok "$1: $2"
}

# check_example NAME PROGRAM: PROGRAM ran, printed tlmalloc's version
# first and "ok" last.
check_example() {
	local out

	out=$("$2" 2>&1) || fail "$1: $2 exited $?:
$out"
	same "$1 version" "$(printf '%s\n' "$out" | head -n 1 | cut -d' ' -f1-2)" \
		"tlmalloc $TL_VERSION"
	same "$1 result" "$(printf '%s\n' "$out" | tail -n 1)" ok
}

# loads_from NAME PROGRAM DIR: the dynamic loader resolves PROGRAM's
# libtlmalloc from DIR.
loads_from() {
	local out

	out=$(LD_TRACE_LOADED_OBJECTS=1 "$2" 2>&1) || fail "$1: cannot trace $2"
	contains "$1 loads libtlmalloc from $3" "$out" \
		"libtlmalloc\.so\.$TL_SOVERSION => $(re "$3")/libtlmalloc\.so\.$TL_SOVERSION"
}

[ -n "${TL_PREFIX:-}" ] || fail "TL_PREFIX is not set (run through ctest)"
LIBDIR=$TL_PREFIX/$TL_LIBDIR

# A fresh directory, removed when the test exits.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tlmalloc-install.XXXXXX") || fail "mktemp"
trap 'rm -rf "$WORK"' EXIT

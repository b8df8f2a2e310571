#!/usr/bin/env bash
# hardened-tests.sh: runs hardened_malloc's own test programs (its
# test/ folder: one misuse or one promise of the allocator each) under
# tlmalloc's variants and hardened_malloc, preloaded, and counts the
# programs each passes.
#
#   scripts/hardened-tests.sh                 the default allocators (below)
#   scripts/hardened-tests.sh NAME=LIB ...    these instead (glibc: no LIB)
#   scripts/hardened-tests.sh --build DIR     tlmalloc's build folder
#                                             (default: build)
#   scripts/hardened-tests.sh --out DIR       where the programs are built
#                                             (default: build/hardened-tests)
#   scripts/hardened-tests.sh --json FILE     the outcomes as JSON too
#
# The default allocators: glibc (nothing preloaded), tlmalloc, secure and
# fast (DIR/src/libtlmalloc.so, libtlmalloc-secure.so, libtlmalloc-fast.so)
# and hardened_malloc (build/peers/libhardened_malloc.so, which
# scripts/build-peers.sh builds); a library that is missing is named and
# left out.
#
# The programs' sources are not kept in this repository: they come with
# the crate hardened_malloc-rs that scripts/build-peers.sh fetches (its pin
# is read from that script), from cargo's registry folder or fetched by
# cargo into a throwaway project.  Each is compiled here with the flags of
# hardened_malloc's test Makefile, without its library (the allocator is
# preloaded at run time), and run once per allocator with a time limit.
# Without cargo or the crate, or without a C or C++ compiler, the script
# says "skipped" and why, and exits 0.
#
# What "passed" means: hardened_malloc's test_smc.py gives each program's
# expected outcome in hardened_malloc's terms; here the outcome's kind
# counts, not hardened_malloc's words:
#   fatal error  (test_smc.py expects SIGABRT and a "fatal allocator
#                error" line) the program was killed by SIGABRT after at
#                least one line on stderr (the allocator's report);
#   fault        (it expects SIGSEGV) killed by SIGSEGV or SIGBUS, or by
#                SIGABRT after a line on stderr (an allocator that reports
#                the access, or stops the misuse at the next call);
#   success      (it expects exit 0, and maybe an exact stdout) exit 0 and
#                that stdout;
#   runs         (the programs of the Makefile that test_smc.py gives no
#                verdict: offset, mallinfo, mallinfo2, malloc_info,
#                large_array_growth) exit 0.
# Anything else fails, a time-out (60 s) included.  Two programs
# (malloc_object_size, malloc_object_size_offset) ask hardened_malloc's
# extension malloc_object_size for a size that is its own size classes'
# (24 bytes for malloc(16)); they pass only where an allocator has the
# extension and those classes.
#
# Output: a line per program (its outcome under each allocator), then the
# counts; with --json, the same in FILE.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/crates.sh"
BUILD=$ROOT/build
OUT=$ROOT/build/hardened-tests
JSON=""
ALLOCS=()

say() {
	echo "hardened-tests: $*"
}

usage() {
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

while [ $# -gt 0 ]; do
	case "$1" in
	--build) shift; [ $# -gt 0 ] || { usage >&2; exit 2; }; BUILD=$1 ;;
	--out) shift; [ $# -gt 0 ] || { usage >&2; exit 2; }; OUT=$1 ;;
	--json) shift; [ $# -gt 0 ] || { usage >&2; exit 2; }; JSON=$1 ;;
	-h|--help) usage; exit 0 ;;
	*=*|glibc) ALLOCS+=("$1") ;;
	*) echo "hardened-tests: unknown argument: $1" >&2; usage >&2; exit 2 ;;
	esac
	shift
done
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || { say "no build folder $BUILD"; exit 2; }

if [ ${#ALLOCS[@]} -eq 0 ]; then
	ALLOCS=(glibc "tlmalloc=$BUILD/src/libtlmalloc.so"
		"secure=$BUILD/src/libtlmalloc-secure.so"
		"fast=$BUILD/src/libtlmalloc-fast.so"
		"hardened_malloc=$ROOT/build/peers/libhardened_malloc.so")
fi

skip() {
	say "skipped: $*"
	exit 0
}

for tool in gcc g++ python3; do
	command -v "$tool" >/dev/null 2>&1 || skip "no $tool"
done
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
	PATH=$HOME/.cargo/bin:$PATH
fi

# The crate and its pin, as scripts/build-peers.sh names them.
CRATE=$(sed -n 's/^HARDENED_CRATE=//p' "$ROOT/scripts/build-peers.sh")
VERSION=$(sed -n 's/^HARDENED_CRATE_VERSION=//p' "$ROOT/scripts/build-peers.sh")
[ -n "$CRATE" ] && [ -n "$VERSION" ] || skip "no hardened_malloc pin in scripts/build-peers.sh"

# crate_folder: the crate's folder in cargo's registry, fetched there by
# cargo when it is not yet (scripts/crates.sh).
crate_folder() {
	local home=${CARGO_HOME:-$HOME/.cargo} dir
	for dir in "$home"/registry/src/*/"$CRATE-$VERSION"; do
		[ -d "$dir" ] && { echo "$dir"; return 0; }
	done
	command -v cargo >/dev/null 2>&1 || return 1
	fetch_crates "$OUT/fetch" \
		"$CRATE = { version = \"=$VERSION\", default-features = false }" >&2 ||
		return 1
	crate_dir "$OUT/fetch" "$CRATE"
}

mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
if ! command -v cargo >/dev/null 2>&1; then
	CRATE_DIR=$(crate_folder 2>/dev/null) || skip "no cargo, and $CRATE $VERSION is not in cargo's registry folder"
else
	CRATE_DIR=$(crate_folder) || skip "cargo could not fetch $CRATE $VERSION"
fi
SRC=$CRATE_DIR/src/hardened_malloc/test
[ -f "$SRC/Makefile" ] && [ -f "$SRC/test_smc.py" ] || skip "no test folder in $CRATE_DIR"

# The programs: the Makefile's EXECUTABLES, compiled with its flags
# (SLAB_CANARY and CONFIG_EXTENDED_SIZE_CLASSES as in its defaults).  They
# are linked to a stand-in for hardened_malloc's extension
# malloc_object_size, which a preloaded library that has it overrides;
# the stand-in says it is one and exits 127.
PROGRAMS=$(awk '/^EXECUTABLES :=/ { on = 1; next }
	on && /^[ \t]+[a-z_0-9]+/ { print $1; next } on { exit }' "$SRC/Makefile")
[ -n "$PROGRAMS" ] || skip "no EXECUTABLES in $SRC/Makefile"
mkdir -p "$OUT/bin" || exit 1
cat >"$OUT/bin/object-size-missing.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>

size_t malloc_object_size(void *ptr);

size_t malloc_object_size(void *ptr)
{
	(void)ptr;
	fputs("malloc_object_size: not in the preloaded allocator\n", stderr);
	exit(127);
}
EOF
gcc -O2 -fPIC -shared -o "$OUT/bin/libobject-size-missing.so" \
	"$OUT/bin/object-size-missing.c" || skip "cannot compile a shared library"
FLAGS="-O3 -D_GNU_SOURCE -DSLAB_CANARY=true -DCONFIG_EXTENDED_SIZE_CLASSES=true"
for name in $PROGRAMS; do
	if [ -f "$SRC/$name.c" ]; then
		gcc -std=c17 $FLAGS -o "$OUT/bin/$name" "$SRC/$name.c" -lpthread \
			-L"$OUT/bin" -Wl,-rpath,"$OUT/bin" -lobject-size-missing ||
			skip "cannot compile $SRC/$name.c"
	elif [ -f "$SRC/$name.cc" ]; then
		g++ -std=c++17 -fsized-deallocation $FLAGS -o "$OUT/bin/$name" \
			"$SRC/$name.cc" -lpthread || skip "cannot compile $SRC/$name.cc"
	else
		skip "no source for $name in $SRC"
	fi
done 2>"$OUT/compile.log"
say "$CRATE $VERSION: $(echo $PROGRAMS | wc -w) programs from $SRC"

python3 - "$SRC/test_smc.py" "$OUT/bin" "$JSON" "${ALLOCS[@]}" -- $PROGRAMS <<'EOF'
import ast, json, os, signal, subprocess, sys

smc, bindir, json_out = sys.argv[1:4]
rest = sys.argv[4:]
cut = rest.index("--")
allocs, programs = rest[:cut], rest[cut + 1:]
TIMEOUT = 60

def literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None

# test_smc.py's verdicts: per program, the return code it asserts and the
# stdout it asserts, if any.
expected = {}
for func in ast.walk(ast.parse(open(smc).read())):
    if not isinstance(func, ast.FunctionDef):
        continue
    name, code, stdout = None, None, None
    for call in ast.walk(func):
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            continue
        if call.func.attr == "run_test" and call.args:
            name = literal(call.args[0])
        elif call.func.attr == "assertEqual" and len(call.args) == 2:
            left, right = call.args
            if isinstance(left, ast.Name) and left.id == "returncode":
                code = literal(right)
            elif isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) \
                    and isinstance(left.func.value, ast.Name) \
                    and left.func.value.id == "stdout":
                stdout = literal(right)
    if name and code is not None:
        expected[name] = (code, stdout)

def kind(name):
    if name not in expected:
        return "runs"
    code = expected[name][0]
    return {-6: "fatal error", -11: "fault"}.get(code, "success" if code == 0 else None)

def run(program, lib):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if lib:
        env["LD_PRELOAD"] = lib
    try:
        done = subprocess.run([os.path.join(bindir, program)], env=env,
                              capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return "hang", False
    code, err = done.returncode, done.stderr.decode(errors="replace")
    lines = [line for line in err.splitlines() if line.strip()]
    if code < 0:
        try:
            outcome = signal.Signals(-code).name
        except ValueError:
            outcome = "signal %d" % -code
    else:
        outcome = "exit %d" % code
    want = kind(program)
    if want == "fatal error":
        ok = code == -signal.SIGABRT and bool(lines)
    elif want == "fault":
        ok = code in (-signal.SIGSEGV, -signal.SIGBUS) or \
            (code == -signal.SIGABRT and bool(lines))
    elif want == "success":
        ok = code == 0 and (expected[program][1] is None or
                            done.stdout.decode(errors="replace") == expected[program][1])
        if code == 0 and not ok:
            outcome += ", other stdout"
    else:
        ok = code == 0
    if code == 127 and "malloc_object_size: not in" in err:
        outcome = "no malloc_object_size"
    return outcome, ok

names, libs = [], []
for spec in allocs:
    name, _, lib = spec.partition("=")
    if lib and not os.path.exists(lib):
        print("hardened-tests: %s: no %s, left out" % (name, lib))
        continue
    names.append(name)
    libs.append(lib)
if not names:
    print("hardened-tests: skipped: none of the allocators exists")
    sys.exit(0)

results = {}
width = max(len(p) for p in programs)
print("%-*s  %-11s  %s" % (width, "program", "expects", "  ".join(names)))
for program in programs:
    row = [run(program, lib) for lib in libs]
    results[program] = {"expects": kind(program),
                        **{n: {"outcome": o, "passed": ok}
                           for n, (o, ok) in zip(names, row)}}
    print("%-*s  %-11s  %s" % (width, program, kind(program), "  ".join(
        "%s (%s)" % ("pass" if ok else "FAIL", o) for o, ok in row)))
with_verdict = [p for p in programs if p in expected]
print()
print("passed, of the %d programs with a verdict in test_smc.py, and of all %d:"
      % (len(with_verdict), len(programs)))
counts = {}
for name in names:
    verdict = sum(results[p][name]["passed"] for p in with_verdict)
    total = sum(results[p][name]["passed"] for p in programs)
    counts[name] = {"verdict": verdict, "verdict_of": len(with_verdict),
                    "all": total, "all_of": len(programs)}
    print("  %-16s %2d / %d   %2d / %d" % (name, verdict, len(with_verdict),
                                          total, len(programs)))
if json_out:
    with open(json_out, "w") as handle:
        json.dump({"counts": counts, "programs": results}, handle, indent=2)
        handle.write("\n")
EOF

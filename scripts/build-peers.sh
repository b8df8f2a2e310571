#!/usr/bin/env bash
# build-peers.sh: builds the peer allocators that Debian does not ship
# (mimalloc 3, snmalloc, rpmalloc; and, optionally, hardened_malloc) as
# shared libraries that replace malloc under LD_PRELOAD, for the
# experiments.
#
#   scripts/build-peers.sh            build what is missing or out of date
#   scripts/build-peers.sh --force    rebuild all of them
#   scripts/build-peers.sh --out DIR  put the libraries in DIR
#                                     (default: build/peers in the repository)
#
# Cargo only fetches the sources: each allocator's Rust "-sys" crate bundles
# its C/C++ sources, at pinned versions (below), from the Rust package
# registry.  Nothing of those projects is kept in this repository.  The
# sources are compiled here with gcc/g++ in each project's own release
# configuration:
#   libmimalloc3.so  mimalloc's src/static.c (all of mimalloc in one unit)
#                    with the flags and defines of mimalloc's CMake shared
#                    library with MI_OVERRIDE=ON (its CMake scripts are not
#                    in the crate, so its CMakeLists.txt cannot run);
#   libsnmalloc.so   snmalloc's own CMakeLists.txt (in the crate), target
#                    snmallocshim, CMAKE_BUILD_TYPE=Release: its configure
#                    checks pick the platform defines;
#   librpmalloc.so   rpmalloc.c with ENABLE_OVERRIDE=1 ENABLE_PRELOAD=1, the
#                    flags of rpmalloc's "rpmallocwrap" release library
#                    without its -ffast-math family (which could change the
#                    floating-point mode of the processes it is preloaded in);
#   libhardened_malloc.so  hardened_malloc's own Makefile (in the crate), its
#                    default configuration (config/default.mk: canaries,
#                    zero on free with the write-after-free check, slot
#                    randomisation, guard slabs, quarantines of one slab
#                    slot and of 1024 large regions, -march=native); only
#                    -Werror is dropped (CONFIG_WERROR=false) where the
#                    compiler warns.  Optional: the security comparison's
#                    reference (docs/secure.md); when its crate cannot be
#                    fetched or built it stays missing, and that is no error.
# Each library is checked before it is installed: a program run with it
# preloaded must resolve malloc, free, calloc, realloc and friends to it,
# and python3 and sh must run under it.
#
# DIR/VERSIONS.json records, per allocator, its upstream version (read from
# the sources: mimalloc.h's MI_MALLOC_VERSION, rpmalloc's CHANGELOG; for
# snmalloc the crate's version, which is snmalloc's release; for
# hardened_malloc the crate's build metadata, the release it bundles), the
# crate, the library and the build command.  The harness reads it.
#
# Needs cargo (on PATH or in ~/.cargo/bin), gcc, g++, cmake, ninja, make,
# python3.
# Exit status: 0 when mimalloc 3, snmalloc and rpmalloc are built (or were
# up to date), 1 otherwise; hardened_malloc's absence is reported only.
set -u

MIMALLOC_CRATE=libmimalloc-sys
MIMALLOC_CRATE_VERSION=0.1.49
SNMALLOC_CRATE=snmalloc-sys
SNMALLOC_CRATE_VERSION=0.7.6
RPMALLOC_CRATE=rpmalloc-sys
RPMALLOC_CRATE_VERSION=0.2.3+b097fd0
HARDENED_CRATE=hardened_malloc-rs
HARDENED_CRATE_VERSION=0.1.2+12

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/crates.sh"
OUT=$ROOT/build/peers
force=0

say() {
	echo "build-peers: $*"
}

usage() {
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

while [ $# -gt 0 ]; do
	case "$1" in
	--force) force=1 ;;
	--out) shift; [ $# -gt 0 ] || { usage >&2; exit 2; }; OUT=$1 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "build-peers: unknown option: $1" >&2; usage >&2; exit 2 ;;
	esac
	shift
done
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
WORK=$OUT/work
LIBS="libmimalloc3.so libsnmalloc.so librpmalloc.so"

# The recipe: this script's text and scripts/crates.sh's.  A library built by another recipe (other
# pins, other flags) is out of date.
RECIPE=$(cat "$0" "$ROOT/scripts/crates.sh" | sha256sum | cut -c1-16)

up_to_date() {
	local lib
	[ -f "$OUT/VERSIONS.json" ] || return 1
	for lib in $LIBS; do
		[ -f "$OUT/$lib" ] || return 1
	done
	python3 - "$OUT/VERSIONS.json" "$RECIPE" <<'EOF'
import json, sys
try:
    with open(sys.argv[1]) as handle:
        data = json.load(handle)
except (OSError, ValueError):
    sys.exit(1)
sys.exit(0 if data.get("recipe") == sys.argv[2] else 1)
EOF
}

if [ "$force" -eq 0 ] && up_to_date; then
	say "up to date in $OUT ($LIBS)"
	exit 0
fi

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
	PATH=$HOME/.cargo/bin:$PATH
fi
missing=""
for tool in cargo gcc g++ cmake ninja python3; do
	command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
	say "ERROR: missing:$missing; mimalloc3, snmalloc and rpmalloc stay missing in the experiments"
	exit 1
fi

# The three peers the experiments need.
fetch_sources() {
	say "cargo fetch ($MIMALLOC_CRATE $MIMALLOC_CRATE_VERSION, $SNMALLOC_CRATE $SNMALLOC_CRATE_VERSION, $RPMALLOC_CRATE $RPMALLOC_CRATE_VERSION)"
	fetch_crates "$WORK/fetch-peers" \
		"$MIMALLOC_CRATE = { version = \"=$MIMALLOC_CRATE_VERSION\", default-features = false }" \
		"$SNMALLOC_CRATE = { version = \"=$SNMALLOC_CRATE_VERSION\", default-features = false }" \
		"$RPMALLOC_CRATE = { version = \"=$RPMALLOC_CRATE_VERSION\", default-features = false }"
}

# The check program: which object malloc and friends resolve to.
build_checker() {
	cat >"$WORK/which-malloc.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *names[] = { "malloc", "free", "calloc", "realloc",
	"posix_memalign", "aligned_alloc", "memalign", "malloc_usable_size" };

int main(void)
{
	void *blocks[64], *aligned = NULL;
	size_t i;
	int bad = 0;

	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		void *sym = dlsym(RTLD_DEFAULT, names[i]);
		Dl_info info;
		if (!sym || !dladdr(sym, &info) || !info.dli_fname) {
			printf("%s ?\n", names[i]);
			bad = 1;
			continue;
		}
		printf("%s %s\n", names[i], info.dli_fname);
	}
	for (i = 0; i < 64; i++) {
		blocks[i] = malloc(i * 97 + 1);
		if (!blocks[i] || malloc_usable_size(blocks[i]) < i * 97 + 1)
			bad = 1;
		else
			memset(blocks[i], (int)i, i * 97 + 1);
	}
	for (i = 0; i < 64; i += 2)
		blocks[i] = realloc(blocks[i], i * 1000 + 10);
	for (i = 0; i < 64; i++)
		free(blocks[i]);
	if (posix_memalign(&aligned, 4096, 100) || ((size_t)aligned & 4095))
		bad = 1;
	free(aligned);
	free(calloc(1000, 1000));
	return bad;
}
EOF
	gcc -O1 -o "$WORK/which-malloc" "$WORK/which-malloc.c" -ldl
}

# check LIB: LIB replaces malloc and its friends, and runs python3 and sh.
check() {
	local lib=$1 out name path real bad=0
	out=$(LD_PRELOAD=$lib "$WORK/which-malloc" 2>&1) || {
		say "ERROR: $lib: the check program failed: $out"
		return 1
	}
	while read -r name path; do
		real=$(readlink -f "$path" 2>/dev/null)
		if [ "$real" != "$(readlink -f "$lib")" ]; then
			say "ERROR: $lib: $name resolves to $path"
			bad=1
		fi
	done <<<"$out"
	[ "$bad" -eq 0 ] || return 1
	out=$(LD_PRELOAD=$lib python3 -c 'import json; print(json.dumps(list(range(3))))' 2>&1)
	[ "$out" = "[0, 1, 2]" ] || { say "ERROR: $lib: python3: $out"; return 1; }
	out=$(LD_PRELOAD=$lib sh -c 'echo ok' 2>&1)
	[ "$out" = ok ] || { say "ERROR: $lib: sh: $out"; return 1; }
}

# install NAME LIB BUILT: checks BUILT and moves it to LIB.  (A library
# that fails its check is not installed: the build removed the old one.)
install_lib() {
	local name=$1 lib=$2 built=$3
	check "$built" || return 1
	mv -f "$built" "$OUT/$lib" || return 1
	say "$name: $OUT/$lib"
}

CMDS=$WORK/commands
mkdir -p "$CMDS" || exit 1

# run NAME CMD...: runs CMD, recording it as NAME's build command.
run() {
	local name=$1
	shift
	printf '%q ' "$@" >>"$CMDS/$name"
	echo >>"$CMDS/$name"
	"$@"
}

build_mimalloc() {
	local src=$1/c_src/mimalloc/v3 version
	version=$(awk '/#define MI_MALLOC_VERSION/ { v = $3;
		printf "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100; exit }' \
		"$src/include/mimalloc.h")
	[ -n "$version" ] || { say "ERROR: no MI_MALLOC_VERSION in $src"; return 1; }
	: >"$CMDS/mimalloc3"
	rm -f "$OUT/libmimalloc3.so"
	say "mimalloc $version: compiling $src/src/static.c"
	run mimalloc3 gcc -O3 -DNDEBUG -fPIC -shared \
		-Wall -Wextra -Wno-unknown-pragmas -Wstrict-prototypes \
		-fvisibility=hidden -ftls-model=initial-exec -fno-builtin-malloc \
		-DMI_SHARED_LIB -DMI_SHARED_LIB_EXPORT -DMI_MALLOC_OVERRIDE \
		-I"$src/include" -I"$src/src" "$src/src/static.c" \
		-o "$WORK/libmimalloc3.so" -lpthread -lrt -latomic || return 1
	install_lib mimalloc3 libmimalloc3.so "$WORK/libmimalloc3.so" || return 1
	echo "$version" >"$WORK/version.mimalloc3"
}

build_snmalloc() {
	local src=$1/upstream build=$WORK/snmalloc-build
	: >"$CMDS/snmalloc"
	rm -rf "$build" "$OUT/libsnmalloc.so"
	say "snmalloc $SNMALLOC_CRATE_VERSION: cmake $src (target snmallocshim)"
	run snmalloc cmake -S "$src" -B "$build" -G Ninja \
		-DCMAKE_BUILD_TYPE=Release -DSNMALLOC_BUILD_TESTING=OFF \
		>"$WORK/snmalloc-cmake.log" 2>&1 || {
		say "ERROR: snmalloc: cmake failed, see $WORK/snmalloc-cmake.log"
		return 1
	}
	run snmalloc ninja -C "$build" snmallocshim >>"$WORK/snmalloc-cmake.log" 2>&1 || {
		say "ERROR: snmalloc: build failed, see $WORK/snmalloc-cmake.log"
		return 1
	}
	cp "$build/libsnmallocshim.so" "$WORK/libsnmalloc.so" || return 1
	install_lib snmalloc libsnmalloc.so "$WORK/libsnmalloc.so" || return 1
	# snmalloc's sources carry no version; the crate is published from the
	# snmalloc repository with the release's version.
	echo "$SNMALLOC_CRATE_VERSION" >"$WORK/version.snmalloc"
}

build_rpmalloc() {
	local src=$1/rpmalloc version
	version=$(awk '{ sub(/\r$/, "") } /^[0-9]+\.[0-9]+\.[0-9]+[ \t]*$/ { print $1; exit }' \
		"$src/CHANGELOG")
	[ -n "$version" ] || { say "ERROR: no version in $src/CHANGELOG"; return 1; }
	: >"$CMDS/rpmalloc"
	rm -f "$OUT/librpmalloc.so"
	say "rpmalloc $version: compiling $src/rpmalloc/rpmalloc.c"
	run rpmalloc gcc -O3 -DNDEBUG -funroll-loops -funit-at-a-time \
		-fstrict-aliasing -fPIC -shared -Wall -Wextra -Wno-attributes \
		-D_GNU_SOURCE=1 -DRPMALLOC_COMPILE=1 -DBUILD_DYNAMIC_LINK=1 \
		-DBUILD_RELEASE=1 -DENABLE_OVERRIDE=1 -DENABLE_PRELOAD=1 \
		"$src/rpmalloc/rpmalloc.c" -o "$WORK/librpmalloc.so" \
		-pthread -ldl || return 1
	install_lib rpmalloc librpmalloc.so "$WORK/librpmalloc.so" || return 1
	echo "$version" >"$WORK/version.rpmalloc"
}

# build_hardened DIR: hardened_malloc with its own Makefile, in a copy of
# its sources (the crate's folder is cargo's).
build_hardened() {
	local src=$1/src/hardened_malloc build=$WORK/hardened_malloc
	command -v make >/dev/null 2>&1 || { say "hardened_malloc: no make"; return 1; }
	[ -f "$src/Makefile" ] || { say "hardened_malloc: no Makefile in $src"; return 1; }
	: >"$CMDS/hardened_malloc"
	rm -rf "$build" "$OUT/libhardened_malloc.so"
	cp -R "$src" "$build" || return 1
	say "hardened_malloc ${HARDENED_CRATE_VERSION#*+}: make in $build (config/default.mk)"
	if ! run hardened_malloc make -C "$build" >"$WORK/hardened_malloc.log" 2>&1; then
		say "hardened_malloc: make failed; again without -Werror (CONFIG_WERROR=false)"
		: >"$CMDS/hardened_malloc"
		run hardened_malloc make -C "$build" CONFIG_WERROR=false \
			>>"$WORK/hardened_malloc.log" 2>&1 || {
			say "hardened_malloc: build failed, see $WORK/hardened_malloc.log"
			return 1
		}
	fi
	cp "$build/out/libhardened_malloc.so" "$WORK/libhardened_malloc.so" || return 1
	install_lib hardened_malloc libhardened_malloc.so "$WORK/libhardened_malloc.so" ||
		return 1
	# the sources carry no version; the crate's build metadata names the
	# release it bundles
	echo "${HARDENED_CRATE_VERSION#*+}" >"$WORK/version.hardened_malloc"
}

# The optional peer: whatever fails leaves it missing, and is no error.
build_optional() {
	local dir
	say "cargo fetch ($HARDENED_CRATE $HARDENED_CRATE_VERSION, optional)"
	if ! fetch_crates "$WORK/fetch-optional" \
		"$HARDENED_CRATE = { version = \"=$HARDENED_CRATE_VERSION\", default-features = false }" \
		>"$WORK/fetch-optional.log" 2>&1; then
		say "hardened_malloc: cargo could not fetch $HARDENED_CRATE; it stays missing in the experiments"
		return 0
	fi
	dir=$(crate_dir "$WORK/fetch-optional" "$HARDENED_CRATE") && build_hardened "$dir" ||
		say "hardened_malloc not built; it stays missing in the experiments"
	return 0
}

write_versions() {
	python3 - "$OUT/VERSIONS.json" "$RECIPE" "$WORK" <<EOF
import json, os, sys
path, recipe, work = sys.argv[1:4]
peers = {}
for name, lib, crate, version_from in (
        ("mimalloc3", "libmimalloc3.so",
         "$MIMALLOC_CRATE $MIMALLOC_CRATE_VERSION",
         "MI_MALLOC_VERSION in mimalloc.h"),
        ("snmalloc", "libsnmalloc.so",
         "$SNMALLOC_CRATE $SNMALLOC_CRATE_VERSION",
         "the crate's version (published with snmalloc's release)"),
        ("rpmalloc", "librpmalloc.so",
         "$RPMALLOC_CRATE $RPMALLOC_CRATE_VERSION",
         "the newest release in rpmalloc's CHANGELOG"),
        ("hardened_malloc", "libhardened_malloc.so",
         "$HARDENED_CRATE $HARDENED_CRATE_VERSION",
         "the crate's build metadata (the release it bundles)")):
    try:
        with open(os.path.join(work, "version." + name)) as handle:
            version = handle.read().strip()
        with open(os.path.join(work, "commands", name)) as handle:
            command = "\n".join(line.strip() for line in handle
                                 if line.strip())
    except OSError:
        continue                       # not built this time
    peers[name] = {"version": version, "library": lib, "crate": crate,
                   "version_from": version_from, "build": command}
with open(path + ".tmp", "w") as handle:
    json.dump({"recipe": recipe, "peers": peers}, handle, indent=2,
              sort_keys=True)
    handle.write("\n")
os.replace(path + ".tmp", path)
EOF
}

rm -f "$WORK"/version.* "$OUT/VERSIONS.json"
status=0
if ! fetch_sources; then
	say "ERROR: cargo could not fetch the crates; mimalloc3, snmalloc and rpmalloc stay missing in the experiments"
	exit 1
fi
build_checker || { say "ERROR: cannot compile the check program"; exit 1; }
for peer in mimalloc:$MIMALLOC_CRATE snmalloc:$SNMALLOC_CRATE \
	rpmalloc:$RPMALLOC_CRATE; do
	dir=$(crate_dir "$WORK/fetch-peers" "${peer#*:}") || {
		say "ERROR: ${peer#*:} not in cargo's metadata"
		status=1
		continue
	}
	"build_${peer%%:*}" "$dir" || {
		say "ERROR: ${peer%%:*} not built"
		status=1
	}
done
build_optional
write_versions || status=1
[ "$status" -eq 0 ] && say "done: $OUT/VERSIONS.json" ||
	say "done, with errors (what was not built stays missing in the experiments)"
exit $status

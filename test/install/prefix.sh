# prefix.sh - install the build into the temporary prefix (the fixture the
# other install tests use) and check the tree: headers without the internal
# ones, the libraries with their sonames and link names, the CMake package,
# tlmalloc.pc, the launcher and the manual pages.
#
#   prefix.sh [CONFIG]    (environment: see common.sh)

. "$(dirname "$0")/common.sh"

config=${1:-}

rm -rf "$TL_PREFIX"
set -- "$TL_CMAKE" --install "$TL_BUILD_DIR" --prefix "$TL_PREFIX"
[ -n "$config" ] && set -- "$@" --config "$config"
"$@" >"$WORK/install.log" 2>&1 || {
	cat "$WORK/install.log"
	fail "cmake --install"
}
ok "cmake --install --prefix $TL_PREFIX"

# file NAME...: each is a regular file (after symlinks) under the prefix.
file() {
	local f

	for f in "$@"; do
		[ -f "$TL_PREFIX/$f" ] || fail "missing: $f"
		ok "installed $f"
	done
}

file "$TL_INCLUDEDIR/tlmalloc.h" "$TL_INCLUDEDIR/ts_malloc.h"
[ -e "$TL_PREFIX/$TL_INCLUDEDIR/tlmalloc" ] &&
	fail "internal headers installed: $TL_INCLUDEDIR/tlmalloc"
ok "no internal headers"

so=$TL_SOVERSION
for lib in libtlmalloc libtlmalloc-dlopen libtlmalloc-fast libtlmalloc-secure; do
	file "$TL_LIBDIR/$lib.so.$TL_VERSION" "$TL_LIBDIR/$lib.so.$so" \
		"$TL_LIBDIR/$lib.so"
	[ -L "$LIBDIR/$lib.so" ] || fail "$lib.so is not a link"
done
file "$TL_LIBDIR/libtlmalloc.a" "$TL_LIBDIR/libtlmalloc-secure.a"
file "$TL_LIBDIR/cmake/tlmalloc/tlmalloc-config.cmake" \
	"$TL_LIBDIR/cmake/tlmalloc/tlmalloc-config-version.cmake" \
	"$TL_LIBDIR/cmake/tlmalloc/tlmalloc-targets.cmake"
file "$TL_LIBDIR/pkgconfig/tlmalloc.pc"
file "$TL_MANDIR/man1/tlmalloc.1" "$TL_MANDIR/man3/tlmalloc.3" \
	"$TL_MANDIR/man3/tl_malloc.3" "$TL_MANDIR/man3/ts_malloc_lock.3"
file "$TL_BINDIR/tlmalloc"
[ -x "$TL_PREFIX/$TL_BINDIR/tlmalloc" ] || fail "the launcher is not executable"

# The paths written at install time are the prefix's.
pc=$(cat "$LIBDIR/pkgconfig/tlmalloc.pc")
contains "tlmalloc.pc prefix" "$pc" "^prefix=$(re "$TL_PREFIX")\$"
contains "tlmalloc.pc version" "$pc" "^Version: $TL_VERSION\$"
contains "launcher library" "$(cat "$TL_PREFIX/$TL_BINDIR/tlmalloc")" \
	"^library='$(re "$LIBDIR")/libtlmalloc\.so\.$so'\$"

# Sonames carry the major version; only the initial-exec library asks for
# static TLS.
if command -v readelf >/dev/null 2>&1; then
	dyn=$(readelf -d "$LIBDIR/libtlmalloc.so.$TL_VERSION")
	contains "soname" "$dyn" "Library soname: \[libtlmalloc\.so\.$so\]"
	contains "libtlmalloc.so uses static TLS" "$dyn" "STATIC_TLS"
	dyn=$(readelf -d "$LIBDIR/libtlmalloc-dlopen.so.$TL_VERSION")
	contains "dlopen soname" "$dyn" \
		"Library soname: \[libtlmalloc-dlopen\.so\.$so\]"
	lacks "libtlmalloc-dlopen.so needs no static TLS" "$dyn" "STATIC_TLS"
	# The unwinder is the library's own copy (cmake/platform.cmake,
	# TL_STATIC_LIBGCC): no libgcc_s.so.1 for a preload to load, and
	# none of its names exported to take the program's unwinder's place.
	for lib in libtlmalloc libtlmalloc-dlopen libtlmalloc-fast \
		libtlmalloc-secure; do
		dyn=$(readelf -d "$LIBDIR/$lib.so.$TL_VERSION")
		lacks "$lib.so needs no libgcc_s" "$dyn" "libgcc_s"
		syms=$(readelf -W --dyn-syms "$LIBDIR/$lib.so.$TL_VERSION" |
			awk '$7 != "UND" { print $8 }')
		contains "$lib.so exports malloc" "$syms" "^malloc\$"
		lacks "$lib.so exports no unwinder" "$syms" "^_Unwind_"
	done
else
	echo "note: no readelf; sonames not checked"
fi

# tlmalloc(3) has every function of the installed headers, each with its
# own page name, and every option the library declares.
man3=$(cat "$TL_PREFIX/$TL_MANDIR/man3/tlmalloc.3")
functions=$(sed -n 's/^TL_API .*[ *]\([A-Za-z0-9_]*\)(.*/\1/p' \
	"$TL_PREFIX/$TL_INCLUDEDIR/tlmalloc.h" "$TL_PREFIX/$TL_INCLUDEDIR/ts_malloc.h")
[ "$(printf '%s\n' "$functions" | wc -l)" -ge 20 ] ||
	fail "too few functions found in the headers: $functions"
for f in $functions; do
	contains "tlmalloc(3) declares $f" "$man3" "^\.BI? .*[ *]$f\("
	[ -f "$TL_PREFIX/$TL_MANDIR/man3/$f.3" ] || fail "no page man3/$f.3"
done
options=$(sed -n 's/^[[:space:]]*X(\([a-z_]*\),.*/\1/p' \
	"$TL_SOURCE_DIR/include/tlmalloc/options.h" | tr a-z A-Z)
[ -n "$options" ] || fail "no option found in include/tlmalloc/options.h"
for o in $options; do
	contains "tlmalloc(3) documents TLMALLOC_$o" "$man3" "^\.B TLMALLOC_$o\$"
done

# The manual pages render without warnings.
if command -v groff >/dev/null 2>&1; then
	for page in man1/tlmalloc.1 man3/tlmalloc.3; do
		warnings=$(groff -man -ww -z -Tutf8 "$TL_PREFIX/$TL_MANDIR/$page" 2>&1)
		same "$page renders without warnings" "$warnings" ""
	done
else
	echo "note: no groff; manual pages not rendered"
fi

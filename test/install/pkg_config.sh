# pkg_config.sh - tlmalloc.pc, and the examples built by their Makefiles
# with pkg-config against the installed copy (PKG_CONFIG_PATH=the
# prefix's), then run.  Skipped (exit 77) without pkg-config or make;
# scripts/install-deps.sh installs both.  (Environment: see common.sh.)

. "$(dirname "$0")/common.sh"

[ -n "$TL_PKG_CONFIG" ] && [ -x "$TL_PKG_CONFIG" ] ||
	skip "pkg-config not found (scripts/install-deps.sh installs it); the find_package half is install.find_package"
[ -n "$TL_MAKE" ] && [ -x "$TL_MAKE" ] ||
	skip "make not found (scripts/install-deps.sh installs it)"

PKG_CONFIG_PATH=$LIBDIR/pkgconfig
export PKG_CONFIG_PATH

pc() {
	"$TL_PKG_CONFIG" "$@" tlmalloc || fail "$TL_PKG_CONFIG $* tlmalloc"
}

same "modversion" "$(pc --modversion)" "$TL_VERSION"
contains "cflags" "$(pc --cflags)" "-I$(re "$TL_PREFIX/$TL_INCLUDEDIR")( |\$)"
libs=$(pc --libs)
contains "libs" "$libs" "^-L$(re "$LIBDIR") -ltlmalloc *\$"
contains "static libs" "$(pc --static --libs)" "-ltlmalloc -lpthread"

for name in c cxx; do
	cp -R "$TL_EXAMPLES/$name" "$WORK/$name" || fail "copy examples/$name"
	"$TL_MAKE" -C "$WORK/$name" CC="$TL_CC" CXX="$TL_CXX" \
		PKG_CONFIG="$TL_PKG_CONFIG" >"$WORK/$name.log" 2>&1 ||
		{ cat "$WORK/$name.log"; fail "$name: make"; }
	ok "$name: built with make and pkg-config"
	check_example "$name (pkg-config)" "$WORK/$name/example"
	loads_from "$name (pkg-config)" "$WORK/$name/example" "$LIBDIR"
done

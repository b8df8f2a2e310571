# launcher.sh - the installed launcher, bin/tlmalloc: it preloads the
# installed library into a program and the programs that one starts,
# prepends to LD_PRELOAD, sets the variables of --stats and --verbose,
# passes the exit status on, and refuses bad usage with status 2.  Then
# the build tree's copy and the fallback.  (Environment: see common.sh.)

. "$(dirname "$0")/common.sh"

TL=$TL_PREFIX/$TL_BINDIR/tlmalloc
LIB=$LIBDIR/libtlmalloc.so.$TL_SOVERSION
# The loader maps the library by its real path.
REAL_LIBDIR=$(cd "$LIBDIR" && pwd -P) || fail "no $LIBDIR"

# maps NAME LIBDIR LIBRARY_NAME CMD...: CMD (which prints its own
# /proc/self/maps) had LIBRARY_NAME from LIBDIR mapped.
maps() {
	local name=$1 dir=$2 lib=$3 out

	shift 3
	out=$("$@") || fail "$name: exited $?"
	contains "$name" "$out" "$(re "$dir/$lib")"
}

version=$("$TL" --version) || fail "--version exited $?"
same "--version" "$(printf '%s\n' "$version" | head -n 1)" "tlmalloc $TL_VERSION"
contains "--version names the library" "$version" "^library: $(re "$LIB")\$"
contains "--help" "$("$TL" --help)" "^Usage: tlmalloc "

maps "cat runs with tlmalloc" "$REAL_LIBDIR" libtlmalloc.so \
	"$TL" cat /proc/self/maps
maps "a child of the command too" "$REAL_LIBDIR" libtlmalloc.so \
	"$TL" sh -c 'cat /proc/self/maps'
maps "-- then a command" "$REAL_LIBDIR" libtlmalloc.so \
	"$TL" -- cat /proc/self/maps
maps "--library (relative path)" "$REAL_LIBDIR" libtlmalloc-dlopen.so \
	sh -c "cd '$LIBDIR' && '$TL' --library libtlmalloc-dlopen.so.$TL_SOVERSION cat /proc/self/maps"

maps "--secure" "$REAL_LIBDIR" libtlmalloc-secure.so \
	"$TL" --secure cat /proc/self/maps
maps "--fast" "$REAL_LIBDIR" libtlmalloc-fast.so \
	"$TL" --fast cat /proc/self/maps

# The loader complains about the missing library on stderr, then goes on.
same "prepends to LD_PRELOAD" \
	"$(LD_PRELOAD=/nonexistent/libother.so "$TL" printenv LD_PRELOAD 2>/dev/null)" \
	"$LIB:/nonexistent/libother.so"
same "LD_PRELOAD when unset" "$(env -u LD_PRELOAD "$TL" printenv LD_PRELOAD)" "$LIB"

show='echo "${TLMALLOC_SHOW_STATS-unset} ${TLMALLOC_VERBOSE-unset}"'
same "no flags" \
	"$(env -u TLMALLOC_SHOW_STATS -u TLMALLOC_VERBOSE "$TL" sh -c "$show")" \
	"unset unset"
same "--stats --verbose" \
	"$(env -u TLMALLOC_SHOW_STATS -u TLMALLOC_VERBOSE "$TL" --stats --verbose sh -c "$show")" \
	"1 1"
same "-s -v" "$(env -u TLMALLOC_SHOW_STATS -u TLMALLOC_VERBOSE "$TL" -s -v sh -c "$show")" \
	"1 1"

# The library reads TLMALLOC_SHOW_STATS: statistics at exit (true exits
# through exit(3) with its stderr open).
contains "--stats: statistics at exit" "$("$TL" --stats true 2>&1)" \
	"^tlmalloc $(re "$TL_VERSION") statistics\$"
same "no statistics without --stats" \
	"$(env -u TLMALLOC_SHOW_STATS "$TL" true 2>&1)" ""

"$TL" sh -c 'exit 7'
same "exit status of the command" "$?" 7

# status NAME EXPECTED_STATUS STDERR_PATTERN ARGS...
status() {
	local name=$1 want=$2 pattern=$3 err rc

	shift 3
	err=$("$TL" "$@" 2>&1 >/dev/null)
	rc=$?
	same "$name: status" "$rc" "$want"
	contains "$name: message" "$err" "$pattern"
}
status "no command" 2 "^tlmalloc: no COMMAND given"
status "only options" 2 "^tlmalloc: no COMMAND given" --stats
status "--secure with --library" 2 "exclude each other" \
	--secure --library "$LIB" true
status "--fast with --library" 2 "exclude each other" \
	--fast --library "$LIB" true
status "--secure with --fast" 2 "exclude each other" --secure --fast true
status "unknown option" 2 "^tlmalloc: unknown option '--bogus'" --bogus true
status "--library without a path" 2 "needs a PATH" --library
status "--library= without a path" 2 "needs a PATH" --library= true
status "missing library" 1 "^tlmalloc: no library at '/nonexistent/x.so'" \
	--library /nonexistent/x.so true
status "missing command" 127 "command not found: no-such-command-tlmalloc" \
	no-such-command-tlmalloc

# The build tree's copy prefers the build tree's library.
contains "build-tree launcher" "$("$TL_BUILD_LAUNCHER" --version)" \
	"^library: $(re "$TL_BUILD_LIBRARY")\$"
build_dir=$(cd "$(dirname "$TL_BUILD_LIBRARY")" && pwd -P)
maps "build-tree launcher runs with the build's library" "$build_dir" \
	libtlmalloc.so "$TL_BUILD_LAUNCHER" cat /proc/self/maps

# An installed launcher whose library is gone falls back to the build tree.
sed "s|^library=.*|library='$WORK/gone/libtlmalloc.so'|" "$TL" >"$WORK/tlmalloc" ||
	fail "copy the launcher"
contains "fallback to the build tree" "$(sh "$WORK/tlmalloc" --version)" \
	"^library: $(re "$TL_BUILD_LIBRARY")\$"

# find_package.sh - the examples, configured with CMake against the
# installed copy (CMAKE_PREFIX_PATH=the prefix), built and run: the C one
# with tlmalloc::tlmalloc and tlmalloc::static, the C++ one with
# tlmalloc::tlmalloc.  (Environment: see common.sh.)

. "$(dirname "$0")/common.sh"

# build NAME: configure and build examples/NAME in $WORK/NAME.
build() {
	local name=$1 log=$WORK/$1.log
	local args=(-S "$TL_EXAMPLES/$name" -B "$WORK/$name" -G "$TL_GENERATOR"
		-DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TL_PREFIX"
		-DCMAKE_C_COMPILER="$TL_CC" -DCMAKE_CXX_COMPILER="$TL_CXX")

	[ -n "$TL_MAKE_PROGRAM" ] && args+=(-DCMAKE_MAKE_PROGRAM="$TL_MAKE_PROGRAM")
	"$TL_CMAKE" "${args[@]}" >"$log" 2>&1 || { cat "$log"; fail "$name: configure"; }
	contains "$name: find_package(tlmalloc) finds the prefix's" "$(cat "$log")" \
		"tlmalloc $(re "$TL_VERSION") in $(re "$LIBDIR")/cmake/tlmalloc\$"
	"$TL_CMAKE" --build "$WORK/$name" --config Release >"$log" 2>&1 ||
		{ cat "$log"; fail "$name: build"; }
	ok "$name: built"
}

# program NAME EXE: the path of the executable EXE built for NAME.
program() {
	find "$WORK/$1" -name "$2" -type f -perm -u+x | head -n 1
}

build c
exe=$(program c example)
check_example "c (tlmalloc::tlmalloc)" "$exe"
loads_from "c (tlmalloc::tlmalloc)" "$exe" "$LIBDIR"
exe=$(program c example_static)
check_example "c (tlmalloc::static)" "$exe"
lacks "c (tlmalloc::static) needs no libtlmalloc.so" \
	"$(LD_TRACE_LOADED_OBJECTS=1 "$exe" 2>&1)" "libtlmalloc"

build cxx
exe=$(program cxx example)
check_example "c++ (tlmalloc::tlmalloc)" "$exe"
loads_from "c++ (tlmalloc::tlmalloc)" "$exe" "$LIBDIR"

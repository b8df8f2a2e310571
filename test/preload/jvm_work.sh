#!/bin/bash
# jvm_work.sh - java running JvmWork.java (compiled here with javac) with
# tlmalloc preloaded: exits 0, prints the expected count, and sees
# libtlmalloc in its maps.  Usage: jvm_work.sh LIB JAVAC JAVA
. "$(dirname "$0")/common.sh"

JAVAC=${2:?javac}
JAVA=${3:?java}
"$JAVAC" -d "$WORK" "$(dirname "$0")/JvmWork.java" ||
	fail "javac exited with status $?"
out=$(preloaded "$JAVA" -cp "$WORK" JvmWork) ||
	fail "java exited with status $?"
expected="zlib 32
tlmalloc mapped"
expect "java output" "$out" "$expected"

#!/bin/sh
# qemu-run.sh - a cross build's test emulator (CMAKE_CROSSCOMPILING_EMULATOR,
# cmake/toolchain-aarch64.cmake):
#
#   qemu-run.sh QEMU SYSROOT PROGRAM [ARGS...]
#
# runs PROGRAM under the qemu-user binary QEMU with the target's libraries
# from SYSROOT.  The settings travel in the environment (QEMU_LD_PREFIX;
# QEMU_PAGESIZE when the test sets it), so a test program that runs itself
# again finds QEMU in TL_TEST_EMULATOR (test/unit/child.h) and its child
# sees the same machine.
qemu=$1
QEMU_LD_PREFIX=$2
TL_TEST_EMULATOR=$1
export QEMU_LD_PREFIX TL_TEST_EMULATOR
shift 2
exec "$qemu" "$@"

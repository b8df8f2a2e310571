#!/usr/bin/env python3
"""make_seeds.py - writes the fuzz harness's seed corpus (test/fuzz/seeds/).

Each seed is a small program in the harness's encoding (fuzz_ops.c): an
opcode byte, then the operation's argument bytes.  The seeds only give the
fuzzer a start on every operation; it finds the rest.  Run it again after
changing the encoding:  python3 test/fuzz/make_seeds.py
"""
import os
import sys

# opcodes: the first of each operation's values in run_op()
MALLOC, CALLOC, REALLOC, REALLOCARRAY = 0, 2, 3, 5
ALIGNED_ALLOC, POSIX_MEMALIGN, MEMALIGN, VALLOC, PVALLOC = 6, 7, 8, 9, 10
FREE, FREE_SIZED, FREE_ALIGNED_SIZED, USABLE, TRIM = 11, 13, 14, 15, 16
HANDOFF, WORKER_ALLOC, CONTROL, BURST_ALLOC, BURST_FREE, STATS = \
    17, 19, 20, 21, 22, 23


def size_class(index, nudge=1):
    """selector 3: class boundary index (0..47), nudge 0/1/2 = -1/0/+1"""
    return [3, index, nudge]


def size_tiny(n):
    return [1, n - 1]


def size_medium(n):
    n -= 1
    return [9, n & 255, (n >> 8) & 255, n >> 16]


def size_big(index):
    return [13, index]


def size_impossible(kind):
    """selector 14: kind 0..5, then the bytes that kind reads"""
    return [14, kind] + [0] * [2, 1, 2, 2, 1, 3][kind]


def pow2(shift):
    """alignment selector: 1 << shift"""
    return [0, shift]


def seeds():
    out = {}
    prog = []
    for i in range(48):
        prog += [MALLOC, i] + size_class(i, i % 3)
    for i in range(48):
        prog += [FREE_SIZED if i % 2 else FREE, i]
    out["classes"] = prog
    out["zero_and_tiny"] = ([MALLOC, 0, 0, MALLOC, 1] + size_tiny(1) +
                            [CALLOC, 2, 0, 3] + size_tiny(7) +
                            [REALLOC, 0, 1] + size_tiny(33) +
                            [REALLOC, 1, 0, USABLE, 0, USABLE, 5])
    out["realloc_grow_shrink"] = ([MALLOC, 3] + size_tiny(40) +
                                  [REALLOC, 3, 1] + size_medium(5000) +
                                  [REALLOC, 3, 1] + size_big(3) +
                                  [REALLOC, 3, 1] + size_big(9) +
                                  [REALLOC, 3, 1] + size_class(10) +
                                  [REALLOC, 3, 0])
    out["reallocarray_overflow"] = ([MALLOC, 4] + size_tiny(64) +
                                    [REALLOCARRAY, 4, 3, 40, 0, 60, 1] +
                                    [REALLOCARRAY, 4, 0, 9] + size_tiny(8))
    prog = []
    for shift in range(0, 21, 2):
        prog += [ALIGNED_ALLOC, shift] + pow2(shift) + size_class(shift * 2)
        prog += [POSIX_MEMALIGN, 30 + shift] + pow2(shift) + size_tiny(9)
        prog += [MEMALIGN, 60 + shift] + pow2(shift) + size_big(shift % 5)
    prog += [ALIGNED_ALLOC, 100, 5, 3] + size_tiny(8)     # not a power of 2
    prog += [POSIX_MEMALIGN, 101, 0, 2] + size_tiny(8)    # 4 < sizeof(void *)
    prog += [MEMALIGN, 102, 6, 0] + size_tiny(8)          # > 2^63: EINVAL
    prog += [FREE_ALIGNED_SIZED, 0, FREE_ALIGNED_SIZED, 30]
    out["aligned"] = prog
    out["pages"] = ([VALLOC, 1] + size_medium(10000) +
                    [PVALLOC, 2, 0, PVALLOC, 3] + size_medium(4097) +
                    [TRIM, FREE, 1, TRIM])
    out["impossible"] = sum(([MALLOC, k] + size_impossible(k) +
                             [CALLOC, k, 3, 0, 0, 0, 0] for k in range(6)),
                            [])
    prog = []
    for i in range(20):
        prog += [MALLOC, i] + size_class(i * 2)
        prog += [HANDOFF, i, i % 4 | (0x80 if i % 5 == 0 else 0)]
    out["handoff"] = prog
    out["worker_alloc"] = sum(([WORKER_ALLOC, 10 + k, k] + size_class(k * 9)
                               for k in range(4)), []) + \
        [CONTROL, 0, FREE, 10, HANDOFF, 11, 0, FREE, 12, FREE, 13]
    out["huge_cache"] = ([MALLOC, 1] + size_big(7) + [FREE, 1] +
                         [CALLOC, 1, 0, 1] + size_big(7) + [FREE, 1] +
                         [MALLOC, 1] + size_big(9) + [REALLOC, 1, 1] +
                         size_big(10) + [TRIM, STATS])
    out["purge_and_fault"] = ([CONTROL, 1, 0, MALLOC, 1] + size_big(8) +
                              [FREE, 1, TRIM, CONTROL, 1, 4, 0] +
                              [MALLOC, 2] + size_big(9) +
                              [CONTROL, 1, 4, 2] + [MALLOC, 3] +
                              size_medium(100000) + [MALLOC, 4] +
                              size_big(11) + [STATS])
    # fill pages of a few classes, free some here and some in the worker,
    # let the worker exit with blocks live, then refill
    prog = []
    for cls in (20, 32, 40, 47):
        prog += [BURST_ALLOC, 255, 1, 0] + size_class(cls)  # 512 blocks
        prog += [BURST_FREE, 2, 0, 0, BURST_FREE, 3, 1, 1]
    prog += [CONTROL, 0, BURST_ALLOC, 200, 0, 1] + size_class(12)
    prog += [BURST_FREE, 0, 0, 3, CONTROL, 0, BURST_ALLOC, 255, 2, 0]
    prog += size_class(12) + [TRIM, STATS]
    out["bursts"] = prog
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "seeds")
    os.makedirs(folder, exist_ok=True)
    for name, prog in seeds().items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(bytes(prog))
    print(f"{len(seeds())} seeds in {folder}")


if __name__ == "__main__":
    main()

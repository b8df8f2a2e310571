#!/usr/bin/env python3
"""count.py - instructions on the fast paths of the built libraries, counted
from their disassembly, against budget.txt.

For each library and function it reads the function's address and size from
the symbol table (nm), disassembles it (objdump) and counts the instructions
from the entry, in address order, up to the first ret or unconditional jmp,
both included.  The fast paths are laid out to fall through every
conditional branch (tl_likely), so this is the path of a malloc that pops a
block, of a free that pushes one; the first jmp or ret ends it (a tail call
to the slow path is a jmp).  No timer: the same build gives the same count.

  count.py --budget FILE --toolchain KEY [--print] NAME=LIB ...

checks every row of FILE for toolchain KEY whose library is a NAME given,
and fails on any count that differs from its row: more is a slower fast
path, fewer a budget to lower (the file is where the numbers live).  With
no row for KEY it exits 77 (ctest: skipped): the budget was measured with
another compiler or build type.  --print prints the measured rows instead.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SKIP = 77
ENDS = frozenset({"ret", "retq", "jmp", "jmpq"})
INSN = re.compile(r"^\s*[0-9a-f]+:\s+(\S+)")


@dataclass(frozen=True)
class Row:
    toolchain: str
    library: str
    function: str
    instructions: int


def read_budget(path: Path) -> list[Row]:
    rows: list[Row] = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 4 or not words[3].isdigit():
            sys.exit(f"{path}:{n}: want TOOLCHAIN LIBRARY FUNCTION COUNT")
        rows.append(Row(words[0], words[1], words[2], int(words[3])))
    return rows


def symbol_range(lib: Path, function: str) -> tuple[int, int]:
    out = subprocess.run(["nm", "-S", "--defined-only", str(lib)],
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        words = line.split()
        if len(words) == 4 and words[3] == function:
            start = int(words[0], 16)
            return start, start + int(words[1], 16)
    sys.exit(f"{lib}: no symbol {function} with a size")


def fast_path(lib: Path, function: str) -> list[str]:
    """The mnemonics from the entry to the first ret or jmp."""
    start, stop = symbol_range(lib, function)
    out = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn",
         f"--start-address={start:#x}", f"--stop-address={stop:#x}",
         str(lib)],
        check=True, capture_output=True, text=True).stdout
    path: list[str] = []
    for line in out.splitlines():
        m = INSN.match(line)
        if m is None:
            continue
        path.append(m.group(1))
        if m.group(1) in ENDS:
            return path
    sys.exit(f"{lib}: {function} has no ret or jmp")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=Path, required=True)
    ap.add_argument("--toolchain", required=True)
    ap.add_argument("--print", action="store_true")
    ap.add_argument("libs", nargs="+", metavar="NAME=LIB")
    args = ap.parse_args()
    libs: dict[str, Path] = {}
    for arg in args.libs:
        name, sep, lib = arg.partition("=")
        if not sep:
            ap.error(f"{arg} is not NAME=LIB")
        libs[name] = Path(lib)
    rows = [r for r in read_budget(args.budget)
            if r.toolchain == args.toolchain and r.library in libs]
    if not rows:
        print(f"skipped: {args.budget} has no budget for {args.toolchain}"
              " (measure with --print, then add the rows)")
        return SKIP
    failed = False
    for row in rows:
        path = fast_path(libs[row.library], row.function)
        if args.print:
            print(f"{row.toolchain:<16} {row.library:<16} {row.function:<8}"
                  f" {len(path)}")
            continue
        verdict = "ok"
        if len(path) > row.instructions:
            verdict = "SLOWER than its budget"
        elif len(path) < row.instructions:
            verdict = "faster than its budget: lower the budget"
        failed |= verdict != "ok"
        print(f"{row.library} {row.function}: {len(path)} instructions,"
              f" budget {row.instructions}: {verdict}")
        if verdict != "ok":
            print("  " + " ".join(path))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

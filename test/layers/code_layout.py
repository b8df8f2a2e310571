#!/usr/bin/env python3
"""code_layout.py - the code every process runs lies in the first 64 KiB
of the library's code (docs/design.md, "What a preload costs").

The kernel maps a file's pages 64 KiB at a time around each fault, from
the start of the mapping at the first one, so a process that runs only
code from there has the rest of the library's code not resident.
src/CMakeLists.txt lists the files whose code every process runs first
(TL_SOURCES_EVERY) and those only some run after (TL_SOURCES_SOME); of
those, the functions marked TL_EVERY_PROCESS are run by every process
too.  This checks, on the built library:

- every function defined by a file of TL_SOURCES_EVERY (its object file)
  and every TL_EVERY_PROCESS function ends within 64 KiB of the start of
  the executable segment;
- so does DT_FINI, which the exit calls (tl_fini, not _fini);
- linked against glibc, the library does not carry libc_nonshared.a's
  atexit and pthread_atfork stubs, which the link puts after everything.

usage: code_layout.py LIBRARY SOURCE_DIR OBJECT...
Exit 0 when all hold; otherwise each failure is printed.
"""
import re
import subprocess
import sys
from pathlib import Path

WINDOW = 64 * 1024
TEXT = {"t", "T"}


def tool(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True,
                          text=True).stdout


def source_lists(cmakelists: Path) -> dict[str, list[str]]:
    text = cmakelists.read_text()
    out: dict[str, list[str]] = {}
    for name in ("TL_SOURCES_EVERY", "TL_SOURCES_SOME"):
        m = re.search(r"set\(" + name + r"\s+([^)]*)\)", text)
        if m is None:
            raise SystemExit(f"{cmakelists}: no set({name} ...)")
        out[name] = [f[:-2] for f in m.group(1).split() if f.endswith(".c")]
    return out


def functions(path: str) -> list[tuple[str, int, int]]:
    """(name, address, size) of the text symbols nm lists with a size."""
    out = []
    for line in tool("nm", "-S", "--defined-only", path).splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in TEXT:
            out.append((f[3], int(f[0], 16), int(f[1], 16)))
    return out


def main() -> int:
    lib, src = sys.argv[1], Path(sys.argv[2])
    objects = sys.argv[3:]
    lists = source_lists(src / "CMakeLists.txt")
    every, some = set(lists["TL_SOURCES_EVERY"]), set(lists["TL_SOURCES_SOME"])

    # The names each group of object files defines.
    names: dict[str, set[str]] = {"every": set(), "some": set()}
    for obj in objects:
        stem = Path(obj).name.split(".")[0]
        group = "every" if stem in every else "some" if stem in some else None
        if group is None:
            print(f"{obj}: its source is in neither list")
            return 1
        names[group] |= {n for n, _, _ in functions(obj)}
    marked = set()
    for stem in some:
        marked |= set(re.findall(r"^TL_EVERY_PROCESS [\w *]*?\b(\w+)\(",
                                 (src / f"{stem}.c").read_text(), re.M))
    # a static name defined in both groups cannot be told apart: left out
    wanted = (names["every"] - names["some"]) | marked
    if not wanted or not marked:
        print("found no functions to check (nm, or TL_EVERY_PROCESS?)")
        return 1

    segment = None
    for line in tool("readelf", "-lW", lib).splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "E" in f[-2]:
            segment = int(f[2], 16)
            break
    if segment is None:
        print(f"{lib}: no executable LOAD segment")
        return 1
    limit = segment + WINDOW

    failures = []
    found = set()
    end = segment
    for name, addr, size in functions(lib):
        if name in wanted:
            found.add(name)
            end = max(end, addr + size)
            if addr + size > limit:
                failures.append(f"{name} ends at +{addr + size - segment:#x}")
    missing = marked - found
    if missing:
        failures.append("not in the library: " + ", ".join(sorted(missing)))

    dynamic = tool("readelf", "-dW", lib)
    fini = re.search(r"\(FINI\)\s+(0x[0-9a-f]+)", dynamic)
    if fini is not None and int(fini.group(1), 16) >= limit:
        failures.append(f"DT_FINI at +{int(fini.group(1), 16) - segment:#x}")
    if "libc.so.6" in dynamic:
        stubs = {n for n, _, _ in functions(lib)} & {"atexit",
                                                      "pthread_atfork"}
        if stubs:
            failures.append("libc_nonshared.a stubs linked in: " +
                            ", ".join(sorted(stubs)))

    for f in failures:
        print(f"{lib}: {f}")
    if failures:
        print(f"(the first {WINDOW // 1024} KiB of code is what every process "
              "has resident: see src/CMakeLists.txt)")
    if not failures:
        print(f"{lib}: {len(found)} functions every process runs, all in "
              f"the first {WINDOW // 1024} KiB of code (the last ends at "
              f"{(end - segment) / 1024:.1f} KiB)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

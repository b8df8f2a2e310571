#!/usr/bin/env python3
"""check.py - the layering rule of docs/design.md ("Layers, and where a
change goes"): a file of src/ calls only the files of its own layer and of
the layers below it.

The layers are read from the table at the top of docs/design.md (a line
"N name  file.c ..." starts layer N, and the files named in its column of
files, on that line and the next, are in it); the functions and variables
from their definitions in src/*.c, and the inline functions of a header
the table names (options.h, fastpath.h, ...) from it.  Every use in
a file of a name defined in a file of a higher layer is an upward call,
and fails the check unless it is one of the page's stated exceptions
(EXCEPTIONS below, which the page lists).  Exit 0 when there is none.

usage: check.py SOURCE_DIR
"""
import re
import sys
from pathlib import Path

# (file, name): the stated exceptions of docs/design.md.
EXCEPTIONS: set[tuple[str, str]] = {
    ("heap", "tl_process_init"), ("heap", "tl_thread_register"),
    ("shared_heap", "tl_process_init"),
    ("pool", "tl_purger_wake"), ("abandoned", "tl_purger_wake"),
    ("huge_cache", "tl_purger_wake"),
    ("heap", "tl_profile_proxy"), ("heap", "tl_profile_heap_settle"),
    ("heap", "tl_profile_heap_detach"), ("heap", "tl_profile_no_queue"),
    ("stats", "tl_version"),
} | {("profile_stack", n) for n in (
    "tl_malloc", "tl_calloc", "tl_realloc", "tl_reallocarray",
    "tl_aligned_alloc", "tl_memalign", "tl_posix_memalign", "tl_valloc",
    "tl_pvalloc")}

LEVEL = re.compile(r"^(\d+) ")
FILES = 15    # where the table's column of files starts; two spaces end it
DEFINED = re.compile(
    r"^(?!static|extern)[a-z_][\w *]*?\b(tl_\w+|ts_\w+)\s*"
    r"(\([^;{]*\)\s*\{|(\[[^\]]*\])?\s*[=;])", re.M)
INLINE = re.compile(r"^static inline [\w *]*?\b(tl_\w+)\s*\(", re.M)
USED = re.compile(r"\b(tl_\w+|ts_\w+)\b")


def layers(design: Path) -> dict[str, int]:
    text = design.read_text()
    table = text.split("## Layers, and where a change goes", 1)[1]
    table = table.split("```", 2)[1]
    out: dict[str, int] = {}
    level = -1
    for line in table.splitlines():
        if m := LEVEL.match(line):
            level = int(m.group(1))
        files = line[FILES:].split("  ", 1)[0]
        for name in re.findall(r"(\w+)\.[ch]\b", files):
            out[name] = level
    return out


def main() -> int:
    root = Path(sys.argv[1])
    level = layers(root / "docs" / "design.md")
    code: dict[str, str] = {}
    for path in sorted((root / "src").glob("*.c")):
        text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
        code[path.stem] = text
    missing = sorted(set(code) - set(level))
    if missing:
        print("not in design.md's layers: " + ", ".join(missing))
        return 1
    owner = {m.group(1): f for f, t in code.items()
             for m in DEFINED.finditer(t)}
    where = {f: f"src/{f}.c" for f in code}
    for path in (root / "include" / "tlmalloc").glob("*.h"):
        if path.stem in level:      # a layer's header: its inlines
            owner.update((m.group(1), path.stem)
                         for m in INLINE.finditer(path.read_text()))
            where.setdefault(path.stem, f"include/tlmalloc/{path.name}")
    bad = sorted({(f, n, owner[n]) for f, t in code.items()
                  for n in USED.findall(t)
                  if n in owner and level[owner[n]] > level[f] and
                  (f, n) not in EXCEPTIONS})
    for f, n, to in bad:
        print(f"src/{f}.c (layer {level[f]}) calls {n} of {where[to]} "
              f"(layer {level[to]})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""The user's own programs (--program 'CMD ARGS'), run under every allocator.

`--program 'CMD ARGS'` or `--program NAME='CMD ARGS'`: the command line is
split with shlex; its executable is looked up on PATH (shutil.which) or,
when it holds a slash, as a path from the folder the harness was started
in (TLMALLOC_BENCH_CWD, set by scripts/experiments.sh, else the current
folder), where the program also runs.  A program is one more workload with
one point ("default"): the same repetitions, rotated order, medians, peak
RSS, failure marking, table and plot.  Unlike the built-in workloads it
need not print `check ok`: a run succeeds when it exits with status 0, and
its measures are the harness's own (wall, user, sys, peak RSS).

Allocators: glibc runs the command as is, every preloaded library (the
peers, tlmalloc, NAME=/path/lib.so) through LD_PRELOAD; tlmalloc-lock (the
ts_ API of the scaling workload) and musl (static rebuilds of the C
workloads) do not apply to an arbitrary program.

A program whose executable is not found still gets its cells: each fails
with the reason, and the rest of the run goes on.
"""

import os
import re
import shlex
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .allocators import Allocator, Kind
from .parse import WorkloadOutput
from .runner import Judgement, Measured, signal_name

POINT = "default"
KIND = "program"          # a program's workload entry in runs.json
NAME_RE = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)=(.*)$", re.S)
TITLE_CHARS = 60          # the plot's title: the command, shortened
APPLICABLE = (Kind.SYSTEM, Kind.PRELOAD)


@dataclass
class Program:
    name: str
    command: str              # as given (after NAME=)
    argv: list[str] = field(default_factory=list)
    named: bool = False       # NAME= was given
    executable: str = ""      # the resolved path, "" when not found
    error: str = ""           # why it cannot run (not found)
    cwd: str = ""

    @property
    def title(self) -> str:
        return self.name if self.named else shorten(self.command)

    @property
    def point(self) -> str:
        return POINT


def shorten(text: str, limit: int = TITLE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def split_spec(spec: str) -> tuple[str, str]:
    """(name or "", command) from one --program value."""
    match = NAME_RE.match(spec)
    if match:
        return match.group(1), match.group(2)
    return "", spec


def auto_name(argv: Sequence[str], taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(argv[0])) or \
        "program"
    name, n = base, 1
    while name in taken:
        n += 1
        name = "%s-%d" % (base, n)
    return name


def run_dir_of() -> str:
    """The folder programs run in and relative paths start from."""
    return os.environ.get("TLMALLOC_BENCH_CWD") or os.getcwd()


def resolve(exe: str, cwd: str) -> tuple[str, str]:
    """(path, error): where the executable is, or why it is not found."""
    if "/" in exe:
        path = Path(cwd, exe)
        if not path.is_file():
            return "", "%s: no such file" % exe
        if not os.access(path, os.X_OK):
            return "", "%s: not executable" % exe
        return os.path.abspath(path), ""
    found = shutil.which(exe)
    if not found:
        return "", "%s: not found on PATH" % exe
    return found, ""


def parse_programs(specs: Sequence[str], reserved: Iterable[str] = (),
                   cwd: str = "") -> list[Program]:
    """[Program] from the --program values, in order.

    Raises ValueError for a value that cannot be used at all (empty,
    unbalanced quotes, a NAME taken twice or by a built-in workload);
    a command whose executable is not found is kept, with its error.
    """
    cwd = cwd or run_dir_of()
    reserved = set(reserved)
    programs, taken = [], set(reserved)
    split = [split_spec(s) for s in specs]
    taken |= {name for name, _ in split if name}
    seen = set()
    for spec, (given, command) in zip(specs, split):
        name = given
        try:
            argv = shlex.split(command)
        except ValueError as err:
            raise ValueError("--program %r: cannot split it: %s" % (spec, err))
        if not argv:
            raise ValueError("--program %r: no command" % spec)
        if name:
            if name in reserved:
                raise ValueError("--program %s=: the name %r is taken by a "
                                 "workload" % (name, name))
            if name in seen:
                raise ValueError("--program %s=: the name is given twice"
                                 % name)
        else:
            name = auto_name(argv, taken)
            taken.add(name)
        seen.add(name)
        path, error = resolve(argv[0], cwd)
        programs.append(Program(name, command, argv, bool(given), path,
                                error, cwd))
    return programs


class NotApplicable(Exception):
    """This allocator does not run arbitrary programs."""


class Missing(Exception):
    """The allocator is missing: the reason is the message."""


def command_for(program: Program,
                alloc: Allocator) -> tuple[list[str], dict[str, str]]:
    """(argv, extra_env) running program with alloc."""
    if alloc.kind not in APPLICABLE:
        raise NotApplicable("not applicable: %s" % (
            "the ts_ API of the scaling workload" if alloc.kind is Kind.TS
            else "static builds of the workloads" if alloc.kind is Kind.MUSL
            else "the workloads rebuilt with tlmalloc linked in"
            if alloc.kind is Kind.LINKED
            else "a %s allocator" % alloc.kind.value))
    if not alloc.found:
        raise Missing("allocator missing: " + alloc.note)
    return list(program.argv), alloc.run_env()


def judge(measured: Measured) -> Judgement:
    """How one run of a program went: ok when it exited with status 0."""
    parsed = WorkloadOutput()
    if measured.timed_out:
        return Judgement(False, "timeout after %.0f s" % measured.wall, parsed)
    if measured.signal:
        return Judgement(False, "killed by signal %s" %
                         signal_name(measured.signal), parsed)
    if measured.exit_code != 0:
        return Judgement(False, "exit status %d" % measured.exit_code, parsed)
    return Judgement(True, "", parsed)


def stderr_tail(text: str, lines: int = 4, chars: int = 300) -> str:
    """The last lines of a failed run's stderr, on one line."""
    kept = [line.strip() for line in (text or "").strip().splitlines()
            if line.strip()][-lines:]
    tail = " / ".join(kept)
    return tail if len(tail) <= chars else "…" + tail[-chars:]

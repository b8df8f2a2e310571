"""The security pass: the project's misuse programs under every allocator.

test/misuse holds small programs that each commit one misuse of the heap
(a double free, an interior free, an overflow, a use after free, ...) at
8 bytes, 4 KiB and 256 KiB, and print "survived" if nothing stopped them
(ctest runs them against tlmalloc's variants, label misuse).  The build
lists them in <build>/test/misuse/programs.txt, a line "KIND PATH" each.
This pass runs every kind at every size with every chosen allocator that
is glibc or a preloaded library, once each (a few milliseconds a run):

  caught      the program died of a signal (an abort, a fault) before it
              printed "survived"
  not caught  it printed "survived" and exited 0
  hang        it outlived the time limit (killed; not a catch)
  error       anything else (another exit status, no program, a start
              that failed): marked, and counted as neither

The allocators that are other kinds of program (tlmalloc-lock, musl) and
the missing ones are "not measured".  A missing list or program never
stops the pass: the table says what is missing.
"""

import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .allocators import OTHER_KINDS, Allocator, Kind
from .records import Outcome, SecurityPass, SecurityRow

NAME = "security"            # the name --only selects the pass by
LIST = Path("test", "misuse", "programs.txt")   # under the build folder
SURVIVED = "survived"
TIMEOUT = 10.0               # seconds a program may run (at most)


@dataclass(frozen=True)
class Size:
    """A size the programs take (their argument) and how the report
    writes it."""
    arg: str
    title: str


SIZES = (Size("small", "8 B"), Size("medium", "4 KiB"),
         Size("large", "256 KiB"))


def selected(only_names: Sequence[str], no_security: bool,
             programs: bool = False) -> bool:
    """Whether the pass runs: by default (not with --program alone), or
    when --only names it."""
    if no_security:
        return False
    if only_names:
        return NAME in only_names
    return not programs


def read_list(path: Path) -> list[tuple[str, Path]]:
    """[(kind, program)] from programs.txt; OSError when it cannot be
    read.  Lines that are not "KIND PATH" are skipped."""
    found = []
    for line in path.read_text().splitlines():
        kind, _, program = line.strip().partition(" ")
        if kind and program.strip():
            found.append((kind, Path(program.strip())))
    return found


def no_core_files() -> None:
    """In the child: the deaths this provokes leave no core files."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def judge(returncode: int | None, stdout: str,
          timed_out: float = 0) -> tuple[Outcome, str]:
    """(outcome, detail) of one run (returncode < 0: killed by that
    signal; timed_out: killed after that many seconds)."""
    survived = SURVIVED in stdout.split()
    if timed_out:
        return Outcome.HANG, "killed after %g s" % timed_out
    if returncode is None:
        return Outcome.ERROR, "no exit status"
    if returncode < 0 and not survived:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "signal %d" % -returncode
        return Outcome.CAUGHT, name
    if returncode == 0 and survived:
        return Outcome.NOT_CAUGHT, ""
    if returncode < 0:
        return Outcome.ERROR, "killed by signal %d after printing %r" % (
            -returncode, SURVIVED)
    return Outcome.ERROR, "exit status %d" % returncode


def run_one(program: Path, kind: str, size: Size, env: dict[str, str],
            timeout: float = TIMEOUT) -> tuple[Outcome, str]:
    """Runs `program KIND SIZE` with env added to the environment."""
    if not os.access(program, os.X_OK):
        return Outcome.ERROR, "%s is not built" % program.name
    try:
        proc = subprocess.run([str(program), kind, size.arg],
                              env=dict(os.environ, **env),
                              stdin=subprocess.DEVNULL,
                              capture_output=True, text=True,
                              errors="replace", timeout=timeout,
                              preexec_fn=no_core_files)
    except subprocess.TimeoutExpired:
        return judge(None, "", timed_out=timeout)
    except OSError as err:
        return Outcome.ERROR, "could not start: %s" % err
    return judge(proc.returncode, proc.stdout)


def split_allocators(allocs: Iterable[Allocator]
                     ) -> tuple[list[Allocator], dict[str, str]]:
    """(allocators the programs run with, {name: why not measured})."""
    runnable, skipped = [], {}
    for alloc in allocs:
        if not alloc.found:
            skipped[alloc.name] = "allocator missing"
        elif alloc.kind in (Kind.SYSTEM, Kind.PRELOAD):
            runnable.append(alloc)
        else:
            skipped[alloc.name] = OTHER_KINDS[alloc.kind]
    return runnable, skipped


Note = Callable[[str], None]


def run_pass(allocs: Sequence[Allocator], build_dir: Path, note: Note,
             timeout: float = TIMEOUT) -> SecurityPass:
    """The pass's results for the allocators allocs; note(text) prints a
    progress line."""
    list_path = build_dir / LIST
    runnable, skipped = split_allocators(allocs)
    result = SecurityPass(skipped=skipped)
    try:
        programs = read_list(list_path)
    except OSError as err:
        result.note = ("%s cannot be read (%s): the misuse programs are "
                       "built with the tests" % (list_path, err.strerror))
        return result
    if not programs:
        result.note = "%s lists no misuse program" % list_path
        return result
    if not runnable:
        result.note = "no chosen allocator is glibc or a preloaded library"
        return result
    started = time.monotonic()
    for i, alloc in enumerate(runnable):
        env = alloc.run_env()
        note("[security %d/%d] %s: %d misuse programs" % (
            i + 1, len(runnable), alloc.name, len(programs) * len(SIZES)))
        for kind, program in programs:
            for size in SIZES:
                outcome, detail = run_one(program, kind, size, env, timeout)
                result.rows.append(SecurityRow(kind, size.arg, alloc.name,
                                               outcome, detail))
        caught = sum(1 for r in result.rows
                     if r.allocator == alloc.name and r.caught)
        note("[security] %s: %d of %d caught" % (
            alloc.name, caught, len(programs) * len(SIZES)))
    result.available = True
    result.wall = round(time.monotonic() - started, 1)
    return result

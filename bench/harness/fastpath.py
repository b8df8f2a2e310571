"""The fast-path pass: instructions per malloc+free pair, from callgrind.

bench/fastpath.sh is the measurement (it runs build/bench/fastpath under
`valgrind --tool=callgrind` at two lengths and prints the difference per
pair, a row per allocator and a last "(loop)" row with the benchmark
loop's own share).  This pass runs that script once with every chosen
allocator that is a preloaded library (NAME=path) or glibc, and parses its
table, so the harness and the documented command always count the same
way.  The counts are exact and repeatable: one pass, no repetitions.

The allocators that are other kinds of program (tlmalloc-lock, the ts_ API;
musl, static builds) and the missing ones get a "not measured" row; an
allocator whose callgrind run fails gets a FAILED row.  The script prints
a row as soon as its allocator is done, which gives the progress lines and
a per-allocator timeout: an allocator that hangs is killed, marked FAILED,
and the script runs again for the ones after it.
"""

import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from .allocators import OTHER_KINDS, Allocator, Kind
from .records import FastpathPass, FastpathRow, Mix

REPO = Path(__file__).absolute().parents[2]
SCRIPT = REPO / "bench" / "fastpath.sh"
NAME = "fastpath"            # the name --only selects the pass by
LOOP = "(loop)"              # the script's row for the loop's own share
BUDGET = 40                  # the bound, loop included


# (allocator, library path; "" for glibc): what the script measures
Spec = tuple[str, str]

# what the script prints in a cell instead of a number
CELL_MEANINGS = {
    "failed": "a callgrind run crashed, failed or did not print `check ok`",
    "refused": "the allocator stopped the program under valgrind before it "
               "printed anything (the allocator's own error is on the "
               "script's stderr)",
    "?": "callgrind gave no instruction count",
}


def selected(only_names: Sequence[str], no_fastpath: bool) -> bool:
    """Whether the pass runs: by default, or when --only names it."""
    if no_fastpath:
        return False
    return not only_names or NAME in only_names


def both_mixes(allocator: str, ok: bool = True, measured: bool = True,
               reason: str = "") -> list[FastpathRow]:
    """The rows of an allocator without a count."""
    return [FastpathRow(allocator, mix, ok=ok, measured=measured,
                        reason=reason) for mix in Mix]


def split_allocators(allocs: Iterable[Allocator]
                     ) -> tuple[list[Spec], list[FastpathRow]]:
    """([(name, library path or "" for glibc)], [not-measured rows]).

    Preloaded libraries and glibc are what the script can measure; the
    rest are other kinds of program, or missing.
    """
    measurable: list[Spec] = []
    skipped: list[FastpathRow] = []
    for alloc in allocs:
        if not alloc.found:
            skipped += both_mixes(alloc.name, ok=False, measured=False,
                                  reason="allocator missing")
        elif alloc.kind is Kind.SYSTEM:
            measurable.append((alloc.name, ""))
        elif alloc.kind is Kind.PRELOAD:
            measurable.append((alloc.name, alloc.path))
        else:
            skipped += both_mixes(alloc.name, ok=False, measured=False,
                                  reason=OTHER_KINDS[alloc.kind])
    return measurable, skipped


def parse_cell(text: str) -> tuple[float | None, bool, bool, str]:
    """(value, ok, measured, reason) of one cell of the script's table."""
    try:
        return float(text), True, True, ""
    except ValueError:
        pass
    if text == "missing":
        return None, False, False, "library not found"
    return None, False, True, CELL_MEANINGS.get(text, "printed %r" % text)


def parse_row(line: str) -> tuple[str, list[FastpathRow]] | None:
    """(allocator, [rows]) from one table line, or None for other lines.

    The name is everything before the last two words (the two mixes).
    """
    words = line.split()
    if len(words) < 3 or words[0] == "allocator" or \
            line.startswith("instructions per"):
        return None
    name = " ".join(words[:-2])
    rows = []
    for mix, text in zip(Mix, words[-2:]):
        rows.append(FastpathRow(name, mix, *parse_cell(text)))
    return name, rows


def parse_pairs(text: str) -> tuple[int, int] | None:
    """(SHORT, LONG) from the script's title line, or None."""
    found = re.search(r"callgrind, (\d+) vs (\d+) pairs", text)
    return (int(found.group(1)), int(found.group(2))) if found else None


def parse_table(text: str) -> dict[str, list[FastpathRow]]:
    """{allocator: [rows]} from the whole output of bench/fastpath.sh."""
    table = {}
    for line in text.splitlines():
        parsed = parse_row(line)
        if parsed:
            table[parsed[0]] = parsed[1]
    return table


def script_argv(binary: str, specs: Iterable[Spec], short: int = 0,
                long: int = 0, repo: bool = False) -> list[str]:
    """The command running bench/fastpath.sh on specs [(name, path)]
    (glibc, path "", is always measured by the script: not passed); with
    repo, the script's path as typed in the repository."""
    script = Path("bench", "fastpath.sh") if repo else SCRIPT
    argv = [str(script), "-b", binary]
    if short and long:
        argv += ["-s", str(short), "-l", str(long)]
    return argv + ["%s=%s" % spec for spec in specs if spec[1]]


def reproduce_command(binary: str, specs: Iterable[Spec]) -> str:
    """The command a reader types in the repository, paths shortened."""
    def short(path: str) -> str:
        prefix = "%s/" % REPO
        return path[len(prefix):] if path.startswith(prefix) else path
    shown = [(name, short(path)) for name, path in specs]
    return shlex.join(script_argv(short(binary), shown, repo=True))


def read_lines(stream: IO[str], lines: "queue.Queue[str | None]") -> None:
    for line in iter(stream.readline, ""):
        lines.put(line)
    lines.put(None)


def kill_group(proc: "subprocess.Popen[str]") -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


@dataclass
class ScriptRun:
    """One run of the script: the allocators whose rows came, the one that
    timed out ("" when none), its error output when it failed, and the run
    lengths (SHORT, LONG) from its title line."""
    done: list[str] = field(default_factory=list)
    hung: str = ""
    error: str = ""
    pairs: tuple[int, int] | None = None


RowHandler = Callable[[str, list[FastpathRow]], None]


def run_script(argv: Sequence[str], expected: Sequence[str], timeout: float,
               on_row: RowHandler) -> ScriptRun:
    """Runs the script once; on_row(name, rows) for every row it prints.

    A row that does not come within timeout seconds of the previous one
    is killed (with whatever valgrind runs it started, in their own
    session).
    """
    run = ScriptRun()
    lines: "queue.Queue[str | None]" = queue.Queue()
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors,
                                stdin=subprocess.DEVNULL, text=True,
                                start_new_session=True)
        threading.Thread(target=read_lines, args=(proc.stdout, lines),
                         daemon=True).start()
        try:
            while True:
                try:
                    line = lines.get(timeout=timeout)
                except queue.Empty:
                    kill_group(proc)
                    run.hung = expected[len(run.done)]
                    return run
                if line is None:
                    break
                run.pairs = parse_pairs(line) or run.pairs
                parsed = parse_row(line)
                if parsed and parsed[0] in expected:
                    run.done.append(parsed[0])
                    on_row(*parsed)
        except KeyboardInterrupt:
            # its own session does not see the terminal's Ctrl-C
            kill_group(proc)
            raise
        status = proc.wait()
        errors.seek(0)
        text = errors.read().strip()
    run.error = text if status else ""
    return run


Note = Callable[[str], None]


def run_pass(allocs: Iterable[Allocator], bench_dir: Path, timeout: float,
             note: Note, short: int = 0, long: int = 0) -> FastpathPass:
    """The pass's results for the allocators allocs.

    note(text) prints a progress line.  short/long override the script's
    run lengths (0: its defaults).
    """
    binary = bench_dir / "fastpath"
    measurable, skipped = split_allocators(allocs)
    result = FastpathPass(command=reproduce_command(str(binary), measurable))
    if not shutil.which("valgrind"):
        result.note = ("valgrind is not installed (scripts/install-deps.sh "
                       "installs it)")
        return result
    if not os.access(binary, os.X_OK):
        result.note = "%s is not built" % binary
        return result
    if not measurable:
        result.note = "no chosen allocator is glibc or a preloaded library"
        return result
    started = time.monotonic()
    table, result.pairs = measure(str(binary), measurable, timeout, note,
                                  short, long)
    rows = []
    for name, _ in measurable + [(LOOP, "")]:
        rows += table.get(name) or both_mixes(
            name, ok=False, reason="bench/fastpath.sh printed no row")
    # glibc's row only when glibc was chosen: the loop's, always
    result.available = True
    result.wall = round(time.monotonic() - started, 1)
    result.rows = rows + skipped
    return result


def measure(binary: str, measurable: Sequence[Spec], timeout: float,
            note: Note, short: int, long: int
            ) -> tuple[dict[str, list[FastpathRow]], tuple[int, int] | None]:
    """{allocator: [rows]} and the run lengths, running the script again
    after a hang for the allocators it had not reached."""
    # glibc is the script's first row whether chosen or not, the loop last
    extras = [spec for spec in measurable if spec[1]]
    table: dict[str, list[FastpathRow]] = {}
    pairs = None
    total = len(extras) + 2
    expected: list[str] = []

    def announce(name: str) -> None:
        note("[fastpath %d/%d] %s (callgrind, 4 runs)" % (
            min(len(table) + 1, total), total, name))

    def on_row(name: str, rows: list[FastpathRow]) -> None:
        table[name] = rows
        shown = " / ".join("%.1f" % r.instructions_per_pair
                           if r.instructions_per_pair is not None else
                           "FAILED" if r.measured else "missing"
                           for r in rows)
        note("[fastpath] %s: %s instructions per pair (64 B / mix)" % (
            name, shown))
        following = expected[expected.index(name) + 1:]
        if following:
            announce(following[0])

    while True:
        expected = ["glibc"] + [n for n, _ in extras] + [LOOP]
        announce(expected[0])
        argv = script_argv(binary, extras, short, long)
        run = run_script(argv, expected, timeout, on_row)
        pairs = run.pairs or pairs
        if run.error:
            for name in expected[len(run.done):]:
                table[name] = both_mixes(name, ok=False,
                                         reason=run.error[-300:])
            return table, pairs
        if not run.hung:
            return table, pairs
        reason = "timed out after %g s" % timeout
        note("[fastpath] %s: FAILED (%s)" % (run.hung, reason))
        table[run.hung] = both_mixes(run.hung, ok=False, reason=reason)
        if run.hung in ("glibc", LOOP):
            # both come from the glibc runs: no point running them again
            for name in expected[len(run.done):]:
                table.setdefault(name, both_mixes(name, ok=False,
                                                  reason=reason + " (glibc)"))
            return table, pairs
        extras = [spec for spec in extras if spec[0] not in table]

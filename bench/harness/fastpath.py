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

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "bench", "fastpath.sh")
NAME = "fastpath"            # the name --only selects the pass by
MIXES = ("fixed", "mix")     # the script's columns, in its order
MIX_TITLES = {"fixed": "64 bytes", "mix": "size mix (8..512 B)"}
LOOP = "(loop)"              # the script's row for the loop's own share
BUDGET = 40                  # the bound, loop included

# what the script prints in a cell instead of a number
CELL_MEANINGS = {
    "failed": "a callgrind run crashed, failed or did not print `check ok`",
    "?": "callgrind gave no instruction count",
}


# why the allocators that are programs of their own are not measured
OTHER_KINDS = {
    "ts": "a program of its own on the ts_ API, not a malloc to preload",
    "musl": "static programs built with musl-gcc, not a malloc to preload",
}


def selected(only_names, no_fastpath):
    """Whether the pass runs: by default, or when --only names it."""
    if no_fastpath:
        return False
    return not only_names or NAME in only_names


def row(allocator, mix, value=None, ok=True, measured=True, reason=""):
    return {"allocator": allocator, "mix": mix,
            "instructions_per_pair": value, "ok": ok, "measured": measured,
            "reason": reason}


def both_mixes(allocator, **fields):
    return [row(allocator, mix, **fields) for mix in MIXES]


def split_allocators(allocs):
    """([(name, library path or "" for glibc)], [not-measured rows]).

    Preloaded libraries and glibc are what the script can measure; the
    rest are other kinds of program, or missing.
    """
    measurable, skipped = [], []
    for alloc in allocs:
        if not alloc.found:
            skipped += both_mixes(alloc.name, ok=False, measured=False,
                                  reason="allocator missing")
        elif alloc.kind == "system":
            measurable.append((alloc.name, ""))
        elif alloc.kind == "preload":
            measurable.append((alloc.name, alloc.path))
        else:
            skipped += both_mixes(alloc.name, ok=False, measured=False,
                                  reason=OTHER_KINDS.get(alloc.kind,
                                                         alloc.kind))
    return measurable, skipped


def parse_cell(text):
    """(value, ok, measured, reason) of one cell of the script's table."""
    try:
        return float(text), True, True, ""
    except ValueError:
        pass
    if text == "missing":
        return None, False, False, "library not found"
    return None, False, True, CELL_MEANINGS.get(text, "printed %r" % text)


def parse_row(line):
    """(allocator, [rows]) from one table line, or None for other lines.

    The name is everything before the last two words (the two mixes).
    """
    words = line.split()
    if len(words) < 3 or words[0] == "allocator" or \
            line.startswith("instructions per"):
        return None
    name = " ".join(words[:-2])
    rows = []
    for mix, text in zip(MIXES, words[-2:]):
        value, ok, measured, reason = parse_cell(text)
        rows.append(row(name, mix, value, ok, measured, reason))
    return name, rows


def parse_pairs(text):
    """(SHORT, LONG) from the script's title line, or None."""
    found = re.search(r"callgrind, (\d+) vs (\d+) pairs", text)
    return (int(found.group(1)), int(found.group(2))) if found else None


def parse_table(text):
    """{allocator: [rows]} from the whole output of bench/fastpath.sh."""
    table = {}
    for line in text.splitlines():
        parsed = parse_row(line)
        if parsed:
            table[parsed[0]] = parsed[1]
    return table


def script_argv(binary, specs, short=0, long=0, repo=""):
    """The command running bench/fastpath.sh on specs [(name, path)]
    (glibc, path "", is always measured by the script: not passed); with
    repo, the script's path as typed in that repository."""
    script = os.path.join("bench", "fastpath.sh") if repo else SCRIPT
    argv = [script, "-b", binary]
    if short and long:
        argv += ["-s", str(short), "-l", str(long)]
    return argv + ["%s=%s" % spec for spec in specs if spec[1]]


def reproduce_command(binary, specs, repo=REPO):
    """The command a reader types in the repository, paths shortened."""
    def short(path):
        return path[len(repo) + 1:] if path.startswith(repo + "/") else path
    shown = [(name, short(path)) for name, path in specs]
    return shlex.join(script_argv(short(binary), shown, repo=repo))


def read_lines(stream, lines):
    for line in iter(stream.readline, ""):
        lines.put(line)
    lines.put(None)


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def run_script(argv, expected, timeout, on_row, seen):
    """Runs the script once; on_row(name, rows) for every row it prints,
    seen["pairs"] = (SHORT, LONG) from its title line.

    Returns (names done, the name that timed out or "", error text): a row
    that does not come within timeout seconds of the previous one is
    killed (with whatever valgrind runs it started, in their own session).
    """
    done, lines = [], queue.Queue()
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
                    return done, expected[len(done)], ""
                if line is None:
                    break
                seen["pairs"] = parse_pairs(line) or seen.get("pairs")
                parsed = parse_row(line)
                if parsed and parsed[0] in expected:
                    done.append(parsed[0])
                    on_row(*parsed)
        except KeyboardInterrupt:
            # its own session does not see the terminal's Ctrl-C
            kill_group(proc)
            raise
        status = proc.wait()
        errors.seek(0)
        text = errors.read().strip()
    return done, "", text if status else ""


def run_pass(allocs, bench_dir, timeout, note, short=0, long=0):
    """The pass's results for the allocators allocs: {available, note,
    rows (see results.FASTPATH_COLUMNS), command (to reproduce), pairs,
    wall}.

    note(text) prints a progress line.  short/long override the script's
    run lengths (0: its defaults).
    """
    binary = os.path.join(bench_dir, "fastpath")
    measurable, skipped = split_allocators(allocs)
    result = {"available": False, "note": "", "rows": [],
              "command": reproduce_command(binary, measurable)}
    if not shutil.which("valgrind"):
        result["note"] = ("valgrind is not installed (scripts/install-deps.sh "
                          "installs it)")
        return result
    if not os.access(binary, os.X_OK):
        result["note"] = "%s is not built" % binary
        return result
    if not measurable:
        result["note"] = "no chosen allocator is glibc or a preloaded library"
        return result
    started = time.monotonic()
    seen = {}
    table = measure(binary, measurable, timeout, note, short, long, seen)
    rows = []
    for name, _ in measurable + [(LOOP, "")]:
        rows += table.get(name) or both_mixes(
            name, ok=False, reason="bench/fastpath.sh printed no row")
    # glibc's row only when glibc was chosen: the loop's, always
    result.update(available=True, wall=round(time.monotonic() - started, 1),
                  rows=rows + skipped)
    if seen.get("pairs"):
        result["pairs"] = list(seen["pairs"])
    return result


def measure(binary, measurable, timeout, note, short, long, seen):
    """{allocator: [rows]}, running the script again after a hang for the
    allocators it had not reached."""
    # glibc is the script's first row whether chosen or not, the loop last
    extras = [spec for spec in measurable if spec[1]]
    table = {}
    total = len(extras) + 2

    def announce(name):
        note("[fastpath %d/%d] %s (callgrind, 4 runs)" % (
            min(len(table) + 1, total), total, name))

    def on_row(name, rows):
        table[name] = rows
        values = [r["instructions_per_pair"] for r in rows]
        shown = " / ".join("%.1f" % v if v is not None else
                           "FAILED" if r["measured"] else "missing"
                           for v, r in zip(values, rows))
        note("[fastpath] %s: %s instructions per pair (64 B / mix)" % (
            name, shown))
        following = expected[expected.index(name) + 1:]
        if following:
            announce(following[0])

    while True:
        expected = ["glibc"] + [n for n, _ in extras] + [LOOP]
        announce(expected[0])
        argv = script_argv(binary, extras, short, long)
        done, hung, error = run_script(argv, expected, timeout, on_row,
                                         seen)
        if error:
            for name in expected[len(done):]:
                table[name] = both_mixes(name, ok=False, reason=error[-300:])
            return table
        if not hung:
            return table
        reason = "timed out after %g s" % timeout
        note("[fastpath] %s: FAILED (%s)" % (hung, reason))
        table[hung] = both_mixes(hung, ok=False, reason=reason)
        if hung in ("glibc", LOOP):
            # both come from the glibc runs: no point running them again
            for name in expected[len(done):]:
                table.setdefault(name, both_mixes(name, ok=False,
                                                  reason=reason + " (glibc)"))
            return table
        extras = [spec for spec in extras if spec[0] not in table]

"""Parsing what the workloads and strace print.

Workload output (see bench/workloads): one fact per line on stdout,
    metric <key> <value> [<unit>]
    check ok                    (last, when the program's own checks passed)
    check FAILED: <reason>
anything else is ignored.  strace -c prints a table of per-syscall counts,
which parse_strace() turns into {syscall: (calls, errors)} and
strace_summary() into the report's SyscallCounts.
"""

from dataclasses import dataclass, field

# {syscall: (calls, errors)}, "total" included
StraceCounts = dict[str, tuple[int, int]]


@dataclass
class WorkloadOutput:
    """What one run of a workload said about itself."""
    metrics: dict[str, float] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)   # key -> unit
    check_ok: bool = False
    check_failure: str = ""                      # reason after FAILED


@dataclass
class SyscallCounts:
    """The report's view of one strace run: futex calls and errors, the
    calls of the other STRACE_COLUMNS, and all calls."""
    futex_calls: int
    futex_errors: int
    mmap: int
    munmap: int
    madvise: int
    brk: int
    mremap: int
    total_calls: int


def parse_number(text: str) -> float | None:
    """A float from text, or None (nan and inf are refused)."""
    try:
        value = float(text)
    except ValueError:
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return value


def parse_metric_line(words: list[str], out: WorkloadOutput) -> None:
    if len(words) < 3:
        return
    value = parse_number(words[2])
    if value is None:
        return
    out.metrics[words[1]] = value
    if len(words) >= 4:
        out.units[words[1]] = words[3]


def parse_check_line(line: str, out: WorkloadOutput) -> None:
    rest = line.split(None, 1)[1].strip() if len(line.split()) > 1 else ""
    if rest == "ok":
        out.check_ok = True
        out.check_failure = ""
        return
    out.check_ok = False
    if rest.upper().startswith("FAILED"):
        out.check_failure = rest[len("FAILED"):].lstrip(": ").strip() or "FAILED"
    else:
        out.check_failure = rest or "empty check line"


def parse_workload_output(text: str) -> WorkloadOutput:
    """Parses a workload's stdout into a WorkloadOutput."""
    out = WorkloadOutput()
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "metric":
            parse_metric_line(words, out)
        elif words[0] == "check":
            parse_check_line(line.strip(), out)
    return out


def parse_strace_row(words: list[str]) -> tuple[str, int, int] | None:
    """(syscall, calls, errors) from one row of strace -c, or None.

    A row is: % time, seconds, usecs/call, calls, [errors], syscall.
    Newer strace versions may print more numeric columns before the
    calls; the calls and errors are counted from the right.
    """
    if len(words) < 5:
        return None
    name = words[-1]
    numbers = words[:-1]
    if any(parse_number(w) is None for w in numbers):
        return None
    if len(numbers) == 4:
        return name, int(float(numbers[3])), 0
    return name, int(float(numbers[-2])), int(float(numbers[-1]))


def parse_strace(text: str) -> StraceCounts:
    """Per-syscall (calls, errors) from `strace -c` output.

    Several tables (one per personality) are summed; the `total` row is
    kept under the key "total".
    """
    counts: StraceCounts = {}
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith(("%", "-")):
            continue
        row = parse_strace_row(words)
        if row is None:
            continue
        name, calls, errors = row
        old = counts.get(name, (0, 0))
        counts[name] = (old[0] + calls, old[1] + errors)
    return counts


# The syscalls the report's strace table shows.
STRACE_COLUMNS = ("futex", "mmap", "munmap", "madvise", "brk", "mremap")


def strace_summary(counts: StraceCounts) -> SyscallCounts:
    """The report's view of parse_strace()'s result."""
    def calls(name: str) -> int:
        return counts.get(name, (0, 0))[0]
    total = counts.get("total")
    return SyscallCounts(
        futex_calls=calls("futex"),
        futex_errors=counts.get("futex", (0, 0))[1],
        **{name: calls(name) for name in STRACE_COLUMNS[1:]},
        total_calls=total[0] if total else sum(
            c for n, (c, e) in counts.items() if n != "total"))

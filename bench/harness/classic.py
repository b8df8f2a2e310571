"""The classic observations, checked against this run's numbers.

The figures come from the documents the project started from (2014 lecture
timings on a 4-core Core 2 Quad; a thread-safe malloc report with a lock
and a thread-local version).  Each observation is turned into a test on
the medians of this run; the verdict and its wording are computed here,
never written in advance.

A factor counts as a clear difference when it is at least CLEAR (10%).
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .records import StraceRow
from .stats import CellKey, CellSummary

Cells = Mapping[CellKey, CellSummary]
Series = list[tuple[int, float]]       # [(threads, value)]

CLEAR = 1.10          # a factor this far from 1 is a difference, not noise
SAME_SIZE = 1.25      # data sizes within this factor count as the same


@dataclass
class Observation:
    claim: str        # the classic statement, with its figure
    here: str         # what this run measured
    verdict: str      # holds | does not hold | partly | not measured


def cell_value(cells: Cells, workload: str, point: str | None,
               allocator: str, measure: str = "wall") -> float | None:
    cell = cells.get((workload, point, allocator)) if point else None
    if cell is None or cell.failed:
        return None
    return cell.value(measure)


def only_point(cells: Cells, workload: str) -> str | None:
    points = sorted({k[1] for k in cells if k[0] == workload})
    return points[0] if len(points) == 1 else None


def compare_factor(faster: float | None,
                   slower: float | None) -> float | None:
    """slower/faster, or None when either is missing or zero."""
    if not faster or not slower:
        return None
    return slower / faster


def direction_verdict(factor: float | None) -> str:
    if factor is None:
        return "not measured"
    if factor >= CLEAR:
        return "holds"
    if factor <= 1 / CLEAR:
        return "does not hold (reversed)"
    return "does not hold (no clear difference)"


def speed_text(name: str, factor: float, other: str) -> str:
    if factor >= 1:
        return "%s %.2fx faster than %s" % (name, factor, other)
    return "%s %.2fx slower than %s" % (name, 1 / factor, other)


def tcmalloc_loop(cells: Cells) -> Observation:
    claim = "tcmalloc ran the malloc/free loop 2.7x faster than glibc"
    point = only_point(cells, "loop")
    glibc = cell_value(cells, "loop", point, "glibc")
    tc = cell_value(cells, "loop", point, "tcmalloc")
    factor = compare_factor(tc, glibc)
    if factor is None or tc is None or glibc is None:
        return Observation(claim, "loop not measured for both glibc and "
                           "tcmalloc", "not measured")
    here = "%s (%.3f s vs %.3f s)" % (speed_text("tcmalloc", factor, "glibc"),
                                      tc, glibc)
    return Observation(claim, here, direction_verdict(factor))


def tcmalloc_prodcons(cells: Cells) -> Observation:
    claim = "yet ran the producer/consumer pairs 3.3x slower than glibc"
    point = only_point(cells, "prodcons")
    glibc = cell_value(cells, "prodcons", point, "glibc")
    tc = cell_value(cells, "prodcons", point, "tcmalloc")
    factor = compare_factor(glibc, tc)
    if factor is None or tc is None or glibc is None:
        return Observation(claim, "prodcons not measured for both glibc and "
                           "tcmalloc", "not measured")
    here = "%s (%.3f s vs %.3f s)" % (
        speed_text("tcmalloc", 1 / factor, "glibc"), tc, glibc)
    return Observation(claim, here, direction_verdict(factor))


def scaling_series(cells: Cells, allocator: str,
                   measure: str = "wall") -> Series:
    """[(threads, value)] for the scaling workload, sorted by threads."""
    series = []
    for (workload, point, alloc), cell in cells.items():
        if workload != "scaling" or alloc != allocator or cell.failed:
            continue
        threads = point.split()[0]
        value = cell.value(measure)
        if threads.isdigit() and value is not None:
            series.append((int(threads), value))
    return sorted(series)


def scaling_times(cells: Cells, allocators: Sequence[str]
                  ) -> tuple[dict[str, Series], str]:
    """{allocator: [(threads, seconds)]} and the name of the time used:
    the programs' own timing of the work (metric `seconds`) when every
    cell has it, else the wall time of the process."""
    timed = {a: scaling_series(cells, a, "seconds") for a in allocators}
    walls = {a: scaling_series(cells, a, "wall") for a in allocators}
    if all(len(timed[a]) == len(walls[a]) for a in allocators):
        return timed, "timed phase"
    return walls, "wall time"


def lock_grows(cells: Cells) -> Observation:
    claim = "with one lock, time grew with every added thread"
    times, what = scaling_times(cells, ["tlmalloc-lock"])
    series = times["tlmalloc-lock"]
    if len(series) < 2:
        return Observation(claim, "lock baseline not measured at two or "
                           "more thread counts", "not measured")
    steps = [b[1] / a[1] for a, b in zip(series, series[1:]) if a[1]]
    grew = sum(1 for s in steps if s >= CLEAR)
    here = "lock, %s: " % what + ", ".join("%d thr %.3f s" % s
                                           for s in series)
    if grew == len(steps):
        verdict = "holds"
    elif grew:
        verdict = "partly (grew at %d of %d steps)" % (grew, len(steps))
    else:
        verdict = "does not hold"
    return Observation(claim, here, verdict)


def lock_vs_local(cells: Cells) -> Observation:
    claim = "8x slower than thread-local at 8 threads"
    times, what = scaling_times(cells, ["tlmalloc-lock", "tlmalloc"])
    lock = dict(times["tlmalloc-lock"])
    local = dict(times["tlmalloc"])
    common = sorted(set(lock) & set(local))
    if not common:
        return Observation(claim, "lock and thread-local not both measured",
                           "not measured")
    threads = common[-1]
    factor = compare_factor(local[threads], lock[threads])
    if factor is None:
        return Observation(claim, "a time of zero", "not measured")
    here = "at %d threads (%s) lock %.3f s vs thread-local %.3f s: " \
        "%.2fx" % (threads, what, lock[threads], local[threads], factor)
    return Observation(claim, here, direction_verdict(factor))


def data_same(cells: Cells) -> Observation:
    claim = "while the data size stayed the same (lock vs thread-local)"
    lock = dict(scaling_series(cells, "tlmalloc-lock", "data_bytes"))
    local = dict(scaling_series(cells, "tlmalloc", "data_bytes"))
    common = sorted(set(lock) & set(local))
    ratios = [(t, lock[t] / local[t]) for t in common if local[t]]
    if not ratios:
        return Observation(claim, "data_bytes not measured for both",
                           "not measured")
    here = "lock/thread-local data size: " + ", ".join(
        "%d thr %.2fx" % r for r in ratios)
    same = all(1 / SAME_SIZE <= r <= SAME_SIZE for _, r in ratios)
    return Observation(claim, here, "holds" if same else "does not hold")


def futex_counts(strace_rows: Iterable[StraceRow],
                 workload: str) -> dict[str, int]:
    counts = {}
    for row in strace_rows:
        if row.workload == workload and row.ok and row.calls is not None:
            counts[row.allocator] = row.calls.futex_calls
    return counts


def tcmalloc_futex(strace_rows: Iterable[StraceRow]) -> Observation:
    claim = ("tcmalloc's producer/consumer pairs made more futex calls than "
             "glibc's (185,731 vs 53,653)")
    counts = futex_counts(strace_rows, "prodcons")
    tc, glibc = counts.get("tcmalloc"), counts.get("glibc")
    if tc is None or glibc is None:
        return Observation(claim, "strace of prodcons not run for both",
                           "not measured")
    here = "tcmalloc %d vs glibc %d futex calls" % (tc, glibc)
    if glibc == 0:
        return Observation(claim, here, "holds" if tc > 0 else
                           "does not hold (no difference)")
    return Observation(claim, here, direction_verdict(tc / glibc))


def observations(cells: Cells,
                 strace_rows: Iterable[StraceRow] = ()) -> list[Observation]:
    """Every classic observation with this run's figures and verdicts."""
    return [tcmalloc_loop(cells), tcmalloc_prodcons(cells),
            tcmalloc_futex(strace_rows), lock_grows(cells),
            lock_vs_local(cells), data_same(cells)]

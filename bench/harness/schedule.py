"""The order of the runs, and the progress line with its time estimate.

Order: the whole suite once per repetition (round), so a burst of noise
on the shared machine lands in one repetition of many cells rather than
in every repetition of one cell, where the median could not remove it.
Within a round the allocators of a cell run back to back, their order
rotated by one each round, so no allocator always runs first or last.
"""

import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from .stats import median


@dataclass(frozen=True)
class Cell:
    workload: str
    point: str
    allocator: str


def group_cells(jobs_by_cell: Iterable[Cell]) -> list[list[Cell]]:
    """[(workload, point) -> [cells in allocator order]] in first-seen order."""
    groups: dict[tuple[str, str], list[Cell]] = {}
    for cell in jobs_by_cell:
        groups.setdefault((cell.workload, cell.point), []).append(cell)
    return list(groups.values())


def interleave(cells: Iterable[Cell], reps: int) -> list[tuple[int, Cell]]:
    """[(rep, cell)]: every cell reps times, in the order described above."""
    order = []
    groups = group_cells(cells)
    for rep in range(reps):
        for group in groups:
            shift = rep % len(group)
            for cell in group[shift:] + group[:shift]:
                order.append((rep, cell))
    return order


def once_cells(first_walls: dict[Cell, float], slow: float,
               keep: str = "tlmalloc") -> set[Cell]:
    """The cells of one point whose later repetitions are skipped.

    `first_walls` holds the first run's wall seconds of every cell of the
    point (one workload point, every allocator).  A cell slower than
    `slow` runs once, unless most of the point's cells are but not all: a
    burst of load on the shared machine slows most allocators of a point
    alike, and one slow run of one allocator must not stand against
    another's median of calm ones (then every cell runs every
    repetition).  When all are slow, all run once, on an equal footing.
    `keep`, the library the report is about, runs every repetition
    unless all do run once.
    """
    slow_cells = {c for c, wall in first_walls.items() if wall > slow}
    if len(slow_cells) == len(first_walls):
        return slow_cells
    if 2 * len(slow_cells) > len(first_walls):
        return set()
    return {c for c in slow_cells if c.allocator != keep}


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return "%ds" % seconds
    if seconds < 3600:
        return "%dm%02ds" % divmod(seconds, 60)
    hours, rest = divmod(seconds, 3600)
    return "%dh%02dm" % (hours, rest // 60)


@dataclass
class Estimator:
    """Guesses how long the runs left will take from the runs done.

    A cell's guess is the mean of its own runs; failing that, the median
    of its workload point's runs (other allocators); failing that, the
    median of all runs; failing that, `default` seconds.  Medians, so one
    very slow allocator does not inflate the guess for every other cell.
    """
    default: float = 1.0
    by_cell: dict[Cell, list[float]] = field(default_factory=dict)
    by_point: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    all: list[float] = field(default_factory=list)

    def record(self, cell: Cell, seconds: float) -> None:
        self.by_cell.setdefault(cell, []).append(seconds)
        self.by_point.setdefault((cell.workload, cell.point), []).append(seconds)
        self.all.append(seconds)

    def guess(self, cell: Cell) -> float:
        own = self.by_cell.get(cell)
        if own:
            return sum(own) / len(own)
        for samples in (self.by_point.get((cell.workload, cell.point)),
                        self.all):
            if samples:
                return median(samples)
        return self.default

    def remaining(self, cells: Iterable[Cell]) -> float:
        return sum(self.guess(c) for c in cells)


class Progress:
    """One stderr line per run: what runs, how many are left, time left.
    default: the guess for a run before any ran (see Estimator)."""

    def __init__(self, total: int, stream: TextIO | None = None,
                 default: float = Estimator.default) -> None:
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.estimator = Estimator(default)
        self.started = time.monotonic()

    def start(self, rep: int, reps: int, cell: Cell, label: str = "") -> None:
        text = "[%*d/%d] %s %s | %s | rep %d/%d " % (
            len(str(self.total)), self.done + 1, self.total, cell.workload,
            cell.point, cell.allocator, rep + 1, reps)
        self.stream.write(text + (label and label + " "))
        self.stream.flush()

    def finish(self, cell: Cell, seconds: float, ok: bool, reason: str,
               cells_left: Sequence[Cell]) -> None:
        self.done += 1
        self.estimator.record(cell, seconds)
        left = self.estimator.remaining(cells_left)
        status = "ok" if ok else "FAILED (%s)" % reason
        self.stream.write("%.2fs %s | %d run%s left, ~%s left\n" % (
            seconds, status, len(cells_left),
            "" if len(cells_left) == 1 else "s", format_duration(left)))
        self.stream.flush()

    def note(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

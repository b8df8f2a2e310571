"""Medians and per-cell summaries of the raw runs.

A run is a records.Run.  A cell is one (workload, point, allocator); its
summary holds the medians over its successful runs, or failed=True when
any of its runs failed: a crash or a failed self-check is a result to
show, not noise to filter out.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .records import Run

CellKey = tuple[str, str, str]      # (workload, point, allocator)


def median(values: Iterable[float]) -> float:
    """The median of a non-empty sequence of numbers (mean of the middle
    two for an even count).  ValueError when empty."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("median of nothing")
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


@dataclass
class CellSummary:
    workload: str
    point: str
    allocator: str
    runs: int = 0
    failed_runs: int = 0
    reasons: list[str] = field(default_factory=list)
    # the medians, None when no run succeeded
    wall: float | None = None
    user: float | None = None
    sys: float | None = None
    maxrss_kb: float | None = None
    wall_min: float | None = None
    wall_max: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)   # key -> median
    units: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.failed_runs > 0

    def value(self, measure: str) -> float | None:
        """wall, user, sys, maxrss_kb, or a metric key; None if absent."""
        if measure == "wall":
            return self.wall
        if measure == "user":
            return self.user
        if measure == "sys":
            return self.sys
        if measure == "maxrss_kb":
            return self.maxrss_kb
        return self.metrics.get(measure)


def summarize_cell(runs: Sequence[Run]) -> CellSummary:
    first = runs[0]
    cell = CellSummary(first.workload, first.point, first.allocator,
                       runs=len(runs))
    good = [r for r in runs if r.ok]
    cell.failed_runs = len(runs) - len(good)
    cell.reasons = sorted({r.reason for r in runs if not r.ok})
    if not good:
        return cell
    cell.wall = median(r.wall for r in good)
    cell.user = median(r.user for r in good)
    cell.sys = median(r.sys for r in good)
    cell.maxrss_kb = median(r.maxrss_kb for r in good)
    cell.wall_min = min(r.wall for r in good)
    cell.wall_max = max(r.wall for r in good)
    keys = {k for r in good for k in r.metrics}
    for key in keys:
        cell.metrics[key] = median(r.metrics[key] for r in good
                                   if key in r.metrics)
    for r in good:
        cell.units.update(r.units)
    return cell


def summarize(runs: Iterable[Run]) -> dict[CellKey, CellSummary]:
    """{(workload, point, allocator): CellSummary} over all runs."""
    grouped: dict[CellKey, list[Run]] = {}
    for run in runs:
        key = (run.workload, run.point, run.allocator)
        grouped.setdefault(key, []).append(run)
    return {key: summarize_cell(group) for key, group in grouped.items()}

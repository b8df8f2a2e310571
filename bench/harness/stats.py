"""Medians and per-cell summaries of the raw runs.

A run is a dict as written to runs.json (workload, point, allocator, rep,
ok, reason, wall, user, sys, maxrss_kb, metrics, units).  A cell is one
(workload, point, allocator); its summary holds the medians over its
successful runs, or failed=True when any of its runs failed: a crash or a
failed self-check is a result to show, not noise to filter out.
"""

from dataclasses import dataclass, field


def median(values):
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
    reasons: list = field(default_factory=list)
    wall: float = None
    user: float = None
    sys: float = None
    maxrss_kb: float = None
    wall_min: float = None
    wall_max: float = None
    metrics: dict = field(default_factory=dict)   # key -> median
    units: dict = field(default_factory=dict)

    @property
    def failed(self):
        return self.failed_runs > 0

    def value(self, measure):
        """wall, user, sys, maxrss_kb, or a metric key; None if absent."""
        if measure in ("wall", "user", "sys", "maxrss_kb"):
            return getattr(self, measure)
        return self.metrics.get(measure)


def summarize_cell(runs):
    first = runs[0]
    cell = CellSummary(first["workload"], first["point"], first["allocator"],
                       runs=len(runs))
    good = [r for r in runs if r["ok"]]
    cell.failed_runs = len(runs) - len(good)
    cell.reasons = sorted({r["reason"] for r in runs if not r["ok"]})
    if not good:
        return cell
    for key in ("wall", "user", "sys", "maxrss_kb"):
        setattr(cell, key, median([r[key] for r in good]))
    cell.wall_min = min(r["wall"] for r in good)
    cell.wall_max = max(r["wall"] for r in good)
    keys = {k for r in good for k in r.get("metrics", {})}
    for key in keys:
        values = [r["metrics"][key] for r in good if key in r["metrics"]]
        cell.metrics[key] = median(values)
    for r in good:
        cell.units.update(r.get("units", {}))
    return cell


def summarize(runs):
    """{(workload, point, allocator): CellSummary} over all runs."""
    grouped = {}
    for run in runs:
        key = (run["workload"], run["point"], run["allocator"])
        grouped.setdefault(key, []).append(run)
    return {key: summarize_cell(group) for key, group in grouped.items()}

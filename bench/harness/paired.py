"""The paired pass: the points where tlmalloc is furthest behind the
fastest peer, run again in rounds of two.

The main pass takes a median of a few runs per cell; on a shared machine a
burst of load in one cell's runs can make a point look worse (or better)
than it is.  Here each chosen point runs --paired rounds of tlmalloc and
that point's fastest peer back to back, the order flipped every round,
and the figure is the median of the per-round ratios (tlmalloc's over
the peer's): both runs of a round see the same load, so the ratio is the
figure to read (bench/interleave.py does the same by hand).

Chosen: the points where tlmalloc's median wall time is more than ABOVE
times the fastest peer's, at most LIMIT of them, furthest first; a point
where either of the two is slower than --slow (the run-once rule) is
passed over, as its rounds would take that long each.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .records import PairedPass, PairedPoint, Run
from .stats import CellKey, CellSummary, median

ABOVE = 1.10
LIMIT = 5
SELF = "tlmalloc"


@dataclass(frozen=True)
class Choice:
    workload: str
    point: str
    peer: str
    ratio: float          # the main pass's median over median


def choose(cells: Mapping[CellKey, CellSummary], peers: Sequence[str],
           slow: float = 0, above: float = ABOVE,
           limit: int = LIMIT) -> list[Choice]:
    """The points to pair, furthest behind first."""
    points = sorted({(k[0], k[1]) for k in cells})
    chosen = []
    for workload, point in points:
        own = cells.get((workload, point, SELF))
        if own is None or own.failed or not own.wall:
            continue
        ran = [(c.wall, name) for name in peers
               for c in [cells.get((workload, point, name))]
               if c is not None and not c.failed and c.wall]
        if not ran:
            continue
        wall, peer = min(ran)
        if slow and (own.wall > slow or wall > slow):
            continue
        if own.wall > above * wall:
            chosen.append(Choice(workload, point, peer, own.wall / wall))
    chosen.sort(key=lambda c: -c.ratio)
    return chosen[:limit]


# runs one cell (workload, point, allocator) once, as round `rep`
RunOne = Callable[[str, str, str, int], Run]


def cpu(run: Run) -> float:
    return run.user + run.sys


def pair_point(choice: Choice, rounds: int, run_one: RunOne) -> PairedPoint:
    """rounds rounds of tlmalloc and the peer, the order flipped each
    round; a round with a failed run is counted and left out."""
    result = PairedPoint(choice.workload, choice.point, choice.peer,
                         main_ratio=round(choice.ratio, 4))
    for index in range(rounds):
        order = [SELF, choice.peer] if index % 2 == 0 else \
            [choice.peer, SELF]
        got = {name: run_one(choice.workload, choice.point, name, index)
               for name in order}
        if not all(r.ok for r in got.values()):
            result.failed += 1
            continue
        mine, theirs = got[SELF], got[choice.peer]
        result.walls.append((mine.wall, theirs.wall))
        result.cpus.append((cpu(mine), cpu(theirs)))
    return result


def run_pass(choices: Sequence[Choice], rounds: int, run_one: RunOne,
             note: Callable[[str], None] = lambda _: None) -> PairedPass:
    points = []
    for i, choice in enumerate(choices):
        note("[paired %d/%d] %s %s: tlmalloc and %s, %d rounds" % (
            i + 1, len(choices), choice.workload, choice.point, choice.peer,
            rounds))
        points.append(pair_point(choice, rounds, run_one))
    return PairedPass(True, "", rounds, points)


def ratios(pairs: Sequence[tuple[float, float]]) -> list[float]:
    """The per-round ratios, tlmalloc's over the peer's (rounds where the
    peer's figure is 0 left out)."""
    return [a / b for a, b in pairs if b > 0]


def summary(pairs: Sequence[tuple[float, float]]
            ) -> tuple[float, float, float] | None:
    """(median, lowest, highest) of the per-round ratios, None without
    any."""
    values = ratios(pairs)
    if not values:
        return None
    return median(values), min(values), max(values)

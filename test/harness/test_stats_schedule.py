"""Medians, cell summaries, the run order and the time estimate."""
import io

import pytest

from bench.harness.records import Run
from bench.harness.schedule import (Cell, Estimator, Progress,
                                    format_duration, interleave, once_cells)
from bench.harness.stats import median, summarize


def run(alloc, wall, ok=True, rep=0, **metrics):
    return Run("loop", "32 threads", alloc, rep=rep, ok=ok,
               reason="" if ok else "exit status 1", wall=wall,
               user=wall * 2, sys=0.01, maxrss_kb=1000 + wall,
               metrics=metrics, units={k: "s" for k in metrics})


def test_median_odd_even():
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5
    assert median([7]) == 7


def test_median_of_nothing_raises():
    with pytest.raises(ValueError):
        median([])


def test_summary_medians_over_runs():
    cells = summarize([run("glibc", 1.0, seconds=0.9),
                       run("glibc", 3.0, seconds=2.9),
                       run("glibc", 2.0, seconds=1.9)])
    cell = cells[("loop", "32 threads", "glibc")]
    assert cell.runs == 3 and not cell.failed
    assert cell.wall == 2.0
    assert cell.wall_min == 1.0 and cell.wall_max == 3.0
    assert cell.user == 4.0
    assert cell.metrics["seconds"] == 1.9
    assert cell.value("maxrss_kb") == 1002.0


def test_one_failed_run_fails_the_cell():
    cells = summarize([run("tcmalloc", 1.0), run("tcmalloc", 1.1, ok=False)])
    cell = cells[("loop", "32 threads", "tcmalloc")]
    assert cell.failed and cell.failed_runs == 1
    assert cell.reasons == ["exit status 1"]


def test_all_failed_has_no_values():
    cells = summarize([run("musl", 1.0, ok=False)])
    cell = cells[("loop", "32 threads", "musl")]
    assert cell.wall is None and cell.value("seconds") is None


def cells_for(points, allocs):
    return [Cell("w", p, a) for p in points for a in allocs]


def test_interleave_runs_every_cell_reps_times():
    cells = cells_for(["p1", "p2"], ["a", "b", "c"])
    order = interleave(cells, 3)
    assert len(order) == 18
    for cell in cells:
        assert sorted(r for r, c in order if c == cell) == [0, 1, 2]


def test_interleave_rounds_and_rotation():
    cells = cells_for(["p1", "p2"], ["a", "b", "c"])
    order = interleave(cells, 3)
    # the whole suite once per round
    assert [r for r, _ in order] == [0] * 6 + [1] * 6 + [2] * 6
    # allocators of one point back to back, rotated each round
    firsts = [order[i][1].allocator for i in (0, 6, 12)]
    assert firsts == ["a", "b", "c"]
    assert [c.allocator for _, c in order[6:9]] == ["b", "c", "a"]
    assert {c.point for _, c in order[6:9]} == {"p1"}


def first_walls(walls):
    return {Cell("w", "p", a): wall for a, wall in walls.items()}


def test_slow_cells_of_a_calm_point_run_once():
    walls = first_walls({"tlmalloc": 0.2, "glibc": 3.0, "musl": 30.0,
                         "tcmalloc": 0.3, "jemalloc": 0.2})
    assert {c.allocator for c in once_cells(walls, 2.0)} == {"glibc", "musl"}


def test_tlmalloc_slow_alone_runs_every_repetition():
    walls = first_walls({"tlmalloc": 2.5, "glibc": 0.3, "tcmalloc": 0.3})
    assert once_cells(walls, 2.0) == set()


def test_a_burst_over_most_of_a_point_keeps_every_repetition():
    # most allocators slowed alike, two not: no one-run cell stands
    # against the others' medians
    walls = first_walls({"tlmalloc": 3.1, "glibc": 2.6, "tcmalloc": 2.2,
                         "jemalloc": 2.3, "snmalloc": 1.8, "musl": 0.9})
    assert once_cells(walls, 2.0) == set()


def test_a_point_all_slow_runs_once_all_of_it():
    walls = first_walls({"tlmalloc": 3.0, "glibc": 2.5})
    assert once_cells(walls, 2.0) == set(walls)


def test_estimator_falls_back():
    est = Estimator(default=5.0)
    a, b, other = Cell("w", "p", "a"), Cell("w", "p", "b"), Cell("x", "q", "a")
    assert est.guess(a) == 5.0
    est.record(a, 2.0)
    est.record(a, 4.0)
    assert est.guess(a) == 3.0          # its own runs
    assert est.guess(b) == 3.0          # same point, other allocator
    est.record(Cell("w", "p", "c"), 30.0)
    assert est.guess(b) == 4.0          # median of the point's runs
    est.record(Cell("x", "r", "z"), 9.0)
    assert est.guess(other) == 6.5      # median of everything
    assert est.remaining([a, b, other]) == 13.5


def test_progress_line_says_what_and_how_long():
    stream = io.StringIO()
    progress = Progress(4, stream=stream)
    cell = Cell("loop", "32 threads", "jemalloc")
    progress.start(0, 2, cell)
    progress.finish(cell, 1.5, True, "", [cell, cell, cell])
    text = stream.getvalue()
    assert "[1/4] loop 32 threads | jemalloc | rep 1/2" in text
    assert "3 runs left" in text and "~4s left" in text


def test_format_duration():
    assert format_duration(5.4) == "5s"
    assert format_duration(125) == "2m05s"
    assert format_duration(7300) == "2h01m"

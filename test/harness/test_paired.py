"""The paired pass (bench/harness/paired.py): which points it picks, how it
runs them, and how the report and runs.json show them."""
import pytest

from bench.harness import cli, paired
from bench.harness.records import PairedPass, PairedPoint, Results, Run
from bench.harness.report import build_report
from bench.harness.stats import summarize

from test_report import synthetic_json


def runs(workload, point, alloc, walls, ok=True):
    return [Run(workload, point, alloc, rep=i, ok=ok, wall=w, user=w)
            for i, w in enumerate(walls)]


def cells(*groups):
    return summarize([r for group in groups for r in group])


PEERS = ["glibc", "tcmalloc", "rpmalloc"]


def test_choose_takes_the_points_furthest_behind_first():
    chosen = paired.choose(cells(
        runs("server", "default", "tlmalloc", [1.5, 1.5, 1.5]),
        runs("server", "default", "tcmalloc", [1.0] * 3),
        runs("server", "default", "glibc", [2.0] * 3),
        runs("rptest", "default", "tlmalloc", [1.3] * 3),
        runs("rptest", "default", "rpmalloc", [1.0] * 3),
        runs("loop", "32 threads", "tlmalloc", [1.05] * 3),   # within 1.10x
        runs("loop", "32 threads", "glibc", [1.0] * 3),
        runs("churn", "default", "tlmalloc", [0.5] * 3),      # ahead
        runs("churn", "default", "glibc", [1.0] * 3)), PEERS)
    assert [(c.workload, c.peer) for c in chosen] == \
        [("server", "tcmalloc"), ("rptest", "rpmalloc")]
    assert chosen[0].ratio == pytest.approx(1.5)


def test_choose_passes_over_failed_cells_slow_points_and_non_peers():
    chosen = paired.choose(cells(
        # the fastest peer failed: the next one is the fastest that ran
        runs("a", "p", "tlmalloc", [2.0] * 3),
        runs("a", "p", "tcmalloc", [1.0, 1.0, 1.0], ok=False),
        runs("a", "p", "glibc", [1.5] * 3),
        # slower than --slow: a round would take as long, passed over
        runs("b", "p", "tlmalloc", [9.0]),
        runs("b", "p", "glibc", [3.0]),
        # tlmalloc's own builds are no peers
        runs("c", "p", "tlmalloc", [2.0] * 3),
        runs("c", "p", "tlmalloc-fast", [1.0] * 3),
        # tlmalloc failed: nothing to compare
        runs("d", "p", "tlmalloc", [2.0] * 3, ok=False),
        runs("d", "p", "glibc", [1.0] * 3)), PEERS, slow=2.0)
    assert [(c.workload, c.peer) for c in chosen] == [("a", "glibc")]
    assert chosen[0].ratio == pytest.approx(2.0 / 1.5)


def test_choose_keeps_at_most_the_limit():
    groups = []
    for i in range(8):
        groups += [runs("w%d" % i, "p", "tlmalloc", [1.2 + i / 10] * 3),
                   runs("w%d" % i, "p", "glibc", [1.0] * 3)]
    chosen = paired.choose(cells(*groups), PEERS, limit=3)
    assert [c.workload for c in chosen] == ["w7", "w6", "w5"]


def test_rounds_flip_the_order_and_leave_out_failed_ones():
    calls = []
    walls = {"tlmalloc": [1.2, 1.4, 9.0, 1.1], "glibc": [1.0, 1.0, 1.0, 1.0]}

    def run_one(workload, point, alloc, rep):
        calls.append((alloc, rep))
        ok = not (alloc == "glibc" and rep == 2)     # round 2 fails
        wall = walls[alloc][rep]
        return Run(workload, point, alloc, rep=rep, ok=ok, wall=wall,
                   user=wall / 2, sys=wall / 4)

    point = paired.pair_point(paired.Choice("w", "p", "glibc", 1.3), 4,
                              run_one)
    assert calls == [("tlmalloc", 0), ("glibc", 0), ("glibc", 1),
                     ("tlmalloc", 1), ("tlmalloc", 2), ("glibc", 2),
                     ("glibc", 3), ("tlmalloc", 3)]
    assert point.failed == 1
    assert point.walls == [(1.2, 1.0), (1.4, 1.0), (1.1, 1.0)]
    assert point.cpus[0] == pytest.approx((0.9, 0.75))
    mid, low, high = paired.summary(point.walls)
    assert (mid, low, high) == pytest.approx((1.2, 1.1, 1.4))


def test_summary_without_rounds():
    assert paired.summary([]) is None
    assert paired.summary([(1.0, 0.0)]) is None


def with_pass(done):
    data = Results.from_json(synthetic_json())
    data.paired = done
    return data


def test_report_shows_the_paired_points():
    point = PairedPoint("server", "default", "tcmalloc", main_ratio=1.45,
                        walls=[(1.5, 1.0), (1.3, 1.0), (1.4, 1.0)],
                        cpus=[(2.0, 1.0), (2.2, 1.0), (1.8, 1.0)], failed=1)
    text = build_report(with_pass(PairedPass(True, "", 4, [point])))
    section = text.split("## The furthest points, in paired rounds", 1)[1]
    section = section.split("\n## ", 1)[0]
    assert "4 rounds of tlmalloc and that peer back to back" in section
    assert ("| server | default | tcmalloc | 1.45x | 1.40x (1.30-1.50) | "
            "2.00x (1.80-2.20) | 3 (1 failed, left out) |") in section


def test_report_says_why_nothing_was_paired():
    text = build_report(with_pass(PairedPass(False, "--paired 0 given")))
    assert "Not run: --paired 0 given." in text
    text = build_report(with_pass(PairedPass(
        True, "no point more than 1.10x the fastest peer's time", 7)))
    assert "Nothing to pair: no point more than 1.10x" in text


def test_paired_pass_round_trips_through_json():
    point = PairedPoint("w", "p", "glibc", 1.25, [(1.2, 1.0)], [(2.0, 1.5)],
                        failed=2)
    data = with_pass(PairedPass(True, "", 5, [point]))
    back = Results.from_json(data.to_json())
    assert back.paired == data.paired
    # an older results set, without the pass
    old = data.to_json()
    del old["paired"]
    assert not Results.from_json(old).paired.available


def test_programs_alone_are_not_paired(tmp_path):
    job = cli.Job(["prog"], {}, program=object())
    cell = cli.Cell("prog", "run", "tlmalloc")
    done = cli.run_paired({cell: job}, runs("prog", "run", "tlmalloc", [1.0]),
                          [], cli.parse_args([]), None)
    assert not done.available and "no built-in workload" in done.note
    assert cli.run_paired({}, [], [], cli.parse_args(["--paired", "0"]),
                          None).note == "--paired 0 given"


def test_rounds_option():
    assert cli.parse_args([]).paired == cli.DEFAULTS[cli.Mode.QUICK].paired
    assert cli.parse_args(["--full"]).paired == \
        cli.DEFAULTS[cli.Mode.FULL].paired
    assert cli.parse_args(["--paired", "0"]).paired == 0
    with pytest.raises(SystemExit):
        cli.parse_args(["--paired", "-3"])

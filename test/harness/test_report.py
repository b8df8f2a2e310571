"""The report built from a synthetic results set."""
import math
import re

from bench.harness import classic
from bench.harness.records import Results
from bench.harness.report import build_report
from bench.harness.stats import summarize

ALLOCS = [
    {"name": "tlmalloc", "kind": "preload", "found": True, "path": "/b/libtlmalloc.so",
     "note": "", "package": "", "version": "0.1.0"},
    {"name": "tlmalloc-lock", "kind": "ts", "found": True, "path": "", "note": "",
     "package": "", "version": ""},
    {"name": "glibc", "kind": "system", "found": True, "path": "", "note": "",
     "package": "", "version": "glibc 2.36"},
    {"name": "tcmalloc", "kind": "preload", "found": True, "path": "/l/libtcmalloc.so",
     "note": "", "package": "libtcmalloc-minimal4", "version": "2.10"},
    {"name": "mimalloc", "kind": "preload", "found": False, "path": "",
     "note": "not found (libmimalloc.so.2)", "package": "libmimalloc2.0",
     "version": ""},
    {"name": "musl", "kind": "musl", "found": True, "path": "", "note": "", "package": "",
     "version": ""},
]

WORKLOADS = [
    {"name": "loop", "title": "The malloc/free loop", "summary": "",
     "points": ["32 threads"], "metric_order": []},
    {"name": "prodcons", "title": "Producer/consumer pairs", "summary": "",
     "points": ["16 pairs"], "metric_order": []},
    {"name": "scaling", "title": "Thread scaling", "summary": "",
     "points": ["1 thread", "2 threads", "4 threads", "8 threads"],
     "metric_order": ["seconds", "data_bytes"]},
]


def runs_of(workload, point, alloc, walls, rss=1024, ok=True, **metrics):
    return [{"workload": workload, "point": point, "allocator": alloc,
             "rep": i, "ok": ok, "reason": "" if ok else "killed by signal "
             "SIGSEGV", "wall": w, "user": w, "sys": 0.0, "maxrss_kb": rss,
             "metrics": dict(metrics), "units": {"data_bytes": "B"}}
            for i, w in enumerate(walls)]


def synthetic(**figures):
    """The results set of synthetic_json(**figures)."""
    return Results.from_json(synthetic_json(**figures))


def synthetic_json(tc_loop=0.5, tc_prod=3.0,
                   lock_times=(1.0, 2.0, 4.0, 8.0)):
    """A results set as runs.json holds it (without a fast-path pass)."""
    runs = []
    runs += runs_of("loop", "32 threads", "glibc", [2.0, 2.2, 1.8], 4096)
    runs += runs_of("loop", "32 threads", "tlmalloc", [0.4, 0.41, 0.39], 2048)
    runs += runs_of("loop", "32 threads", "tcmalloc",
                    [tc_loop] * 3, 8192)
    runs += runs_of("loop", "32 threads", "musl", [3.0, 3.1], ok=False)
    runs += runs_of("prodcons", "16 pairs", "glibc", [1.0, 1.0, 1.0])
    runs += runs_of("prodcons", "16 pairs", "tcmalloc", [tc_prod] * 3)
    runs += runs_of("prodcons", "16 pairs", "tlmalloc", [0.8] * 3)
    for threads, lock in zip((1, 2, 4, 8), lock_times):
        label = "%d thread%s" % (threads, "" if threads == 1 else "s")
        runs += runs_of("scaling", label, "tlmalloc-lock", [lock] * 3,
                        data_bytes=10e6 * threads)
        runs += runs_of("scaling", label, "tlmalloc", [1.0] * 3,
                        data_bytes=10.5e6 * threads)
        runs += runs_of("scaling", label, "glibc", [1.2] * 3,
                        data_bytes=20e6 * threads)
    strace_rows = [
        {"workload": "prodcons", "allocator": "glibc", "ok": True,
         "futex_calls": 53653, "futex_errors": 14030, "mmap": 10,
         "munmap": 2, "madvise": 0, "brk": 3, "mremap": 0,
         "total_calls": 80000},
        {"workload": "prodcons", "allocator": "tcmalloc", "ok": True,
         "futex_calls": 185731, "futex_errors": 45222, "mmap": 40,
         "munmap": 0, "madvise": 7, "brk": 1, "mremap": 0,
         "total_calls": 240000},
        {"workload": "loop", "allocator": "musl", "ok": False,
         "reason": "exit status 1"},
    ]
    return {"command": "scripts/experiments.sh --reps 3", "mode": "quick",
            "reps": 3, "started": "2026-01-01T00:00:00", "duration_s": 12,
            "machine": {"cpu": "Test CPU", "cores": "2",
                        "libc": "glibc 2.36"},
            "allocators": ALLOCS, "workloads": WORKLOADS, "runs": runs,
            "missing": [{"workload": "loop", "point": "32 threads",
                         "allocator": "mimalloc",
                         "reason": "allocator missing: not found"}],
            "strace": {"available": True, "note": "", "rows": strace_rows},
            "plots": {"available": False, "note": "matplotlib is not "
                      "installed", "files": {}}}


def table_rows(text, heading):
    section = text.split(heading, 1)[1].split("\n### ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ")]


def test_workload_table_contents():
    text = build_report(synthetic())
    rows = table_rows(text, "(`loop`)")
    header = rows[0]
    assert header == "| point | measure | tlmalloc | glibc | tcmalloc | musl |"
    time_row = next(r for r in rows if "| time (s) |" in r)
    cells = [c.strip() for c in time_row.strip("|").split("|")]
    # medians: tlmalloc 0.4, glibc 2.0, tcmalloc 0.5; ratio to glibc
    assert cells[2] == "**0.400** (0.20x)"
    assert cells[3] == "2.00"
    assert cells[4] == "0.500 (0.25x)"
    assert cells[5] == "FAILED"


def test_bold_marks_the_best_memory_too():
    rows = table_rows(build_report(synthetic()), "(`loop`)")
    rss_row = next(r for r in rows if "peak RSS" in r)
    assert rss_row.count("**") == 2
    assert "**2.00** (0.50x)" in rss_row      # tlmalloc 2048 KiB


def test_no_bold_when_all_equal():
    rows = table_rows(build_report(synthetic()), "(`prodcons`)")
    rss_row = next(r for r in rows if "peak RSS" in r)
    assert "**" not in rss_row


def test_live_data_shown_but_never_marked_best():
    data = synthetic_json()
    live = {"glibc": 900.0, "tcmalloc": 1000.0, "tlmalloc": 1100.0}
    for run in data["runs"]:
        if run["workload"] == "prodcons":
            kb = live[run["allocator"]]
            run["metrics"] = {"live_max_kb": kb,
                              "peak_over_live": run["maxrss_kb"] / kb}
    rows = table_rows(build_report(Results.from_json(data)), "(`prodcons`)")
    live_row = next(r for r in rows if "| live_max_kb" in r)
    assert "**" not in live_row               # the program's, not ranked
    ratio_row = next(r for r in rows if "| peak_over_live" in r)
    assert "**0.931**" in ratio_row           # 1024 / 1100: tlmalloc's
    assert ratio_row.count("**") == 2


def test_scaling_table_has_lock_and_data_size():
    rows = table_rows(build_report(synthetic()), "(`scaling`)")
    assert "tlmalloc-lock" in rows[0]
    data_rows = [r for r in rows if "data_bytes (MiB)" in r]
    assert len(data_rows) == 4
    # at 8 threads the lock holds 80e6 B = 76.3 MiB, the least: bold
    assert "**76.3**" in data_rows[-1]


def test_missing_and_failed_are_listed():
    text = build_report(synthetic())
    assert "missing allocators: mimalloc" in text
    assert "| mimalloc | **missing** |" in text
    assert "Not run here: mimalloc" in text
    failed = text.split("## Failed runs", 1)[1].split("##", 1)[0]
    assert failed.count("killed by signal SIGSEGV") == 2
    assert "exit status 1" in failed          # the failed strace run
    assert "plots: none (matplotlib is not installed)" in text
    assert "interrupted" not in text


def test_interrupted_run_says_so():
    data = synthetic()
    data.interrupted = True
    assert "**interrupted**: these are partial results" in build_report(data)


def test_strace_table():
    text = build_report(synthetic())
    section = text.split("## System calls", 1)[1].split("\n## ", 1)[0]
    assert "| prodcons | tcmalloc | 185731 | 45222 | 40 | 0 | 7 | 1 | 0 |" \
        in section
    assert "| loop | musl | FAILED |" in section


def test_standing_of_tlmalloc():
    text = build_report(synthetic())
    section = text.split("## Where tlmalloc stands", 1)[1].split("\n## ")[0]
    assert re.search(r"\| loop \| 32 threads \| 0.400 s \| 0.20x \| 1 of 3 \|"
                     r" tlmalloc \(0.400 s\) \| 0.80x \(tcmalloc\) \| 0.50x \| "
                     r"0.50x \(glibc\) \|", section)
    assert re.search(r"\| prodcons \| 16 pairs \| 0.800 s \| 0.80x \| "
                     r"1 of 3 \|", section)


def standing(data):
    text = build_report(data)
    return text.split("## Where tlmalloc stands", 1)[1].split("\n## ")[0]


def test_against_the_peers():
    """Time over the fastest peer at each point, RSS over the leanest, and
    their geometric means: the peers are the found allocators that run
    the same programs (glibc and tcmalloc here; not mimalloc, missing;
    not tlmalloc-lock or the static musl programs)."""
    section = standing(synthetic())
    assert "Against the peers (glibc, tcmalloc: " in section
    # loop 0.4 / 0.5 (tcmalloc), prodcons 0.8 / 1.0 (glibc), scaling
    # 1.0 / 1.2 (glibc) at four points
    expected = math.exp((2 * math.log(0.8) + 4 * math.log(1 / 1.2)) / 6)
    assert "over 6 points: tlmalloc's median time is on geometric mean " \
        "**%.2fx** the fastest peer's at each point, at or below it on 6;" \
        % expected in section
    assert "furthest behind" not in section
    # peak RSS: loop 2048 against glibc's 4096 KiB, the rest equal
    rss = math.exp(math.log(0.5) / 6)
    assert "its peak RSS **%.2fx** the leanest peer's, at or below it on 6." \
        % rss in section


def test_against_the_peers_behind_and_failed():
    """A peer ahead names the furthest point behind; a failed peer cell
    is no figure."""
    section = standing(synthetic(tc_loop=0.3))
    assert "at or below it on 5 (furthest behind: loop 32 threads, 1.33x)" \
        in section
    data = synthetic(tc_loop=0.3)
    for run in data.runs:
        if run.allocator == "tcmalloc" and run.workload == "loop":
            run.ok = False
    section = standing(data)
    assert "| 0.20x (glibc) |" in section
    assert "furthest behind" not in section


def test_live_data_marked():
    """A point whose program reports peak_over_live gets the mark in its
    RSS column and a note with tlmalloc's figure and the least peer's;
    the others get neither."""
    data = synthetic()
    for run in data.runs:
        if run.workload == "prodcons":
            run.metrics["peak_over_live"] = {
                "tlmalloc": 1.4, "glibc": 1.5, "tcmalloc": 1.2}[run.allocator]
    section = standing(data)
    row = next(line for line in section.splitlines()
               if line.startswith("| prodcons |"))
    assert row.endswith("(glibc) ‡ |")
    loop = next(line for line in section.splitlines()
                if line.startswith("| loop |"))
    assert "‡" not in loop
    assert "the peak RSS per byte of it (`peak_over_live`, medians) " \
        "compares the allocators themselves: `prodcons` 16 pairs: " \
        "tlmalloc 1.40 (the least of the peers: tcmalloc 1.20)." in section
    assert "‡: the program reports" not in standing(synthetic())


def test_against_the_peers_when_none_ran():
    data = synthetic()
    data.runs = [r for r in data.runs
                 if r.allocator in ("tlmalloc", "tlmalloc-lock", "musl")]
    section = standing(data)
    assert "Against the peers: no point where tlmalloc and a peer both " \
        "ran." in section
    assert "| loop | 32 threads | 0.400 s | – | 1 of 1 | tlmalloc " \
        "(0.400 s) | – | – | – |" in section


def verdicts(data):
    cells = summarize(data.runs)
    return {o.claim: o for o in classic.observations(
        cells, data.strace.rows)}


def test_classic_observations_hold_when_the_data_says_so():
    obs = list(verdicts(synthetic()).values())
    assert [o.verdict for o in obs] == ["holds"] * 6
    assert "tcmalloc 4.00x faster than glibc" in obs[0].here
    assert "tcmalloc 3.00x slower than glibc" in obs[1].here
    assert "8.00x" in obs[4].here


def test_classic_observations_fail_when_the_data_says_so():
    data = synthetic(tc_loop=4.0, tc_prod=1.02, lock_times=(1, 1, 1, 1))
    data.strace.rows[1].calls.futex_calls = 10
    obs = list(verdicts(data).values())
    assert obs[0].verdict == "does not hold (reversed)"
    assert "2.00x slower" in obs[0].here
    assert obs[1].verdict == "does not hold (no clear difference)"
    assert obs[2].verdict == "does not hold (reversed)"
    assert obs[3].verdict == "does not hold"
    assert obs[4].verdict == "does not hold (no clear difference)"


def test_classic_not_measured_without_tcmalloc():
    data = synthetic()
    data.runs = [r for r in data.runs if r.allocator != "tcmalloc"]
    text = build_report(data)
    assert "| not measured |" in text
    assert "4 of the 4 observations that could be measured" in text


def test_plots_skipped_without_matplotlib(tmp_path, monkeypatch):
    from bench.harness import plots
    monkeypatch.setattr(plots, "load_matplotlib", lambda: None)
    result = plots.make_plots(synthetic(), tmp_path)
    assert not result.available and "matplotlib" in result.note
    assert result.files == {}


def test_plots_drawn_from_synthetic_results(tmp_path):
    import pytest
    pytest.importorskip("matplotlib")
    from bench.harness import plots
    result = plots.make_plots(synthetic(), tmp_path)
    assert result.available
    assert sorted(result.files) == ["loop", "prodcons", "scaling"]
    for files in result.files.values():
        assert {f.rsplit(".", 1)[1] for f in files} == {"png", "svg"}
        for rel in files:
            assert (tmp_path / rel).stat().st_size > 1000


def test_plot_colours_differ_for_twenty_allocators():
    from bench.harness.plots import PALETTE, colour_of
    order = ["alloc%d" % i for i in range(len(PALETTE))]
    colours = [colour_of(a, order) for a in order]
    assert len(PALETTE) >= 20
    assert len(set(colours)) == len(order)


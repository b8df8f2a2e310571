"""A tiny run of the whole harness against fake workload programs.

The fake build tree holds python scripts named like the workloads, which
print metric lines (and fail where the test wants a failure), and a
libtlmalloc.so compiled from an empty C file when a C compiler is there.
No real build is needed; the run takes a few seconds.
"""
import contextlib
import csv
import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from bench.harness import cli

FAKE = """#!{python}
import os, sys
name = os.path.basename(sys.argv[0])
args = sys.argv[1:]
threads = int(args[args.index("--threads") + 1]) if "--threads" in args else 1
api = args[args.index("--api") + 1] if "--api" in args else ""
preload = os.environ.get("LD_PRELOAD", "")
# the fake lock slows down with threads, like the naive one-lock malloc
print("fake %s %s" % (name, " ".join(args)))
print("metric seconds %f s" % (0.01 * threads if api == "lock" else 0.01))
print("metric data_bytes %d B" % (1000000 * threads))
print("metric preloaded %d" % bool(preload))
if name == "loop" and "libtlmalloc" in preload:
    import time
    time.sleep(0.3)     # behind on loop: the paired pass takes that point
if name.endswith("-musl"):
    print("check FAILED: fake musl failure")
    sys.exit(1)
print("check ok")
"""


def write_fake(path):
    with open(path, "w") as handle:
        handle.write(FAKE.format(python=sys.executable))
    os.chmod(path, 0o755)


def make_tree(root):
    bench = root / "build" / "bench"
    os.makedirs(str(bench))
    for prog in ("loop", "loop-musl", "prodcons", "scaling", "scaling_ts"):
        write_fake(str(bench / prog))
    src = root / "build" / "src"
    os.makedirs(str(src))
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc:
        (root / "empty.c").write_text("int fake_tlmalloc_marker;\n")
        subprocess.run([cc, "-shared", "-fPIC", "-o",
                        str(src / "libtlmalloc.so"), str(root / "empty.c")],
                       check=True)
    os.makedirs(str(root / "nolibs"))
    return bool(cc)


def run_harness(tmp_path, *extra):
    argv = ["--build", str(tmp_path / "build"),
            "--lib-dir", str(tmp_path / "nolibs"),
            "--out", str(tmp_path / "results"), "--reps", "2",
            "--only", "loop,prodcons,scaling", "--timeout", "30"] + list(extra)
    return cli.main(argv)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("e2e")
    have_lib = make_tree(tmp_path)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert run_harness(tmp_path) == 0
    run_dir = os.path.realpath(str(tmp_path / "results" / "latest"))
    return tmp_path, run_dir, have_lib, err.getvalue()


def test_results_folder(finished):
    _, run_dir, _, _ = finished
    for name in ("runs.csv", "runs.json", "strace.csv", "fastpath.csv",
                 "report.md"):
        assert os.path.isfile(os.path.join(run_dir, name)), name


def test_every_run_recorded(finished):
    _, run_dir, have_lib, _ = finished
    data = json.load(open(os.path.join(run_dir, "runs.json")))
    runs = data["runs"]
    # loop: glibc, musl (+tlmalloc, tlmalloc-kept); prodcons: glibc
    # (+tlmalloc, tlmalloc-kept); scaling: 4 points x glibc, tlmalloc-lock
    # (+tlmalloc, tlmalloc-kept)
    cells = 2 + 1 + 4 * 2 + (2 * (1 + 1 + 4) if have_lib else 0)
    assert len(runs) == cells * 2
    with open(os.path.join(run_dir, "runs.csv")) as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(runs)
    assert {"wall", "user", "sys", "maxrss_kb", "metric:seconds"} <= \
        set(rows[0])
    musl = [r for r in runs if r["allocator"] == "musl"]
    assert musl and all(not r["ok"] for r in musl)
    assert musl[0]["reason"] == "check FAILED: fake musl failure"
    lock8 = [r for r in runs if r["allocator"] == "tlmalloc-lock"
             and r["point"] == "8 threads"]
    assert lock8[0]["command"][-2:] == ["--api", "lock"]
    assert lock8[0]["metrics"]["seconds"] == pytest.approx(0.08)
    glibc = [r for r in runs if r["allocator"] == "glibc"]
    assert all(r["ok"] and r["metrics"]["preloaded"] == 0 for r in glibc)
    assert all(r["wall"] > 0 and r["maxrss_kb"] > 0 for r in glibc)


def test_report_shows_failed_and_missing(finished):
    _, run_dir, _, err = finished
    text = open(os.path.join(run_dir, "report.md")).read()
    loop = text.split("(`loop`)", 1)[1].split("###", 1)[0]
    assert "| musl |" in loop.replace("| musl", "| musl |") and "FAILED" in loop
    for peer in ("jemalloc", "tcmalloc", "mimalloc", "tbbmalloc"):
        assert "| %s | **missing** |" % peer in text
        assert peer in err          # said on the way too
    assert "check FAILED: fake musl failure" in text
    # the fake lock's timed phase grows with threads: the verdict follows
    assert ("| with one lock, time grew with every added thread | lock, "
            "timed phase: 1 thr 0.010 s, 2 thr 0.020 s, 4 thr 0.040 s, "
            "8 thr 0.080 s | holds |") in text
    assert "runs left" in err and "left" in err


def test_paired_pass_reruns_the_point_furthest_behind(finished):
    _, run_dir, have_lib, err = finished
    if not have_lib:
        pytest.skip("no C compiler: no fake libtlmalloc.so")
    data = json.load(open(os.path.join(run_dir, "runs.json")))
    done = data["paired"]
    assert done["available"] and done["rounds"] == \
        cli.DEFAULTS[cli.Mode.QUICK].paired
    points = {(p["workload"], p["peer"]): p for p in done["points"]}
    loop = points[("loop", "glibc")]
    assert len(loop["walls"]) == done["rounds"] and loop["failed"] == 0
    # the fake sleeps 0.3 s under tlmalloc: every round shows it behind
    assert all(mine > theirs + 0.25 for mine, theirs in loop["walls"])
    assert "[paired 1/" in err
    text = open(os.path.join(run_dir, "report.md")).read()
    assert "## The furthest points, in paired rounds" in text
    assert "| loop | 32 threads | glibc |" in text


def test_strace_rows(finished):
    _, run_dir, _, _ = finished
    data = json.load(open(os.path.join(run_dir, "runs.json")))
    if not shutil.which("strace"):
        assert not data["strace"]["available"]
        return
    rows = data["strace"]["rows"]
    assert {(r["workload"], r["allocator"]) for r in rows} >= {
        ("loop", "glibc"), ("prodcons", "glibc"), ("loop", "musl")}
    glibc = next(r for r in rows if r["allocator"] == "glibc")
    assert glibc["ok"] and glibc["total_calls"] > 0


def test_fastpath_not_selected(finished):
    _, run_dir, _, err = finished
    text = open(os.path.join(run_dir, "report.md")).read()
    assert "Not measured: not selected (--only without fastpath)." in text
    assert "no fast-path table" in err


def test_fastpath_alone_says_why_it_did_not_run(tmp_path):
    # the fake tree has no fastpath program: nothing is measured at all
    make_tree(tmp_path)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert run_harness(tmp_path, "--only", "fastpath", "--no-plots") == 1
    run_dir = os.path.realpath(str(tmp_path / "results" / "latest"))
    data = json.load(open(os.path.join(run_dir, "runs.json")))
    assert data["runs"] == [] and not data["fastpath"]["available"]
    why = "is not built" if shutil.which("valgrind") else \
        "valgrind is not installed"
    assert why in data["fastpath"]["note"]
    text = open(os.path.join(run_dir, "report.md")).read()
    assert "## Fast path: instructions per malloc+free pair (callgrind)\n\n" \
        "Not measured: " in text
    assert why in err.getvalue()


def test_second_run_makes_a_new_folder(finished):
    tmp_path, first, _, _ = finished
    assert run_harness(tmp_path, "--alloc", "glibc", "--no-strace",
                       "--no-plots") == 0
    second = os.path.realpath(str(tmp_path / "results" / "latest"))
    assert second != first
    assert os.path.isfile(os.path.join(first, "report.md"))
    folders = [d for d in os.listdir(str(tmp_path / "results"))
               if d != "latest"]
    assert len(folders) == 2


def test_plots_when_matplotlib_is_there(finished):
    pytest.importorskip("matplotlib")
    _, run_dir, _, _ = finished
    for name in ("loop", "prodcons", "scaling"):
        for ext in ("png", "svg"):
            path = os.path.join(run_dir, "plots", "%s.%s" % (name, ext))
            assert os.path.getsize(path) > 1000, path
    assert "](plots/scaling.png)" in open(
        os.path.join(run_dir, "report.md")).read()


def test_unknown_workload_is_an_error(tmp_path, capsys):
    make_tree(tmp_path)
    assert run_harness(tmp_path, "--only", "nosuch") == 2
    assert "unknown workload" in capsys.readouterr().err


def test_slow_cells_run_once(tmp_path):
    make_tree(tmp_path)
    assert run_harness(tmp_path, "--alloc", "glibc", "--slow", "0.001",
                       "--no-strace", "--no-plots", "--reps", "3") == 0
    run_dir = os.path.realpath(str(tmp_path / "results" / "latest"))
    data = json.load(open(os.path.join(run_dir, "runs.json")))
    cells = {(r["workload"], r["point"]) for r in data["runs"]}
    assert len(data["runs"]) == len(cells) == 6
    text = open(os.path.join(run_dir, "report.md")).read()
    assert "ran only once" in text
    assert "| 32 threads | time (s) | **" not in text   # one allocator
    assert "†" in text.split("(`loop`)", 1)[1]

"""The security pass (security.py) and its table in the report, against a
fake misuse program: a shell script that aborts, survives, exits with an
error or hangs as its KIND says, and a listed program that is not there."""
import contextlib
import csv
import io
import json
import os
import signal
from pathlib import Path

import pytest

from bench.harness import cli, report, security
from bench.harness.allocators import Allocator, Kind
from bench.harness.records import Outcome, Results, SecurityPass

FAKE = """#!/bin/sh
case $1 in
aborts) kill -ABRT $$ ;;
faults) kill -SEGV $$ ;;
survives) echo survived ;;
exits) echo "misuse: malloc failed" >&2; exit 3 ;;
hangs) exec sleep 30 ;;
esac
"""
KINDS = ("aborts", "faults", "survives", "exits", "hangs", "gone")


def make_build(root: Path) -> Path:
    """A build folder whose programs.txt lists the fake program for every
    kind but "gone", which names a program that was never built."""
    listed = root / "build" / security.LIST
    listed.parent.mkdir(parents=True)
    fake = listed.parent / "fake"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    lines = ["%s %s" % (kind, fake) for kind in KINDS if kind != "gone"]
    lines.append("gone %s" % (listed.parent / "never-built"))
    listed.write_text("\n".join(lines) + "\n")
    return root / "build"


ALLOCS = [
    Allocator("glibc", Kind.SYSTEM),
    # the loader warns about a library it cannot find and runs on
    Allocator("tlmalloc", Kind.PRELOAD, "/nonexistent/libtlmalloc.so"),
    Allocator("tlmalloc-lock", Kind.TS, ts_api=None),
    Allocator("rpmalloc", Kind.PRELOAD, found=False, note="not built"),
]


@pytest.fixture(scope="module")
def passed(tmp_path_factory: pytest.TempPathFactory) -> SecurityPass:
    build = make_build(tmp_path_factory.mktemp("security"))
    notes: list[str] = []
    result = security.run_pass(ALLOCS, build, notes.append,
                                timeout=0.5)
    assert any("glibc: 6 of 18 caught" in n for n in notes), notes
    return result


def outcome(result: SecurityPass, kind: str, alloc: str = "glibc",
            size: str = "small") -> Outcome:
    found = [r for r in result.rows if (r.kind, r.size, r.allocator) ==
             (kind, size, alloc)]
    assert len(found) == 1
    return found[0].outcome


def test_judge() -> None:
    assert security.judge(-signal.SIGABRT, "") == (Outcome.CAUGHT,
                                                   "SIGABRT")
    assert security.judge(-signal.SIGSEGV, "")[0] is Outcome.CAUGHT
    assert security.judge(0, "survived\n") == (Outcome.NOT_CAUGHT, "")
    # it said it was not caught, then died: not a catch
    assert security.judge(-signal.SIGABRT, "survived\n")[0] is Outcome.ERROR
    assert security.judge(2, "") == (Outcome.ERROR, "exit status 2")
    assert security.judge(0, "")[0] is Outcome.ERROR
    assert security.judge(None, "", timed_out=0.5) == (
        Outcome.HANG, "killed after 0.5 s")


def test_every_kind_size_and_allocator(passed: SecurityPass) -> None:
    assert passed.available and passed.note == ""
    # two allocators run: 6 kinds x 3 sizes each
    assert len(passed.rows) == 2 * len(KINDS) * len(security.SIZES)
    for alloc in ("glibc", "tlmalloc"):
        for size in ("small", "medium", "large"):
            assert outcome(passed, "aborts", alloc, size) is Outcome.CAUGHT
            assert outcome(passed, "faults", alloc, size) is Outcome.CAUGHT
            assert outcome(passed, "survives", alloc, size) \
                is Outcome.NOT_CAUGHT
    assert outcome(passed, "exits") is Outcome.ERROR
    assert outcome(passed, "hangs") is Outcome.HANG
    gone = [r for r in passed.rows if r.kind == "gone"]
    assert gone and all(r.outcome is Outcome.ERROR and
                        r.detail == "never-built is not built" for r in gone)


def test_other_kinds_and_missing_not_measured(passed: SecurityPass) -> None:
    assert passed.skipped == {
        "tlmalloc-lock": security.OTHER_KINDS[Kind.TS],
        "rpmalloc": "allocator missing"}
    assert {r.allocator for r in passed.rows} == {"glibc", "tlmalloc"}


def test_missing_list_is_said(tmp_path: Path) -> None:
    result = security.run_pass(ALLOCS, tmp_path, lambda text: None)
    assert not result.available and result.rows == []
    assert "programs.txt cannot be read" in result.note


def results_with(result: SecurityPass) -> Results:
    return Results(allocators=ALLOCS, workloads=[], security=result)


def test_report_table(passed: SecurityPass) -> None:
    text = report.build_report(results_with(passed))
    section = text.split("## " + report.SECURITY_TITLE)[1].split("\n## ")[0]
    assert "| misuse | size | glibc | tlmalloc |" in section
    assert "| aborts | 8 B | caught | caught |" in section
    assert "| survives | 256 KiB | not caught | not caught |" in section
    assert "| hangs | 4 KiB | HANG | HANG |" in section
    assert "| gone | 8 B | ERROR | ERROR |" in section
    # 6 of 18 caught by both: no best
    assert "| **caught** | | 6 of 18 | 6 of 18 |" in section
    assert "gone 8 B with glibc: never-built is not built" in section
    assert "exits 8 B with tlmalloc: exit status 3" in section
    assert "tlmalloc-lock (a program of its own" in section
    assert "rpmalloc (allocator missing)" in section
    assert "| security | misuse programs caught | 6 of 18 | +0 | 1 of 2 " \
        in text


def test_report_best_in_bold(passed: SecurityPass) -> None:
    rows = [r for r in passed.rows
            if not (r.allocator == "tlmalloc" and r.kind == "aborts")]
    text = report.build_report(results_with(SecurityPass(True, "", rows)))
    assert "| **caught** | | **6 of 18** | 3 of 15 |" in text
    assert "| security | misuse programs caught | 3 of 15 | -3 | 2 of 2 " \
        "| glibc (6) |" in text


def test_not_measured_says_why() -> None:
    text = report.build_report(results_with(
        SecurityPass(False, "--no-security given")))
    assert "## %s\n\nNot measured: --no-security given." % \
        report.SECURITY_TITLE in text


def test_json_round_trip(passed: SecurityPass) -> None:
    data = results_with(passed)
    back = Results.from_json(json.loads(json.dumps(data.to_json())))
    assert back.security == passed
    # a results set from before the pass: "not run"
    raw = data.to_json()
    del raw["security"]
    assert not Results.from_json(raw).security.available


def test_selection() -> None:
    assert security.selected([], False)
    assert not security.selected([], True)
    assert not security.selected(["loop"], False)
    assert security.selected(["loop", "security"], False)
    assert not security.selected([], False, programs=True)
    assert security.selected(["security"], False, programs=True)
    assert cli.parse_args(["--no-security"]).no_security
    assert not cli.parse_args([]).no_security
    assert cli.choose_workloads(["security"]) == ([], False)


def test_harness_run(tmp_path: Path) -> None:
    build = make_build(tmp_path)
    (tmp_path / "nolibs").mkdir()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = cli.main(["--build", str(build), "--lib-dir",
                           str(tmp_path / "nolibs"), "--out",
                           str(tmp_path / "results"), "--only", "security",
                           "--no-plots", "--timeout", "0.5"])
    assert status == 0, err.getvalue()
    run_dir = Path(os.path.realpath(tmp_path / "results" / "latest"))
    with (run_dir / "security.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    # glibc is the one allocator found in the fake tree
    assert {r["allocator"] for r in rows} == {"glibc"}
    assert len(rows) == len(KINDS) * len(security.SIZES)
    assert {"kind": "aborts", "size": "large", "allocator": "glibc",
            "outcome": "caught", "detail": "SIGABRT"} in rows
    text = (run_dir / "report.md").read_text()
    assert "| **caught** | | 6 of 18 |" in text
    assert "[security] glibc: 6 of 18 caught" in err.getvalue()

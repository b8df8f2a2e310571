"""--program: the user's own commands under every allocator.

Parsing of the values, the cells they make, how a run is judged, and a
small run of the whole harness with tiny commands (/bin/true, a shell that
exits 3, a program that is not found, a sleep past --timeout).
"""
import contextlib
import io
import json
import os
import sys

import pytest

from bench.harness import cli, programs
from bench.harness.allocators import Allocator, Kind
from bench.harness.runner import run_measured

from test_end_to_end import make_tree

PY = sys.executable


def test_plain_command_is_split_and_named_after_its_program():
    [prog] = programs.parse_programs(
        ['python3 -c "import json; print(json.dumps([1]))"'])
    assert prog.argv == ["python3", "-c", "import json; print(json.dumps([1]))"]
    assert prog.name == "python3" and not prog.named
    assert prog.command == 'python3 -c "import json; print(json.dumps([1]))"'


def test_name_before_the_command():
    # the shell took away the quotes of --program three='sh -c "exit 3"'
    [prog] = programs.parse_programs(['three=sh -c "exit 3"'])
    assert prog.name == "three" and prog.named
    assert prog.argv == ["sh", "-c", "exit 3"]
    assert prog.executable and not prog.error
    assert prog.title == "three"


def test_automatic_names_stay_apart():
    progs = programs.parse_programs(["sh -c 'exit 0'", "sh -c 'exit 1'",
                                     "loop", "sh=true"], reserved=["loop"])
    assert [p.name for p in progs] == ["sh-2", "sh-3", "loop-2", "sh"]


def test_bad_values_are_refused():
    for spec, why in (("", "no command"), ("x=", "no command"),
                      ("sh -c 'exit", "cannot split"),
                      ("loop=true", "taken by a workload")):
        with pytest.raises(ValueError, match=why):
            programs.parse_programs([spec], reserved=["loop"])
    with pytest.raises(ValueError, match="given twice"):
        programs.parse_programs(["a=true", "a=false"])


def test_not_found_is_kept_with_its_reason(tmp_path):
    missing, relative, plain = programs.parse_programs(
        ["nosuchprog-tlm", "./here -x", "./data"], cwd=str(tmp_path))
    assert missing.error == "nosuchprog-tlm: not found on PATH"
    assert relative.error == "./here: no such file"
    (tmp_path / "here").write_text("#!/bin/sh\n")
    os.chmod(str(tmp_path / "here"), 0o755)
    (tmp_path / "data").write_text("")
    relative, plain = programs.parse_programs(["./here -x", "./data"],
                                              cwd=str(tmp_path))
    assert relative.executable == str(tmp_path / "here") and not relative.error
    assert plain.error == "./data: not executable"


def test_option_is_repeatable_and_leaves_the_suite_out():
    args = cli.parse_args(["--program", "true", "--program", "n=false"])
    assert args.program == ["true", "n=false"]
    assert cli.choose_workloads([], False, programs=True) == ([], False)
    chosen, fastpath = cli.choose_workloads(["loop"], False, programs=True)
    assert [w.name for w in chosen] == ["loop"] and not fastpath
    assert cli.choose_workloads(["fastpath"], False, programs=True) == \
        ([], True)


def test_which_allocators_apply():
    [prog] = programs.parse_programs(["true"])
    assert programs.command_for(prog, Allocator("glibc", Kind.SYSTEM)) == \
        (["true"], {})
    assert programs.command_for(
        prog, Allocator("x", Kind.PRELOAD, "/l/x.so")) == \
        (["true"], {"LD_PRELOAD": "/l/x.so"})
    for kind in (Kind.TS, Kind.MUSL, Kind.LINKED):
        with pytest.raises(programs.NotApplicable, match="not applicable"):
            programs.command_for(prog, Allocator(kind.value, kind))
    with pytest.raises(programs.Missing, match="allocator missing: gone"):
        programs.command_for(prog, Allocator("y", Kind.PRELOAD, "", False,
                                             "gone"))


def test_success_is_exit_status_zero():
    ok, reason, _ = programs.judge(run_measured([PY, "-c", "print(1)"]))
    assert ok and reason == ""
    ok, reason, _ = programs.judge(run_measured(["sh", "-c", "exit 1"]))
    assert not ok and reason == "exit status 1"
    ok, reason, _ = programs.judge(run_measured(["sh", "-c", "kill -9 $$"]))
    assert not ok and reason == "killed by signal SIGKILL"


def test_stderr_tail():
    assert programs.stderr_tail("a\n\nb\nc\nd\ne\n") == "b / c / d / e"
    assert programs.stderr_tail("x" * 500).startswith("…")


def harness(tmp_path, *extra):
    argv = ["--build", str(tmp_path / "build"),
            "--lib-dir", str(tmp_path / "nolibs"),
            "--out", str(tmp_path / "results"), "--reps", "2",
            "--no-plots"] + list(extra)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, err.getvalue()


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("programs")
    have_lib = make_tree(tmp_path)
    code, err = harness(
        tmp_path, "--timeout", "0.5",
        "--program", "/bin/true",
        "--program", "three=sh -c 'echo something broke >&2; exit 3'",
        "--program", "nosuchprog-tlm --flag",
        "--program", "nap=sleep 5")
    run_dir = os.path.realpath(str(tmp_path / "results" / "latest"))
    data = json.load(open(os.path.join(run_dir, "runs.json")))
    text = open(os.path.join(run_dir, "report.md")).read()
    return code, err, data, text, have_lib


def section(text, title):
    return text.split("### " + title + "\n", 1)[1].split("\n### ", 1)[0]


def test_run_goes_on_and_keeps_every_result(ran):
    code, err, data, _, have_lib = ran
    assert code == 0
    assert "error: --program 'nosuchprog-tlm --flag': nosuchprog-tlm: not " \
        "found on PATH; its cells are marked FAILED" in err
    # the programs alone: no built-in workload, no fast-path pass
    assert {r["workload"] for r in data["runs"]} == {"true", "three",
                                                     "nosuchprog-tlm", "nap"}
    assert not data["fastpath"]["available"]
    allocs = 3 if have_lib else 1  # glibc (+tlmalloc, tlmalloc-kept)
    by = lambda name: [r for r in data["runs"] if r["workload"] == name]
    assert len(by("true")) == 2 * allocs
    assert all(r["ok"] and r["wall"] > 0 and r["maxrss_kb"] > 0
               for r in by("true"))
    assert all(r["reason"] == "exit status 3" and
               "something broke" in r["stderr_tail"] for r in by("three"))
    assert len(by("nosuchprog-tlm")) == allocs
    assert all(r["reason"].startswith("not started")
               for r in by("nosuchprog-tlm"))
    assert all(r["reason"].startswith("timeout") and r["wall"] < 3
               for r in by("nap"))


def test_report_has_a_section_per_program(ran):
    _, _, _, text, have_lib = ran
    assert "## Programs" in text and "## Workloads" not in text
    true = section(text, "`/bin/true`")
    row = next(line for line in true.splitlines()
               if line.startswith("| glibc |"))
    assert "FAILED" not in row and len(row.split("|")) == 11
    assert "(not applicable: the ts_ API" in true        # tlmalloc-lock
    assert "musl (not applicable" in true
    assert " --program /bin/true --reps 2 --timeout 0.5`" in true
    three = section(text, "three: `sh -c 'echo something broke >&2; exit 3'`")
    assert "| glibc | FAILED: exit status 3; stderr: `something broke` |" \
        in three
    assert "Reproduce: `" in three and " --program 'three=sh -c " in three
    missing = section(text, "`nosuchprog-tlm --flag`")
    assert "**Not run: nosuchprog-tlm: not found on PATH**" in missing
    assert "| glibc | FAILED: not started: nosuchprog-tlm: not found on " \
        "PATH |" in missing
    assert "| glibc | FAILED: timeout after" in section(text,
                                                        "nap: `sleep 5`")
    if have_lib:
        assert "| true | default |" in text.split("## Fast path")[0]
    assert "not selected (--program without --only fastpath)" in text


def test_report_only_redraws_the_programs(ran, tmp_path):
    _, _, data, text, _ = ran
    with open(str(tmp_path / "runs.json"), "w") as handle:
        json.dump(data, handle)
    args = cli.parse_args(["--report-only", str(tmp_path), "--no-plots"])
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.report_only(args) == 0
    again = open(str(tmp_path / "report.md")).read()
    programs_part = lambda report: report.split("## Programs")[1].split(
        "## System calls")[0]
    assert programs_part(again) == programs_part(text)


def test_only_adds_workloads_to_the_programs(tmp_path):
    make_tree(tmp_path)
    code, _ = harness(tmp_path, "--only", "loop", "--alloc", "glibc",
                      "--no-strace", "--program", "ok=true")
    assert code == 0
    run_dir = os.path.realpath(str(tmp_path / "results" / "latest"))
    data = json.load(open(os.path.join(run_dir, "runs.json")))
    assert {r["workload"] for r in data["runs"]} == {"loop", "ok"}
    assert all(r["ok"] for r in data["runs"])
    text = open(os.path.join(run_dir, "report.md")).read()
    assert "## Workloads" in text and "### ok: `true`" in text


def test_nothing_to_run_is_refused(tmp_path):
    make_tree(tmp_path)
    code, err = harness(tmp_path, "--program", "nosuchprog-tlm")
    assert code == 2
    assert "nosuchprog-tlm: not found on PATH" in err
    assert "nothing to run" in err
    assert not os.path.exists(str(tmp_path / "results"))


def test_plots_for_programs(ran, tmp_path):
    pytest.importorskip("matplotlib")
    _, _, data, _, _ = ran
    with open(str(tmp_path / "runs.json"), "w") as handle:
        json.dump(data, handle)
    args = cli.parse_args(["--report-only", str(tmp_path)])
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.report_only(args) == 0
    assert os.path.getsize(str(tmp_path / "plots" / "true.png")) > 1000
    # a program none of whose runs succeeded has its table, no plot
    assert not os.path.exists(str(tmp_path / "plots" / "three.png"))
    assert "](plots/true.png)" in open(str(tmp_path / "report.md")).read()

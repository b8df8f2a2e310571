"""The fast-path pass: parsing bench/fastpath.sh, running it, its switch,
its CSV, and its report section.

The pass is run against a fake script (a shell script printing a table,
one allocator failing, one hanging) so no valgrind is needed; one test
runs the real script on glibc alone, with short runs, when valgrind and
the fastpath program are there.
"""
import os
import shutil
import subprocess

import pytest

from pathlib import Path

from bench.harness import cli, fastpath, results
from bench.harness.allocators import Allocator, Kind, TsApi
from bench.harness.records import FastpathPass, FastpathRow, Mix, Results
from bench.harness.report import build_report

from test_report import synthetic, synthetic_json

OUTPUT = """\
instructions per malloc/free pair (callgrind, 100000 vs 200000 pairs)
allocator         fixed        mix
glibc             140.0      143.0
tlmalloc           36.1       39.4
broken           failed     failed
nostart         refused    refused
gone            missing    missing
odd                 5.0          ?
(loop)             11.0       14.0
"""


def by_mix(rows):
    return {r.mix.value: r for r in rows}


def test_parse_table():
    table = fastpath.parse_table(OUTPUT)
    assert list(table) == ["glibc", "tlmalloc", "broken", "nostart", "gone",
                           "odd", "(loop)"]
    tl = by_mix(table["tlmalloc"])
    assert tl["fixed"].instructions_per_pair == 36.1
    assert tl["mix"].instructions_per_pair == 39.4
    assert tl["fixed"].ok and tl["fixed"].measured
    assert by_mix(table["(loop)"])["mix"].instructions_per_pair == 14.0
    assert fastpath.parse_pairs(OUTPUT) == (100000, 200000)


def test_parse_failure_missing_and_unknown():
    table = fastpath.parse_table(OUTPUT)
    broken = by_mix(table["broken"])["fixed"]
    assert not broken.ok and broken.measured
    assert broken.instructions_per_pair is None
    assert "check ok" in broken.reason
    nostart = by_mix(table["nostart"])["fixed"]
    assert not nostart.ok and nostart.measured
    assert "before it printed anything" in nostart.reason
    gone = by_mix(table["gone"])["mix"]
    assert not gone.ok and not gone.measured
    assert gone.reason == "library not found"
    odd = by_mix(table["odd"])
    assert odd["fixed"].ok and not odd["mix"].ok
    assert "no instruction count" in odd["mix"].reason


def test_parse_ignores_title_header_and_names_with_spaces():
    assert fastpath.parse_row("allocator   fixed   mix") is None
    assert fastpath.parse_row(OUTPUT.splitlines()[0]) is None
    assert fastpath.parse_row("") is None
    name, rows = fastpath.parse_row("my alloc   1.5   2.5")
    assert name == "my alloc"
    assert [r.instructions_per_pair for r in rows] == [1.5, 2.5]


def test_switch_and_only():
    assert fastpath.selected([], False)
    assert fastpath.selected(["loop", "fastpath"], False)
    assert not fastpath.selected(["loop"], False)
    assert not fastpath.selected([], True)
    assert not fastpath.selected(["fastpath"], True)
    chosen, wanted = cli.choose_workloads(["fastpath"])
    assert chosen == [] and wanted
    chosen, wanted = cli.choose_workloads(["loop", "fastpath"])
    assert [w.name for w in chosen] == ["loop"] and wanted
    chosen, wanted = cli.choose_workloads([])
    assert len(chosen) > 5 and wanted
    chosen, wanted = cli.choose_workloads([], no_fastpath=True)
    assert len(chosen) > 5 and not wanted
    assert cli.parse_args(["--no-fastpath"]).no_fastpath
    assert not cli.parse_args([]).no_fastpath


def allocators(tmp_path):
    lib = tmp_path / "lib.so"
    lib.write_text("")
    return [Allocator("tlmalloc", Kind.PRELOAD, str(lib)),
            Allocator("tlmalloc-lock", Kind.TS, ts_api=TsApi.LOCK),
            Allocator("glibc", Kind.SYSTEM),
            Allocator("jemalloc", Kind.PRELOAD, "", False, "not found"),
            Allocator("musl", Kind.MUSL),
            Allocator("broken", Kind.PRELOAD, str(lib)),
            Allocator("hangs", Kind.PRELOAD, str(lib)),
            Allocator("after", Kind.PRELOAD, str(lib))]


def test_split_allocators(tmp_path):
    measurable, skipped = fastpath.split_allocators(allocators(tmp_path))
    assert [n for n, _ in measurable] == ["tlmalloc", "glibc", "broken",
                                          "hangs", "after"]
    assert dict(measurable)["glibc"] == ""
    reasons = {r.allocator: r.reason for r in skipped}
    assert set(reasons) == {"tlmalloc-lock", "jemalloc", "musl"}
    assert reasons["jemalloc"] == "allocator missing"
    assert "ts_ API" in reasons["tlmalloc-lock"]
    assert all(not r.measured for r in skipped)


def test_missing_valgrind(tmp_path, monkeypatch):
    monkeypatch.setattr(fastpath.shutil, "which", lambda name: None)
    result = fastpath.run_pass(allocators(tmp_path), tmp_path, 5,
                               lambda text: None)
    assert not result.available and result.rows == []
    assert "valgrind is not installed" in result.note
    data = synthetic()
    data.fastpath = result
    text = build_report(data)
    assert ("## Fast path: instructions per malloc+free pair (callgrind)\n\n"
            "Not measured: valgrind is not installed") in text
    assert "Fast path (one thread, callgrind): not measured: valgrind" in text


def test_missing_binary(tmp_path, monkeypatch):
    monkeypatch.setattr(fastpath.shutil, "which", lambda name: "/bin/" + name)
    result = fastpath.run_pass(allocators(tmp_path), tmp_path, 5,
                               lambda text: None)
    assert not result.available
    assert result.note == "%s is not built" % (tmp_path / "fastpath")


# prints like bench/fastpath.sh: "broken" fails, "hangs" never answers
FAKE_SCRIPT = """#!/bin/sh
echo "instructions per malloc/free pair (callgrind, 10 vs 20 pairs)"
printf '%-12s %10s %10s\\n' allocator fixed mix
echo "glibc 140.0 143.0"
while getopts b:s:l: opt; do :; done
shift $((OPTIND - 1))
for arg in "$@"; do
    name=${arg%%=*}
    case $name in
    broken) echo "broken failed failed" ;;
    hangs) sleep 60 ;;
    *) echo "$name 36.1 39.4" ;;
    esac
done
echo "(loop) 11.0 14.0"
"""


def fake_pass(tmp_path, monkeypatch, allocs):
    script = tmp_path / "fastpath.sh"
    script.write_text(FAKE_SCRIPT)
    script.chmod(0o755)
    binary = tmp_path / "fastpath"
    binary.write_text("")
    binary.chmod(0o755)
    monkeypatch.setattr(fastpath, "SCRIPT", script)
    monkeypatch.setattr(fastpath.shutil, "which", lambda name: "/bin/" + name)
    notes = []
    result = fastpath.run_pass(allocs, tmp_path, 3, notes.append)
    return result, notes


def test_pass_with_a_failure_and_a_hang(tmp_path, monkeypatch):
    result, notes = fake_pass(tmp_path, monkeypatch, allocators(tmp_path))
    assert result.available and result.pairs == (10, 20)
    rows = {(r.allocator, r.mix.value): r for r in result.rows}
    assert rows[("tlmalloc", "fixed")].instructions_per_pair == 36.1
    assert rows[("glibc", "mix")].instructions_per_pair == 143.0
    assert rows[("(loop)", "fixed")].instructions_per_pair == 11.0
    broken = rows[("broken", "mix")]
    assert broken.measured and not broken.ok
    hangs = rows[("hangs", "fixed")]
    assert hangs.measured and not hangs.ok
    assert hangs.reason == "timed out after 3 s"
    # the script ran again for the allocator after the one that hung
    assert rows[("after", "mix")].instructions_per_pair == 39.4
    assert not rows[("musl", "fixed")].measured
    assert any(n.startswith("[fastpath 1/") and "glibc" in n for n in notes)
    assert "[fastpath] hangs: FAILED (timed out after 3 s)" in notes
    assert "broken=" in result.command


def test_pass_keeps_glibc_only_when_chosen(tmp_path, monkeypatch):
    lib = tmp_path / "lib.so"
    lib.write_text("")
    result, _ = fake_pass(tmp_path, monkeypatch,
                          [Allocator("tlmalloc", Kind.PRELOAD, str(lib))])
    assert {r.allocator for r in result.rows} == {"tlmalloc", "(loop)"}


def fastpath_rows():
    rows = []
    for name, fixed, mix in (("tlmalloc", 36.1, 39.4), ("glibc", 140.0, 143.0),
                             ("tcmalloc", 78.0, 81.0), ("(loop)", 11.0, 14.0)):
        rows += [FastpathRow(name, Mix.FIXED, fixed),
                 FastpathRow(name, Mix.MIX, mix)]
    rows += fastpath.both_mixes("tlmalloc-lock", ok=False, measured=False,
                                reason=fastpath.OTHER_KINDS[Kind.TS])
    rows += fastpath.both_mixes("mimalloc", ok=False, measured=False,
                                reason="allocator missing")
    rows += [FastpathRow("musl", Mix.FIXED, ok=False, measured=False,
                         reason=fastpath.OTHER_KINDS[Kind.MUSL]),
             FastpathRow("musl", Mix.MIX, ok=False, measured=False,
                         reason=fastpath.OTHER_KINDS[Kind.MUSL])]
    return rows


def with_fastpath(rows):
    data = synthetic()
    data.fastpath = FastpathPass(
        True, "", rows, pairs=(100000, 200000),
        command="bench/fastpath.sh -b build/bench/fastpath "
                "tlmalloc=build/src/libtlmalloc.so")
    return data


def section(text):
    return text.split("## Fast path:", 1)[1].split("\n## ", 1)[0]


def row_of(part, name):
    return next(line for line in part.splitlines()
                if line.startswith("| %s |" % name))


def test_report_section():
    text = build_report(with_fastpath(fastpath_rows()))
    # near the top: right after the summary, before the classic observations
    assert text.index("## Where tlmalloc stands") < text.index(
        "## Fast path:") < text.index("## The classic observations")
    part = section(text)
    assert "| allocator | 64 bytes | size mix (8..512 B) |" in part
    assert row_of(part, "tlmalloc") == "| tlmalloc | **36.1** | **39.4** |"
    assert row_of(part, "glibc") == "| glibc | 140.0 | 143.0 |"
    lines = [l for l in part.splitlines() if l.startswith("| ")]
    assert lines[-1] == "| (the loop itself) | 11.0 | 14.0 |"   # not bold
    assert row_of(part, "tlmalloc-lock") == \
        "| tlmalloc-lock | not measured | not measured |"
    assert row_of(part, "musl") == "| musl | not measured | not measured |"
    assert "Not measured: tlmalloc-lock (a program of its own" in part
    assert "mimalloc (allocator missing)" in part
    assert "Reproduce: `bench/fastpath.sh -b build/bench/fastpath " \
        "tlmalloc=build/src/libtlmalloc.so`" in part
    assert "100000 and 200000 pairs" in part


def test_report_standing_and_budget():
    text = build_report(with_fastpath(fastpath_rows()))
    standing = text.split("## Where tlmalloc stands", 1)[1].split("\n## ")[0]
    assert ("| fastpath | 64 bytes | 36.1 instr. | 0.26x | 1 of 3 | "
            "tlmalloc (36.1) | – |") in standing
    assert "tlmalloc 36.1 / 39.4 instructions per malloc+free pair" in standing
    assert "the budget is 40: **within**." in standing
    rows = fastpath_rows()
    rows[1].instructions_per_pair = 41.0
    text = build_report(with_fastpath(rows))
    assert "the budget is 40: **over**." in text
    # the fast variant gets a sentence of its own
    assert "fast variant" not in text
    rows += [FastpathRow("tlmalloc-fast", Mix.FIXED, 36.1),
             FastpathRow("tlmalloc-fast", Mix.MIX, 39.4)]
    text = build_report(with_fastpath(rows))
    assert "tlmalloc 36.1 / 41.0 instructions" in text
    assert ("The fast variant (no checks of interior and double frees): "
            "tlmalloc-fast 36.1 / 39.4 instructions per malloc+free pair "
            "(64 bytes / size mix), loop included; the budget is 40: "
            "**within**.") in text


def test_report_failed_row():
    rows = fastpath_rows()
    rows[4] = FastpathRow("tcmalloc", Mix.FIXED, ok=False,
                          reason="timed out after 120 s")
    text = build_report(with_fastpath(rows))
    assert row_of(section(text), "tcmalloc") == "| tcmalloc | FAILED | 81.0 |"
    failed = text.split("## Failed runs", 1)[1].split("\n## ", 1)[0]
    assert "| fastpath | 64 bytes | tcmalloc | 1 | timed out after 120 s |" \
        in failed
    rows[0] = FastpathRow("tlmalloc", Mix.FIXED, ok=False, reason="crashed")
    text = build_report(with_fastpath(rows))
    assert "| fastpath | 64 bytes | FAILED |" in text
    assert "tlmalloc FAILED (see Failed runs)" in text


def test_report_switched_off():
    data = synthetic()
    data.fastpath = FastpathPass(False, "--no-fastpath given")
    text = build_report(data)
    assert "Not measured: --no-fastpath given." in section(text)
    # an old results set without the pass
    old = Results.from_json(synthetic_json())
    assert "Not measured: not run." in section(build_report(old))


def test_csv_round_trip_and_report_only(tmp_path):
    rows = fastpath_rows()
    path = tmp_path / "fastpath.csv"
    results.write_fastpath_csv(path, rows)
    assert results.read_fastpath_csv(path) == rows
    data = with_fastpath(rows)
    results.write_json(tmp_path / "runs.json", data)
    # the CSV is what --report-only draws from: change a figure there
    rows[0].instructions_per_pair = 30.5
    results.write_fastpath_csv(path, rows)
    assert cli.main(["--report-only", str(tmp_path), "--no-plots"]) == 0
    text = open(str(tmp_path / "report.md")).read()
    assert row_of(section(text), "tlmalloc") == \
        "| tlmalloc | **30.5** | **39.4** |"
    assert results.read_fastpath_csv(path) == rows


def real_binary():
    build = os.environ.get("TLMALLOC_BUILD_DIR") or fastpath.REPO / "build"
    return Path(build, "bench", "fastpath")


@pytest.mark.skipif(not shutil.which("valgrind"), reason="no valgrind")
def test_real_pass_on_glibc():
    binary = real_binary()
    if not os.access(binary, os.X_OK):
        pytest.skip("%s is not built" % binary)
    result = fastpath.run_pass([Allocator("glibc", Kind.SYSTEM)],
                               binary.parent, 120,
                               lambda text: None, short=2000, long=4000)
    assert result.available, result.note
    rows = {(r.allocator, r.mix.value): r for r in result.rows}
    assert set(rows) == {(a, m) for a in ("glibc", "(loop)")
                         for m in ("fixed", "mix")}
    assert all(r.ok for r in rows.values()), rows
    for mix in ("fixed", "mix"):
        loop = rows[("(loop)", mix)].instructions_per_pair
        assert 0 < loop < rows[("glibc", mix)].instructions_per_pair
    assert result.pairs == (2000, 4000)


# A library that stops the program in its constructor, with a message on
# stderr; built with -DSTARTED it prints a line on stdout first, as a
# program that started and then failed would.
REFUSING_LIB = r"""
#include <unistd.h>
__attribute__((constructor)) static void refuse(void)
{
	static const char why[] = "Failed to initialise this allocator.\n";
#ifdef STARTED
	(void)!write(1, "started\n", 8);
#endif
	(void)!write(2, why, sizeof(why) - 1);
	_exit(1);
}
"""


@pytest.mark.skipif(not shutil.which("valgrind") or not shutil.which("cc"),
                    reason="no valgrind or no C compiler")
def test_real_script_tells_a_refusal(tmp_path):
    """An allocator that stops the program before main under valgrind is
    "refused", with its message on the script's stderr; a plain failure
    stays "failed"."""
    binary = real_binary()
    if not os.access(binary, os.X_OK):
        pytest.skip("%s is not built" % binary)
    src = tmp_path / "refuse.c"
    src.write_text(REFUSING_LIB)
    lib = tmp_path / "librefuse.so"
    started = tmp_path / "libstarted.so"
    for out, flags in ((lib, []), (started, ["-DSTARTED"])):
        subprocess.run(["cc", "-shared", "-fPIC", *flags, "-o", str(out),
                        str(src)], check=True)
    run = subprocess.run(
        ["sh", str(fastpath.SCRIPT), "-b", str(binary), "-s", "200",
         "-l", "400", "refusing=%s" % lib, "started=%s" % started,
         "absent=%s" % (tmp_path / "none.so")],
        capture_output=True, text=True, timeout=300)
    table = fastpath.parse_table(run.stdout)
    assert "refusing" in table, (run.stdout, run.stderr)
    for refused in table["refusing"]:
        assert not refused.ok and refused.measured
        assert "before it printed anything" in refused.reason
    assert "did not start: Failed to initialise this allocator." in \
        run.stderr
    for failed in table["started"]:
        assert not failed.ok and "check ok" in failed.reason
    assert all(row.ok for row in table["glibc"])
    assert all(row.reason == "library not found" for row in table["absent"])

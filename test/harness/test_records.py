"""The results set read from and written to runs.json: nothing is lost
either way, and what an older set lacks gets the declared defaults."""
import json

from bench.harness import results as results_mod
from bench.harness.records import Mix, Results
from bench.harness.report import build_report

from test_report import synthetic_json

PROGRAM = {"name": "three", "title": "three", "kind": "program",
           "summary": "", "points": ["default"], "metric_order": [],
           "command": "sh -c 'exit 3'", "argv": ["sh", "-c", "exit 3"],
           "named": True, "executable": "/bin/sh", "error": "",
           "cwd": "/tmp", "reproduce": "python3 -m bench.harness "
           "--program 'three=sh -c '\"'\"'exit 3'\"'\"''"}


def complete_json():
    """A results set with every kind of record, as runs.json holds it."""
    data = synthetic_json()
    data["workloads"].append(PROGRAM)
    data["runs"].append({
        "workload": "three", "point": "default", "allocator": "glibc",
        "rep": 0, "ok": False, "reason": "exit status 3", "wall": 0.01,
        "user": 0.0, "sys": 0.0, "maxrss_kb": 900, "exit_code": 3,
        "signal": 0, "metrics": {}, "units": {},
        "command": ["sh", "-c", "exit 3"], "stdout_tail": "",
        "stderr_tail": "broken"})
    data["fastpath"] = {
        "available": True, "note": "", "command": "bench/fastpath.sh -b x",
        "pairs": [10, 20], "wall": 1.5,
        "rows": [{"allocator": "glibc", "mix": "fixed",
                  "instructions_per_pair": 140.0, "ok": True,
                  "measured": True, "reason": ""},
                 {"allocator": "glibc", "mix": "mix",
                  "instructions_per_pair": None, "ok": False,
                  "measured": True, "reason": "crashed"}]}
    return json.loads(json.dumps(data))


def test_what_is_read_is_written_back():
    results = Results.from_json(complete_json())
    assert results.workloads[-1].program.executable == "/bin/sh"
    assert results.fastpath.rows[1].mix is Mix.MIX
    assert results.strace.rows[0].calls.futex_calls == 53653
    assert results.strace.rows[2].calls is None        # the failed run
    written = json.loads(json.dumps(results.to_json()))
    assert Results.from_json(written) == results
    # the shape of runs.json: a program's entry and a failed run in full,
    # the tails only for a failed run, the counts flat in a strace row
    assert written["workloads"][-1] == PROGRAM
    assert written["runs"][-1]["stderr_tail"] == "broken"
    assert "stderr_tail" not in written["runs"][0]
    assert written["strace"]["rows"][0]["futex_calls"] == 53653
    assert "futex_calls" not in written["strace"]["rows"][2]
    assert written["fastpath"]["pairs"] == [10, 20]
    assert written["fastpath"]["rows"][1]["mix"] == "mix"
    assert written["allocators"][0]["kind"] == "preload"


def test_an_older_set_gets_the_declared_defaults():
    data = synthetic_json()
    for key in ("strace", "plots", "mode", "duration_s", "missing"):
        del data[key]
    results = Results.from_json(data)
    assert results.strace.note == "strace not run"
    assert results.fastpath.note == "not run"
    assert results.plots.available and results.plots.files == {}
    assert results.mode is None and results.duration_s is None
    assert results.missing == []


def test_runs_json_rebuilds_the_same_report(tmp_path):
    """--report-only reads runs.json back: the report it builds is the
    run's own, word for word, with the machine's lines in their order."""
    data = complete_json()
    data["machine"] = {"zeta": "last key first", "cpu": "Test CPU",
                       "memory": "1 GiB", "alpha": "first key last"}
    results = Results.from_json(data)
    results_mod.write_json(tmp_path / "runs.json", results)
    back = Results.from_json(results_mod.load_json(tmp_path / "runs.json"))
    assert list(back.machine) == ["zeta", "cpu", "memory", "alpha"]
    assert build_report(back) == build_report(results)


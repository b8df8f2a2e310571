"""One measured run: exit status, signals, timeouts, rusage; pass/fail."""
import sys

from bench.harness.runner import judge, run_measured

PY = sys.executable


def test_exit_status_and_output():
    m = run_measured([PY, "-c", "print('metric x 1'); print('check ok')"])
    assert m.exit_code == 0 and m.signal == 0 and not m.timed_out
    assert "check ok" in m.stdout
    ok, reason, parsed = judge(m)
    assert ok and reason == "" and parsed.metrics == {"x": 1.0}


def test_nonzero_exit_fails():
    m = run_measured([PY, "-c", "print('check ok'); raise SystemExit(3)"])
    ok, reason, _ = judge(m)
    assert m.exit_code == 3 and not ok and reason == "exit status 3"


def test_signal_fails():
    m = run_measured([PY, "-c", "import os, signal; print('check ok', "
                      "flush=True); os.kill(os.getpid(), signal.SIGSEGV)"])
    ok, reason, _ = judge(m)
    assert m.signal == 11 and not ok and "SIGSEGV" in reason


def test_missing_check_fails():
    ok, reason, _ = judge(run_measured([PY, "-c", "print('metric x 1')"]))
    assert not ok and "check ok" in reason


def test_check_failed_reason_kept():
    m = run_measured([PY, "-c", "print('check FAILED: lost 3 blocks'); "
                      "raise SystemExit(1)"])
    ok, reason, _ = judge(m)
    assert not ok and reason == "check FAILED: lost 3 blocks"


def test_timeout_kills_and_fails():
    m = run_measured([PY, "-c", "import time; time.sleep(30)"], timeout=0.5)
    ok, reason, _ = judge(m)
    assert m.timed_out and not ok and reason.startswith("timeout")
    assert m.wall < 10


def test_rusage_counts_memory_and_cpu():
    code = ("b = bytearray(64 << 20)\n"
            "for i in range(0, len(b), 4096): b[i] = 1\n"
            "x = sum(range(3000000))\nprint('check ok')")
    m = run_measured([PY, "-c", code])
    assert m.maxrss_kb >= 60 * 1024
    assert m.user > 0 and m.wall >= m.user * 0.5


def test_environment_reaches_the_program():
    m = run_measured([PY, "-c", "import os; print(os.environ['HX'])"],
                     {"HX": "seen"})
    assert m.stdout.strip() == "seen"


def test_peak_rss_is_the_program_not_the_harness():
    # a forked Python would carry its own RSS into the program's ru_maxrss
    import resource
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    m = run_measured(["/bin/true"])
    if m.direct:
        return          # no subreaper here: the floor is documented
    assert m.exit_code == 0
    assert m.maxrss_kb < own / 2


def test_preload_environment_only_for_the_program():
    m = run_measured(["/bin/sh", "-c", "echo $LD_PRELOAD"],
                     {"LD_PRELOAD": ""})
    assert m.exit_code == 0 and m.stdout == "\n"

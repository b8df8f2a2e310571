"""Parsing the workloads' output and strace -c tables."""
from bench.harness.parse import (parse_strace, parse_workload_output,
                                 strace_summary)

WORKLOAD_OK = """\
loop: 32 threads x 1000000 iterations
metric seconds 0.8123 s
metric ops_per_sec 3.94e7 ops/s
metric bogus notanumber
metric nan_value nan
metric
check ok
"""

STRACE_GLIBC = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 94.96    2.347314          44     53653     14030 futex
  2.10    0.051870           9      5763           mmap
  1.00    0.024000           8      3000           munmap
  0.50    0.012000           4      3000           madvise
  0.00    0.000000           0         3           brk
  0.00    0.000000           0         1         1 access
  0.00    0.000000           0        33           rt_sigprocmask
------ ----------- ----------- --------- --------- ----------------
100.00    2.435184          37     65453     14031 total
"""

# strace with two personalities and no futex errors column filled
STRACE_TWO_TABLES = """\
System call usage summary for 64 bit mode:
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 29.12    0.001344          38        35           mmap
 14.38    0.000664         132         5           futex
  0.43    0.000020           4         5           brk
------ ----------- ----------- --------- --------- ----------------
100.00    0.004616          27        45           total
System call usage summary for 32 bit mode:
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
100.00    0.000010          10         2         1 futex
------ ----------- ----------- --------- --------- ----------------
100.00    0.000010          10         2         1 total
"""


def test_metrics_and_units_parsed():
    out = parse_workload_output(WORKLOAD_OK)
    assert out.metrics == {"seconds": 0.8123, "ops_per_sec": 3.94e7}
    assert out.units == {"seconds": "s", "ops_per_sec": "ops/s"}
    assert out.check_ok
    assert out.check_failure == ""


def test_metric_without_unit():
    out = parse_workload_output("metric rss_idle_kb 2048\ncheck ok\n")
    assert out.metrics["rss_idle_kb"] == 2048
    assert "rss_idle_kb" not in out.units


def test_check_failed_reason():
    out = parse_workload_output("metric seconds 1 s\n"
                                "check FAILED: block 17 overwritten\n")
    assert not out.check_ok
    assert out.check_failure == "block 17 overwritten"


def test_missing_check_line_is_not_ok():
    out = parse_workload_output("metric seconds 1 s\n")
    assert not out.check_ok
    assert out.check_failure == ""


def test_failed_after_ok_wins():
    out = parse_workload_output("check ok\ncheck FAILED: late\n")
    assert not out.check_ok and out.check_failure == "late"


def test_strace_counts_with_errors():
    counts = parse_strace(STRACE_GLIBC)
    assert counts["futex"] == (53653, 14030)
    assert counts["mmap"] == (5763, 0)
    assert counts["access"] == (1, 1)
    assert counts["total"] == (65453, 14031)


def test_strace_summary_columns():
    summary = strace_summary(parse_strace(STRACE_GLIBC))
    assert summary.futex_calls == 53653
    assert summary.futex_errors == 14030
    assert summary.mmap == 5763
    assert summary.munmap == 3000
    assert summary.madvise == 3000
    assert summary.brk == 3
    assert summary.mremap == 0
    assert summary.total_calls == 65453


def test_strace_tables_are_summed():
    counts = parse_strace(STRACE_TWO_TABLES)
    assert counts["futex"] == (7, 1)
    assert counts["mmap"] == (35, 0)
    assert counts["total"] == (47, 1)


def test_strace_empty_output():
    summary = strace_summary(parse_strace(""))
    assert summary.futex_calls == 0 and summary.total_calls == 0

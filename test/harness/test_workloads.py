"""The workloads table against bench/: every workload's programs are built
by bench/CMakeLists.txt (the C ones also as static -musl programs), and
every workload says what it is."""
import os
import re

from bench.harness.workloads import WORKLOADS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")


def cmake_list(text, name):
    found = re.search(r"set\(%s\s+([^)]*)\)" % name, text)
    assert found, name
    return found.group(1).split()


def test_every_program_is_built():
    text = open(os.path.join(BENCH, "CMakeLists.txt")).read()
    c_workloads = cmake_list(text, "BENCH_C_WORKLOADS")
    programs = set(c_workloads)
    programs |= set(re.findall(r"bench_program\((\w+)", text))
    for w in WORKLOADS:
        for point in w.quick_points + w.full_points:
            assert w.point_binary(point) in programs, (w.name, point)
    for name in c_workloads:
        source = re.search(r"set\(BENCH_SOURCE_%s\s+(\S+)\)" % name, text)
        source = source.group(1) if source else name + ".c"
        assert os.path.isfile(os.path.join(BENCH, "workloads", source)), name


def test_every_workload_is_described():
    names = [w.name for w in WORKLOADS]
    assert len(names) == len(set(names))
    for w in WORKLOADS:
        assert w.title and w.summary, w.name
        assert w.quick_points and w.full_points, w.name
        labels = [p.label for p in w.full_points]
        assert len(labels) == len(set(labels)), w.name


def test_field_patterns_name_their_benchmark():
    follows = {"larson": "Larson", "mstress": "mimalloc",
               "batches": "bench-malloc-simple", "rptest": "rpmalloc",
               "mlarge": "malloc-large", "mleak": "mimalloc",
               "xmalloc": "xmalloc-test", "mthread": "bench-malloc-thread"}
    by = {w.name: w for w in WORKLOADS}
    for name, benchmark in follows.items():
        assert benchmark in by[name].summary, name
    assert [p.label for p in by["larson"].full_points] == ["plain", "sized"]
    assert [p.args for p in by["batches"].full_points] == [
        ("--size", "16"), ("--size", "32"), ("--size", "64")]
    assert [p.args for p in by["mthread"].full_points] == [
        ("--threads", "1"), ("--threads", "8")]

"""python_work.py - real work for python3 under LD_PRELOAD of tlmalloc.

Builds and sorts a big dict and list, round-trips them through JSON, runs
threads from concurrent.futures that allocate, and forks worker processes
(multiprocessing's fork start method) while three threads of the parent
allocate; every result is checked against a closed form.  Prints one line per check, and whether libtlmalloc
is mapped into this process.
"""
import concurrent.futures
import json
import multiprocessing
import sys
import threading

N = 200_000


def dict_and_sort():
    d = {f"key{i:07d}": [i, str(i) * 3, {"sq": i * i}] for i in range(N)}
    keys = sorted(d, key=lambda k: -d[k][0])
    assert keys[0] == f"key{N - 1:07d}" and keys[-1] == "key0000000"
    total = sum(v[2]["sq"] for v in d.values())
    assert total == (N - 1) * N * (2 * N - 1) // 6
    return d


def json_round_trip(d):
    text = json.dumps(d)
    back = json.loads(text)
    assert back == {k: v for k, v in d.items()}
    return len(back)


def worker(seed):
    items = [(seed * 7919 + i) % 100_003 for i in range(50_000)]
    strings = sorted(str(x) * 2 for x in items)
    return sum(items), len(strings)


def threads():
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(worker, range(32)))
    assert results == [expected(seed) for seed in range(32)]
    return len(results)


def expected(seed):
    return sum((seed * 7919 + i) % 100_003 for i in range(50_000)), 50_000


def fork_while_threads():
    """Children forked while other threads of the parent allocate (and the
    pool's own threads run) allocate in their turn and send results back."""
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            junk = [str(i) * 3 for i in range(2000)]
            assert len(junk) == 2000

    churners = [threading.Thread(target=churn) for _ in range(3)]
    for t in churners:
        t.start()
    try:
        with multiprocessing.get_context("fork").Pool(4) as pool:
            results = pool.map(worker, range(8))
    finally:
        stop.set()
        for t in churners:
            t.join()
    assert results == [expected(seed) for seed in range(8)]
    return len(results)


def tlmalloc_mapped():
    with open("/proc/self/maps") as maps:
        return any("libtlmalloc" in line for line in maps)


def main():
    d = dict_and_sort()
    print("dict", len(d))
    print("json", json_round_trip(d))
    print("threads", threads())
    print("fork", fork_while_threads())
    print("tlmalloc", "mapped" if tlmalloc_mapped() else "missing")
    return 0


if __name__ == "__main__":
    sys.exit(main())

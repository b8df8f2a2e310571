"""The workloads the harness runs, and their parameter points.

Each workload is one program (or a few, for points that need another
build, e.g. containers_O0 and containers_O3) in the build's bench/ folder,
with the command line described in bench/workloads: `--quick` picks the
small sizes for the quick mode; without it the program runs the issue's
full sizes.  A point is one row of the workload's table: its label, the
extra arguments, and, where it differs, the program's name.

The scaling workload also has a ts_ variant (`scaling_ts --api lock|nolock`)
that the allocators with a ts_api run instead of `scaling`.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum


class Mode(Enum):
    """The sizes the workloads run at: the quick ones (`--quick`, the
    default) or the classic experiments' full sizes."""
    QUICK = "quick"
    FULL = "full"

    @property
    def full(self) -> bool:
        return self is Mode.FULL


@dataclass(frozen=True)
class Point:
    label: str
    args: tuple[str, ...] = ()
    binary: str = ""          # "" = the workload's own program
    # (key, value) pairs for the CSV and plots
    params: tuple[tuple[str, int | str], ...] = ()
    quick_args: tuple[str, ...] = ()   # added after --quick in the quick mode


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    binary: str
    summary: str
    quick_points: tuple[Point, ...]
    full_points: tuple[Point, ...]
    ts_binary: str = ""       # program for allocators with a ts_api
    strace: bool = False      # also run once per allocator under strace
    metric_order: tuple[str, ...] = ()

    def points(self, full: bool) -> tuple[Point, ...]:
        return self.full_points if full else self.quick_points

    def point_binary(self, point: Point) -> str:
        return point.binary or self.binary


# The two metrics of the producer/consumer programs (pairs.h), in their
# summaries.
PAIRS_LIVE = ("live_max_kb: the most the rings held (the sizes asked for), "
              "which moves with how far the producers run ahead; "
              "peak_over_live: peak RSS over it")


def threads_point(n: int) -> Point:
    return Point("%d thread%s" % (n, "" if n == 1 else "s"),
                 ("--threads", str(n)),
                 params=(("threads", n),))


def containers_point(opt: str, rand: str) -> Point:
    # unoptimised, the thread-local generator is no faster than std::rand:
    # its quick size (three times std's) would make it the slowest cell
    quick: tuple[str, ...] = ("--iters", "200000") \
        if (opt, rand) == ("O0", "local") else ()
    return Point("-%s, %s rand" % (opt, rand), ("--rand", rand),
                 binary="containers_" + opt,
                 params=(("opt", opt), ("rand", rand)), quick_args=quick)


SCALING_FULL = tuple(threads_point(n) for n in (1, 2, 4, 8))
CONTAINERS = tuple(containers_point(o, r)
                   for o in ("O0", "O3") for r in ("std", "local"))
DEFAULT = (Point("default"),)
LARSON = (Point("plain"), Point("sized", ("--free", "sized")))
BATCHES = tuple(Point("%d B" % n, ("--size", str(n)), params=(("size", n),))
                for n in (16, 32, 64))
MTHREAD = tuple(threads_point(n) for n in (1, 8))

WORKLOADS = (
    Workload("loop", "The malloc/free loop", "loop",
             "32 threads each malloc and free 8..512 bytes in a loop.",
             (Point("32 threads", params=(("threads", 32),)),),
             (Point("32 threads", params=(("threads", 32),)),),
             strace=True),
    Workload("prodcons", "Producer/consumer pairs", "prodcons",
             "16 pairs; the producer mallocs, the consumer frees.  "
             + PAIRS_LIVE + ".",
             (Point("16 pairs", params=(("pairs", 16),)),),
             (Point("16 pairs", params=(("pairs", 16),)),),
             strace=True),
    Workload("scaling", "Thread scaling: lock versus thread-local",
             "scaling",
             "The same total work split over 1, 2, 4, 8 threads; "
             "time and memory held from the OS.",
             SCALING_FULL, SCALING_FULL, ts_binary="scaling_ts",
             metric_order=("seconds", "data_bytes")),
    Workload("single", "What thread safety costs one thread", "single",
             "ns per malloc/free pair on one thread, then again after "
             "one thread was created and joined.",
             DEFAULT, DEFAULT,
             metric_order=("ns_per_pair_single", "ns_per_pair_after_thread")),
    Workload("containers", "C++ containers with random sizes",
             "containers_O3",
             "std::vectors of random lengths built and dropped in parallel; "
             "values from std::rand or a thread-local generator; -O0 and -O3.",
             CONTAINERS, CONTAINERS),
    Workload("falseshare", "False sharing", "falseshare_active",
             "Active: threads allocate small objects and write them hard. "
             "Passive: objects handed out by one thread, freed and "
             "reallocated by the others.",
             (Point("active", binary="falseshare_active"),
              Point("passive", binary="falseshare_passive")),
             (Point("active", binary="falseshare_active"),
              Point("passive", binary="falseshare_passive"))),
    Workload("server", "A server (larson-style)", "server",
             "Threads replace objects of 8..1000 bytes in a shared table, "
             "some freed by other threads.",
             DEFAULT, DEFAULT, metric_order=("ops_per_sec",)),
    Workload("churn", "Thread churn", "churn",
             "Waves of short-lived threads whose blocks outlive them.",
             DEFAULT, DEFAULT),
    Workload("large", "Large blocks and growth", "large",
             "64 KiB .. 64 MiB blocks, and realloc growing buffers.",
             DEFAULT, DEFAULT),
    Workload("memtime", "Memory over time", "memtime",
             "A long producer/consumer run sampling RSS, then idle: "
             "does RSS stay bounded, is memory given back?  "
             + PAIRS_LIVE + " (blocks are written at "
             "their start, middle and end only, so the pages between "
             "may never be touched: below 1 is possible).",
             DEFAULT, DEFAULT,
             metric_order=("rss_max_kb", "rss_last_busy_kb", "rss_idle_kb",
                           "live_max_kb", "peak_over_live")),
    # The field's patterns: each follows a public benchmark's pattern
    # (our own programs, not their code); the summary names it.  Their
    # metric_order leads the table and, for one point, is what the plot's
    # third panel draws, so it keeps to one unit.
    Workload("larson", "Server with thread churn (Larson)", "larson",
             "Larson and Krishnan's server benchmark: 4 threads replace "
             "random blocks of 8..1000 bytes in their part of a table; "
             "each exits after as many replacements as it has slots and "
             "a successor takes them over, so most frees hit blocks of "
             "an exited thread. \"sized\" frees with free_sized where the "
             "allocator has it (metric sized_free), else plain free.",
             LARSON, LARSON,
             metric_order=("ops_per_sec", "foreign_free_pct",
                           "sized_free")),
    Workload("mstress", "Mixed lifetimes with transfers (mimalloc stress)",
             "mstress",
             "mimalloc's stress test: rounds of 8 restarted threads "
             "allocate mostly small blocks (1% up to 256 KiB) with short, "
             "long and shared lifetimes; 10% of them are swapped into a "
             "shared array that any thread frees from.",
             DEFAULT, DEFAULT, metric_order=("ops_per_sec",)),
    Workload("batches", "Batches freed FIFO and LIFO (glibc "
             "bench-malloc-simple)", "batches",
             "glibc's bench-malloc-simple: batches of 25..1600 blocks "
             "written and freed half in order, half in reverse; in the "
             "main thread, in a second thread, then in the main thread "
             "again; ns per malloc+free pair for each.",
             BATCHES, BATCHES,
             metric_order=("ns_per_pair_main", "ns_per_pair_thread",
                           "ns_per_pair_main_after")),
    Workload("rptest", "Working sets with cross-thread frees (rpmalloc)",
             "rptest",
             "rpmalloc's benchmark: 4 threads replace random entries of "
             "working sets of 8 B..16 KiB blocks; 15% of the old blocks "
             "are handed to another thread to free. live_max_kb: the most "
             "the working sets, batches and inboxes held (the sizes asked "
             "for), which moves with how long a thread waits to empty its "
             "inbox; peak_over_live: peak RSS over it.",
             DEFAULT, DEFAULT,
             metric_order=("ops_per_sec",)),
    Workload("mlarge", "Large buffers (Google malloc-large)", "mlarge",
             "Google's malloc-large: 20 buffers, one at random replaced "
             "by a new one of 5..25 MiB, a byte written in every page.",
             DEFAULT, DEFAULT, metric_order=("ns_per_page",)),
    Workload("mleak", "Thread churn with transfers (mimalloc leak test)",
             "mleak",
             "mimalloc's leak test: rounds of 10 threads, each swapping "
             "one small block into a shared table and freeing the one "
             "it got back; RSS at the end.",
             DEFAULT, DEFAULT,
             metric_order=("threads_per_sec",)),
    Workload("xmalloc", "Many producers, many consumers (xmalloc-test)",
             "xmalloc",
             "xmalloc-test: 4 producer threads hand batches of 8..512-byte "
             "blocks to the queues of 4 consumer threads, which free them.",
             DEFAULT, DEFAULT, metric_order=("ops_per_sec",)),
    Workload("mthread", "Random sizes in threads (glibc "
             "bench-malloc-thread)", "mthread",
             "glibc's bench-malloc-thread: each thread replaces random "
             "blocks of its own working set of 1024, sizes 4..32768 bytes "
             "drawn from an inverse square (half of them below 8 bytes, "
             "one in a thousand above 4 KiB); 1 and 8 threads.",
             MTHREAD, MTHREAD, metric_order=("ops_per_sec",)),
)


def by_name(names: Iterable[str] = (),
            workloads: Sequence[Workload] = WORKLOADS) -> list[Workload]:
    """The workloads named (all when names is empty), in suite order.

    Raises ValueError for an unknown name.
    """
    names = list(names)
    if not names:
        return list(workloads)
    known = {w.name: w for w in workloads}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError("unknown workload(s): %s (known: %s)" % (
            ", ".join(unknown), ", ".join(known)))
    return [w for w in workloads if w.name in names]


def point_args(point: Point, full: bool) -> list[str]:
    """The command-line arguments of one point in the given mode."""
    if full:
        return list(point.args)
    return ["--quick"] + list(point.args) + list(point.quick_args)

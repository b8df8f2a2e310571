"""Plots of a results set, PNG and SVG, with matplotlib (Agg, no display).

A grouped bar chart per workload (median wall time, whiskers from the
fastest to the slowest run; peak RSS beside it), and for the scaling
workload time and data size against the thread count, one line per
allocator (the lock and thread-local ts_ variants among them).  A user
program (--program) gets the bar chart, unless none of its runs succeeded.
"""

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .records import Plots, Results, WorkloadEntry
from .stats import CellKey, CellSummary, summarize

FAILED_MARK = "FAILED"

Cells = Mapping[CellKey, CellSummary]
# matplotlib's objects (pyplot, a figure, its axes): the harness runs
# without matplotlib too, so they are not checked
Pyplot = Any
Figure = Any
Axes = Any


def load_matplotlib() -> Pyplot | None:
    """matplotlib.pyplot, or None when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def allocs_in(cells: Cells, workload: str,
              order: Sequence[str]) -> list[str]:
    present = {k[2] for k in cells if k[0] == workload}
    return [a for a in order if a in present]


# Twenty colours, none repeated: the report runs thirteen allocators and
# more with --alloc extras; matplotlib's ten-colour cycle gave two of them
# the same bar colour.
PALETTE = ("tab:blue", "tab:orange", "tab:green", "tab:red",
           "tab:purple", "tab:brown", "tab:pink", "tab:gray",
           "tab:olive", "tab:cyan", "black", "gold", "navy", "lime",
           "maroon", "teal", "magenta", "sienna", "darkkhaki", "slateblue")


def colour_of(alloc: str, order: Sequence[str]) -> str:
    """The same colour for an allocator in every plot, a different one
    for each of the first len(PALETTE) allocators of order."""
    index = order.index(alloc) if alloc in order else len(order)
    return PALETTE[index % len(PALETTE)]


WIDE = 20.0     # values further apart than this get a log scale


def maybe_log(ax: Axes, values: Iterable[float | None],
              axis: str = "y") -> bool:
    """A log scale when the values span more than WIDE times."""
    positive = [v for v in values if v and v > 0]
    if positive and max(positive) / min(positive) > WIDE:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
        return True
    return False


def bar_panel(ax: Axes, cells: Cells, workload: WorkloadEntry,
              allocs: Sequence[str], order: Sequence[str], measure: str,
              scale: float, ylabel: str) -> None:
    width = 0.8 / max(1, len(allocs))
    shown: list[float] = []
    for i, alloc in enumerate(allocs):
        xs: list[float] = []
        heights: list[float] = []
        lows: list[float] = []
        highs: list[float] = []
        for j, point in enumerate(workload.points):
            cell = cells.get((workload.name, point, alloc))
            x = j + (i - (len(allocs) - 1) / 2) * width
            if cell is None:
                continue
            measured = cell.value(measure)
            if cell.failed or measured is None:
                ax.text(x, 0.02, FAILED_MARK if cell.failed else "n/a",
                        rotation=90, ha="center", va="bottom", fontsize=7,
                        color="red", transform=ax.get_xaxis_transform())
                continue
            value = measured * scale
            xs.append(x)
            heights.append(value)
            if measure == "wall" and cell.wall_min is not None \
                    and cell.wall_max is not None:
                lows.append(value - cell.wall_min * scale)
                highs.append(cell.wall_max * scale - value)
        errors = [lows, highs] if measure == "wall" and xs else None
        ax.bar(xs, heights, width, yerr=errors, capsize=2, label=alloc,
               color=colour_of(alloc, order))
        shown += heights
    if maybe_log(ax, shown):
        ylabel = ylabel[:-1] + ", log)"
    ax.set_xlim(-0.5, len(workload.points) - 0.5)
    ax.set_xticks(range(len(workload.points)))
    ax.set_xticklabels(workload.points, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)


def legend_below(fig: Figure, ax: Axes) -> None:
    """One legend for the figure, in a row under the panels."""
    handles, labels = ax.get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.legend(handles, labels, loc="lower center", fontsize=8,
               ncol=min(len(labels), 5), frameon=False)


def metric_scale(key: str, unit: str) -> tuple[float, str]:
    """(factor, unit) for showing a metric: memory in MiB."""
    if key.endswith("_kb") or unit in ("kB", "KiB"):
        return 1 / 1024, "MiB"
    if key.endswith("_bytes") or unit == "B":
        return 1 / 2**20, "MiB"
    return 1.0, unit


def metric_panel(ax: Axes, cells: Cells, workload: WorkloadEntry,
                 allocs: Sequence[str], order: Sequence[str]) -> None:
    """The workload's own metrics (one point): x = metric, bar = allocator."""
    keys = workload.metric_order
    point = workload.points[0]
    width = 0.8 / max(1, len(allocs))
    units = set()
    for i, alloc in enumerate(allocs):
        cell = cells.get((workload.name, point, alloc))
        xs: list[float] = []
        heights: list[float] = []
        for j, key in enumerate(keys):
            value = cell.value(key) if cell and not cell.failed else None
            if cell is None or value is None:
                continue
            factor, unit = metric_scale(key, cell.units.get(key, ""))
            units.add(unit)
            xs.append(j + (i - (len(allocs) - 1) / 2) * width)
            heights.append(value * factor)
        ax.bar(xs, heights, width, color=colour_of(alloc, order))
    ax.set_xlim(-0.5, len(keys) - 0.5)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(keys, fontsize=7)
    ax.set_ylabel("median (%s)" % ", ".join(sorted(u for u in units if u)))
    ax.grid(axis="y", alpha=0.3)


def bar_chart(plt: Pyplot, cells: Cells, workload: WorkloadEntry,
              order: Sequence[str]) -> Figure | None:
    allocs = allocs_in(cells, workload.name, order)
    if not allocs:
        return None
    with_metrics = bool(workload.metric_order) and \
        len(workload.points) == 1
    if with_metrics:
        fig, (left, right, third) = plt.subplots(1, 3, figsize=(15, 4.5))
        metric_panel(third, cells, workload, allocs, order)
    else:
        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    bar_panel(left, cells, workload, allocs, order, "wall", 1.0,
              "wall time (s, median)")
    bar_panel(right, cells, workload, allocs, order, "maxrss_kb", 1 / 1024,
              "peak RSS (MiB, median)")
    fig.suptitle("%s (%s)" % (workload.title, workload.name))
    legend_below(fig, left)
    return fig


def series(cells: Cells, workload: WorkloadEntry, alloc: str,
           measure: str) -> tuple[list[int], list[float]]:
    xs: list[int] = []
    ys: list[float] = []
    for point in workload.points:
        cell = cells.get((workload.name, point, alloc))
        threads = point.split()[0]
        if cell is None or cell.failed or not threads.isdigit():
            continue
        value = cell.value(measure)
        if value is not None:
            xs.append(int(threads))
            ys.append(value)
    return xs, ys


def scaling_chart(plt: Pyplot, cells: Cells, workload: WorkloadEntry,
                  order: Sequence[str]) -> Figure | None:
    allocs = allocs_in(cells, workload.name, order)
    if not allocs:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    times: list[float] = []
    sizes: list[float] = []
    for alloc in allocs:
        style = "--" if alloc == "tlmalloc-lock" else "-"
        xs, ys = series(cells, workload, alloc, "wall")
        label = {"tlmalloc-lock": "tlmalloc-lock (ts lock)",
                 "tlmalloc": "tlmalloc (ts nolock)"}.get(alloc, alloc)
        colour = colour_of(alloc, order)
        left.plot(xs, ys, style, marker="o", label=label, color=colour)
        times += ys
        xs, ys = series(cells, workload, alloc, "data_bytes")
        sizes += ys
        right.plot(xs, [y / 2**20 for y in ys], style, marker="o",
                   label=label, color=colour)
    for ax, ylabel, values in ((left, "wall time (s, median)", times),
                               (right, "data size (MiB, median)", sizes)):
        if maybe_log(ax, values):
            ylabel = ylabel[:-1] + ", log)"
        ax.set_xlabel("threads")
        ax.set_ylabel(ylabel)
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4, 8])
        ax.set_xticklabels(["1", "2", "4", "8"])
        ax.grid(alpha=0.3)
    fig.suptitle("Thread scaling: time and data size against threads")
    legend_below(fig, left)
    return fig


def make_plots(data: Results, out_dir: Path, folder: str = "plots") -> Plots:
    """Draws every plot into out_dir/folder; the files are named relative
    to out_dir."""
    plt = load_matplotlib()
    if plt is None:
        return Plots(False, "matplotlib is not installed "
                     "(scripts/install-deps.sh installs it)")
    cells = summarize(data.runs)
    order = data.allocator_names()
    (out_dir / folder).mkdir(parents=True, exist_ok=True)
    files = {}
    for workload in data.workloads:
        if workload.is_program and all(
                c.failed for k, c in cells.items()
                if k[0] == workload.name):
            continue        # a program that never ran: the table says why
        draw = scaling_chart if workload.name == "scaling" else bar_chart
        fig = draw(plt, cells, workload, order)
        if fig is None:
            continue
        names = []
        for ext in ("png", "svg"):
            rel = "%s/%s.%s" % (folder, workload.name, ext)
            fig.savefig(out_dir / rel, dpi=110)
            names.append(rel)
        plt.close(fig)
        files[workload.name] = names
    return Plots(True, "", files)

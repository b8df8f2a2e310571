"""The Markdown report, built from a results set (records.Results).

Sections: how it was made; where tlmalloc stands; the furthest points in
paired rounds (the paired pass, paired.py); the fast path
(instructions per malloc+free pair); security (the misuse programs each
allocator catches, side by side); the classic observations; one table
per workload (median of each measure, ratio to glibc, the best in each row
in bold, FAILED for a cell with a failed run), with its plot; one section
per user program (--program: a row per allocator with the median time, its
spread, user and sys time, peak RSS, ratios to the fastest and the
leanest, a failed cell's reason and stderr, the command that reruns it);
the system calls; the failed runs; the allocators (found and missing); the
machine.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict

from . import classic
from . import fastpath as fastpath_mod
from . import paired as paired_mod
from . import security as security_mod
from .parse import STRACE_COLUMNS
from .allocators import Allocator, Kind
from .programs import Program, stderr_tail
from .records import (FastpathRow, Mix, Outcome, Results, Run, SecurityRow,
                      WorkloadEntry)
from .stats import CellKey, CellSummary, summarize

BASELINE = "glibc"

Cells = Mapping[CellKey, CellSummary]
# {allocator: {mix: row}}
FastpathTable = dict[str, dict[Mix, FastpathRow]]


def higher_is_better(measure: str) -> bool:
    return measure.endswith("per_sec") or measure.startswith("ops")


# Measures of the program rather than of the allocator (how much live data
# the run came to hold): shown, never marked best.
UNRANKED = frozenset({"live_max_kb"})


def to_display(measure: str, unit: str, value: float) -> tuple[float, str]:
    """(value, unit) as shown: memory in MiB."""
    if measure == "maxrss_kb" or measure.endswith("_kb") or unit in ("kB",
                                                                    "KiB"):
        return value / 1024, "MiB"
    if unit == "B" or measure.endswith("_bytes"):
        return value / (1024 * 1024), "MiB"
    return value, unit


def ratio(value: float | None, base: float | None) -> str:
    """value / base as "1.23x", or "–" without a base."""
    return "%.2fx" % (value / base) if base and value is not None else "–"


def fmt_num(value: float | None) -> str:
    """A number in three figures or with a G/M suffix; "–" for None."""
    if value is None:
        return "–"
    size = abs(value)
    if size >= 1e9:
        return "%.2fG" % (value / 1e9)
    if size >= 1e6:
        return "%.2fM" % (value / 1e6)
    if size >= 100:
        return "%.0f" % value
    return ("%#.3g" % value).rstrip(".")


def measure_name(measure: str, unit: str) -> str:
    if measure == "wall":
        return "time (s)"
    if measure == "maxrss_kb":
        return "peak RSS (MiB)"
    shown_unit = to_display(measure, unit, 1.0)[1]
    return "%s (%s)" % (measure, shown_unit) if shown_unit else measure


def best_values(values: Sequence[float | None],
                higher: bool) -> float | None:
    """The best among values (None entries ignored), or None when fewer
    than two values or all equal: then no cell is better than another."""
    present = [v for v in values if v is not None]
    if len(present) < 2 or min(present) == max(present):
        return None
    return max(present) if higher else min(present)


ONCE_MARK = "†"
# A standing row whose program reports its own live data (peak_over_live).
LIVE_MARK = "‡"
LIVE_METRIC = "peak_over_live"
FASTPATH_TITLE = "Fast path: instructions per malloc+free pair (callgrind)"


def cell_text(cell: CellSummary | None, measure: str, baseline: float | None,
              best: float | None, reps: int) -> str:
    if cell is None:
        return "–"
    if cell.failed:
        return "FAILED"
    value = cell.value(measure)
    if value is None:
        return "–"
    shown, _ = to_display(measure, cell.units.get(measure, ""), value)
    text = fmt_num(shown)
    if best is not None and value == best:
        text = "**%s**" % text
    if cell.runs < reps:
        text += ONCE_MARK
    if baseline and cell.allocator != BASELINE:
        text += " (%.2fx)" % (value / baseline)
    return text


def measures_of(workload: WorkloadEntry,
                cells: Sequence[CellSummary]) -> list[str]:
    """wall, peak RSS, then the workload's metrics (its own order first)."""
    keys = {k for c in cells for k in c.metrics}
    ordered = [k for k in workload.metric_order if k in keys]
    ordered += sorted(keys - set(ordered))
    return ["wall", "maxrss_kb"] + ordered


def row_cells(cells: Cells, workload: str, point: str,
              allocs: Sequence[str]) -> list[CellSummary | None]:
    return [cells.get((workload, point, a)) for a in allocs]


def table_row(point: str, measure: str, row: Sequence[CellSummary | None],
              allocs: Sequence[str], reps: int) -> str:
    unit = next((c.units.get(measure, "") for c in row if c), "")
    values = [None if c is None or c.failed else c.value(measure) for c in row]
    best = (None if measure in UNRANKED
            else best_values(values, higher_is_better(measure)))
    base = None
    if BASELINE in allocs:
        base = values[allocs.index(BASELINE)] or None
    texts = [cell_text(c, measure, base, best, reps) for c in row]
    return "| %s | %s | %s |" % (point, measure_name(measure, unit),
                                 " | ".join(texts))


def workload_allocs(cells: Cells, workload: str,
                    allocators: Sequence[Allocator]) -> list[str]:
    present = {k[2] for k in cells if k[0] == workload}
    order = [a.name for a in allocators]
    return [a for a in order if a in present]


def workload_table(workload: WorkloadEntry, cells: Cells,
                   allocators: Sequence[Allocator], reps: int) -> list[str]:
    name = workload.name
    allocs = workload_allocs(cells, name, allocators)
    if not allocs:
        return ["No runs."]
    own = [c for k, c in cells.items() if k[0] == name]
    lines = ["| point | measure | %s |" % " | ".join(allocs),
             "|---|---|" + "---|" * len(allocs)]
    for point in workload.points:
        for measure in measures_of(workload, own):
            row = row_cells(cells, name, point, allocs)
            if any(c is not None for c in row):
                lines.append(table_row(point, measure, row, allocs, reps))
    return lines


def missing_note(data: Results, name: str) -> list[str]:
    """Who did not run this workload and why (missing allocators briefly:
    the Allocators section says why they are missing)."""
    absent = set(data.missing_allocators())
    reasons: dict[str, str] = {}
    for miss in data.missing:
        if miss.workload == name:
            why = "allocator missing" if miss.allocator in absent \
                else miss.reason
            reasons.setdefault(miss.allocator, why)
    if not reasons:
        return []
    return ["", "Not run here: " + "; ".join(
        "%s (%s)" % item for item in reasons.items()) + "."]


def plot_lines(data: Results, name: str) -> list[str]:
    files = data.plots.files.get(name, [])
    pngs = [f for f in files if f.endswith(".png")]
    svgs = [f for f in files if f.endswith(".svg")]
    lines = []
    if pngs:
        lines += ["", "Bars: medians; whiskers: fastest and slowest run."
                  if name != "scaling" else "Lines: medians."]
    for png in pngs:
        lines.append("")
        lines.append("![%s](%s)" % (name, png))
    if svgs:
        lines.append("")
        lines.append("SVG: " + ", ".join("[%s](%s)" % (s.split("/")[-1], s)
                                         for s in svgs))
    return lines


def workload_section(workload: WorkloadEntry, cells: Cells,
                     data: Results) -> list[str]:
    lines = ["", "### %s (`%s`)" % (workload.title, workload.name), "",
             workload.summary, ""]
    lines += workload_table(workload, cells, data.allocators, data.reps)
    if workload.name == "scaling":
        lines += ["", "tlmalloc and tlmalloc-lock run `scaling_ts --api "
                  "nolock` / `--api lock` (ts_malloc_nolock / ts_malloc_lock); "
                  "their data_bytes is get_data_segment_size(), the others' "
                  "is the process RSS."]
    lines += missing_note(data, workload.name)
    lines += plot_lines(data, workload.name)
    return lines


def ranking(cells: Cells, workload: str, point: str,
            allocators: Sequence[str]) -> list[tuple[str, float]]:
    """[(allocator, wall)] of the successful cells, fastest first."""
    ranked = []
    for alloc in allocators:
        if alloc == "tlmalloc-lock":
            continue
        cell = cells.get((workload, point, alloc))
        if cell is not None and not cell.failed and cell.wall is not None:
            ranked.append((alloc, cell.wall))
    return sorted(ranked, key=lambda item: item[1])


def peer_names(allocators: Sequence[Allocator]) -> list[str]:
    """The allocators tlmalloc is held against: every other malloc that
    runs the same programs (preloaded, or the C library's own), neither a
    build of tlmalloc's nor a static musl program (a different binary)."""
    return [a.name for a in allocators
            if a.found and a.kind in (Kind.PRELOAD, Kind.SYSTEM)
            and not a.name.startswith("tlmalloc")]


def least_peer(cells: Cells, workload: str, point: str,
               peers: Sequence[str],
               measure: str = "maxrss_kb") -> tuple[str, float] | None:
    """(peer, median) of the peer with the least of measure at the point
    (by default the leanest: peak RSS in KiB); None when no peer has a
    figure there.  (The fastest is the first peer of ranking().)"""
    values = [(value, name) for name in peers
              for cell in [cells.get((workload, point, name))]
              if cell is not None and not cell.failed
              for value in [cell.value(measure)] if value is not None]
    if not values:
        return None
    value, name = min(values, key=lambda item: item[0])
    return name, value


def versus_peer(value: float | None,
                peer: tuple[str, float] | None) -> tuple[str, float | None]:
    """("1.23x (name)", 1.23), or ("–", None) without a figure."""
    if value is None or peer is None or peer[1] <= 0:
        return "–", None
    r = value / peer[1]
    return "%.2fx (%s)" % (r, peer[0]), r


# tlmalloc against the peers at one point: time, peak RSS (None: no figure)
PeerRatios = tuple[str, str, float | None, float | None]


def standing_row(cells: Cells, workload: WorkloadEntry, point: str,
                 order: Sequence[str], peers: Sequence[str],
                 ratios: list[PeerRatios]) -> str | None:
    """The standing table's row of one point; its ratios to the peers go
    to ratios."""
    ranked = ranking(cells, workload.name, point, order)
    cell = cells.get((workload.name, point, "tlmalloc"))
    if cell is None:
        return None
    if cell.failed or cell.wall is None:
        return "| %s | %s | FAILED | | | | | | |" % (workload.name, point)
    names = [a for a, _ in ranked]
    glibc = dict(ranked).get(BASELINE)
    vs_glibc = ratio(cell.wall, glibc)
    base = cells.get((workload.name, point, BASELINE))
    rss = "–"
    if base is not None and not base.failed:
        rss = ratio(cell.maxrss_kb, base.maxrss_kb)
    best, best_wall = ranked[0]
    time_text, time_ratio = versus_peer(
        cell.wall, next(((a, w) for a, w in ranked if a in peers), None))
    rss_text, rss_ratio = versus_peer(
        cell.maxrss_kb, least_peer(cells, workload.name, point, peers))
    if cell.value(LIVE_METRIC) is not None and rss_ratio is not None:
        rss_text += " " + LIVE_MARK
    ratios.append((workload.name, point, time_ratio, rss_ratio))
    return "| %s | %s | %s s | %s | %d of %d | %s (%s s) | %s | %s | %s |" % (
        workload.name, point, fmt_num(cell.wall), vs_glibc,
        names.index("tlmalloc") + 1, len(names), best, fmt_num(best_wall),
        time_text, rss, rss_text)


def live_note(data: Results, cells: Cells,
               peers: Sequence[str]) -> list[str]:
    """Under the standing table: for the points whose program reports its
    own live data, tlmalloc's peak RSS per byte of it beside the least of
    the peers', since the live data itself moves with scheduling."""
    parts = []
    for workload in data.workloads:
        for point in workload.points:
            cell = cells.get((workload.name, point, "tlmalloc"))
            mine = None if cell is None or cell.failed \
                else cell.value(LIVE_METRIC)
            if mine is None:
                continue
            theirs = least_peer(cells, workload.name, point, peers,
                                LIVE_METRIC)
            least = "" if theirs is None else \
                " (the least of the peers: %s %.2f)" % theirs
            parts.append("`%s` %s: tlmalloc %.2f%s" % (
                workload.name, point, mine, least))
    if not parts:
        return []
    return ["", "%s: the program reports its own live data (`live_max_kb`, "
            "the most its rings, sets or queues held), which moves with how "
            "far its threads run ahead of each other as much as with the "
            "allocator; the peak RSS per byte of it (`%s`, medians) compares "
            "the allocators themselves: %s." % (
                LIVE_MARK, LIVE_METRIC, "; ".join(parts))]


def geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def peer_summary(ratios: Sequence[PeerRatios],
                 peers: Sequence[str]) -> list[str]:
    """The standing against the peers in one paragraph: the geometric
    means over the points of tlmalloc's time over the fastest peer's and
    of its peak RSS over the leanest peer's, with the worst points."""
    times = [(r[2], r[0], r[1]) for r in ratios if r[2] is not None]
    sizes = [(r[3], r[0], r[1]) for r in ratios if r[3] is not None]
    if not times:
        return ["", "Against the peers: no point where tlmalloc and a peer "
                "both ran."]
    line = "Against the peers (%s: the other allocators that run the same " \
        "programs; tlmalloc's own builds and the static musl programs are " \
        "left out), over %d points: tlmalloc's median time is on " \
        "geometric mean **%.2fx** the fastest peer's at each point, at or " \
        "below it on %d%s" % (", ".join(peers), len(times),
                              geomean([t[0] for t in times]),
                              sum(1 for t in times if t[0] <= 1.0),
                              furthest(times, "behind"))
    if sizes:
        line += "; its peak RSS **%.2fx** the leanest peer's, at or below " \
            "it on %d%s" % (geomean([z[0] for z in sizes]),
                            sum(1 for z in sizes if z[0] <= 1.0),
                            furthest(sizes, "above"))
    return ["", line + "."]


def furthest(values: Sequence[tuple[float, str, str]], word: str) -> str:
    """The clause naming the largest ratio when it is over 1, e.g.
    ' (furthest behind: loop 32 threads, 1.25x)'; else nothing."""
    worst = max(values)
    if worst[0] <= 1.0:
        return ""
    return " (furthest %s: %s %s, %.2fx)" % (word, worst[1], worst[2],
                                              worst[0])


def counted(row: FastpathRow | None) -> float | None:
    """A row's instructions per pair, None unless it was counted."""
    return row.instructions_per_pair if row and row.ok else None


def fastpath_standing_row(table: FastpathTable, mix: Mix) -> str | None:
    """The standing table's row for one size mix of the fast path."""
    own = table.get("tlmalloc", {}).get(mix)
    if own is None or not own.measured:
        return None
    title = mix.title
    value = counted(own)
    if value is None:
        return "| fastpath | %s | FAILED | | | | | | |" % title
    ranked = sorted((count, name) for name, mixes in table.items()
                    for count in [counted(mixes.get(mix))]
                    if name != fastpath_mod.LOOP and count is not None)
    names = [name for _, name in ranked]
    vs_glibc = ratio(value, counted(table.get(BASELINE, {}).get(mix)))
    return "| fastpath | %s | %.1f instr. | %s | %d of %d | %s (%.1f) | – " \
        "| – | – |" \
        % (title, value, vs_glibc, names.index("tlmalloc") + 1, len(names),
        ranked[0][1], ranked[0][0])


def fastpath_budget_line(data: Results, table: FastpathTable) -> str:
    """tlmalloc's fast path against the issue's budget, in one sentence."""
    head = "Fast path (one thread, callgrind): "
    if not data.fastpath.available:
        return head + "not measured: %s." % data.fastpath.note
    line = head + budget_clause(table, "tlmalloc")
    if "tlmalloc-fast" in table:
        line += " The fast variant (no checks of interior and double " \
            "frees): " + budget_clause(table, "tlmalloc-fast")
    return line


def budget_clause(table: FastpathTable, name: str) -> str:
    """One library's figures against the budget, as a sentence."""
    own = table.get(name, {})
    rows = [own.get(mix) for mix in Mix]
    if not all(r and r.measured for r in rows):
        return "%s not measured." % name
    values = [counted(r) for r in rows]
    if None in values:
        return "%s FAILED (see Failed runs)." % name
    within = all(v is not None and v <= fastpath_mod.BUDGET for v in values)
    return "%s %s instructions per malloc+free pair (64 bytes / size " \
        "mix), loop included; the budget is %d: **%s**." % (
            name, " / ".join("%.1f" % v for v in values if v is not None),
            fastpath_mod.BUDGET, "within" if within else "over")


def standing_section(data: Results, cells: Cells) -> list[str]:
    order = data.allocator_names()
    peers = peer_names(data.allocators)
    lines = ["", "## Where tlmalloc stands", ""]
    rows = []
    ratios: list[PeerRatios] = []
    for workload in data.workloads:
        for point in workload.points:
            row = standing_row(cells, workload, point, order, peers, ratios)
            if row:
                rows.append(row)
    table = fastpath_table(data)
    rows += [r for r in (fastpath_standing_row(table, mix)
                         for mix in Mix) if r]
    security_row = security_standing_row(data)
    rows += [security_row] if security_row else []
    budget = ["", fastpath_budget_line(data, table)]
    if not rows:
        note = next((a.note for a in data.allocators
                     if a.name == "tlmalloc"), "")
        return lines + ["tlmalloc was not run%s." % (note and ": " + note)] \
            + budget
    lines += ["Median wall time; rank among the allocators that ran the "
              "point without failing (1 = fastest); tlmalloc's time over the "
              "fastest peer's (the other allocators that run the same "
              "program: below); peak RSS as a ratio to glibc's and to the "
              "leanest peer's. The fastpath rows count instructions per "
              "malloc+free pair instead (1 = fewest), the security row the "
              "misuse programs caught (1 = most).", "",
              "| workload | point | tlmalloc | vs glibc | rank | fastest | "
              "vs fastest peer | peak RSS vs glibc | vs leanest peer |",
              "|---|---|---|---|---|---|---|---|---|"]
    return lines + rows + peer_summary(ratios, peers) + \
        live_note(data, cells, peers) + budget


def paired_ratio(pairs: Sequence[tuple[float, float]]) -> str:
    """'1.23x (1.10-1.31)': the median and range of the per-round ratios,
    or a dash without any."""
    figures = paired_mod.summary(pairs)
    if figures is None:
        return "–"
    mid, low, high = figures
    return "%.2fx (%.2f-%.2f)" % (mid, low, high)


def paired_section(data: Results) -> list[str]:
    """The paired pass (paired.py): the furthest points run again in
    rounds of two."""
    done = data.paired
    lines = ["", "## The furthest points, in paired rounds", ""]
    if not done.available:
        return lines + ["Not run: %s." % done.note]
    if not done.points:
        return lines + ["Nothing to pair: %s." % done.note]
    lines += ["The points where tlmalloc's median time was more than "
              "%.2fx the fastest peer's (at most %d, furthest first; not "
              "those whose runs took longer than the run-once limit), run "
              "again: %d rounds of tlmalloc and that peer back to back, "
              "the order flipped every round. The figures are the medians "
              "(and the ranges) of the per-round ratios, tlmalloc's over "
              "the peer's: both runs of a round see the same load, so "
              "where they and the table above differ, these are the ones "
              "to read." % (paired_mod.ABOVE, paired_mod.LIMIT, done.rounds),
              "",
              "| workload | point | peer | main pass | wall time, paired | "
              "CPU time, paired | rounds |",
              "|---|---|---|---|---|---|---|"]
    for point in done.points:
        rounds = "%d" % len(point.walls)
        if point.failed:
            rounds += " (%d failed, left out)" % point.failed
        lines.append("| %s | %s | %s | %.2fx | %s | %s | %s |" % (
            point.workload, point.point, point.peer, point.main_ratio,
            paired_ratio(point.walls), paired_ratio(point.cpus), rounds))
    return lines


def fastpath_table(data: Results) -> FastpathTable:
    """{allocator: {mix: row}}: the report's allocators in their order,
    then any other, the loop's row last."""
    table: FastpathTable = {}
    for row in data.fastpath.rows:
        table.setdefault(row.allocator, {})[row.mix] = row
    order = data.allocator_names()
    names = [n for n in order if n in table]
    names += [n for n in table if n not in names and n != fastpath_mod.LOOP]
    if fastpath_mod.LOOP in table:
        names.append(fastpath_mod.LOOP)
    return {name: table[name] for name in names}


def fastpath_cell(row: FastpathRow | None, best: float | None) -> str:
    if row is None:
        return "–"
    if not row.measured:
        return "not measured"
    value = counted(row)
    if value is None:
        return "FAILED"
    text = "%.1f" % value
    return "**%s**" % text if best is not None and value == best else text


def fastpath_section(data: Results) -> list[str]:
    fastpath = data.fastpath
    lines = ["", "## " + FASTPATH_TITLE, ""]
    if not fastpath.available:
        return lines + ["Not measured: %s." % fastpath.note]
    table = fastpath_table(data)
    mixes = list(Mix)
    pairs = fastpath.pairs
    lengths = "%d and %d pairs" % pairs if pairs else "two lengths"
    lines += ["What one more malloc+free pair costs on one thread, in "
              "instructions counted by callgrind: `build/bench/fastpath` run "
              "at %s, the difference divided by the difference in pairs, so "
              "start-up cancels out. Exact and repeatable: one run, no "
              "medians. The figures include the benchmark loop's own "
              "instructions, the same for every allocator (last row); the "
              "budget is %d per pair, loop included. Lower is better; the "
              "best of each column is **bold**." % (lengths,
                                                    fastpath_mod.BUDGET), "",
              "| allocator | %s |" % " | ".join(m.title for m in mixes),
              "|---|" + "---|" * len(mixes)]
    best = {}
    for mix in mixes:
        values = [counted(r.get(mix))
                  for name, r in table.items() if name != fastpath_mod.LOOP]
        best[mix] = best_values(values, higher=False)
    for name, row in table.items():
        mix_best = best if name != fastpath_mod.LOOP else {}
        label = "(the loop itself)" if name == fastpath_mod.LOOP else name
        lines.append("| %s | %s |" % (label, " | ".join(
            fastpath_cell(row.get(m), mix_best.get(m)) for m in mixes)))
    skipped = {name: next(iter(row.values())).reason
               for name, row in table.items()
               if not any(r.measured for r in row.values())}
    if skipped:
        lines += ["", "Not measured: " + "; ".join(
            "%s (%s)" % item for item in skipped.items()) + "."]
    if fastpath.command:
        lines += ["", "Reproduce: `%s`" % fastpath.command]
    return lines


SECURITY_TITLE = "Security: the misuse programs caught (test/misuse)"
SECURITY_CELLS = {Outcome.CAUGHT: "caught", Outcome.NOT_CAUGHT: "not caught",
                  Outcome.HANG: "HANG", Outcome.ERROR: "ERROR"}
# {allocator: {(kind, size): row}}
SecurityTable = dict[str, dict[tuple[str, str], SecurityRow]]


def security_table(data: Results) -> SecurityTable:
    """The security rows by allocator, in the report's order."""
    table: SecurityTable = {}
    for row in data.security.rows:
        table.setdefault(row.allocator, {})[(row.kind, row.size)] = row
    order = data.allocator_names()
    names = [n for n in order if n in table]
    names += [n for n in table if n not in names]
    return {name: table[name] for name in names}


def security_totals(table: SecurityTable) -> dict[str, tuple[int, int]]:
    """{allocator: (programs caught, programs run)}."""
    return {name: (sum(1 for r in rows.values() if r.caught), len(rows))
            for name, rows in table.items()}


def security_standing_row(data: Results) -> str | None:
    """The standing table's row: tlmalloc's catches, ranked."""
    totals = security_totals(security_table(data))
    if "tlmalloc" not in totals:
        return None
    caught, run = totals["tlmalloc"]
    rank = 1 + sum(1 for c, _ in totals.values() if c > caught)
    best = max(totals, key=lambda name: totals[name][0])
    versus = "%+d" % (caught - totals[BASELINE][0]) \
        if BASELINE in totals else "–"
    return "| security | misuse programs caught | %d of %d | %s | %d of %d " \
        "| %s (%d) | – | – | – |" % (caught, run, versus, rank, len(totals), best,
                             totals[best][0])


def security_section(data: Results) -> list[str]:
    security = data.security
    lines = ["", "## " + SECURITY_TITLE, ""]
    if not security.available:
        return lines + ["Not measured: %s." % security.note]
    table = security_table(data)
    names = list(table)
    keys: list[tuple[str, str]] = []
    for rows in table.values():
        keys += [k for k in rows if k not in keys]
    sizes = {s.arg: s.title for s in security_mod.SIZES}
    totals = security_totals(table)
    most = best_values([float(c) for c, _ in totals.values()], higher=True)
    lines += ["The project's misuse programs (`test/misuse`: one misuse "
              "each, at 8 B, 4 KiB and 256 KiB), each run once with each "
              "allocator. **caught**: the program died of a signal (an "
              "abort, a fault) before it could print that it survived; "
              "*not caught*: it printed so and exited 0; HANG: killed at "
              "its time limit; ERROR: anything else (both listed below the "
              "table). The most caught is **bold**.%s" % (
                  " The pass took %.1f s." % security.wall
                  if security.wall else ""), "",
              "| misuse | size | %s |" % " | ".join(names),
              "|---|---|" + "---|" * len(names)]
    for kind, size in keys:
        cells = [table[name].get((kind, size)) for name in names]
        lines.append("| %s | %s | %s |" % (kind, sizes.get(size, size),
                                           " | ".join(
            SECURITY_CELLS[c.outcome] if c else "–" for c in cells)))
    total_cells = []
    for name in names:
        caught, run = totals[name]
        text = "%d of %d" % (caught, run)
        total_cells.append("**%s**" % text if most is not None and
                           caught == most else text)
    lines.append("| **caught** | | %s |" % " | ".join(total_cells))
    if security.skipped:
        lines += ["", "Not measured: " + "; ".join(
            "%s (%s)" % item for item in security.skipped.items()) + "."]
    errors = [r for r in security.rows
              if r.outcome in (Outcome.HANG, Outcome.ERROR)]
    if errors:
        lines += ["", "Not judged: " + "; ".join(
            "%s %s with %s: %s" % (r.kind, sizes.get(r.size, r.size),
                                   r.allocator, r.detail or
                                   r.outcome.value) for r in errors) + "."]
    return lines


def classic_section(data: Results, cells: Cells) -> list[str]:
    rows = classic.observations(cells, data.strace.rows)
    held = sum(1 for o in rows if o.verdict == "holds")
    measured = sum(1 for o in rows if o.verdict != "not measured")
    cores = data.machine.get("cores", "?")
    lines = ["", "## The classic observations, on this machine", "",
             "In 2014 (4-core Core 2 Quad) tcmalloc ran the malloc/free loop "
             "2.7x faster than glibc, yet the producer/consumer pairs 3.3x "
             "slower; with one lock, time grew with every added thread (8x "
             "slower than thread-local at 8 threads) while the data size "
             "stayed the same. On this machine (%s cores), %d of the %d "
             "observations that could be measured still hold:" % (
                 cores, held, measured), "",
             "| classic observation | this run | still holds? |",
             "|---|---|---|"]
    for obs in rows:
        lines.append("| %s | %s | %s |" % (obs.claim, obs.here, obs.verdict))
    return lines


def strace_section(data: Results) -> list[str]:
    strace = data.strace
    lines = ["", "## System calls (`strace -c -f`)", ""]
    if not strace.available:
        return lines + ["Not measured: %s." % strace.note]
    rows = strace.rows
    if not rows:
        return lines + ["No strace runs (no strace workload selected)."]
    cols = ["futex_calls", "futex_errors"] + list(STRACE_COLUMNS[1:])
    lines += ["One run per allocator of loop and prodcons; counts summed over "
              "all threads.", "",
              "| workload | allocator | futex calls | futex errors | %s |" %
              " | ".join(STRACE_COLUMNS[1:]),
              "|---|---|" + "---|" * len(cols)]
    for row in rows:
        if row.ok and row.calls is not None:
            counts = asdict(row.calls)
            values = [str(counts[c]) for c in cols]
        else:
            values = ["FAILED"] + [""] * (len(cols) - 1)
        lines.append("| %s | %s | %s |" % (row.workload, row.allocator,
                                           " | ".join(values)))
    return lines


def failed_section(data: Results) -> list[str]:
    # (workload, point, allocator, rep counted from 0, reason)
    failed = [(r.workload, r.point, r.allocator, r.rep, r.reason)
              for r in data.runs if not r.ok]
    failed += [(r.workload, "strace", r.allocator, 0, r.reason)
               for r in data.strace.rows if not r.ok]
    failed += [(fastpath_mod.NAME, r.mix.title, r.allocator, 0, r.reason)
               for r in data.fastpath.rows if r.measured and not r.ok]
    lines = ["", "## Failed runs", ""]
    if not failed:
        if any(w.is_program for w in data.workloads):
            return lines + ["None: every run exited 0 (and every workload "
                            "printed `check ok`)."]
        return lines + ["None: every run exited 0 and printed `check ok`."]
    lines += ["| workload | point | allocator | rep | reason |",
              "|---|---|---|---|---|"]
    for workload, point, allocator, rep, reason in failed:
        lines.append("| %s | %s | %s | %s | %s |" % (
            workload, point, allocator, rep + 1, reason))
    return lines


def allocator_section(data: Results) -> list[str]:
    lines = ["", "## Allocators", "",
             "| allocator | status | library | package | version | note |",
             "|---|---|---|---|---|---|"]
    repo = data.repo
    for alloc in data.allocators:
        status = "found" if alloc.found else "**missing**"
        path = alloc.path or "–"
        if repo and path.startswith(repo + "/"):
            path = path[len(repo) + 1:]
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            alloc.name, status, path,
            alloc.package or "–", alloc.version or "–",
            alloc.note.replace(repo + "/", "") if repo else alloc.note))
    missing = data.missing_allocators()
    if missing:
        lines += ["", "Missing: %s." % ", ".join(missing)]
    return lines


def machine_section(data: Results) -> list[str]:
    lines = ["", "## Machine", ""]
    for key, value in data.machine.items():
        lines.append("- %s: %s" % (key, value))
    return lines


def header_section(data: Results) -> list[str]:
    plots = data.plots
    programs = any(w.is_program for w in data.workloads)
    builtin = not programs or not all(w.is_program for w in data.workloads)
    lines = ["# Allocator experiments", "",
             "- command: `%s`" % data.command,
             "- mode: %s, %s repetitions per cell (median shown)" % (
                 data.mode.value if data.mode else "?", data.reps),
             "- started %s, took %s s" % (
                 data.started,
                 "?" if data.duration_s is None else data.duration_s),
             "- cells show the median; %sthe best of each row is **bold**; "
             "FAILED = a run crashed, timed out or failed its own check%s" % (
                 "(0.50x) is the ratio to glibc; " if builtin else "",
                 "; a program's run failed when it exited non-zero"
                 if programs else "")]
    if data.slow:
        lines.append("- %s: a cell whose first run took over %g s ran only "
                     "once" % (ONCE_MARK, data.slow))
    if data.interrupted:
        lines.append("- **interrupted**: these are partial results")
    if not plots.available:
        lines.append("- plots: none (%s)" % plots.note)
    missing = data.missing_allocators()
    if missing:
        lines.append("- missing allocators: %s" % ", ".join(missing))
    return lines


def program_title(program: Program) -> str:
    command = "`%s`" % program.command.replace("`", "'")
    return "%s: %s" % (program.name, command) if program.named else command


def first_failure(data: Results, name: str, alloc: str) -> Run | None:
    """The first failed run of a program's cell, or None."""
    return next((r for r in data.runs if r.workload == name
                 and r.allocator == alloc and not r.ok), None)


# {measure: (lowest value, bold value)} over a program's successful cells
Lows = dict[str, tuple[float | None, float | None]]


def program_row(cell: CellSummary, data: Results, name: str, lows: Lows,
                reps: int) -> str:
    """One allocator's row.  lows: {measure: (lowest value, bold value or
    None)} over the successful cells: None when they all measured alike."""
    if cell.failed:
        run = first_failure(data, name, cell.allocator)
        why = (run.reason if run else "") or "; ".join(cell.reasons)
        tail = stderr_tail(run.stderr_tail if run else "")
        if tail and not why.startswith("not started"):
            why += "; stderr: `%s`" % tail.replace("`", "'")
        if cell.failed_runs < cell.runs:
            why += " (%d of %d runs)" % (cell.failed_runs, cell.runs)
        return "| %s | FAILED: %s | | | | | | | %d |" % (
            cell.allocator, why.replace("|", "\\|"), cell.runs)
    shown = {}
    for measure, scale in (("wall", 1), ("maxrss_kb", 1024)):
        value = cell.value(measure)
        text = fmt_num(None if value is None else value / scale)
        shown[measure] = "**%s**" % text if value == lows[measure][1] \
            else text
    return "| %s | %s%s | %s–%s | %s | %s | %s | %s | %s | %d |" % (
        cell.allocator, shown["wall"], ONCE_MARK if cell.runs < reps else "",
        fmt_num(cell.wall_min), fmt_num(cell.wall_max),
        ratio(cell.wall, lows["wall"][0]), fmt_num(cell.user),
        fmt_num(cell.sys), shown["maxrss_kb"],
        ratio(cell.maxrss_kb, lows["maxrss_kb"][0]), cell.runs)


def program_section(entry: WorkloadEntry, cells: Cells,
                    data: Results) -> list[str]:
    program = entry.program
    assert program is not None
    name = program.name
    lines = ["", "### " + program_title(program), ""]
    where = program.cwd or "the harness's folder"
    exe = program.executable
    lines.append("Run in `%s`%s: glibc runs it as is, every other "
                 "allocator through `LD_PRELOAD` of its library (see "
                 "Allocators). A run succeeds when it exits with status 0; "
                 "the time is the whole program's wall time, the peak RSS "
                 "the largest resident set of the program itself." % (
                     where, ", `%s` is %s" % (program.argv[0], exe)
                     if exe and program.argv else ""))
    if program.error:
        lines += ["", "**Not run: %s**: every cell below is FAILED." %
                  program.error]
    allocs = workload_allocs(cells, name, data.allocators)
    own = [cells[(name, p, a)] for a in allocs for p in entry.points
           if (name, p, a) in cells]
    good = [c for c in own if not c.failed]
    lows: Lows = {}
    for measure in ("wall", "maxrss_kb"):
        values = [v for v in (c.value(measure) for c in good)
                  if v is not None]
        lows[measure] = (min(values, default=None),
                         best_values(values, higher=False))
    reps = data.reps
    if own:
        lines += ["", "| allocator | time (s) | spread (s) | vs fastest | "
                  "user (s) | sys (s) | peak RSS (MiB) | vs leanest | runs |",
                  "|---|---|---|---|---|---|---|---|---|"]
        lines += [program_row(c, data, name, lows, reps)
                  for c in own]
        if good:
            lines += ["", "Median of the runs; spread: the fastest and the "
                      "slowest run; the fastest time and the smallest peak "
                      "RSS in **bold**%s." % (
                          "; %s: ran only once" % ONCE_MARK
                          if any(c.runs < reps for c in good) else "")]
    else:
        lines += ["", "No runs."]
    skipped = ["%s (%s)" % (m.allocator, "allocator missing"
                            if m.reason.startswith("allocator missing")
                            else m.reason)
               for m in data.missing if m.workload == name]
    if skipped:
        lines += ["", "Not run here: %s." % "; ".join(skipped)]
    if entry.reproduce:
        lines += ["", "Reproduce: `%s`" % entry.reproduce]
    lines += plot_lines(data, name)
    return lines


def build_report(data: Results) -> str:
    """The report as Markdown text."""
    cells = summarize(data.runs)
    builtin = [w for w in data.workloads if not w.is_program]
    programs = [w for w in data.workloads if w.is_program]
    lines = header_section(data)
    lines += standing_section(data, cells)
    lines += paired_section(data)
    lines += fastpath_section(data)
    lines += security_section(data)
    if builtin or not programs:
        lines += classic_section(data, cells)
        lines += ["", "## Workloads"]
    for workload in builtin:
        lines += workload_section(workload, cells, data)
    if programs:
        lines += ["", "## Programs"]
    for program in programs:
        lines += program_section(program, cells, data)
    lines += strace_section(data)
    lines += failed_section(data)
    lines += allocator_section(data)
    lines += machine_section(data)
    return "\n".join(lines) + "\n"

"""The Markdown report, built from a results set (the dict of runs.json).

Sections: how it was made; where tlmalloc stands; the fast path
(instructions per malloc+free pair); the classic observations; one table
per workload (median of each measure, ratio to glibc, the best in each row
in bold, FAILED for a cell with a failed run), with its plot; one section
per user program (--program: a row per allocator with the median time, its
spread, user and sys time, peak RSS, ratios to the fastest and the
leanest, a failed cell's reason and stderr, the command that reruns it);
the system calls; the failed runs; the allocators (found and missing); the
machine.
"""

from . import classic
from . import fastpath as fastpath_mod
from .parse import STRACE_COLUMNS
from .programs import is_program, stderr_tail
from .stats import summarize

BASELINE = "glibc"


def higher_is_better(measure):
    return measure.endswith("per_sec") or measure.startswith("ops")


def to_display(measure, unit, value):
    """(value, unit) as shown: memory in MiB."""
    if measure == "maxrss_kb" or measure.endswith("_kb") or unit in ("kB",
                                                                    "KiB"):
        return value / 1024, "MiB"
    if unit == "B" or measure.endswith("_bytes"):
        return value / (1024 * 1024), "MiB"
    return value, unit


def ratio(value, base):
    """value / base as "1.23x", or "–" without a base."""
    return "%.2fx" % (value / base) if base else "–"


def fmt_num(value):
    size = abs(value)
    if size >= 1e9:
        return "%.2fG" % (value / 1e9)
    if size >= 1e6:
        return "%.2fM" % (value / 1e6)
    if size >= 100:
        return "%.0f" % value
    return ("%#.3g" % value).rstrip(".")


def measure_name(measure, unit):
    if measure == "wall":
        return "time (s)"
    if measure == "maxrss_kb":
        return "peak RSS (MiB)"
    shown_unit = to_display(measure, unit, 1.0)[1]
    return "%s (%s)" % (measure, shown_unit) if shown_unit else measure


def best_values(values, higher):
    """The best among values (None entries ignored), or None when fewer
    than two values or all equal: then no cell is better than another."""
    present = [v for v in values if v is not None]
    if len(present) < 2 or min(present) == max(present):
        return None
    return max(present) if higher else min(present)


ONCE_MARK = "†"
FASTPATH_TITLE = "Fast path: instructions per malloc+free pair (callgrind)"


def cell_text(cell, measure, baseline, best, reps=0):
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


def measures_of(workload, cells):
    """wall, peak RSS, then the workload's metrics (its own order first)."""
    keys = {k for c in cells for k in c.metrics}
    ordered = [k for k in workload.get("metric_order", []) if k in keys]
    ordered += sorted(keys - set(ordered))
    return ["wall", "maxrss_kb"] + ordered


def row_cells(cells, workload, point, allocs):
    return [cells.get((workload, point, a)) for a in allocs]


def table_row(point, measure, row, allocs, reps=0):
    unit = next((c.units.get(measure, "") for c in row if c), "")
    values = [None if c is None or c.failed else c.value(measure) for c in row]
    best = best_values(values, higher_is_better(measure))
    base = None
    if BASELINE in allocs:
        base = values[allocs.index(BASELINE)] or None
    texts = [cell_text(c, measure, base, best, reps) for c in row]
    return "| %s | %s | %s |" % (point, measure_name(measure, unit),
                                 " | ".join(texts))


def workload_allocs(cells, workload, allocators):
    present = {k[2] for k in cells if k[0] == workload}
    order = [a["name"] for a in allocators]
    return [a for a in order if a in present]


def workload_table(workload, cells, allocators, reps=0):
    name = workload["name"]
    allocs = workload_allocs(cells, name, allocators)
    if not allocs:
        return ["No runs."]
    own = [c for k, c in cells.items() if k[0] == name]
    lines = ["| point | measure | %s |" % " | ".join(allocs),
             "|---|---|" + "---|" * len(allocs)]
    for point in workload["points"]:
        for measure in measures_of(workload, own):
            row = row_cells(cells, name, point, allocs)
            if any(c is not None for c in row):
                lines.append(table_row(point, measure, row, allocs, reps))
    return lines


def missing_note(data, name):
    """Who did not run this workload and why (missing allocators briefly:
    the Allocators section says why they are missing)."""
    absent = {a["name"] for a in data["allocators"] if not a["found"]}
    reasons = {}
    for miss in data.get("missing", []):
        if miss["workload"] == name:
            why = "allocator missing" if miss["allocator"] in absent \
                else miss["reason"]
            reasons.setdefault(miss["allocator"], why)
    if not reasons:
        return []
    return ["", "Not run here: " + "; ".join(
        "%s (%s)" % item for item in reasons.items()) + "."]


def plot_lines(data, name):
    files = data.get("plots", {}).get("files", {}).get(name, [])
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


def workload_section(workload, cells, data):
    lines = ["", "### %s (`%s`)" % (workload["title"], workload["name"]), "",
             workload.get("summary", ""), ""]
    lines += workload_table(workload, cells, data["allocators"],
                            data.get("reps", 0))
    if workload["name"] == "scaling":
        lines += ["", "tlmalloc and tlmalloc-lock run `scaling_ts --api "
                  "nolock` / `--api lock` (ts_malloc_nolock / ts_malloc_lock); "
                  "their data_bytes is get_data_segment_size(), the others' "
                  "is the process RSS."]
    lines += missing_note(data, workload["name"])
    lines += plot_lines(data, workload["name"])
    return lines


def ranking(cells, workload, point, allocators):
    """[(allocator, wall)] of the successful cells, fastest first."""
    ranked = []
    for alloc in allocators:
        if alloc == "tlmalloc-lock":
            continue
        cell = cells.get((workload, point, alloc))
        if cell is not None and not cell.failed and cell.wall is not None:
            ranked.append((alloc, cell.wall))
    return sorted(ranked, key=lambda item: item[1])


def standing_row(cells, workload, point, order):
    ranked = ranking(cells, workload["name"], point, order)
    cell = cells.get((workload["name"], point, "tlmalloc"))
    if cell is None:
        return None
    if cell.failed:
        return "| %s | %s | FAILED | | | | |" % (workload["name"], point)
    names = [a for a, _ in ranked]
    glibc = dict(ranked).get(BASELINE)
    vs_glibc = ratio(cell.wall, glibc)
    base = cells.get((workload["name"], point, BASELINE))
    rss = "–"
    if base is not None and not base.failed:
        rss = ratio(cell.maxrss_kb, base.maxrss_kb)
    best, best_wall = ranked[0]
    return "| %s | %s | %s s | %s | %d of %d | %s (%s s) | %s |" % (
        workload["name"], point, fmt_num(cell.wall), vs_glibc,
        names.index("tlmalloc") + 1, len(names), best, fmt_num(best_wall),
        rss)


def fastpath_standing_row(table, mix):
    """The standing table's row for one size mix of the fast path."""
    own = table.get("tlmalloc", {}).get(mix)
    if own is None or not own["measured"]:
        return None
    title = fastpath_mod.MIX_TITLES[mix]
    if not own["ok"]:
        return "| fastpath | %s | FAILED | | | | |" % title
    ranked = sorted((r["instructions_per_pair"], name)
                    for name, mixes in table.items()
                    for r in [mixes.get(mix)]
                    if name != fastpath_mod.LOOP and r and r["ok"])
    names = [name for _, name in ranked]
    glibc = table.get(BASELINE, {}).get(mix)
    value = own["instructions_per_pair"]
    vs_glibc = ratio(value, glibc["instructions_per_pair"]
                     if glibc and glibc["ok"] else 0)
    return "| fastpath | %s | %.1f instr. | %s | %d of %d | %s (%.1f) | – |" \
        % (title, value, vs_glibc, names.index("tlmalloc") + 1, len(names),
        ranked[0][1], ranked[0][0])


def fastpath_budget_line(data, table):
    """tlmalloc's fast path against the issue's budget, in one sentence."""
    head = "Fast path (one thread, callgrind): "
    fastpath = data.get("fastpath", {})
    if not fastpath.get("available", False):
        return head + "not measured: %s." % fastpath.get("note", "not run")
    line = head + budget_clause(table, "tlmalloc")
    if "tlmalloc-fast" in table:
        line += " The fast variant (no checks of interior and double " \
            "frees): " + budget_clause(table, "tlmalloc-fast")
    return line


def budget_clause(table, name):
    """One library's figures against the budget, as a sentence."""
    own = table.get(name, {})
    rows = [own.get(mix) for mix in fastpath_mod.MIXES]
    if not all(rows) or not all(r["measured"] for r in rows):
        return "%s not measured." % name
    if not all(r["ok"] for r in rows):
        return "%s FAILED (see Failed runs)." % name
    values = [r["instructions_per_pair"] for r in rows]
    within = all(v <= fastpath_mod.BUDGET for v in values)
    return "%s %s instructions per malloc+free pair (64 bytes / size " \
        "mix), loop included; the budget is %d: **%s**." % (
            name, " / ".join("%.1f" % v for v in values),
            fastpath_mod.BUDGET, "within" if within else "over")


def standing_section(data, cells):
    order = [a["name"] for a in data["allocators"]]
    lines = ["", "## Where tlmalloc stands", ""]
    rows = []
    for workload in data["workloads"]:
        for point in workload["points"]:
            row = standing_row(cells, workload, point, order)
            if row:
                rows.append(row)
    table = fastpath_table(data)
    rows += [r for r in (fastpath_standing_row(table, mix)
                         for mix in fastpath_mod.MIXES) if r]
    budget = ["", fastpath_budget_line(data, table)]
    if not rows:
        note = next((a["note"] for a in data["allocators"]
                     if a["name"] == "tlmalloc"), "")
        return lines + ["tlmalloc was not run%s." % (note and ": " + note)] \
            + budget
    lines += ["Median wall time; rank among the allocators that ran the "
              "point without failing (1 = fastest); peak RSS as a ratio to "
              "glibc's. The fastpath rows count instructions per malloc+free "
              "pair instead (1 = fewest).", "",
              "| workload | point | tlmalloc | vs glibc | rank | fastest | "
              "peak RSS vs glibc |",
              "|---|---|---|---|---|---|---|"]
    return lines + rows + budget


def fastpath_table(data):
    """{allocator: {mix: row}}: the report's allocators in their order,
    then any other, the loop's row last."""
    table = {}
    for row in data.get("fastpath", {}).get("rows", []):
        table.setdefault(row["allocator"], {})[row["mix"]] = row
    order = [a["name"] for a in data.get("allocators", [])]
    names = [n for n in order if n in table]
    names += [n for n in table if n not in names and n != fastpath_mod.LOOP]
    if fastpath_mod.LOOP in table:
        names.append(fastpath_mod.LOOP)
    return {name: table[name] for name in names}


def fastpath_cell(row, best):
    if row is None:
        return "–"
    if not row["measured"]:
        return "not measured"
    if not row["ok"]:
        return "FAILED"
    value = row["instructions_per_pair"]
    text = "%.1f" % value
    return "**%s**" % text if best is not None and value == best else text


def fastpath_section(data):
    fastpath = data.get("fastpath", {})
    lines = ["", "## " + FASTPATH_TITLE, ""]
    if not fastpath.get("available", False):
        return lines + ["Not measured: %s." % fastpath.get("note", "not run")]
    table = fastpath_table(data)
    mixes = fastpath_mod.MIXES
    pairs = fastpath.get("pairs")
    lengths = "%d and %d pairs" % tuple(pairs) if pairs else "two lengths"
    lines += ["What one more malloc+free pair costs on one thread, in "
              "instructions counted by callgrind: `build/bench/fastpath` run "
              "at %s, the difference divided by the difference in pairs, so "
              "start-up cancels out. Exact and repeatable: one run, no "
              "medians. The figures include the benchmark loop's own "
              "instructions, the same for every allocator (last row); the "
              "budget is %d per pair, loop included. Lower is better; the "
              "best of each column is **bold**." % (lengths,
                                                    fastpath_mod.BUDGET), "",
              "| allocator | %s |" % " | ".join(
                  fastpath_mod.MIX_TITLES[m] for m in mixes),
              "|---|" + "---|" * len(mixes)]
    best = {}
    for mix in mixes:
        values = [r[mix]["instructions_per_pair"] if r.get(mix) and
                  r[mix]["ok"] else None
                  for name, r in table.items() if name != fastpath_mod.LOOP]
        best[mix] = best_values(values, higher=False)
    for name, row in table.items():
        mix_best = best if name != fastpath_mod.LOOP else {}
        label = "(the loop itself)" if name == fastpath_mod.LOOP else name
        lines.append("| %s | %s |" % (label, " | ".join(
            fastpath_cell(row.get(m), mix_best.get(m)) for m in mixes)))
    skipped = {name: next(iter(row.values()))["reason"]
               for name, row in table.items()
               if not any(r["measured"] for r in row.values())}
    if skipped:
        lines += ["", "Not measured: " + "; ".join(
            "%s (%s)" % item for item in skipped.items()) + "."]
    if fastpath.get("command"):
        lines += ["", "Reproduce: `%s`" % fastpath["command"]]
    return lines


def classic_section(data, cells):
    rows = classic.observations(cells, data.get("strace", {}).get("rows", []))
    held = sum(1 for o in rows if o.verdict == "holds")
    measured = sum(1 for o in rows if o.verdict != "not measured")
    cores = data.get("machine", {}).get("cores", "?")
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


def strace_section(data):
    strace = data.get("strace", {})
    lines = ["", "## System calls (`strace -c -f`)", ""]
    if not strace.get("available", False):
        return lines + ["Not measured: %s." % strace.get("note",
                                                        "strace not run")]
    rows = strace.get("rows", [])
    if not rows:
        return lines + ["No strace runs (no strace workload selected)."]
    cols = ["futex_calls", "futex_errors"] + list(STRACE_COLUMNS[1:])
    lines += ["One run per allocator of loop and prodcons; counts summed over "
              "all threads.", "",
              "| workload | allocator | futex calls | futex errors | %s |" %
              " | ".join(STRACE_COLUMNS[1:]),
              "|---|---|" + "---|" * len(cols)]
    for row in rows:
        if row.get("ok"):
            values = [str(row.get(c, "")) for c in cols]
        else:
            values = ["FAILED"] + [""] * (len(cols) - 1)
        lines.append("| %s | %s | %s |" % (row["workload"], row["allocator"],
                                           " | ".join(values)))
    return lines


def failed_section(data):
    failed = [r for r in data.get("runs", []) if not r["ok"]]
    failed += [dict(r, rep=0) for r in data.get("strace", {}).get("rows", [])
               if not r.get("ok")]
    failed += [{"workload": fastpath_mod.NAME, "allocator": r["allocator"],
                "point": fastpath_mod.MIX_TITLES.get(r["mix"], r["mix"]),
                "rep": 0, "reason": r.get("reason", "")}
               for r in data.get("fastpath", {}).get("rows", [])
               if r.get("measured") and not r.get("ok")]
    lines = ["", "## Failed runs", ""]
    if not failed:
        if any(is_program(w) for w in data.get("workloads", [])):
            return lines + ["None: every run exited 0 (and every workload "
                            "printed `check ok`)."]
        return lines + ["None: every run exited 0 and printed `check ok`."]
    lines += ["| workload | point | allocator | rep | reason |",
              "|---|---|---|---|---|"]
    for run in failed:
        lines.append("| %s | %s | %s | %s | %s |" % (
            run["workload"], run.get("point", "strace"), run["allocator"],
            run.get("rep", 0) + 1, run.get("reason", "")))
    return lines


def allocator_section(data):
    lines = ["", "## Allocators", "",
             "| allocator | status | library | package | version | note |",
             "|---|---|---|---|---|---|"]
    repo = data.get("repo", "")
    for alloc in data["allocators"]:
        status = "found" if alloc["found"] else "**missing**"
        path = alloc.get("path") or "–"
        if repo and path.startswith(repo + "/"):
            path = path[len(repo) + 1:]
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            alloc["name"], status, path,
            alloc.get("package") or "–", alloc.get("version") or "–",
            alloc.get("note", "").replace(repo + "/", "") if repo
            else alloc.get("note", "")))
    missing = [a["name"] for a in data["allocators"] if not a["found"]]
    if missing:
        lines += ["", "Missing: %s." % ", ".join(missing)]
    return lines


def machine_section(data):
    lines = ["", "## Machine", ""]
    for key, value in data.get("machine", {}).items():
        lines.append("- %s: %s" % (key, value))
    return lines


def header_section(data):
    plots = data.get("plots", {})
    programs = any(is_program(w) for w in data.get("workloads", []))
    builtin = not programs or not all(is_program(w)
                                      for w in data["workloads"])
    lines = ["# Allocator experiments", "",
             "- command: `%s`" % data.get("command", ""),
             "- mode: %s, %s repetitions per cell (median shown)" % (
                 data.get("mode", "?"), data.get("reps", "?")),
             "- started %s, took %s s" % (data.get("started", "?"),
                                         data.get("duration_s", "?")),
             "- cells show the median; %sthe best of each row is **bold**; "
             "FAILED = a run crashed, timed out or failed its own check%s" % (
                 "(0.50x) is the ratio to glibc; " if builtin else "",
                 "; a program's run failed when it exited non-zero"
                 if programs else "")]
    if data.get("slow"):
        lines.append("- %s: a cell whose first run took over %g s ran only "
                     "once" % (ONCE_MARK, data["slow"]))
    if data.get("interrupted"):
        lines.append("- **interrupted**: these are partial results")
    if not plots.get("available", True):
        lines.append("- plots: none (%s)" % plots.get("note", ""))
    missing = [a["name"] for a in data["allocators"] if not a["found"]]
    if missing:
        lines.append("- missing allocators: %s" % ", ".join(missing))
    return lines


def program_title(program):
    command = "`%s`" % program["command"].replace("`", "'")
    return "%s: %s" % (program["name"], command) if program.get("named") \
        else command


def first_failure(data, name, alloc):
    """The first failed run of a program's cell, or None."""
    return next((r for r in data.get("runs", []) if r["workload"] == name
                 and r["allocator"] == alloc and not r["ok"]), None)


def program_row(cell, data, name, lows, reps):
    """One allocator's row.  lows: {measure: (lowest value, bold value or
    None)} over the successful cells: None when they all measured alike."""
    if cell.failed:
        run = first_failure(data, name, cell.allocator) or {}
        why = run.get("reason", "") or "; ".join(cell.reasons)
        tail = stderr_tail(run.get("stderr_tail", ""))
        if tail and not why.startswith("not started"):
            why += "; stderr: `%s`" % tail.replace("`", "'")
        if cell.failed_runs < cell.runs:
            why += " (%d of %d runs)" % (cell.failed_runs, cell.runs)
        return "| %s | FAILED: %s | | | | | | | %d |" % (
            cell.allocator, why.replace("|", "\\|"), cell.runs)
    shown = {}
    for measure, scale in (("wall", 1), ("maxrss_kb", 1024)):
        value = cell.value(measure)
        text = fmt_num(value / scale)
        shown[measure] = "**%s**" % text if value == lows[measure][1] \
            else text
    return "| %s | %s%s | %s–%s | %s | %s | %s | %s | %s | %d |" % (
        cell.allocator, shown["wall"], ONCE_MARK if cell.runs < reps else "",
        fmt_num(cell.wall_min), fmt_num(cell.wall_max),
        ratio(cell.wall, lows["wall"][0]), fmt_num(cell.user),
        fmt_num(cell.sys), shown["maxrss_kb"],
        ratio(cell.maxrss_kb, lows["maxrss_kb"][0]), cell.runs)


def program_section(program, cells, data):
    name = program["name"]
    lines = ["", "### " + program_title(program), ""]
    where = program.get("cwd") or "the harness's folder"
    exe = program.get("executable")
    lines.append("Run in `%s`%s: glibc runs it as is, every other "
                 "allocator through `LD_PRELOAD` of its library (see "
                 "Allocators). A run succeeds when it exits with status 0; "
                 "the time is the whole program's wall time, the peak RSS "
                 "the largest resident set of the program itself." % (
                     where, ", `%s` is %s" % (program["argv"][0], exe)
                     if exe and program.get("argv") else ""))
    if program.get("error"):
        lines += ["", "**Not run: %s**: every cell below is FAILED." %
                  program["error"]]
    allocs = workload_allocs(cells, name, data["allocators"])
    own = [cells[(name, p, a)] for a in allocs for p in program["points"]
           if (name, p, a) in cells]
    good = [c for c in own if not c.failed]
    lows = {}
    for measure in ("wall", "maxrss_kb"):
        values = [c.value(measure) for c in good]
        lows[measure] = (min(values, default=None),
                         best_values(values, higher=False))
    reps = data.get("reps", 0)
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
    skipped = ["%s (%s)" % (m["allocator"], "allocator missing"
                            if m["reason"].startswith("allocator missing")
                            else m["reason"])
               for m in data.get("missing", []) if m["workload"] == name]
    if skipped:
        lines += ["", "Not run here: %s." % "; ".join(skipped)]
    if program.get("reproduce"):
        lines += ["", "Reproduce: `%s`" % program["reproduce"]]
    lines += plot_lines(data, name)
    return lines


def build_report(data):
    """The report as Markdown text."""
    cells = summarize(data.get("runs", []))
    builtin = [w for w in data["workloads"] if not is_program(w)]
    programs = [w for w in data["workloads"] if is_program(w)]
    lines = header_section(data)
    lines += standing_section(data, cells)
    lines += fastpath_section(data)
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

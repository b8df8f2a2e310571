"""The results folder: one new folder per run, never overwritten.

results/<YYYYmmdd-HHMMSS>[-N]/
    runs.csv, runs.json    every run (runs.json also holds the machine,
                           the allocators, the command, the strace table,
                           the fast-path table and the security table)
    strace.csv             the syscall counts of the strace runs
    fastpath.csv           instructions per malloc+free pair (callgrind),
                           one row per allocator and size mix
    security.csv           the misuse programs' outcomes, one row per
                           kind, size and allocator
    report.md              the report
    plots/*.png, *.svg     the plots
results/latest -> the newest folder
"""

import csv
import json
import time
from collections.abc import Iterable, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

from .records import FastpathRow, Mix, Results, Run, SecurityRow, StraceRow

RUN_COLUMNS = ("workload", "point", "allocator", "rep", "ok", "reason",
               "wall", "user", "sys", "maxrss_kb", "exit_code", "signal",
               "command")

STRACE_CSV_COLUMNS = ("workload", "allocator", "ok", "reason", "wall",
                  "futex_calls", "futex_errors", "mmap", "munmap", "madvise",
                  "brk", "mremap", "total_calls")

# fastpath.csv: instructions_per_pair is empty unless ok; measured False is
# an allocator the pass does not apply to (or missing), ok False with
# measured True a failed measurement
FASTPATH_COLUMNS = ("allocator", "mix", "instructions_per_pair", "ok",
                    "measured", "reason")

# security.csv: outcome caught, not caught, hang or error; detail the
# signal that stopped the program, or what went wrong
SECURITY_COLUMNS = ("kind", "size", "allocator", "outcome", "detail")


def new_run_dir(root: Path, now: float | None = None) -> Path:
    """Creates and returns a folder under root that did not exist before."""
    root.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    for n in range(1, 1000):
        path = root / (stamp if n == 1 else "%s-%d" % (stamp, n))
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError("no free results folder name under %s" % root)


def point_latest(root: Path, run_dir: Path) -> bool:
    """Makes root/latest a relative symlink to run_dir (when it can)."""
    link = root / "latest"
    temp = root / "latest.new"
    try:
        if temp.is_symlink() or temp.exists():
            temp.unlink()
        temp.symlink_to(run_dir.name)
        temp.replace(link)
    except OSError:
        return False
    return True


def metric_keys(runs: Iterable[Run]) -> list[str]:
    return sorted({k for r in runs for k in r.metrics})


def csv_cell(value: Any) -> Any:
    """A CSV cell: None as empty, an enum by its value."""
    if value is None:
        return ""
    return value.value if isinstance(value, Enum) else value


def write_runs_csv(path: Path, runs: Sequence[Run]) -> None:
    keys = metric_keys(runs)
    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(list(RUN_COLUMNS) + ["metric:" + k for k in keys])
        for run in runs:
            row = [getattr(run, c) for c in RUN_COLUMNS]
            row[RUN_COLUMNS.index("command")] = " ".join(run.command)
            row += [run.metrics.get(k, "") for k in keys]
            out.writerow(row)


def write_strace_csv(path: Path, rows: Iterable[StraceRow]) -> None:
    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(STRACE_CSV_COLUMNS)
        for row in rows:
            flat = row.to_json()
            out.writerow([flat.get(c, "") for c in STRACE_CSV_COLUMNS])


def write_fastpath_csv(path: Path, rows: Iterable[FastpathRow]) -> None:
    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(FASTPATH_COLUMNS)
        for row in rows:
            out.writerow([csv_cell(getattr(row, c))
                          for c in FASTPATH_COLUMNS])


def write_security_csv(path: Path, rows: Iterable[SecurityRow]) -> None:
    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(SECURITY_COLUMNS)
        for row in rows:
            out.writerow([csv_cell(getattr(row, c))
                          for c in SECURITY_COLUMNS])


def read_fastpath_csv(path: Path) -> list[FastpathRow]:
    """The rows write_fastpath_csv() wrote, with their types back."""
    rows = []
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            value = row.get("instructions_per_pair", "")
            rows.append(FastpathRow(
                row["allocator"], Mix(row["mix"]),
                float(value) if value else None,
                ok=row.get("ok") == "True",
                measured=row.get("measured", "True") == "True",
                reason=row.get("reason", "")))
    return rows


def write_json(path: Path, results: Results) -> None:
    # keys in the order the run made them: --report-only rebuilds the
    # report from this file, and the machine's lines and the lists of what
    # was not measured are printed in that order
    with path.open("w") as handle:
        json.dump(results.to_json(), handle, indent=1)
        handle.write("\n")


def load_json(path: Path) -> dict[str, Any]:
    """runs.json as written (Results.from_json reads it)."""
    with path.open() as handle:
        data: dict[str, Any] = json.load(handle)
    return data

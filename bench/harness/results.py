"""The results folder: one new folder per run, never overwritten.

results/<YYYYmmdd-HHMMSS>[-N]/
    runs.csv, runs.json    every run (runs.json also holds the machine,
                           the allocators, the command, the strace table
                           and the fast-path table)
    strace.csv             the syscall counts of the strace runs
    fastpath.csv           instructions per malloc+free pair (callgrind),
                           one row per allocator and size mix
    report.md              the report
    plots/*.png, *.svg     the plots
results/latest -> the newest folder
"""

import csv
import json
import os
import time

RUN_COLUMNS = ("workload", "point", "allocator", "rep", "ok", "reason",
               "wall", "user", "sys", "maxrss_kb", "exit_code", "signal",
               "command")


# fastpath.csv: instructions_per_pair is empty unless ok; measured False is
# an allocator the pass does not apply to (or missing), ok False with
# measured True a failed measurement
FASTPATH_COLUMNS = ("allocator", "mix", "instructions_per_pair", "ok",
                    "measured", "reason")


def new_run_dir(root, now=None):
    """Creates and returns a folder under root that did not exist before."""
    os.makedirs(root, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    for n in range(1, 1000):
        name = stamp if n == 1 else "%s-%d" % (stamp, n)
        path = os.path.join(root, name)
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        return path
    raise RuntimeError("no free results folder name under %s" % root)


def point_latest(root, run_dir):
    """Makes root/latest a relative symlink to run_dir (when it can)."""
    link = os.path.join(root, "latest")
    temp = link + ".new"
    try:
        if os.path.lexists(temp):
            os.unlink(temp)
        os.symlink(os.path.basename(run_dir), temp)
        os.replace(temp, link)
    except OSError:
        return False
    return True


def metric_keys(runs):
    return sorted({k for r in runs for k in r.get("metrics", {})})


def write_runs_csv(path, runs):
    keys = metric_keys(runs)
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(list(RUN_COLUMNS) + ["metric:" + k for k in keys])
        for run in runs:
            row = [run.get(c, "") for c in RUN_COLUMNS]
            row[RUN_COLUMNS.index("command")] = " ".join(run.get("command", []))
            row += [run.get("metrics", {}).get(k, "") for k in keys]
            out.writerow(row)


def write_strace_csv(path, rows):
    columns = ("workload", "allocator", "ok", "reason", "wall", "futex_calls",
               "futex_errors", "mmap", "munmap", "madvise", "brk", "mremap",
               "total_calls")
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(columns)
        for row in rows:
            out.writerow([row.get(c, "") for c in columns])


def write_fastpath_csv(path, rows):
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(FASTPATH_COLUMNS)
        for row in rows:
            out.writerow(["" if row.get(c) is None else row.get(c)
                          for c in FASTPATH_COLUMNS])


def read_fastpath_csv(path):
    """The rows write_fastpath_csv() wrote, with their types back."""
    rows = []
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            value = row.get("instructions_per_pair", "")
            rows.append({
                "allocator": row["allocator"], "mix": row["mix"],
                "instructions_per_pair": float(value) if value else None,
                "ok": row.get("ok") == "True",
                "measured": row.get("measured", "True") == "True",
                "reason": row.get("reason", "")})
    return rows


def write_json(path, data):
    with open(path, "w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write("\n")


def load_json(path):
    with open(path) as handle:
        return json.load(handle)

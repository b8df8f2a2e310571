"""The results folder: one new folder per run, never overwritten.

results/<YYYYmmdd-HHMMSS>[-N]/
    runs.csv, runs.json    every run (runs.json also holds the machine,
                           the allocators, the command and the strace table)
    strace.csv             the syscall counts of the strace runs
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


def write_json(path, data):
    with open(path, "w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write("\n")


def load_json(path):
    with open(path) as handle:
        return json.load(handle)

"""The experiments' command line: find, run, record, report.

    python3 -m bench.harness [--quick|--full] [--only W,...] [--alloc A,...]
                             [--program [NAME=]'CMD ARGS' ...]
                             [--reps N] [--out DIR] [NAME=/path/lib.so ...]

Runs every (workload, point, allocator) cell --reps times in the order of
schedule.interleave(), then loop and prodcons once per allocator under
strace, then the fast-path pass (fastpath.py: callgrind's instructions per
malloc+free pair, through bench/fastpath.sh), and writes a new folder
under --out (see results.py) with the raw runs, the report and the plots.
Progress goes to stderr.  With --program (programs.py), the given commands
run under every allocator instead of the built-in workloads; --only adds
built-in workloads (or the fast-path pass) back.
"""

import argparse
import datetime
import os
import re
import shlex
import shutil
import sys
import time

from . import allocators as alloc_mod
from . import fastpath as fastpath_mod
from . import machine, plots, report, results, workloads
from . import programs as programs_mod
from .parse import parse_strace, strace_summary
from .runner import Measured, judge, run_measured
from .schedule import Cell, Progress, interleave

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
QUICK_REPS, FULL_REPS = 3, 5
QUICK_TIMEOUT, FULL_TIMEOUT = 120, 1200
QUICK_SLOW = 2.0       # quick mode: cells slower than this run once
KEEP_OUTPUT = 1500     # characters of a failed run's output kept


def split_list(text):
    return [item for item in (text or "").split(",") if item]


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python3 -m bench.harness",
        description="Run the allocator experiments and write a report.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true",
                      help="small sizes, about 5 minutes (the default)")
    mode.add_argument("--full", action="store_true",
                      help="the full sizes of the classic experiments")
    parser.add_argument("--only", metavar="WORKLOAD,...", default="",
                        help="run only these workloads; `fastpath` names "
                             "the callgrind pass (run by default)")
    parser.add_argument("--alloc", metavar="NAME,...", default="",
                        help="run only these allocators")
    parser.add_argument("--program", action="append", default=[],
                        metavar="[NAME=]'CMD ARGS'",
                        help="run this command under every allocator "
                             "(repeatable; success = exit status 0); then "
                             "only the programs run, unless --only names "
                             "workloads or fastpath too")
    parser.add_argument("--reps", type=int, default=0,
                        help="repetitions per cell (quick 3, full 5)")
    parser.add_argument("--out", default=os.path.join(REPO, "results"),
                        help="results root; each run makes a new folder")
    parser.add_argument("--build", default=os.path.join(REPO, "build"),
                        help="CMake build folder (default build/)")
    parser.add_argument("--bench-dir", default="",
                        help="where the workload programs are "
                             "(default BUILD/bench)")
    parser.add_argument("--lib-dir", action="append", default=[],
                        help="look for the peer libraries here (repeatable; "
                             "replaces the system folders)")
    parser.add_argument("--timeout", type=float, default=0,
                        help="seconds before a run counts as failed "
                             "(quick %d, full %d)" % (QUICK_TIMEOUT,
                                                      FULL_TIMEOUT))
    parser.add_argument("--slow", type=float, default=-1,
                        help="a cell whose first run takes longer than this "
                             "many seconds runs only once (quick %g, full "
                             "off; 0 = off)" % QUICK_SLOW)
    parser.add_argument("--no-strace", action="store_true",
                        help="skip the strace runs")
    parser.add_argument("--no-fastpath", action="store_true",
                        help="skip the fast-path pass (callgrind)")
    parser.add_argument("--no-plots", action="store_true",
                        help="skip the plots")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when any run failed")
    parser.add_argument("--list", action="store_true",
                        help="list the workloads and allocators, run nothing")
    parser.add_argument("--report-only", metavar="RUN_DIR", default="",
                        help="rebuild report.md and plots from RUN_DIR")
    parser.add_argument("extra", nargs="*", metavar="NAME=/path/lib.so",
                        help="more allocators to preload")
    args = parser.parse_args(argv)
    if args.reps < 0:
        parser.error("--reps must be positive")
    args.reps = args.reps or (FULL_REPS if args.full else QUICK_REPS)
    args.timeout_given = args.timeout
    args.timeout = args.timeout or (FULL_TIMEOUT if args.full
                                    else QUICK_TIMEOUT)
    args.bench_dir = args.bench_dir or os.path.join(args.build, "bench")
    # the quick mode's run-once rule is for the built-in suite; a user
    # program keeps its repetitions unless --slow is given
    args.slow_programs = args.slow >= 0
    if args.slow < 0:
        args.slow = 0 if args.full else QUICK_SLOW
    return args


def tlmalloc_version():
    """MAJOR.MINOR.PATCH from include/tlmalloc.h, with git describe."""
    version = ""
    try:
        with open(os.path.join(REPO, "include", "tlmalloc.h")) as handle:
            text = handle.read()
        parts = [re.search(r"#define\s+TLMALLOC_VERSION_%s\s+(\d+)" % part,
                           text) for part in ("MAJOR", "MINOR", "PATCH")]
        if all(parts):
            version = ".".join(p.group(1) for p in parts)
    except OSError:
        pass
    described = machine.run_text(["git", "-C", REPO, "describe", "--always",
                                  "--dirty"])
    return " ".join(v for v in (version, described and "(%s)" % described) if v)


def find_allocators(args):
    allocs = alloc_mod.discover(args.build, args.lib_dir or None, args.extra,
                                args.bench_dir)
    for alloc in allocs:
        alloc_mod.probe_preload(alloc)
    machine.add_versions(allocs, tlmalloc_version())
    extra_names = [spec.partition("=")[0] for spec in args.extra]
    chosen = alloc_mod.select(allocs, split_list(args.alloc))
    return chosen + [a for a in allocs
                     if a.name in extra_names and a not in chosen]


def plan(chosen_workloads, allocs, args):
    """(jobs {Cell: (argv, env)}, missing [dict]) for every cell."""
    jobs, missing = {}, []
    for work in chosen_workloads:
        for point in work.points(args.full):
            point_args = workloads.point_args(point, args.full)
            for alloc in allocs:
                try:
                    argv, env = alloc_mod.command_for(
                        work, point, alloc, args.bench_dir, point_args)
                except alloc_mod.NotApplicable:
                    continue
                except alloc_mod.Missing as why:
                    missing.append({"workload": work.name,
                                    "point": point.label,
                                    "allocator": alloc.name,
                                    "reason": str(why)})
                    continue
                jobs[Cell(work.name, point.label, alloc.name)] = (argv, env,
                                                                  None)
    return jobs, missing


def plan_programs(programs, allocs):
    """(jobs, missing, failed runs) for the user's programs: a program
    whose executable is not found gets one failed run per cell."""
    jobs, missing, failed = {}, [], []
    for program in programs:
        for alloc in allocs:
            cell = Cell(program.name, programs_mod.POINT, alloc.name)
            try:
                argv, env = programs_mod.command_for(program, alloc)
            except (programs_mod.NotApplicable, programs_mod.Missing) as why:
                missing.append({"workload": program.name,
                                "point": programs_mod.POINT,
                                "allocator": alloc.name,
                                "reason": str(why)})
                continue
            if program.error:
                failed.append(not_started(cell, argv, env, program))
                continue
            jobs[cell] = (argv, env, program)
    return jobs, missing, failed


def not_started(cell, argv, env, program):
    """The failed run of a program that cannot start (not found)."""
    measured = Measured(0.0, 0.0, 0.0, 0, -1, 0, False, "", program.error)
    run = run_record(cell, 0, argv, env, 0, program, measured)
    run["reason"] = "not started: " + program.error
    return run


def run_record(cell, rep, argv, env, timeout, program=None, measured=None):
    if measured is None:
        try:
            measured = run_measured(argv, env, timeout,
                                    cwd=program.cwd if program else None)
        except OSError as err:
            measured = Measured(0.0, 0.0, 0.0, 0, -1, 0, False, "",
                                "could not start: %s" % err)
    judged = programs_mod.judge if program else judge
    ok, reason, parsed = judged(measured)
    run = {"workload": cell.workload, "point": cell.point,
           "allocator": cell.allocator, "rep": rep, "ok": ok,
           "reason": reason, "wall": measured.wall, "user": measured.user,
           "sys": measured.sys, "maxrss_kb": measured.maxrss_kb,
           "exit_code": measured.exit_code, "signal": measured.signal,
           "metrics": parsed.metrics, "units": parsed.units,
           "command": [*("%s=%s" % kv for kv in env.items()), *argv]}
    if not ok:
        run["stdout_tail"] = measured.stdout[-KEEP_OUTPUT:]
        run["stderr_tail"] = measured.stderr[-KEEP_OUTPUT:]
    return run


def run_all(jobs, args, progress):
    """Every job args.reps times (a slow cell once); returns (runs,
    interrupted)."""
    order = interleave(list(jobs), args.reps)
    runs, once = [], set()
    try:
        for index, (rep, cell) in enumerate(order):
            if cell in once:
                continue
            argv, env, program = jobs[cell]
            progress.start(rep, args.reps, cell)
            run = run_record(cell, rep, argv, env, args.timeout, program)
            runs.append(run)
            slow_rule = args.slow and (program is None or args.slow_programs)
            if slow_rule and rep == 0 and run["wall"] > args.slow:
                once.add(cell)
            left = [c for _, c in order[index + 1:] if c not in once]
            progress.finish(cell, run["wall"], run["ok"], run["reason"], left)
    except KeyboardInterrupt:
        progress.note("interrupted: writing what was measured so far")
        return runs, True
    return runs, False


def strace_one(cell, argv, env, out_file, timeout):
    # -E gives the settings (LD_PRELOAD) to the traced program, not strace
    settings = [arg for item in sorted(env.items())
                for arg in ("-E", "%s=%s" % item)]
    strace_argv = ["strace", "-c", "-f", "-o", out_file] + settings + \
        list(argv)
    measured = run_measured(strace_argv, {}, timeout)
    ok, reason, _ = judge(measured)
    row = {"workload": cell.workload, "allocator": cell.allocator, "ok": ok,
           "reason": reason, "file": os.path.basename(out_file),
           "wall": round(measured.wall, 3)}
    try:
        with open(out_file) as handle:
            row.update(strace_summary(parse_strace(handle.read())))
    except OSError as err:
        row.update(ok=False, reason=reason or "no strace output: %s" % err)
    return row


def run_strace(jobs, chosen_workloads, args, run_dir, progress):
    if args.no_strace:
        return {"available": False, "note": "--no-strace given", "rows": []}
    if not shutil.which("strace"):
        return {"available": False, "rows": [],
                "note": "strace is not installed (scripts/install-deps.sh "
                        "installs it)"}
    names = {w.name for w in chosen_workloads if w.strace}
    cells = [c for c in jobs if c.workload in names]
    folder = os.path.join(run_dir, "strace")
    os.makedirs(folder, exist_ok=True)
    rows = []
    for i, cell in enumerate(cells):
        progress.note("[strace %d/%d] %s | %s" % (i + 1, len(cells),
                                                  cell.workload,
                                                  cell.allocator))
        out_file = os.path.join(folder, "%s-%s.txt" % (cell.workload,
                                                        cell.allocator))
        argv, env = jobs[cell][:2]
        rows.append(strace_one(cell, argv, env, out_file, args.timeout))
    return {"available": True, "note": "", "rows": rows}


def run_fastpath(allocs, args, wanted, progress):
    """The fast-path pass's results (see fastpath.py), or why it did not
    run."""
    if not wanted:
        why = "--no-fastpath given" if args.no_fastpath else \
            "not selected (--program without --only fastpath)" \
            if args.program and not args.only else \
            "not selected (--only without fastpath)"
        return {"available": False, "note": why, "rows": []}
    return fastpath_mod.run_pass(allocs, args.bench_dir, args.timeout,
                                 progress.note)


def choose_workloads(names, no_fastpath=False, programs=False):
    """(workloads to time, whether the fast-path pass runs) from --only's
    names: `fastpath` alone times no workload; with --program given,
    nothing but the programs unless --only names more."""
    if programs and not names:
        return [], False
    timed = [n for n in names if n != fastpath_mod.NAME]
    chosen = workloads.by_name(timed) if timed or not names else []
    return chosen, fastpath_mod.selected(names, no_fastpath)


def workload_dicts(chosen, full):
    return [{"name": w.name, "title": w.title, "summary": w.summary,
             "points": [p.label for p in w.points(full)],
             "metric_order": list(w.metric_order)} for w in chosen]


def recorded_command(argv):
    given = os.environ.get("TLMALLOC_BENCH_COMMAND")
    if given:
        return given
    return "python3 -m bench.harness " + shlex.join(argv)


def program_dicts(programs, args):
    """The programs as the report's workloads, each with the command line
    that reruns it alone."""
    given = os.environ.get("TLMALLOC_BENCH_COMMAND", "")
    head = ["scripts/experiments.sh"] if given.startswith(
        "scripts/experiments.sh") else ["python3", "-m", "bench.harness"]
    options = (["--full"] if args.full else []) + ["--reps", str(args.reps)]
    if args.timeout_given:
        options += ["--timeout", "%g" % args.timeout_given]
    if args.alloc:
        options += ["--alloc", args.alloc]
    options += args.extra
    dicts = []
    for program in programs:
        spec = ("%s=%s" % (program.name, program.command) if program.named
                else program.command)
        entry = program.to_dict()
        entry["reproduce"] = shlex.join(head + ["--program", spec] + options)
        dicts.append(entry)
    return dicts


def write_outputs(data, run_dir, args):
    if args.no_plots:
        data["plots"] = {"available": False, "note": "--no-plots given",
                         "files": {}}
    else:
        data["plots"] = plots.make_plots(data, run_dir)
    results.write_json(os.path.join(run_dir, "runs.json"), data)
    results.write_runs_csv(os.path.join(run_dir, "runs.csv"), data["runs"])
    results.write_strace_csv(os.path.join(run_dir, "strace.csv"),
                             data["strace"]["rows"])
    results.write_fastpath_csv(os.path.join(run_dir, "fastpath.csv"),
                               data.get("fastpath", {}).get("rows", []))
    with open(os.path.join(run_dir, "report.md"), "w") as handle:
        handle.write(report.build_report(data))


def list_everything(chosen_workloads, allocs, args, fastpath_wanted,
                    programs=()):
    print("workloads (%s mode):" % ("full" if args.full else "quick"))
    for work in chosen_workloads:
        print("  %-11s %s: %s" % (work.name, work.title, ", ".join(
            p.label for p in work.points(args.full))))
    for program in programs:
        print("  %-11s program: %s (%s)" % (
            program.name, program.command,
            program.executable or "NOT FOUND: " + program.error))
    if fastpath_wanted:
        print("  %-11s instructions per malloc+free pair (bench/fastpath.sh, "
              "callgrind%s)" % (fastpath_mod.NAME, "" if shutil.which(
                  "valgrind") else ": valgrind MISSING"))
    print("allocators:")
    for alloc in allocs:
        print("  %-14s %-8s %s" % (alloc.name, "found" if alloc.found
                                   else "MISSING", alloc.path or alloc.note))


def report_only(args):
    run_dir = args.report_only
    data = results.load_json(os.path.join(run_dir, "runs.json"))
    csv_path = os.path.join(run_dir, "fastpath.csv")
    if os.path.isfile(csv_path):
        # the CSV is the table's source: a corrected CSV redraws the report
        data.setdefault("fastpath", {"available": True, "note": ""})
        data["fastpath"]["rows"] = results.read_fastpath_csv(csv_path)
    else:
        data.setdefault("fastpath", {"available": False, "rows": [],
                                     "note": "this run has no fastpath.csv"})
    write_outputs(data, run_dir, args)
    print(os.path.join(run_dir, "report.md"))
    return 0


def announce(allocs, jobs, missing, args, progress, fastpath_wanted,
             programs=()):
    found = [a.name for a in allocs if a.found]
    lost = ["%s (%s)" % (a.name, a.note) for a in allocs if not a.found]
    progress.note("allocators: %s" % ", ".join(found))
    if lost:
        progress.note("MISSING allocators: %s" % "; ".join(lost))
    for program in programs:
        if program.error:
            progress.note("error: --program %s: %s; its cells are marked "
                          "FAILED" % (shlex.quote(program.command),
                                      program.error))
    for miss in missing:
        if not miss["reason"].startswith(("allocator missing",
                                          "not applicable")):
            progress.note("not run: %(workload)s %(point)s | %(allocator)s: "
                          "%(reason)s" % miss)
    progress.note("%d cells x %d reps = %d runs (%s mode)" % (
        len(jobs), args.reps, len(jobs) * args.reps,
        "full" if args.full else "quick"))
    if fastpath_wanted:
        progress.note("then the fast-path pass: bench/fastpath.sh under "
                      "callgrind")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.report_only:
        return report_only(args)
    try:
        chosen, fastpath_wanted = choose_workloads(
            split_list(args.only), args.no_fastpath, bool(args.program))
        programs = programs_mod.parse_programs(
            args.program, [w.name for w in workloads.WORKLOADS] +
            [fastpath_mod.NAME])
        allocs = find_allocators(args)
    except ValueError as err:
        print("error: %s" % err, file=sys.stderr)
        return 2
    if args.list:
        list_everything(chosen, allocs, args, fastpath_wanted, programs)
        return 0
    jobs, missing = plan(chosen, allocs, args)
    program_jobs, program_missing, not_run = plan_programs(programs, allocs)
    jobs.update(program_jobs)
    missing += program_missing
    if programs and not jobs and not fastpath_wanted:
        for program in programs:
            print("error: --program %s: %s" % (
                shlex.quote(program.command),
                program.error or "no allocator to run it with"),
                file=sys.stderr)
        print("error: nothing to run", file=sys.stderr)
        return 2
    progress = Progress(len(jobs) * args.reps,
                        default=1.0 if not args.full else 10.0)
    announce(allocs, jobs, missing, args, progress, fastpath_wanted, programs)
    run_dir = results.new_run_dir(args.out)
    started = time.time()
    runs, interrupted = run_all(jobs, args, progress)
    runs = not_run + runs
    strace = {"available": False, "note": "interrupted", "rows": []}
    fastpath = dict(strace)
    if not interrupted:
        strace = run_strace(jobs, chosen, args, run_dir, progress)
        try:
            fastpath = run_fastpath(allocs, args, fastpath_wanted, progress)
        except KeyboardInterrupt:
            progress.note("interrupted: writing what was measured so far")
            interrupted = True
    data = {
        "command": recorded_command(argv),
        "repo": REPO,
        "mode": "full" if args.full else "quick",
        "reps": args.reps,
        # the run-once rule: built-in workloads, programs with --slow given
        "slow": args.slow if chosen or args.slow_programs else 0,
        "started": datetime.datetime.fromtimestamp(started).isoformat(
            timespec="seconds"),
        "duration_s": round(time.time() - started),
        "interrupted": interrupted,
        "machine": machine.describe(),
        "allocators": [a.to_dict() for a in allocs],
        "workloads": workload_dicts(chosen, args.full) +
        program_dicts(programs, args),
        "runs": runs,
        "missing": missing,
        "strace": strace,
        "fastpath": fastpath,
    }
    write_outputs(data, run_dir, args)
    results.point_latest(args.out, run_dir)
    if not data["plots"]["available"]:
        progress.note("no plots: %s" % data["plots"]["note"])
    if not strace["available"]:
        progress.note("no strace table: %s" % strace["note"])
    if not fastpath["available"]:
        progress.note("no fast-path table: %s" % fastpath["note"])
    failed = sum(1 for r in runs if not r["ok"])
    progress.note("%d runs, %d failed; report: %s" % (
        len(runs), failed, os.path.join(run_dir, "report.md")))
    bad_counts = sum(1 for r in fastpath["rows"]
                     if r["measured"] and not r["ok"])
    if bad_counts:
        progress.note("fast path: %d count%s FAILED (see the report)" % (
            bad_counts, "" if bad_counts == 1 else "s"))
    failed += bad_counts
    if not jobs and not fastpath["available"]:
        return 1
    return 1 if (args.strict and failed) or interrupted else 0

"""The experiments' command line: find, run, record, report.

    python3 -m bench.harness [--quick|--full] [--only W,...] [--alloc A,...]
                             [--program [NAME=]'CMD ARGS' ...]
                             [--reps N] [--out DIR] [NAME=/path/lib.so ...]

Runs every (workload, point, allocator) cell --reps times in the order of
schedule.interleave(), then the paired pass (paired.py: the points where
tlmalloc is furthest behind, again in --paired rounds of it and the
fastest peer), then loop and prodcons once per allocator under
strace, then the fast-path pass (fastpath.py: callgrind's instructions per
malloc+free pair, through bench/fastpath.sh) and the security pass
(security.py: the misuse programs of test/misuse under every allocator),
and writes a new folder
under --out (see results.py) with the raw runs, the report and the plots.
Progress goes to stderr.  With --program (programs.py), the given commands
run under every allocator instead of the built-in workloads; --only adds
built-in workloads (or the fast-path and security passes) back.
"""

import argparse
import datetime
import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import allocators as alloc_mod
from . import fastpath as fastpath_mod
from . import machine, plots, report, results, workloads
from . import paired as paired_mod
from . import programs as programs_mod
from . import security as security_mod
from .allocators import Allocator
from .parse import parse_strace, strace_summary
from .programs import Program
from .records import (FastpathPass, MissingCell, PairedPass, Plots,
                      Results, Run, SecurityPass, StracePass, StraceRow,
                      WorkloadEntry)
from .runner import Measured, judge, run_measured
from .schedule import Cell, Progress, group_cells, interleave, once_cells
from .stats import summarize
from .workloads import Mode, Workload

REPO = Path(__file__).absolute().parents[2]
KEEP_OUTPUT = 1500     # characters of a failed run's output kept


@dataclass(frozen=True)
class ModeDefaults:
    """What a mode gives the options left out."""
    reps: int
    timeout: float     # seconds before a run counts as failed
    slow: float        # a cell slower than this runs once; 0 = off
    guess: float       # a run's guessed length before any ran (progress)
    paired: int        # rounds of the paired pass (paired.py); 0 = off


DEFAULTS = {
    Mode.QUICK: ModeDefaults(reps=3, timeout=120, slow=2.0, guess=1.0,
                             paired=7),
    Mode.FULL: ModeDefaults(reps=5, timeout=1200, slow=0, guess=10.0,
                            paired=3),
}


@dataclass(frozen=True)
class Options:
    """The command line, with the mode's defaults filled in."""
    mode: Mode = Mode.QUICK
    only: str = ""
    alloc: str = ""
    program: list[str] = field(default_factory=list)
    reps: int = DEFAULTS[Mode.QUICK].reps
    out: Path = REPO / "results"
    build: Path = REPO / "build"
    bench_dir: Path = REPO / "build" / "bench"
    lib_dir: list[Path] = field(default_factory=list)
    timeout: float = DEFAULTS[Mode.QUICK].timeout
    timeout_given: float = 0       # --timeout as given, 0 when left out
    slow: float = DEFAULTS[Mode.QUICK].slow
    # the quick mode's run-once rule is for the built-in suite; a user
    # program keeps its repetitions unless --slow is given
    slow_programs: bool = False
    paired: int = DEFAULTS[Mode.QUICK].paired
    no_strace: bool = False
    no_fastpath: bool = False
    no_security: bool = False
    no_plots: bool = False
    strict: bool = False
    list_only: bool = False      # --list
    report_only: Path | None = None
    extra: list[str] = field(default_factory=list)

    @property
    def full(self) -> bool:
        return self.mode.full


def split_list(text: str) -> list[str]:
    return [item for item in text.split(",") if item]


def parse_args(argv: Sequence[str]) -> Options:
    quick, full = DEFAULTS[Mode.QUICK], DEFAULTS[Mode.FULL]
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
                             "the callgrind pass, `security` the misuse "
                             "programs' pass (both run by default)")
    parser.add_argument("--alloc", metavar="NAME,...", default="",
                        help="run only these allocators")
    parser.add_argument("--program", action="append", default=[],
                        metavar="[NAME=]'CMD ARGS'",
                        help="run this command under every allocator "
                             "(repeatable; success = exit status 0); then "
                             "only the programs run, unless --only names "
                             "workloads or fastpath too")
    parser.add_argument("--reps", type=int, default=0,
                        help="repetitions per cell (quick %d, full %d)" % (
                            quick.reps, full.reps))
    parser.add_argument("--out", type=Path, default=Options.out,
                        help="results root; each run makes a new folder")
    parser.add_argument("--build", type=Path, default=Options.build,
                        help="CMake build folder (default build/)")
    parser.add_argument("--bench-dir", type=Path, default=None,
                        help="where the workload programs are "
                             "(default BUILD/bench)")
    parser.add_argument("--lib-dir", type=Path, action="append", default=[],
                        help="look for the peer libraries here (repeatable; "
                             "replaces the system folders)")
    parser.add_argument("--timeout", type=float, default=0,
                        help="seconds before a run counts as failed "
                             "(quick %d, full %d)" % (quick.timeout,
                                                      full.timeout))
    parser.add_argument("--slow", type=float, default=-1,
                        help="a cell whose first run takes longer than this "
                             "many seconds runs only once (quick %g, full "
                             "off; 0 = off)" % quick.slow)
    parser.add_argument("--paired", type=int, default=-1, metavar="ROUNDS",
                        help="then run the points where tlmalloc is "
                             "furthest behind again, in this many rounds "
                             "of it and the fastest peer back to back "
                             "(quick %d, full %d; 0 = off)" % (
                                 quick.paired, full.paired))
    parser.add_argument("--no-strace", action="store_true",
                        help="skip the strace runs")
    parser.add_argument("--no-fastpath", action="store_true",
                        help="skip the fast-path pass (callgrind)")
    parser.add_argument("--no-security", action="store_true",
                        help="skip the security pass (the misuse programs)")
    parser.add_argument("--no-plots", action="store_true",
                        help="skip the plots")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when any run failed")
    parser.add_argument("--list", action="store_true",
                        help="list the workloads and allocators, run nothing")
    parser.add_argument("--report-only", metavar="RUN_DIR", type=Path,
                        default=None,
                        help="rebuild report.md and plots from RUN_DIR")
    parser.add_argument("extra", nargs="*", metavar="NAME=/path/lib.so",
                        help="more allocators to preload; "
                             "NAME=/path/lib.so,VAR=VALUE,... also sets "
                             "VAR in their runs (a library's options)")
    args = parser.parse_args(argv)
    if args.reps < 0:
        parser.error("--reps must be positive")
    if args.paired < -1:
        parser.error("--paired must be 0 (off) or more")
    chosen = Mode.FULL if args.full else Mode.QUICK
    defaults = DEFAULTS[chosen]
    return Options(
        mode=chosen, only=args.only, alloc=args.alloc, program=args.program,
        reps=args.reps or defaults.reps, out=args.out, build=args.build,
        bench_dir=args.bench_dir or args.build / "bench",
        lib_dir=args.lib_dir, timeout=args.timeout or defaults.timeout,
        timeout_given=args.timeout,
        slow=defaults.slow if args.slow < 0 else args.slow,
        slow_programs=args.slow >= 0,
        paired=defaults.paired if args.paired < 0 else args.paired,
        no_strace=args.no_strace,
        no_fastpath=args.no_fastpath, no_security=args.no_security,
        no_plots=args.no_plots,
        strict=args.strict, list_only=args.list, report_only=args.report_only,
        extra=args.extra)


def tlmalloc_version() -> str:
    """MAJOR.MINOR.PATCH from include/tlmalloc.h, with git describe."""
    version = ""
    try:
        text = (REPO / "include" / "tlmalloc.h").read_text()
        parts = [re.search(r"#define\s+TLMALLOC_VERSION_%s\s+(\d+)" % part,
                           text) for part in ("MAJOR", "MINOR", "PATCH")]
        found = [p.group(1) for p in parts if p]
        if len(found) == len(parts):
            version = ".".join(found)
    except OSError:
        pass
    described = machine.run_text(["git", "-C", str(REPO), "describe",
                                  "--always", "--dirty"])
    return " ".join(v for v in (version, described and "(%s)" % described) if v)


def find_allocators(args: Options) -> list[Allocator]:
    allocs = alloc_mod.discover(args.build, args.lib_dir or None, args.extra,
                                args.bench_dir)
    for alloc in allocs:
        alloc_mod.probe_preload(alloc)
    machine.add_versions(allocs, tlmalloc_version())
    extra_names = [spec.partition("=")[0] for spec in args.extra]
    chosen = alloc_mod.select(allocs, split_list(args.alloc))
    return chosen + [a for a in allocs
                     if a.name in extra_names and a not in chosen]


@dataclass
class Job:
    """What runs a cell: the command, its settings, and the --program it
    runs (None for a built-in workload)."""
    argv: list[str]
    env: dict[str, str]
    program: Program | None = None


Jobs = dict[Cell, Job]


def plan(chosen_workloads: Sequence[Workload], allocs: Sequence[Allocator],
         args: Options) -> tuple[Jobs, list[MissingCell]]:
    """(jobs, the cells that cannot run) for every cell."""
    jobs: Jobs = {}
    missing = []
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
                    missing.append(MissingCell(work.name, point.label,
                                               alloc.name, str(why)))
                    continue
                jobs[Cell(work.name, point.label, alloc.name)] = Job(argv, env)
    return jobs, missing


def plan_programs(programs: Sequence[Program], allocs: Sequence[Allocator]
                  ) -> tuple[Jobs, list[MissingCell], list[Run]]:
    """(jobs, missing, failed runs) for the user's programs: a program
    whose executable is not found gets one failed run per cell."""
    jobs: Jobs = {}
    missing = []
    failed = []
    for program in programs:
        for alloc in allocs:
            cell = Cell(program.name, programs_mod.POINT, alloc.name)
            try:
                argv, env = programs_mod.command_for(program, alloc)
            except (programs_mod.NotApplicable, programs_mod.Missing) as why:
                missing.append(MissingCell(program.name, programs_mod.POINT,
                                           alloc.name, str(why)))
                continue
            if program.error:
                failed.append(not_started(cell, Job(argv, env, program)))
                continue
            jobs[cell] = Job(argv, env, program)
    return jobs, missing, failed


def not_started(cell: Cell, job: Job) -> Run:
    """The failed run of a program that cannot start (not found)."""
    error = job.program.error if job.program else ""
    measured = Measured(0.0, 0.0, 0.0, 0, -1, 0, False, "", error)
    run = run_record(cell, 0, job, 0, measured)
    run.reason = "not started: " + error
    return run


def run_record(cell: Cell, rep: int, job: Job, timeout: float,
               measured: Measured | None = None) -> Run:
    program = job.program
    if measured is None:
        try:
            measured = run_measured(job.argv, job.env, timeout,
                                    cwd=program.cwd if program else None)
        except OSError as err:
            measured = Measured(0.0, 0.0, 0.0, 0, -1, 0, False, "",
                                "could not start: %s" % err)
    judged = programs_mod.judge(measured) if program else judge(measured)
    run = Run(cell.workload, cell.point, cell.allocator, rep=rep,
              ok=judged.ok, reason=judged.reason, wall=measured.wall,
              user=measured.user, sys=measured.sys,
              maxrss_kb=measured.maxrss_kb, exit_code=measured.exit_code,
              signal=measured.signal, metrics=judged.output.metrics,
              units=judged.output.units,
              command=["%s=%s" % kv for kv in job.env.items()] + job.argv)
    if not judged.ok:
        run.stdout_tail = measured.stdout[-KEEP_OUTPUT:]
        run.stderr_tail = measured.stderr[-KEEP_OUTPUT:]
    return run


def run_all(jobs: Jobs, args: Options,
            progress: Progress) -> tuple[list[Run], bool]:
    """Every job args.reps times (a slow cell once: schedule.once_cells,
    decided when its point's first runs are in); returns (runs,
    interrupted)."""
    order = interleave(list(jobs), args.reps)
    runs: list[Run] = []
    once: set[Cell] = set()
    points = {(c.workload, c.point): len(group)
              for group in group_cells(list(jobs)) for c in group}
    first: dict[tuple[str, str], dict[Cell, float]] = {}
    try:
        for index, (rep, cell) in enumerate(order):
            if cell in once:
                continue
            job = jobs[cell]
            progress.start(rep, args.reps, cell)
            run = run_record(cell, rep, job, args.timeout)
            runs.append(run)
            point = (cell.workload, cell.point)
            if args.slow and rep == 0:
                walls = first.setdefault(point, {})
                walls[cell] = run.wall
                if len(walls) == points[point]:
                    once |= {c for c in once_cells(walls, args.slow)
                             if jobs[c].program is None or
                             args.slow_programs}
            left = [c for _, c in order[index + 1:] if c not in once]
            progress.finish(cell, run.wall, run.ok, run.reason, left)
    except KeyboardInterrupt:
        progress.note("interrupted: writing what was measured so far")
        return runs, True
    return runs, False


def run_paired(jobs: Jobs, runs: Sequence[Run],
               allocs: Sequence[Allocator], args: Options,
               progress: Progress) -> PairedPass:
    """The paired pass (paired.py) over the built-in workloads' points, or
    why it did not run."""
    if args.paired == 0:
        return PairedPass(False, "--paired 0 given")
    built_in = [r for r in runs
                if (job := jobs.get(Cell(r.workload, r.point, r.allocator)))
                is not None and job.program is None]
    if not built_in:
        return PairedPass(False, "no built-in workload ran (it pairs "
                          "their points only)")
    choices = paired_mod.choose(summarize(built_in),
                                report.peer_names(allocs), args.slow)
    if not choices:
        return PairedPass(True, "no point more than %.2fx the fastest "
                          "peer's time" % paired_mod.ABOVE, args.paired)

    def run_one(workload: str, point: str, alloc: str, rep: int) -> Run:
        cell = Cell(workload, point, alloc)
        return run_record(cell, rep, jobs[cell], args.timeout)

    return paired_mod.run_pass(choices, args.paired, run_one, progress.note)


def strace_one(cell: Cell, job: Job, out_file: Path,
               timeout: float) -> StraceRow:
    # -E gives the settings (LD_PRELOAD) to the traced program, not strace
    settings = [arg for item in sorted(job.env.items())
                for arg in ("-E", "%s=%s" % item)]
    strace_argv = ["strace", "-c", "-f", "-o", str(out_file)] + settings + \
        job.argv
    measured = run_measured(strace_argv, {}, timeout)
    judged = judge(measured)
    row = StraceRow(cell.workload, cell.allocator, judged.ok, judged.reason,
                    file=out_file.name, wall=round(measured.wall, 3))
    try:
        row.calls = strace_summary(parse_strace(out_file.read_text()))
    except OSError as err:
        row.ok = False
        row.reason = judged.reason or "no strace output: %s" % err
    return row


def run_strace(jobs: Jobs, chosen_workloads: Sequence[Workload],
               args: Options, run_dir: Path,
               progress: Progress) -> StracePass:
    if args.no_strace:
        return StracePass(False, "--no-strace given")
    if not shutil.which("strace"):
        return StracePass(False, "strace is not installed "
                                 "(scripts/install-deps.sh installs it)")
    names = {w.name for w in chosen_workloads if w.strace}
    cells = [c for c in jobs if c.workload in names]
    folder = run_dir / "strace"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, cell in enumerate(cells):
        progress.note("[strace %d/%d] %s | %s" % (i + 1, len(cells),
                                                  cell.workload,
                                                  cell.allocator))
        out_file = folder / ("%s-%s.txt" % (cell.workload, cell.allocator))
        rows.append(strace_one(cell, jobs[cell], out_file, args.timeout))
    return StracePass(True, "", rows)


def run_security(allocs: Sequence[Allocator], args: Options, wanted: bool,
                 progress: Progress) -> SecurityPass:
    """The security pass's results (see security.py), or why it did not
    run."""
    if not wanted:
        why = "--no-security given" if args.no_security else \
            "not selected (--program without --only security)" \
            if args.program and not args.only else \
            "not selected (--only without security)"
        return SecurityPass(False, why)
    return security_mod.run_pass(allocs, args.build, progress.note,
                                 min(args.timeout, security_mod.TIMEOUT))


def run_fastpath(allocs: Sequence[Allocator], args: Options, wanted: bool,
                 progress: Progress) -> FastpathPass:
    """The fast-path pass's results (see fastpath.py), or why it did not
    run."""
    if not wanted:
        why = "--no-fastpath given" if args.no_fastpath else \
            "not selected (--program without --only fastpath)" \
            if args.program and not args.only else \
            "not selected (--only without fastpath)"
        return FastpathPass(False, why)
    return fastpath_mod.run_pass(allocs, args.bench_dir, args.timeout,
                                 progress.note)


def choose_workloads(names: Sequence[str], no_fastpath: bool = False,
                     programs: bool = False) -> tuple[list[Workload], bool]:
    """(workloads to time, whether the fast-path pass runs) from --only's
    names: `fastpath` or `security` alone times no workload; with
    --program given, nothing but the programs unless --only names more."""
    if programs and not names:
        return [], False
    timed = [n for n in names if n not in (fastpath_mod.NAME,
                                           security_mod.NAME)]
    chosen = workloads.by_name(timed) if timed or not names else []
    return chosen, fastpath_mod.selected(names, no_fastpath)


def recorded_command(argv: Sequence[str]) -> str:
    given = os.environ.get("TLMALLOC_BENCH_COMMAND")
    if given:
        return given
    return "python3 -m bench.harness " + shlex.join(argv)


def program_entries(programs: Sequence[Program],
                    args: Options) -> list[WorkloadEntry]:
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
    entries = []
    for program in programs:
        spec = ("%s=%s" % (program.name, program.command) if program.named
                else program.command)
        entries.append(WorkloadEntry.of_program(program, shlex.join(
            head + ["--program", spec] + options)))
    return entries


def write_outputs(data: Results, run_dir: Path, args: Options) -> None:
    if args.no_plots:
        data.plots = Plots(False, "--no-plots given")
    else:
        data.plots = plots.make_plots(data, run_dir)
    results.write_json(run_dir / "runs.json", data)
    results.write_runs_csv(run_dir / "runs.csv", data.runs)
    results.write_strace_csv(run_dir / "strace.csv", data.strace.rows)
    results.write_fastpath_csv(run_dir / "fastpath.csv", data.fastpath.rows)
    results.write_security_csv(run_dir / "security.csv", data.security.rows)
    (run_dir / "report.md").write_text(report.build_report(data))


def list_everything(chosen_workloads: Sequence[Workload],
                    allocs: Sequence[Allocator], args: Options,
                    fastpath_wanted: bool,
                    programs: Sequence[Program] = (),
                    security_wanted: bool = False) -> None:
    print("workloads (%s mode):" % args.mode.value)
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
    if security_wanted:
        listed = args.build / security_mod.LIST
        print("  %-11s the misuse programs caught (%s%s)" % (
            security_mod.NAME, listed,
            "" if listed.is_file() else ": MISSING"))
    print("allocators:")
    for alloc in allocs:
        print("  %-14s %-8s %s" % (alloc.name, "found" if alloc.found
                                   else "MISSING", alloc.path or alloc.note))


def report_only(args: Options) -> int:
    """Rebuilds report.md, the CSV files and the plots of the results
    folder --report-only names."""
    run_dir = args.report_only
    assert run_dir is not None, "report_only() without --report-only"
    raw = results.load_json(run_dir / "runs.json")
    data = Results.from_json(raw)
    csv_path = run_dir / "fastpath.csv"
    if csv_path.is_file():
        # the CSV is the table's source: a corrected CSV redraws the report
        if "fastpath" not in raw:
            data.fastpath = FastpathPass(True, "")
        data.fastpath.rows = results.read_fastpath_csv(csv_path)
    elif "fastpath" not in raw:
        data.fastpath = FastpathPass(False, "this run has no fastpath.csv")
    write_outputs(data, run_dir, args)
    print(run_dir / "report.md")
    return 0


def announce(allocs: Sequence[Allocator], jobs: Jobs,
             missing: Sequence[MissingCell], args: Options,
             progress: Progress, fastpath_wanted: bool,
             programs: Sequence[Program] = (),
             security_wanted: bool = False) -> None:
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
        if not miss.reason.startswith(("allocator missing",
                                       "not applicable")):
            progress.note("not run: %s %s | %s: %s" % (
                miss.workload, miss.point, miss.allocator, miss.reason))
    progress.note("%d cells x %d reps = %d runs (%s mode)" % (
        len(jobs), args.reps, len(jobs) * args.reps, args.mode.value))
    if fastpath_wanted:
        progress.note("then the fast-path pass: bench/fastpath.sh under "
                      "callgrind")
    if security_wanted:
        progress.note("then the security pass: the misuse programs under "
                      "every allocator")


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.report_only is not None:
        return report_only(args)
    try:
        chosen, fastpath_wanted = choose_workloads(
            split_list(args.only), args.no_fastpath, bool(args.program))
        security_wanted = security_mod.selected(
            split_list(args.only), args.no_security, bool(args.program))
        programs = programs_mod.parse_programs(
            args.program, [w.name for w in workloads.WORKLOADS] +
            [fastpath_mod.NAME])
        allocs = find_allocators(args)
    except ValueError as err:
        print("error: %s" % err, file=sys.stderr)
        return 2
    if args.list_only:
        list_everything(chosen, allocs, args, fastpath_wanted, programs,
                        security_wanted)
        return 0
    jobs, missing = plan(chosen, allocs, args)
    program_jobs, program_missing, not_run = plan_programs(programs, allocs)
    jobs.update(program_jobs)
    missing += program_missing
    if programs and not jobs and not fastpath_wanted and \
            not security_wanted:
        for program in programs:
            print("error: --program %s: %s" % (
                shlex.quote(program.command),
                program.error or "no allocator to run it with"),
                file=sys.stderr)
        print("error: nothing to run", file=sys.stderr)
        return 2
    progress = Progress(len(jobs) * args.reps,
                        default=DEFAULTS[args.mode].guess)
    announce(allocs, jobs, missing, args, progress, fastpath_wanted, programs,
             security_wanted)
    run_dir = results.new_run_dir(args.out)
    started = time.time()
    runs, interrupted = run_all(jobs, args, progress)
    runs = not_run + runs
    strace = StracePass(False, "interrupted")
    fastpath = FastpathPass(False, "interrupted")
    security = SecurityPass(False, "interrupted")
    paired = PairedPass(False, "interrupted")
    if not interrupted:
        try:
            paired = run_paired(jobs, runs, allocs, args, progress)
        except KeyboardInterrupt:
            progress.note("interrupted: writing what was measured so far")
            interrupted = True
    if not interrupted:
        strace = run_strace(jobs, chosen, args, run_dir, progress)
        try:
            fastpath = run_fastpath(allocs, args, fastpath_wanted, progress)
            security = run_security(allocs, args, security_wanted, progress)
        except KeyboardInterrupt:
            progress.note("interrupted: writing what was measured so far")
            interrupted = True
    data = Results(
        command=recorded_command(argv),
        repo=str(REPO),
        mode=args.mode,
        reps=args.reps,
        # the run-once rule: built-in workloads, programs with --slow given
        slow=args.slow if chosen or args.slow_programs else 0,
        started=datetime.datetime.fromtimestamp(started).isoformat(
            timespec="seconds"),
        duration_s=round(time.time() - started),
        interrupted=interrupted,
        machine=machine.describe(),
        allocators=allocs,
        workloads=[WorkloadEntry.of_workload(w, args.full) for w in chosen] +
        program_entries(programs, args),
        runs=runs,
        missing=missing,
        strace=strace,
        fastpath=fastpath,
        security=security,
        paired=paired,
    )
    write_outputs(data, run_dir, args)
    results.point_latest(args.out, run_dir)
    if not data.plots.available:
        progress.note("no plots: %s" % data.plots.note)
    if not strace.available:
        progress.note("no strace table: %s" % strace.note)
    if not fastpath.available:
        progress.note("no fast-path table: %s" % fastpath.note)
    if not security.available:
        progress.note("no security table: %s" % security.note)
    failed = sum(1 for r in runs if not r.ok)
    progress.note("%d runs, %d failed; report: %s" % (
        len(runs), failed, run_dir / "report.md"))
    bad_counts = sum(1 for r in fastpath.rows if r.measured and not r.ok)
    if bad_counts:
        progress.note("fast path: %d count%s FAILED (see the report)" % (
            bad_counts, "" if bad_counts == 1 else "s"))
    failed += bad_counts
    if not jobs and not fastpath.available and not security.available:
        return 1
    return 1 if (args.strict and failed) or interrupted else 0

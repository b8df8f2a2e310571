"""Running one program and measuring it with the kernel's own accounting.

The parent blocks in os.wait4() on the program, which returns the exit
status and the program's rusage: user and sys time and ru_maxrss (peak
RSS, KiB on Linux).  Wall time is taken around the start and the wait.
stdout and stderr go to temporary files, so a chatty program cannot block
on a pipe.  The program runs in its own session, so a timeout kills it and
anything it started.

Why not simply fork the program from here: Linux keeps the peak RSS of the
memory a process had before exec() in its ru_maxrss, so a program forked
from this Python process could never report less than Python's own RSS
(some 15 MiB), hiding the small footprints.  So `setsid --fork` (a small
program) starts it and exits at once without waiting; this process, a
"child subreaper" (prctl PR_SET_CHILD_SUBREAPER), inherits the program and
wait4()s for it directly: its ru_maxrss then starts from setsid's
footprint (about 1 MiB).  Where that is not possible, the program is
forked directly and Measured.direct says so.
"""

import ctypes
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NamedTuple

from .parse import WorkloadOutput, parse_workload_output

STDERR_KEEP = 2000   # characters of stderr kept for a failed run


@dataclass
class Measured:
    wall: float
    user: float
    sys: float
    maxrss_kb: int
    exit_code: int        # -1 when killed by a signal
    signal: int           # 0 when it exited
    timed_out: bool
    stdout: str
    stderr: str
    direct: bool = False  # forked from here: ru_maxrss has Python's floor


class Judgement(NamedTuple):
    """How one run went: ok, why not, and what it printed."""
    ok: bool
    reason: str
    output: WorkloadOutput


PR_SET_CHILD_SUBREAPER = 36
subreaper: bool | None = None     # None: not tried yet


def become_subreaper() -> bool:
    """Makes this process adopt its orphaned descendants (once)."""
    global subreaper
    if subreaper is None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            adopted = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            adopted = False
        subreaper = adopted and shutil.which("setsid") is not None
    return subreaper


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def read_back(handle: IO[bytes]) -> str:
    handle.seek(0)
    return handle.read().decode("utf-8", "replace")


def env_prefix(env: Mapping[str, str] | None) -> list[str]:
    """The program's own environment, given through env(1) so that the
    launcher does not run with it (e.g. with LD_PRELOAD).  Every program
    goes through env, with or without settings, so all pay the same."""
    return ["env"] + ["%s=%s" % item for item in sorted((env or {}).items())]


def children_from_tasks() -> set[int] | None:
    """Children of every thread of this process, or None when the kernel
    has no /proc/PID/task/TID/children."""
    found: set[int] = set()
    try:
        for task in Path("/proc/self/task").iterdir():
            found.update(int(pid) for pid in
                         (task / "children").read_text().split())
    except OSError:
        return None
    return found


def children_from_stat() -> set[int]:
    me = str(os.getpid())
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me:
            found.add(int(entry.name))
    return found


def children() -> set[int]:
    """Pids of this process's children, zombies included (from /proc)."""
    found = children_from_tasks()
    return children_from_stat() if found is None else found


def start_adopted(argv: Sequence[str], env: Mapping[str, str] | None,
                  out: IO[bytes], err: IO[bytes],
                  cwd: str | None) -> tuple[int, int]:
    """Starts argv through `setsid --fork`; returns (pid, group).

    Raises OSError when the adopted program cannot be found.
    """
    before = children()
    launcher = subprocess.Popen(
        ["setsid", "--fork"] + env_prefix(env) + list(argv), stdout=out,
        stderr=err, cwd=cwd, stdin=subprocess.DEVNULL)
    launcher.wait()
    adopted = children() - before - {launcher.pid}
    if launcher.returncode != 0 or len(adopted) != 1:
        raise OSError("setsid --fork: status %s, %d new children" % (
            launcher.returncode, len(adopted)))
    pid = adopted.pop()
    return pid, pid


def start_direct(argv: Sequence[str], env: Mapping[str, str] | None,
                 out: IO[bytes], err: IO[bytes],
                 cwd: str | None) -> tuple[int, int]:
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.Popen(argv, stdout=out, stderr=err, env=full_env,
                            cwd=cwd, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    proc.returncode = 0     # reaped below with os.wait4, not by Popen
    return proc.pid, proc.pid


def wait_measured(pid: int, group: int, timeout: float | None
                  ) -> tuple[int, resource.struct_rusage, bool]:
    """os.wait4(pid) with a timeout that kills the process group."""
    expired = threading.Event()

    def on_timeout() -> None:
        expired.set()
        kill_group(group)

    timer = threading.Timer(timeout, on_timeout) if timeout else None
    if timer:
        timer.daemon = True
        timer.start()
    try:
        _, status, usage = os.wait4(pid, 0)
    except KeyboardInterrupt:
        kill_group(group)
        os.wait4(pid, 0)
        raise
    if timer:
        timer.cancel()
    # anything the program left behind in its session goes too
    kill_group(group)
    return status, usage, expired.is_set()


def run_measured(argv: Sequence[str], env: Mapping[str, str] | None = None,
                 timeout: float | None = None,
                 cwd: str | None = None) -> Measured:
    """Runs argv to completion (or timeout) and returns a Measured."""
    adopt = become_subreaper()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        if adopt:
            pid, group = start_adopted(argv, env, out, err, cwd)
        else:
            pid, group = start_direct(argv, env, out, err, cwd)
        status, usage, timed_out = wait_measured(pid, group, timeout)
        wall = time.perf_counter() - start
        return Measured(
            wall=wall, user=usage.ru_utime, sys=usage.ru_stime,
            maxrss_kb=int(usage.ru_maxrss),
            exit_code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1,
            signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0,
            timed_out=timed_out, stdout=read_back(out),
            stderr=read_back(err), direct=not adopt)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def judge(measured: Measured) -> Judgement:
    """How one run of a workload went.

    A run failed when it timed out, died of a signal, exited non-zero, or
    did not print `check ok`.
    """
    parsed = parse_workload_output(measured.stdout)
    if measured.timed_out:
        return Judgement(False, "timeout after %.0f s" % measured.wall, parsed)
    if measured.signal:
        return Judgement(False, "killed by signal %s" %
                         signal_name(measured.signal), parsed)
    if parsed.check_failure:
        return Judgement(False, "check FAILED: %s" % parsed.check_failure,
                         parsed)
    if measured.exit_code != 0:
        return Judgement(False, "exit status %d" % measured.exit_code, parsed)
    if not parsed.check_ok:
        return Judgement(False, "no 'check ok' line", parsed)
    return Judgement(True, "", parsed)

"""Running one program and measuring it with the kernel's own accounting.

The child runs in its own session (so a timeout kills it and anything it
started); the parent blocks in os.wait4(), which returns the exit status
and the child's rusage: user and sys time and ru_maxrss (peak RSS, KiB on
Linux).  Wall time is taken around the fork and the wait.  stdout and
stderr go to temporary files, so a chatty program cannot block on a pipe.
"""

import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

from .parse import parse_workload_output

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


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def read_back(handle):
    handle.seek(0)
    return handle.read().decode("utf-8", "replace")


def run_measured(argv, env=None, timeout=None, cwd=None):
    """Runs argv to completion (or timeout) and returns a Measured."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=full_env,
                                cwd=cwd, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        expired = threading.Event()

        def on_timeout():
            expired.set()
            kill_group(proc.pid)

        timer = threading.Timer(timeout, on_timeout) if timeout else None
        if timer:
            timer.daemon = True
            timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        if timer:
            timer.cancel()
        # anything the program left behind in its session goes too
        kill_group(proc.pid)
        proc.returncode = os.waitstatus_to_exitcode(status)
        return Measured(
            wall=wall, user=usage.ru_utime, sys=usage.ru_stime,
            maxrss_kb=int(usage.ru_maxrss),
            exit_code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1,
            signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0,
            timed_out=expired.is_set(),
            stdout=read_back(out), stderr=read_back(err))


def signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def judge(measured):
    """(ok, reason, parsed output) for one run of a workload.

    A run failed when it timed out, died of a signal, exited non-zero, or
    did not print `check ok`.
    """
    parsed = parse_workload_output(measured.stdout)
    if measured.timed_out:
        return False, "timeout after %.0f s" % measured.wall, parsed
    if measured.signal:
        return False, "killed by signal %s" % signal_name(measured.signal), \
            parsed
    if parsed.check_failure:
        return False, "check FAILED: %s" % parsed.check_failure, parsed
    if measured.exit_code != 0:
        return False, "exit status %d" % measured.exit_code, parsed
    if not parsed.check_ok:
        return False, "no 'check ok' line", parsed
    return True, "", parsed

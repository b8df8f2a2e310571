"""A description of the machine the results come from.

CPU model and core count, memory, kernel, distribution, C library
version, compiler, and for each allocator library the Debian package that
ships it and its version (dpkg-query), when dpkg is there.
"""

import os
import platform
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from .allocators import Allocator, Kind


def run_text(argv: Sequence[str], timeout: float = 10) -> str:
    """stdout of argv, stripped, or "" when it cannot run or fails."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        with cpuinfo.open() as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "cpu model"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_total(meminfo: Path = Path("/proc/meminfo")) -> str:
    try:
        with meminfo.open() as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    kib = int(line.split()[1])
                    return "%.1f GiB" % (kib / 1024 / 1024)
    except (OSError, ValueError, IndexError):
        pass
    return "unknown"


def os_release(path: Path = Path("/etc/os-release")) -> str:
    try:
        with path.open() as handle:
            for line in handle:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def libc_version() -> str:
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):
        text = ""
    if text:
        return text
    first = run_text(["ldd", "--version"]).splitlines()
    return first[0] if first else "unknown"


def package_of(path: str) -> tuple[str, str]:
    """(package, version) of the Debian package owning path, or ("", "")."""
    if not path:
        return "", ""
    real = os.path.realpath(path)
    for candidate in (path, real):
        owner = run_text(["dpkg-query", "-S", candidate])
        if owner:
            package = owner.splitlines()[0].split(":")[0].strip()
            version = run_text(["dpkg-query", "-W", "-f=${Version}", package])
            return package, version
    return "", ""


def package_version(package: str) -> str:
    if not package:
        return ""
    return run_text(["dpkg-query", "-W", "-f=${Version}", package])


def first_line(argv: Sequence[str]) -> str:
    lines = run_text(argv).splitlines()
    return lines[0] if lines else "not found"


def describe() -> dict[str, str]:
    """The machine as a dict of short strings."""
    uname = platform.uname()
    return {
        "cpu": cpu_model(),
        "cores": str(os.cpu_count()),
        "memory": memory_total(),
        "kernel": "%s %s %s" % (uname.system, uname.release, uname.machine),
        "os": os_release(),
        "libc": libc_version(),
        "compiler": first_line(["cc", "--version"]),
        "python": platform.python_version(),
        "strace": first_line(["strace", "-V"]),
    }


def add_versions(allocs: Iterable[Allocator],
                 tlmalloc_version: str = "") -> None:
    """Fills each found allocator's package and version where known."""
    for alloc in allocs:
        if alloc.name in ("tlmalloc", "tlmalloc-fast", "tlmalloc-secure",
                          "tlmalloc-kept", "tlmalloc-lock", "tlmalloc-linked"):
            alloc.version = tlmalloc_version
        elif alloc.kind is Kind.SYSTEM:
            alloc.version = libc_version()
        elif alloc.kind is Kind.MUSL:
            alloc.version = package_version("musl") or package_version(
                "musl-dev")
        elif alloc.found and alloc.path:
            package, version = package_of(alloc.path)
            alloc.package = package or alloc.package
            # the peers built from source bring their version along
            alloc.version = version or alloc.version

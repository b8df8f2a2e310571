"""Finding the allocators to compare, and how to run a workload with each.

Kinds of allocator:
  system   glibc: the program as built, nothing preloaded.
  preload  a shared library put in LD_PRELOAD (tlmalloc, its fast variant
           without free's checks, the peers, and any NAME=/path/lib.so from
           the command line, NAME=/path/lib.so,VAR=VALUE,... with settings
           of its environment).  The Debian peers are looked for in the
           system's library folders; mimalloc3, snmalloc, rpmalloc and
           hardened_malloc in <build>/peers, where scripts/build-peers.sh
           puts them with VERSIONS.json (their versions).
  ts       the ts_ API of tlmalloc: `scaling_ts --api lock` (the naive
           one-lock baseline, "tlmalloc-lock"); runs the scaling workload
           only.  tlmalloc itself runs `scaling_ts --api nolock` there.
  musl     a static musl build of a workload (the C ones with musl-gcc,
           containers with zig c++): `<program>-musl` with
           musl's own allocator ("musl"), `<program>-musl-tlmalloc` with
           tlmalloc's libtlmalloc.a linked in ("musl-tlmalloc").
  linked   the glibc program rebuilt with tlmalloc's libtlmalloc.a linked
           in: `<program>-linked` ("tlmalloc-linked"), which calls malloc
           directly, not through its PLT, and reads its TLS at a constant
           offset (docs/measurements.md, "Linked in, not preloaded").

An allocator that is not found stays in the list with found=False and a
note saying why, so the report can show it as missing.
"""

import json
import os
import platform
import subprocess
import sysconfig
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any

from .workloads import Point, Workload


class Kind(Enum):
    """How a workload runs with an allocator (see the module's header)."""
    SYSTEM = "system"
    PRELOAD = "preload"
    TS = "ts"
    MUSL = "musl"
    LINKED = "linked"


# why the allocators that are programs of their own are not measured by
# the passes that preload a library into a program of their choosing (the
# fast path's, the misuse programs')
OTHER_KINDS = {
    Kind.TS: "a program of its own on the ts_ API, not a malloc to preload",
    Kind.MUSL: "static programs built with musl-gcc, not a malloc to preload",
    Kind.LINKED: "programs with libtlmalloc.a linked in, not a malloc to "
                 "preload",
}


class TsApi(Enum):
    """The ts_ API variant a tlmalloc allocator runs in the scaling
    workload (`scaling_ts --api VALUE`)."""
    LOCK = "lock"
    NOLOCK = "nolock"


@dataclass(frozen=True)
class Peer:
    """A peer from the distribution: its library's file names, tried in
    order, and the Debian package that ships it."""
    name: str
    files: tuple[str, ...]
    package: str


PEERS = (
    Peer("jemalloc", ("libjemalloc.so.2", "libjemalloc.so"), "libjemalloc2"),
    Peer("tcmalloc", ("libtcmalloc_minimal.so.4", "libtcmalloc_minimal.so",
                      "libtcmalloc.so.4"), "libtcmalloc-minimal4"),
    Peer("mimalloc", ("libmimalloc.so.2", "libmimalloc.so"),
         "libmimalloc2.0"),
    # the proxy is the part of TBB's allocator that replaces malloc
    Peer("tbbmalloc", ("libtbbmalloc_proxy.so.2", "libtbbmalloc_proxy.so"),
         "libtbbmalloc2"),
)


@dataclass(frozen=True)
class BuiltPeer:
    """A peer scripts/build-peers.sh builds: its library in <build>/peers
    and the crate whose bundled sources it compiles."""
    name: str
    library: str
    crate: str


BUILT_PEERS = (
    BuiltPeer("mimalloc3", "libmimalloc3.so", "libmimalloc-sys"),
    BuiltPeer("snmalloc", "libsnmalloc.so", "snmalloc-sys"),
    BuiltPeer("rpmalloc", "librpmalloc.so", "rpmalloc-sys"),
    # the secure variant's reference (docs/secure.md); optional
    BuiltPeer("hardened_malloc", "libhardened_malloc.so", "hardened_malloc-rs"),
)

KEPT_BYTES = "32768"                # tlmalloc-kept's kept_bytes

PEERS_DIR = "peers"                 # under the build folder
VERSIONS_FILE = "VERSIONS.json"
BUILD_PEERS_HINT = "not built: run scripts/build-peers.sh (needs cargo)"

BUILTIN = ("tlmalloc", "tlmalloc-fast", "tlmalloc-secure", "tlmalloc-kept",
           "tlmalloc-lock", "glibc") \
    + tuple(p.name for p in PEERS) + tuple(p.name for p in BUILT_PEERS) \
    + ("musl", "musl-tlmalloc", "tlmalloc-linked")


@dataclass
class Allocator:
    name: str
    kind: Kind
    path: str = ""            # the library for preload
    found: bool = True
    note: str = ""            # why missing, or what it is
    ts_api: TsApi | None = None   # runs the ts_ program variant
    package: str = ""         # Debian package expected to ship it
    version: str = ""
    suffix: str = ""          # musl, linked: the program's name ends with it
    env: dict[str, str] = field(default_factory=dict)  # set in its runs

    def run_env(self) -> dict[str, str]:
        """The environment its runs add: LD_PRELOAD for a preloaded
        library, and the settings given with it."""
        env = dict(self.env)
        if self.kind is Kind.PRELOAD:
            env["LD_PRELOAD"] = self.path
        return env

    def to_json(self) -> dict[str, Any]:
        """As runs.json holds it (kind and ts_api by their values)."""
        data = asdict(self)
        data["kind"] = self.kind.value
        data["ts_api"] = self.ts_api.value if self.ts_api else ""
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Allocator":
        known = {f.name for f in fields(cls)}
        given = {k: v for k, v in data.items() if k in known}
        given["kind"] = Kind(data["kind"])
        given["ts_api"] = TsApi(data["ts_api"]) if data.get("ts_api") \
            else None
        return cls(**given)


def missing_note(path: Path) -> str:
    return "not built: %s missing" % path


def default_lib_dirs() -> list[Path]:
    """Where the peers' shared libraries are looked for."""
    arch = sysconfig.get_config_var("MULTIARCH") or \
        "%s-linux-gnu" % platform.machine()
    dirs = [Path(d) for d in os.environ.get("LD_LIBRARY_PATH", "").split(":")
            if d]
    for prefix in (Path("/usr/local/lib"), Path("/usr/lib"), Path("/lib")):
        dirs += [prefix / arch, prefix]
    dirs += [Path("/usr/lib64"), Path("/lib64")]
    return dirs


def find_library(names: Iterable[str], lib_dirs: Sequence[Path]) -> str:
    """The first existing path among names x lib_dirs, or ""."""
    for name in names:
        for folder in lib_dirs:
            path = folder / name
            if path.is_file():
                return str(path)
    return ""


def tlmalloc_allocators(build_dir: Path, bench_dir: Path) -> list[Allocator]:
    lib = build_dir / "src" / "libtlmalloc.so"
    ts_prog = bench_dir / "scaling_ts"
    found = lib.is_file()
    main = Allocator("tlmalloc", Kind.PRELOAD, str(lib) if found else "",
                     found, "" if found else missing_note(lib),
                     ts_api=TsApi.NOLOCK)
    fast_lib = build_dir / "src" / "libtlmalloc-fast.so"
    fast_found = fast_lib.is_file()
    fast = Allocator("tlmalloc-fast", Kind.PRELOAD,
                     str(fast_lib) if fast_found else "", fast_found,
                     "tlmalloc without free's checks of the pointer"
                     if fast_found else missing_note(fast_lib))
    secure_lib = build_dir / "src" / "libtlmalloc-secure.so"
    secure_found = secure_lib.is_file()
    secure = Allocator("tlmalloc-secure", Kind.PRELOAD,
                       str(secure_lib) if secure_found else "", secure_found,
                       "tlmalloc's secure variant, its defaults (canaries, "
                       "fill and quarantine of freed blocks: docs/secure.md)"
                       if secure_found else missing_note(secure_lib))
    # the default library with kept blocks on: the trade the option makes
    # (docs/design.md, "Kept blocks"), measured beside the default
    kept = Allocator("tlmalloc-kept", Kind.PRELOAD, str(lib) if found else "",
                     found, "tlmalloc with kept blocks "
                     "(TLMALLOC_KEPT_BYTES=%s: docs/design.md, \"Kept "
                     "blocks\")" % KEPT_BYTES if found else missing_note(lib),
                     env={"TLMALLOC_KEPT_BYTES": KEPT_BYTES})
    ts_found = ts_prog.is_file()
    lock = Allocator("tlmalloc-lock", Kind.TS, "", ts_found,
                     "ts_malloc_lock: one heap behind one lock "
                     "(scaling workload only)" if ts_found
                     else missing_note(ts_prog), ts_api=TsApi.LOCK)
    return [main, fast, secure, kept, lock]


def peer_allocators(lib_dirs: Sequence[Path]) -> list[Allocator]:
    found = []
    for peer in PEERS:
        path = find_library(peer.files, lib_dirs)
        note = "" if path else "not found (%s; package %s)" % (
            " or ".join(peer.files), peer.package)
        found.append(Allocator(peer.name, Kind.PRELOAD, path, bool(path),
                               note, package=peer.package))
    return found


def read_peer_versions(path: Path) -> dict[str, dict[str, Any]]:
    """{name: {"version", "crate", ...}} from build-peers.sh's VERSIONS.json.

    A missing or unreadable file, or one of another shape, gives {}; an
    entry that is not a mapping is left out.
    """
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    peers = data.get("peers") if isinstance(data, dict) else None
    if not isinstance(peers, dict):
        return {}
    return {name: entry for name, entry in peers.items()
            if isinstance(entry, dict)}


def built_peer_allocators(peers_dir: Path) -> list[Allocator]:
    """mimalloc3, snmalloc, rpmalloc, hardened_malloc from peers_dir,
    found or not."""
    versions = read_peer_versions(peers_dir / VERSIONS_FILE)
    allocs = []
    for peer in BUILT_PEERS:
        path = peers_dir / peer.library
        entry = versions.get(peer.name, {})
        package = str(entry.get("crate") or peer.crate) + " (cargo)"
        if not path.is_file():
            allocs.append(Allocator(peer.name, Kind.PRELOAD, "", False,
                                    "%s (%s missing)" % (BUILD_PEERS_HINT,
                                                         path),
                                    package=package))
            continue
        version = str(entry.get("version") or "")
        note = "built from the %s crate's bundled sources" % peer.crate
        if not version:
            note += "; no version recorded in %s" % VERSIONS_FILE
        allocs.append(Allocator(peer.name, Kind.PRELOAD, str(path), True,
                                note, package=package, version=version))
    return allocs


@dataclass(frozen=True)
class MuslBuild:
    """A static musl build of the workloads: `<program><suffix>`."""
    name: str
    suffix: str
    what: str


MUSL_BUILDS = (
    MuslBuild("musl", "-musl",
              "static musl builds (musl's malloc)"),
    MuslBuild("musl-tlmalloc", "-musl-tlmalloc",
              "static musl builds with tlmalloc's libtlmalloc.a"),
)


def programs_ending(bench_dir: Path, suffix: str) -> list[str]:
    """The programs in bench_dir whose names end with suffix, sorted."""
    if not bench_dir.is_dir():
        return []
    return sorted(f.name for f in bench_dir.iterdir()
                  if f.name.endswith(suffix))


def musl_allocators(bench_dir: Path) -> list[Allocator]:
    """musl and musl-tlmalloc, found where bench_dir has their programs."""
    allocs = []
    for build in MUSL_BUILDS:
        progs = programs_ending(bench_dir, build.suffix)
        if progs:
            allocs.append(Allocator(build.name, Kind.MUSL, "", True,
                                    "%s: %s" % (build.what, ", ".join(progs)),
                                    package="musl", suffix=build.suffix))
        else:
            allocs.append(Allocator(
                build.name, Kind.MUSL, "", False,
                "no <workload>%s programs in %s (musl-gcc missing?)"
                % (build.suffix, bench_dir), package="musl",
                suffix=build.suffix))
    return allocs


LINKED_SUFFIX = "-linked"


def linked_allocator(bench_dir: Path) -> Allocator:
    """tlmalloc-linked, found where bench_dir has its programs."""
    progs = programs_ending(bench_dir, LINKED_SUFFIX)
    if progs:
        return Allocator("tlmalloc-linked", Kind.LINKED, "", True,
                         "the workloads with libtlmalloc.a linked in: %s"
                         % ", ".join(progs), suffix=LINKED_SUFFIX)
    return Allocator("tlmalloc-linked", Kind.LINKED, "", False,
                     "no <workload>%s programs in %s (not built?)"
                     % (LINKED_SUFFIX, bench_dir), suffix=LINKED_SUFFIX)


def parse_extra(spec: str) -> Allocator:
    """NAME=/path/lib.so[,VAR=VALUE...] from the command line, as an
    Allocator whose runs also set each VAR (an option of the library:
    the same library under two names with other settings)."""
    name, sep, given = spec.partition("=")
    lib, *settings = given.split(",")
    if not sep or not name or not lib:
        raise ValueError("expected NAME=/path/lib.so[,VAR=VALUE...], got %r"
                         % spec)
    if name in BUILTIN:
        raise ValueError("allocator name %r is taken" % name)
    env = {}
    for setting in settings:
        var, eq, value = setting.partition("=")
        if not eq or not var or var == "LD_PRELOAD":
            raise ValueError("%s: expected VAR=VALUE after the library, got "
                             "%r" % (name, setting))
        env[var] = value
    note = "given on the command line"
    if env:
        note += ", with " + " ".join("%s=%s" % item for item in env.items())
    path = Path(os.path.abspath(lib))       # normalised, links kept
    if not path.is_file():
        return Allocator(name, Kind.PRELOAD, str(path), False,
                         "%s: no such file" % path, env=env)
    return Allocator(name, Kind.PRELOAD, str(path), True, note, env=env)


def discover(build_dir: Path, lib_dirs: Sequence[Path] | None = None,
             extras: Iterable[str] = (),
             bench_dir: Path | None = None) -> list[Allocator]:
    """Every allocator, found or not, in the report's order.

    build_dir holds src/libtlmalloc.so and peers/ (the built peers);
    bench_dir (default build_dir/bench) the workload programs.
    """
    if lib_dirs is None:
        lib_dirs = default_lib_dirs()
    bench_dir = bench_dir or build_dir / "bench"
    allocs = tlmalloc_allocators(build_dir, bench_dir)
    allocs.append(Allocator("glibc", Kind.SYSTEM, "", True,
                            "the C library's malloc (no preload)"))
    allocs += peer_allocators(lib_dirs)
    allocs += built_peer_allocators(build_dir / PEERS_DIR)
    allocs += musl_allocators(bench_dir)
    allocs.append(linked_allocator(bench_dir))
    allocs += [parse_extra(spec) for spec in extras]
    return allocs


def select(allocs: Sequence[Allocator],
           names: Sequence[str]) -> list[Allocator]:
    """The allocators named (all when names is empty).  ValueError if unknown."""
    if not names:
        return list(allocs)
    known = [a.name for a in allocs]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError("unknown allocator(s): %s (known: %s)" % (
            ", ".join(unknown), ", ".join(known)))
    return [a for a in allocs if a.name in names]


def probe_preload(alloc: Allocator, timeout: float = 10) -> Allocator:
    """Checks that the dynamic loader accepts alloc's library.

    Marks alloc missing (found=False) when it does not: a library the
    loader ignores would silently measure glibc under another name.
    """
    if alloc.kind is not Kind.PRELOAD or not alloc.found:
        return alloc
    env = dict(os.environ, LD_PRELOAD=alloc.path)
    try:
        proc = subprocess.run(["/bin/true"], env=env, capture_output=True,
                              text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as err:
        alloc.found, alloc.note = False, "preload probe failed: %s" % err
        return alloc
    if proc.returncode != 0 or "cannot be preloaded" in proc.stderr:
        alloc.found = False
        alloc.note = "the loader refuses it: %s" % proc.stderr.strip()[:200]
    return alloc


class NotApplicable(Exception):
    """This allocator does not take part in this workload (no cell)."""


class Missing(Exception):
    """The cell exists but cannot run: the reason is the message."""


def command_for(workload: Workload, point: Point, alloc: Allocator,
                bench_dir: Path, args: Sequence[str]
                ) -> tuple[list[str], dict[str, str]]:
    """(argv, extra_env) running one point of a workload with alloc.

    Raises NotApplicable (tlmalloc-lock outside the scaling workload) or
    Missing (the program was not built, the allocator was not found).
    """
    prog = workload.point_binary(point)
    env = dict(alloc.env)
    if workload.ts_binary and alloc.ts_api:
        prog = workload.ts_binary
        args = list(args) + ["--api", alloc.ts_api.value]
    elif alloc.kind is Kind.TS:
        raise NotApplicable(alloc.name)
    elif alloc.kind in (Kind.MUSL, Kind.LINKED):
        prog += alloc.suffix
    elif alloc.kind is Kind.PRELOAD:
        env["LD_PRELOAD"] = alloc.path
    if not alloc.found:
        raise Missing("allocator missing: " + alloc.note)
    path = bench_dir / prog
    if not path.is_file():
        raise Missing("%s not built" % prog)
    return [str(path)] + list(args), env

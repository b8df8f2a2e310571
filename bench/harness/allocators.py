"""Finding the allocators to compare, and how to run a workload with each.

Kinds of allocator:
  system   glibc: the program as built, nothing preloaded.
  preload  a shared library put in LD_PRELOAD (tlmalloc, its fast variant
           without free's checks, the peers, and any NAME=/path/lib.so from
           the command line).  The Debian peers are looked for in the
           system's library folders; mimalloc3, snmalloc and rpmalloc in
           <build>/peers, where scripts/build-peers.sh puts them with
           VERSIONS.json (their versions).
  ts       the ts_ API of tlmalloc: `scaling_ts --api lock` (the naive
           one-lock baseline, "tlmalloc-lock"); runs the scaling workload
           only.  tlmalloc itself runs `scaling_ts --api nolock` there.
  musl     the static `<program>-musl` build of a C workload.

An allocator that is not found stays in the list with found=False and a
note saying why, so the report can show it as missing.
"""

import json
import os
import platform
import subprocess
import sysconfig
from dataclasses import dataclass, asdict

# name, library file names tried in order, Debian package that ships it
PEERS = (
    ("jemalloc", ("libjemalloc.so.2", "libjemalloc.so"), "libjemalloc2"),
    ("tcmalloc", ("libtcmalloc_minimal.so.4", "libtcmalloc_minimal.so",
                  "libtcmalloc.so.4"), "libtcmalloc-minimal4"),
    ("mimalloc", ("libmimalloc.so.2", "libmimalloc.so"), "libmimalloc2.0"),
    # the proxy is the part of TBB's allocator that replaces malloc
    ("tbbmalloc", ("libtbbmalloc_proxy.so.2", "libtbbmalloc_proxy.so"),
     "libtbbmalloc2"),
)

# name, library in <build>/peers, the crate whose bundled sources
# scripts/build-peers.sh compiles
BUILT_PEERS = (
    ("mimalloc3", "libmimalloc3.so", "libmimalloc-sys"),
    ("snmalloc", "libsnmalloc.so", "snmalloc-sys"),
    ("rpmalloc", "librpmalloc.so", "rpmalloc-sys"),
)

PEERS_DIR = "peers"                 # under the build folder
VERSIONS_FILE = "VERSIONS.json"
BUILD_PEERS_HINT = "not built: run scripts/build-peers.sh (needs cargo)"

BUILTIN = ("tlmalloc", "tlmalloc-fast", "tlmalloc-lock", "glibc") \
    + tuple(p[0] for p in PEERS) + tuple(p[0] for p in BUILT_PEERS) \
    + ("musl",)


@dataclass
class Allocator:
    name: str
    kind: str                 # system | preload | ts | musl
    path: str = ""            # the library for preload
    found: bool = True
    note: str = ""            # why missing, or what it is
    ts_api: str = ""          # lock | nolock: runs the ts_ program variant
    package: str = ""         # Debian package expected to ship it
    version: str = ""

    def to_dict(self):
        return asdict(self)


def default_lib_dirs():
    """Where the peers' shared libraries are looked for."""
    arch = sysconfig.get_config_var("MULTIARCH") or \
        "%s-linux-gnu" % platform.machine()
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    for prefix in ("/usr/local/lib", "/usr/lib", "/lib"):
        dirs += [os.path.join(prefix, arch), prefix]
    dirs += ["/usr/lib64", "/lib64"]
    return dirs


def find_library(names, lib_dirs):
    """The first existing path among names x lib_dirs, or ""."""
    for name in names:
        for folder in lib_dirs:
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                return path
    return ""


def tlmalloc_allocators(build_dir, bench_dir):
    lib = os.path.join(build_dir, "src", "libtlmalloc.so")
    ts_prog = os.path.join(bench_dir, "scaling_ts")
    found = os.path.isfile(lib)
    main = Allocator("tlmalloc", "preload", lib if found else "", found,
                     "" if found else "not built: %s missing" % lib,
                     ts_api="nolock")
    fast_lib = os.path.join(build_dir, "src", "libtlmalloc-fast.so")
    fast_found = os.path.isfile(fast_lib)
    fast = Allocator("tlmalloc-fast", "preload",
                     fast_lib if fast_found else "", fast_found,
                     "tlmalloc without free's checks of the pointer"
                     if fast_found else "not built: %s missing" % fast_lib)
    ts_found = os.path.isfile(ts_prog)
    lock = Allocator("tlmalloc-lock", "ts", "", ts_found,
                     "ts_malloc_lock: one heap behind one lock "
                     "(scaling workload only)" if ts_found
                     else "not built: %s missing" % ts_prog, ts_api="lock")
    return [main, fast, lock]


def peer_allocators(lib_dirs):
    found = []
    for name, files, package in PEERS:
        path = find_library(files, lib_dirs)
        note = "" if path else "not found (%s; package %s)" % (
            " or ".join(files), package)
        found.append(Allocator(name, "preload", path, bool(path), note,
                               package=package))
    return found


def read_peer_versions(path):
    """{name: {"version", "crate", ...}} from build-peers.sh's VERSIONS.json.

    A missing or unreadable file, or one of another shape, gives {}; an
    entry that is not a mapping is left out.
    """
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    peers = data.get("peers") if isinstance(data, dict) else None
    if not isinstance(peers, dict):
        return {}
    return {name: entry for name, entry in peers.items()
            if isinstance(entry, dict)}


def built_peer_allocators(peers_dir):
    """mimalloc3, snmalloc, rpmalloc from peers_dir, found or not."""
    versions = read_peer_versions(os.path.join(peers_dir, VERSIONS_FILE))
    allocs = []
    for name, lib, crate in BUILT_PEERS:
        path = os.path.join(peers_dir, lib)
        entry = versions.get(name, {})
        package = str(entry.get("crate") or crate) + " (cargo)"
        if not os.path.isfile(path):
            allocs.append(Allocator(name, "preload", "", False,
                                    "%s (%s missing)" % (BUILD_PEERS_HINT,
                                                         path),
                                    package=package))
            continue
        version = str(entry.get("version") or "")
        note = "built from the %s crate's bundled sources" % crate
        if not version:
            note += "; no version recorded in %s" % VERSIONS_FILE
        allocs.append(Allocator(name, "preload", path, True, note,
                                package=package, version=version))
    return allocs


def musl_allocator(bench_dir):
    progs = []
    if os.path.isdir(bench_dir):
        progs = sorted(f for f in os.listdir(bench_dir) if f.endswith("-musl"))
    if progs:
        return Allocator("musl", "musl", "", True,
                         "static musl-gcc builds: " + ", ".join(progs),
                         package="musl")
    return Allocator("musl", "musl", "", False,
                     "no <workload>-musl programs in %s (musl-gcc missing?)"
                     % bench_dir, package="musl")


def parse_extra(spec):
    """NAME=/path/lib.so from the command line, as an Allocator."""
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise ValueError("expected NAME=/path/lib.so, got %r" % spec)
    if name in BUILTIN:
        raise ValueError("allocator name %r is taken" % name)
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        return Allocator(name, "preload", path, False, "%s: no such file" % path)
    return Allocator(name, "preload", path, True, "given on the command line")


def discover(build_dir, lib_dirs=None, extras=(), bench_dir=None):
    """Every allocator, found or not, in the report's order.

    build_dir holds src/libtlmalloc.so and peers/ (the built peers);
    bench_dir (default build_dir/bench) the workload programs.
    """
    if lib_dirs is None:
        lib_dirs = default_lib_dirs()
    bench_dir = bench_dir or os.path.join(build_dir, "bench")
    allocs = tlmalloc_allocators(build_dir, bench_dir)
    allocs.append(Allocator("glibc", "system", "", True,
                            "the C library's malloc (no preload)"))
    allocs += peer_allocators(lib_dirs)
    allocs += built_peer_allocators(os.path.join(build_dir, PEERS_DIR))
    allocs.append(musl_allocator(bench_dir))
    allocs += [parse_extra(spec) for spec in extras]
    return allocs


def select(allocs, names):
    """The allocators named (all when names is empty).  ValueError if unknown."""
    if not names:
        return list(allocs)
    known = [a.name for a in allocs]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError("unknown allocator(s): %s (known: %s)" % (
            ", ".join(unknown), ", ".join(known)))
    return [a for a in allocs if a.name in names]


def probe_preload(alloc, timeout=10):
    """Checks that the dynamic loader accepts alloc's library.

    Marks alloc missing (found=False) when it does not: a library the
    loader ignores would silently measure glibc under another name.
    """
    if alloc.kind != "preload" or not alloc.found:
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


def command_for(workload, point, alloc, bench_dir, args):
    """(argv, extra_env) running one point of a workload with alloc.

    Raises NotApplicable (tlmalloc-lock outside the scaling workload) or
    Missing (the program was not built, the allocator was not found).
    """
    prog = workload.point_binary(point)
    env = {}
    if workload.ts_binary and alloc.ts_api:
        prog = workload.ts_binary
        args = list(args) + ["--api", alloc.ts_api]
    elif alloc.kind == "ts":
        raise NotApplicable(alloc.name)
    elif alloc.kind == "musl":
        prog += "-musl"
    elif alloc.kind == "preload":
        env["LD_PRELOAD"] = alloc.path
    if not alloc.found:
        raise Missing("allocator missing: " + alloc.note)
    path = os.path.join(bench_dir, prog)
    if not os.path.isfile(path):
        raise Missing("%s not built" % prog)
    return [path] + list(args), env

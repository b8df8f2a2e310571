#!/usr/bin/env python3
"""Side-by-side runs of one command under several allocators, interleaved.

    python3 bench/interleave.py [-n ROUNDS] NAME=LIB[@VAR=VALUE,...] ... -- CMD ARGS

Each round runs CMD once under every library (LD_PRELOAD=LIB, with the
extra environment variables given after '@'), in an order that flips every
round, under /usr/bin/time.  Printed: per library the medians of wall
seconds, CPU seconds (user + sys), peak RSS and minor page faults, and for
every library after the first the median (and range) of its per-round CPU
ratio to the first's.  On a noisy shared machine the per-round ratio is the
number to read: both runs of a round see the same load.  A run that fails
is reported and left out of the medians.
"""
import argparse
import os
import statistics
import subprocess
import sys


def parse_lib(arg):
    name, sep, rest = arg.partition("=")
    if not sep or not name or not rest:
        sys.exit(f"interleave.py: '{arg}' is not NAME=LIB[@VAR=VALUE,...]")
    lib, _, envs = rest.partition("@")
    if not os.path.exists(lib):
        sys.exit(f"interleave.py: {name}: no library at {lib}")
    extra = {}
    for e in filter(None, envs.split(",")):
        k, sep, v = e.partition("=")
        if not sep:
            sys.exit(f"interleave.py: '{e}' is not VAR=VALUE")
        extra[k] = v
    return name, os.path.abspath(lib), extra


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit(__doc__)
    cut = argv.index("--")
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("-n", type=int, default=7, help="rounds (default 7)")
    ap.add_argument("libs", nargs="+")
    opts = ap.parse_args(argv[:cut])
    cmd = argv[cut + 1:]
    if not cmd or opts.n < 1:
        sys.exit(__doc__)
    libs = [parse_lib(a) for a in opts.libs]
    runs = {name: [] for name, _, _ in libs}
    for r in range(opts.n):
        for name, lib, extra in (libs if r % 2 == 0 else libs[::-1]):
            env = dict(os.environ, **extra, LD_PRELOAD=lib)
            p = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M %R"] + cmd,
                               env=env, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"{name}: round {r + 1} failed (exit {p.returncode}): "
                      f"{p.stderr.strip()[-300:]}")
                runs[name].append(None)
                continue
            e, u, s, m, f = p.stderr.split()[-5:]
            runs[name].append((float(e), float(u) + float(s),
                               int(m) / 1024, int(f)))
    first = libs[0][0]
    for name, _, _ in libs:
        ok = [x for x in runs[name] if x]
        if not ok:
            print(f"{name:14s} every run failed")
            continue
        med = [statistics.median(x[i] for x in ok) for i in range(4)]
        line = (f"{name:14s} wall {med[0]:.3f} s  cpu {med[1]:.3f} s  "
                f"rss {med[2]:.1f} MiB  faults {med[3]:.0f}  (n={len(ok)})")
        if name != first:
            rat = [b[1] / a[1] for a, b in zip(runs[first], runs[name])
                   if a and b and a[1] > 0]
            if rat:
                line += (f"  cpu/{first} {statistics.median(rat):.3f}"
                         f" ({min(rat):.2f}-{max(rat):.2f})")
        print(line)


if __name__ == "__main__":
    main()

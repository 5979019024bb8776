#!/usr/bin/env python3
"""Cold start of a disassembly: one fresh process per file, asterism against llvm-objdump.

For each shared code object (tests/data/shared/codeobjects/*.co, or the files given), times
the wall clock of a fresh process, several times, and prints the medians side by side:
  * `python -m asterism.cli disasm FILE` (what a user types);
  * the library alone: `python -c 'from asterism import api; api.disassembly_listing(FILE)'`;
  * `llvm-objdump-22 -d FILE`;
  * `python -c pass`, the interpreter's own start-up (the floor of any Python tool here);
and the ratio asterism / llvm-objdump per file (lower is better; the goal is <= 2); then all
files in one call of each tool (`asterism disasm A B C` prints what `llvm-objdump -d A B C`
does), per file.

Before timing, the package is byte-compiled (as `pip install` does; a checkout run with
PYTHONDONTWRITEBYTECODE would otherwise compile every module on every start) and one
untimed run per file fills the user cache (asterism/cache.py): the figures are the warm
start a user sees from the second run on. `--cold-cache` times with the cache turned off
instead (every table built in the process, as on the very first run). `--no-site-hooks`
starts Python without running the site-packages' .pth files (`python -S`, the site-packages
folders put on PYTHONPATH instead): some environments add start-up hooks there (a sandbox's
certificate set-up costs ~25 ms of every start here) that a user's machine does not have.

Usage: python benchmarks/bench_coldstart.py [--repeat 7] [--cold-cache] [--no-site-hooks]
       [FILE...]
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import site
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
SAMPLES = REPO / "tests" / "data" / "shared" / "codeobjects"


def timed(cmds: list[list[str]], env: dict[str, str], repeat: int
          ) -> list[tuple[float, float]]:
    """The median wall time and median CPU time (user + system, less sensitive to a busy
    machine) of `repeat` runs of each command (their output discarded; they must succeed),
    the commands run in turn so that a busy spell of the machine slows all of them."""
    walls: list[list[float]] = [[] for _ in cmds]
    cpus: list[list[float]] = [[] for _ in cmds]
    for _ in range(repeat):
        for k, cmd in enumerate(cmds):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
            walls[k].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[k].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return [(statistics.median(w), statistics.median(c)) for w, c in zip(walls, cpus,
                                                                            strict=True)]


def main() -> None:
    """Time every file and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--cold-cache", action="store_true",
                    help="turn the user cache off (ASTERISM_CACHE_DIR=)")
    ap.add_argument("--no-site-hooks", action="store_true",
                    help="python -S with the site-packages folders on PYTHONPATH (no .pth "
                         "start-up hooks)")
    ap.add_argument("--objdump", default="llvm-objdump-22")
    ap.add_argument("--src", type=Path, default=SRC,
                    help="the source tree to time (e.g. an export of an older commit)")
    args = ap.parse_args()
    files = args.files or sorted(SAMPLES.glob("*.co"))
    if not files:
        sys.exit(f"no code objects given and none in {SAMPLES}")
    compileall.compile_dir(str(args.src / "asterism"), quiet=1)
    path = [str(args.src)]
    if args.no_site_hooks:
        path += site.getsitepackages() + [site.getusersitepackages()]
        py = [sys.executable, "-S"]
    else:
        py = [sys.executable]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    if args.cold_cache:
        env["ASTERISM_CACHE_DIR"] = ""
    lib = "import sys; from asterism import api; api.disassembly_listing(sys.argv[1])"
    for f in files:  # (fills the cache; checks the commands work)
        subprocess.run([*py, "-m", "asterism.cli", "disasm", str(f)], env=env,
                       stdout=subprocess.DEVNULL, check=True)
    ((floor, floor_cpu),) = timed([[*py, "-c", "pass"]], env, args.repeat)
    print(f"{args.src}: median of {args.repeat} runs, cache "
          f"{'off' if args.cold_cache else 'warm'}"
          f"{', python -S (no .pth hooks)' if args.no_site_hooks else ''}; wall ms (CPU ms)")
    print(f"{' '.join(os.path.basename(p) for p in py)} -c pass: {floor * 1e3:.1f} "
          f"({floor_cpu * 1e3:.1f}), the interpreter's start-up")
    print(f"{'file':<46} {'KB':>4} {'objdump':>12} {'cli':>12} {'library':>12} "
          f"{'cli/od':>6} {'lib/od':>6} {'lib/od CPU':>10}")
    ratios = []
    for f in files:
        od, cli, lib_t = timed([[args.objdump, "-d", str(f)],
                                [*py, "-m", "asterism.cli", "disasm", str(f)],
                                [*py, "-c", lib, str(f)]], env, args.repeat)
        ratios.append((cli[0] / od[0], lib_t[0] / od[0], lib_t[1] / od[1]))
        cells = " ".join(f"{w * 1e3:5.0f} ({c * 1e3:4.0f})" for w, c in (od, cli, lib_t))
        print(f"{f.name[:46]:<46} {f.stat().st_size / 1024:4.0f} {cells} "
              f"{ratios[-1][0]:5.2f}x {ratios[-1][1]:5.2f}x {ratios[-1][2]:9.2f}x")
    cli_r, lib_r, cpu_r = zip(*ratios, strict=True)
    print(f"median ratio to llvm-objdump (goal <= 2x): cli {statistics.median(cli_r):.2f}x, "
          f"library {statistics.median(lib_r):.2f}x (CPU {statistics.median(cpu_r):.2f}x)")
    # Several files in one call (both tools take a list): the start-up is paid once.
    names = [str(f) for f in files]
    od, cli = timed([[args.objdump, "-d", *names],
                     [*py, "-m", "asterism.cli", "disasm", *names]], env, args.repeat)
    n = len(files)
    print(f"all {n} files in one call, per file: objdump {od[0] / n * 1e3:.0f} ms "
          f"({od[1] / n * 1e3:.0f}), cli {cli[0] / n * 1e3:.0f} ms ({cli[1] / n * 1e3:.0f}): "
          f"{cli[0] / od[0]:.2f}x (CPU {cli[1] / od[1]:.2f}x)")


if __name__ == "__main__":
    main()

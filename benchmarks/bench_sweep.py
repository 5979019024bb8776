#!/usr/bin/env python3
"""Sweep engines side by side: a 16-point GEMM sweep on 1 and 2 local workers and on Ray
with 2 CPUs; wall times and the speed-up against 1 local worker.

The sweep is examples/sweep/sweep_gemm.py's (tile_m, tile_n in {64, 128}, interleave in
{true, false}, vmem_every in {0, 1}), each point built, compiled, checked against NumPy and
timed by the timing model, with the result cache off so every run computes every point.
Ray is timed twice: the whole sweep including Ray's start, and the sweep alone on an
already started Ray (its start is printed apart). The rankings of the runs are compared.

Usage: python benchmarks/bench_sweep.py [--shape 256x256x256] [--no-ray]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
# (the Ray started below must import this checkout too: its workers read PYTHONPATH)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"),
                                                         os.environ.get("PYTHONPATH")]))

import asterism  # noqa: E402

SPACE = {"tile_m": [64, 128], "tile_n": [64, 128], "interleave": [True, False],
         "vmem_every": [0, 1]}


def run(shape: tuple[int, int, int], **options):
    """One sweep of SPACE at `shape` without the cache: (wall seconds, busy seconds, ranking).

    Busy seconds add up what each point cost its worker; busy / wall is the parallelism the
    engine got (below the worker count when the cores are shared or start-up dominates)."""
    m, n, k = shape
    start = time.perf_counter()
    result = asterism.sweep("gemm", {"m": [m], "n": [n], "k": [k], **SPACE}, check=True,
                            cache=False, progress=False, **options)
    wall = time.perf_counter() - start
    if result.failed:
        raise SystemExit(f"{len(result.failed)} points failed: {result.failed[0].error}")
    busy = sum(r.wall_seconds for r in result.points)
    return wall, busy, [tuple(r.params[p] for p in SPACE) + (r.cycles,)
                        for r in result.ranked()]


def line(label: str, base: float, wall: float, busy: float, same: bool, note: str = "") -> str:
    """One row of the report."""
    verdict = "same ranking" if same else "RANKING DIFFERS"
    return (f"  {label:<22} {wall:7.1f} s   x{base / wall:.2f}   busy/wall {busy / wall:4.2f}"
            f"   {verdict}{note}")


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="256x256x256", help="M x N x K of the GEMM")
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray runs")
    args = ap.parse_args()
    shape = tuple(int(s) for s in args.shape.lower().split("x"))
    print(f"16-point GEMM sweep at {args.shape} (check + timing model per point)")
    print(f"  {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    base, busy, ranking = run(shape, workers=1)
    print(line("local, 1 worker", base, base, busy, True, "  (reference)"))
    wall, busy, other = run(shape, workers=2)
    print(line("local, 2 workers", base, wall, busy, other == ranking))
    if args.no_ray:
        return
    try:
        import ray
    except ImportError:
        print("  ray: not installed (pip install 'asterism[cluster]')")
        return
    wall, busy, other = run(shape, engine="ray", workers=2)
    print(line("ray, 2 CPUs (cold)", base, wall, busy, other == ranking,
               "  (includes starting Ray)"))
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR)
    started = time.perf_counter() - t0
    try:
        wall, busy, other = run(shape, engine="ray")
    finally:
        ray.shutdown()
    print(line("ray, 2 CPUs (started)", base, wall, busy, other == ranking,
               f"  (Ray's start, {started:.1f} s, not counted)"))


if __name__ == "__main__":
    main()

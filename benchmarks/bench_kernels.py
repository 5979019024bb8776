#!/usr/bin/env python3
"""Emulator speed on the library's real shapes: `--check` of GEMM 1024^3 and of
flash-attention forward (batch 1, 2 heads, sequence 1024, head dim 128), per target.

For each: the wall time of build + compile + emulate + check, the emulator's
wave-instructions per second, and side by side the reference NumPy computation of the
same result (the ratio shows what emulating the ISA costs). A kernel not registered yet
(flash_attention_fwd before its branch lands) is reported as skipped. Issue 13's budget is
60 s per `--check`; the last column is the wall time against it.

Usage: python benchmarks/bench_kernels.py [--targets gfx942,gfx950] [--kernels gemm]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from asterism import kernels  # noqa: E402
from asterism.kernels import KernelParamError, run_case  # noqa: E402

BUDGET_SECONDS = 60.0
SHAPES = {
    "gemm": dict(m=1024, n=1024, k=1024),
    "flash_attention_fwd": dict(batch=1, heads=2, seq_q=1024, head_dim=128),
}


def bench(name: str, target: str) -> str:
    """One line of figures for kernel `name` on `target` (or why it was skipped)."""
    try:
        gen = kernels.get(name)
    except KernelParamError:
        return f"{name:<20} {target:<7} skipped: not registered"
    params = SHAPES[name]
    for key in params:
        gen.param(key)  # a shape naming an unknown parameter is an error, not a smaller run
    start = time.perf_counter()
    case = gen.build(target, params)
    built = time.perf_counter()
    run = run_case(case, backend="emu", check=True)
    wall = time.perf_counter() - start
    t0 = time.perf_counter()
    case.reference()
    numpy_s = time.perf_counter() - t0
    rate = run.wave_instructions / run.wall_seconds if run.wall_seconds else 0.0
    verdict = "ok" if run.passed else "CHECK FAILED"
    err = max((c.max_abs_error for c in run.checks), default=0.0)
    return (f"{name:<20} {target:<7} {wall:7.1f} s (build {built - start:4.1f}, emulate "
            f"{run.wall_seconds:5.1f})  {run.wave_instructions:>9} wave-insts  "
            f"{rate:9.0f} wave-insts/s  numpy {numpy_s:6.3f} s (x{wall / numpy_s:,.0f})  "
            f"max err {err:.2e} {verdict}  {wall / BUDGET_SECONDS:5.0%} of the 60 s budget")


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", default="gfx942,gfx950")
    ap.add_argument("--kernels", default=",".join(SHAPES))
    args = ap.parse_args()
    for name in args.kernels.split(","):
        for target in args.targets.split(","):
            print(bench(name, target), flush=True)


if __name__ == "__main__":
    main()

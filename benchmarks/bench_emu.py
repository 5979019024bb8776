#!/usr/bin/env python3
"""Emulator speed: wave-instructions per second on VALU code, and a 256^3 fp16 MFMA GEMM.

Goal (issue 25): >= 50 M wave-instructions/s on the VALU chain (add_1000 on 304 workgroups,
sanitizer on, as by default); each line prints the rate per wall second and per CPU second
of the run (the machine may be shared) and the ratio to the goal.

  * add_N (the demo kernel with N dependent v_add_u32; N = 10 is the demo, larger N makes
    the run VALU-bound) launched on 304 workgroups (one per MI300X CU) of one wave;
  * examples/gemm/gemm_f16.py at 256^3 (256 workgroups of one wave, 16 MFMAs each).

There is no GPU here to compare with; the reference is NumPy's own matmul of the same GEMM,
timed side by side (the ratio shows what emulating the ISA costs over computing the result).

Usage: python benchmarks/bench_emu.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

import asterism  # noqa: E402

GOAL = 50e6  # wave-instructions per second, VALU chain on 304 workgroups


def add_kernel(n_adds: int) -> bytes:
    """The demo kernel with `n_adds` dependent adds, compiled."""
    text = subprocess.run([sys.executable, str(REPO / "examples/demo/generate_add_10.py"),
                           "--num-add-instructions", str(n_adds)], capture_output=True,
                          text=True, check=True).stdout
    return asterism.compile(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for n_adds in (10, 1000):
        code = add_kernel(n_adds)
        out = np.zeros(304 * 64, np.int32)
        cpu = []
        for _ in range(args.repeat):
            res = asterism.launch(code, f"add_{n_adds}", grid=304, block=64, args=[out],
                                  backend="emu")
            cpu.append(res.stats.cpu_seconds)
        stats = res.stats
        best = min(res.times)
        assert (out == np.arange(304 * 64) + n_adds).all()
        wall_rate, cpu_rate = stats.wave_instructions / best, stats.wave_instructions / min(cpu)
        print(f"add_{n_adds} on 304 workgroups: {stats.wave_instructions:,} wave-instructions"
              f" in {best * 1e3:.1f} ms = {wall_rate:,.0f} wave-instructions/s "
              f"({cpu_rate:,.0f}/s of CPU time); goal {GOAL:,.0f}/s: {wall_rate / GOAL:.2f}x "
              f"(CPU {cpu_rate / GOAL:.2f}x)")
    sys.path.insert(0, str(REPO / "examples" / "gemm"))
    import gemm_f16

    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 256)).astype(np.float16)
    b = rng.standard_normal((256, 256)).astype(np.float16)
    c = np.zeros((256, 256), np.float32)
    code = asterism.compile(gemm_f16.build(256, 256, 256))
    start = time.perf_counter()
    res = asterism.launch(code, "gemm_f16", grid=(16, 16, 1), block=64,
                          args=[a, np.ascontiguousarray(b.T), c], backend="emu",
                          iterations=args.repeat)
    wall = (time.perf_counter() - start) / args.repeat
    t_np = min(_timed(lambda: a.astype(np.float32) @ b.astype(np.float32))
               for _ in range(args.repeat))
    print(f"gemm 256^3 fp16 (MFMA) on the emulator: {min(res.times):.3f} s per launch "
          f"({wall:.3f} s with argument copies); NumPy matmul {t_np * 1e3:.2f} ms; "
          f"ratio {min(res.times) / t_np:,.0f}x")


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()

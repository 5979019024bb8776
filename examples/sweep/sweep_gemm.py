"""Sweep the library GEMM's tile and schedule parameters, rank the points, plot them.

    python examples/sweep/sweep_gemm.py                         # 16 points, one worker per core
    python examples/sweep/sweep_gemm.py --engine ray --workers 2
    python examples/sweep/sweep_gemm.py --rank-by per_cu --plot gemm_sweep.png -o sweep.json

The same sweep from the command line:

    asterism sweep gemm --shape 256x256x256 --param tile_m=64,128 --param tile_n=64,128 \\
        --param interleave=true,false --param vmem_every=0,1 --check --plot gemm_sweep.png

Every point is built by `asterism.kernels` (gemm.py), compiled with the `auto` pipeline,
checked against NumPy on the emulator and timed by the emulator's timing model (modeled, not
measured: run with `--metric measured` on a GPU for real times). Finished points are cached,
so running it again prints the table at once.
"""

from __future__ import annotations

import argparse

import asterism

# Tiles (what each workgroup computes) and schedule (how the global loads and LDS writes of
# the next K tile are placed between the MFMAs of the current one).
SPACE = {
    "tile_m": [64, 128],
    "tile_n": [64, 128],
    "interleave": [True, False],
    "vmem_every": [0, 1],
}


def run(shape=(256, 256, 256), space=None, **options):
    """Sweep `space` (default SPACE) of the GEMM at `shape`; returns the SweepResult."""
    m, n, k = shape
    full = {"m": [m], "n": [n], "k": [k], **(space or SPACE)}
    return asterism.sweep("gemm", full, check=True, **options)


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="256x256x256", help="M x N x K")
    ap.add_argument("--target", default="gfx942", help="gfx942 or gfx950")
    ap.add_argument("--engine", choices=("local", "ray"), default="local")
    ap.add_argument("--workers", type=int, help="processes (default: one per core)")
    ap.add_argument("--rank-by", choices=("tflops", "per_cu", "time"), default="tflops",
                    help="tflops of this launch, or the per-CU rate (a grid filling the chip)")
    ap.add_argument("--plot", help="PNG of TFLOPS against each parameter")
    ap.add_argument("-o", "--output", help="JSON report with every point")
    args = ap.parse_args()
    shape = tuple(int(s) for s in args.shape.lower().split("x"))
    result = run(shape, target=args.target, engine=args.engine, workers=args.workers,
                 rank_by=args.rank_by)
    print(result.table(), end="")
    best = result.best
    if best is not None:
        chosen = " ".join(f"{p}={best.params[p]}" for p in SPACE)
        print(f"best: {chosen}: {best.tflops:.2f} modeled TFLOPS, {best.cycles} cycles, "
              f"{best.vgprs} VGPR + {best.agprs} AGPR, {best.waves_per_simd} waves/SIMD")
    if args.plot:
        print(f"plot: {result.plot(args.plot)}")
    if args.output:
        import json

        with open(args.output, "w") as fh:
            json.dump(result.to_json(), fh, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Emulator speed where users wait: `kernels run flash_attention_fwd --check --timing`.

Each row runs the CLI command as users do (a fresh process) and prints its wall time, the
process's CPU time (user + sys: on a shared machine the wall time also counts other work)
and the ratio to the goal of issue 25; then the same case in-process, split into phases
(build, compile, launch with the timing model, NumPy reference + check), with the launch's
wave-instructions per second.

  row                                                          goal
  flash_attention_fwd --target gfx950 --shape 1x8x4096x128     < 60 s
  flash_attention_fwd --shape 1x2x1024x128                     < 2 s

Usage: python benchmarks/bench_emu_attention.py [--quick] [--no-phases]
  --quick: only the small row (the large one takes about a minute or more).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

ROWS = (  # (arguments after `kernels run flash_attention_fwd`, goal in seconds)
    (["--target", "gfx950", "--shape", "1x8x4096x128"], 60.0),
    (["--shape", "1x2x1024x128"], 2.0),
)


def cli_row(extra: list[str], goal: float) -> None:
    """The command as a user runs it: wall and CPU seconds, and the ratio to the goal."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    cmd = [sys.executable, "-m", "asterism.cli", "kernels", "run", "flash_attention_fwd",
           *extra, "--check", "--timing"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    checked = "ok" if ": ok" in proc.stdout and "FAILED" not in proc.stdout else "NOT ok"
    print(f"kernels run flash_attention_fwd {' '.join(extra)} --check --timing: "
          f"{wall:.2f} s wall, {cpu:.2f} s CPU (check {checked}); goal < {goal:g} s: "
          f"wall {wall / goal:.2f}x the goal, CPU {cpu / goal:.2f}x")


def phases(extra: list[str]) -> None:
    """The same case in-process, phase by phase (CPU seconds)."""
    from asterism import kernels
    from asterism.kernels.run import compile_case, run_case

    opts = dict(zip(extra[::2], extra[1::2], strict=True))
    gen = kernels.get("flash_attention_fwd")
    clock = time.process_time
    t0 = clock()
    case = gen.build(opts.get("--target", gen.targets[0]), gen.shape_params(opts["--shape"]))
    t1 = clock()
    code = compile_case(case)
    t2 = clock()
    run = run_case(case, check=False, timing=True, code=code)
    t3 = clock()
    case.reference()
    t4 = clock()
    rate = run.wave_instructions / max(t3 - t2, 1e-9)
    print(f"  phases (CPU s): build {t1 - t0:.2f}, compile {t2 - t1:.2f}, launch with the "
          f"timing model {t3 - t2:.2f} ({run.wave_instructions:,} wave-instructions, "
          f"{rate:,.0f}/s; {run.modeled_workgroups} of {run.workgroups} workgroups modeled), "
          f"NumPy reference {t4 - t3:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the small row")
    ap.add_argument("--no-phases", action="store_true", help="only the CLI commands")
    args = ap.parse_args()
    for extra, goal in ROWS[1:] if args.quick else ROWS:
        cli_row(extra, goal)
        if not args.no_phases:
            phases(extra)


if __name__ == "__main__":
    main()

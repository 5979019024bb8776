#!/usr/bin/env python3
"""flash_attention_fwd: emulator check, wall times, registers and the timing model's figures.

For each configuration: build, compile with `auto`, run on the emulator against the NumPy
reference (max error vs the tolerance), then a second run under the timing model
(`launch(..., timing=...)`, modeled, not measured). The model times the workgroups of the
first CU(s) in detail; the device figure scales the modeled CU's rate by the CU count:

    modeled TFLOPS = flops of the modeled workgroups / (cycles / clock) * CU count

(flops = 4 b h sq sk d, the visible half when causal; clock: target/data/timing.toml). With
the default device (MI355X: 256 CUs) and few workgroups, CU 0 holds one workgroup: the
figure is then that of a CU running a single workgroup. `--cus-device 1` puts every
workgroup on one modeled CU instead (a loaded CU, several workgroups resident; slower).

There is no GPU here: every cycle and TFLOPS figure is *modeled*, printed beside the
target's peak dense bf16/f16 MFMA rate as a reference point.

Usage: python benchmarks/bench_attention.py [--target gfx950] [--seq 1024] [--head-dim 128]
           [--causal] [--param k=v ...] [--no-check] [--cus-device N] [--json FILE]
(To be switched to asterism.kernels.run once that runner exists.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.append(str(REPO / "src"))  # after PYTHONPATH: a run can pick another tree

import asterism  # noqa: E402
from asterism import kernels  # noqa: E402

# Dense 16-bit MFMA peak (TFLOPS) of the flagship parts, from the AMD data sheets:
# MI300X 1307.4 (gfx942), MI355X 2516.6 (gfx950). Only a reference point for the modeled rate.
PEAK_TFLOPS = {"gfx942": 1307.4, "gfx950": 2516.6}


def register_use(code: bytes) -> dict[str, int]:
    """VGPR / AGPR / SGPR counts and occupancy of the kernel (as `asterism stats` prints)."""
    from asterism.profile.stats import code_object_stats

    s = code_object_stats(code)[0]
    return {"vgprs": s.used_vgprs, "agprs": s.used_agprs, "sgprs": s.used_sgprs,
            "waves_per_simd": s.waves_per_simd, "mfma": sum(s.mfma.values()),
            "instructions": s.instructions}


def check(case, code) -> dict[str, float]:
    """Run on the emulator and compare with the NumPy reference."""
    start = time.perf_counter()
    asterism.launch(code, case.kernel, grid=case.grid, block=case.block,
                    args=list(case.args.values()), backend="emu")
    run = time.perf_counter() - start
    got, want = case.output_values("o"), case.reference()["o"]
    err = np.abs(got - want)
    excess = float((err - case.atol - case.rtol * np.abs(want)).max())
    return {"run_s": run, "max_error": float(err.max()), "atol": case.atol, "ok": excess <= 0}


def timed(case, code, device_cus: int | None) -> dict[str, float]:
    """The timing model's cycles on the modeled CU and the modeled TFLOPS of the device."""
    from asterism.target import get_target
    from asterism.target.timing import get_timing
    from asterism.timing.params import TimingOptions

    args = {k: (np.zeros_like(v) if k == "o" else v) for k, v in case.args.items()}
    start = time.perf_counter()
    res = asterism.launch(code, case.kernel, grid=case.grid, block=case.block,
                          args=list(args.values()), backend="emu",
                          timing=TimingOptions(compute_units=device_cus))
    wall = time.perf_counter() - start
    t = res.timing
    workgroups = case.grid[0] * case.grid[1] * case.grid[2]
    # flops of the modeled workgroups: every workgroup does the same work unless causal
    # (there the per-row visible keys decide; computed from the workgroup's rows).
    flops = sum(workgroup_flops(case, w.workgroup) for w in t.waves if w.wave == 0)
    clock = get_timing(case.target).clock_mhz * 1e6
    cus = t.compute_units
    per_cu = flops / (t.cycles / clock)
    return {"cycles": t.cycles, "modeled_workgroups": t.modeled_workgroups,
            "workgroups": workgroups, "compute_units": cus, "clock_mhz": clock / 1e6,
            "modeled_tflops_cu": per_cu / 1e12,
            "modeled_tflops_device": per_cu * cus / t.modeled_cus / 1e12,
            "timing_wall_s": wall,
            "peak_tflops": PEAK_TFLOPS.get(case.target, float("nan")),
            "chip_cus": get_target(case.target).compute_units}


def workgroup_flops(case, wg: tuple[int, int, int]) -> int:
    """Useful flops of one workgroup (its block_m query rows of one head)."""
    p = case.params
    sq = p["seq_q"]
    sk = p["seq_k"] or sq
    d = p["head_dim"]
    rows = range(wg[0] * p["block_m"], min(sq, (wg[0] + 1) * p["block_m"]))
    if p["causal"]:
        keys = sum(min(sk, i + 1 + sk - sq) for i in rows)
    else:
        keys = len(rows) * sk
    return 4 * keys * d


def measure(target: str, params: dict, do_check: bool, device_cus: int | None) -> dict:
    """Build, compile, check and time one configuration."""
    t0 = time.perf_counter()
    case = kernels.get("flash_attention_fwd").build(target, params)
    t1 = time.perf_counter()
    code = asterism.compile(case.module, pipeline="auto")
    t2 = time.perf_counter()
    out = {"target": target, "params": params, "build_s": t1 - t0, "compile_s": t2 - t1}
    out.update(register_use(code))
    if do_check:
        out.update(check(case, code))
    out.update(timed(case, code, device_cus))
    return out


def report(r: dict) -> str:
    """One configuration's figures as text (modeled figures labelled so)."""
    p = ", ".join(f"{k}={v}" for k, v in r["params"].items())
    lines = [f"{r['target']} {p}",
             f"  build {r['build_s']:.1f} s, compile {r['compile_s']:.1f} s; "
             f"VGPRs {r['vgprs']}, AGPRs {r['agprs']}, SGPRs {r['sgprs']}, "
             f"{r['waves_per_simd']} waves/SIMD, {r['instructions']} instructions "
             f"({r['mfma']} MFMA)"]
    if "max_error" in r:
        lines.append(f"  emulator run {r['run_s']:.1f} s: max error {r['max_error']:.2e} "
                     f"(tolerance {r['atol']:.2e}) {'ok' if r['ok'] else 'FAILED'}")
    lines.append(
        f"  modeled: {r['cycles']} cycles on CU 0 ({r['modeled_workgroups']} of "
        f"{r['workgroups']} workgroups; {r['compute_units']} CUs at {r['clock_mhz']:.0f} MHz) "
        f"-> modeled {r['modeled_tflops_cu']:.2f} TFLOPS per CU, modeled "
        f"{r['modeled_tflops_device']:.0f} TFLOPS for {r['compute_units']} CUs "
        f"({100 * r['modeled_tflops_device'] / r['peak_tflops']:.0f}% of the "
        f"{r['peak_tflops']:.0f} TFLOPS peak); timing run {r['timing_wall_s']:.1f} s")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="gfx950")
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--param", action="append", default=[], metavar="K=V")
    ap.add_argument("--no-check", action="store_true", help="skip the functional check")
    ap.add_argument("--cus-device", type=int, default=None,
                    help="device CU count for the model (default: the target's flagship)")
    ap.add_argument("--json", help="append the figures to this JSON-lines file")
    args = ap.parse_args()
    params = {"batch": 1, "heads": args.heads, "seq_q": args.seq, "head_dim": args.head_dim,
              "causal": args.causal}
    for kv in args.param:
        k, _, v = kv.partition("=")
        params[k] = v
    gen = kernels.get("flash_attention_fwd")
    params = {k: v for k, v in gen.resolve(params).items() if k != "seed"}
    r = measure(args.target, params, not args.no_check, args.cus_device)
    print(report(r))
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(r) + "\n")
    return 0 if r.get("ok", True) else 1


if __name__ == "__main__":
    sys.exit(main())

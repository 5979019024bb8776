"""Timing of `asterism trace bundle`'s parts: reading, analysis, every picture, the HTML
view and the whole bundle, on the shared captures and on a synthetic long capture made by
tiling the flash-attention capture's waves in time (default ~3 M cycles), and on the shape
of the biggest public captures: 32 waves over 3 M cycles (the flash capture's waves put on
4 CUs, each wave's stream run 3 times and its times stretched to the span). Seconds are
wall time and CPU time of this process (the machine may be shared).

Reference, run side by side in this process: the timeline drawn as before this change, one
matplotlib bar per instruction and stall part (broken_barh, what `trace plot` did), on the
same trace. Prints seconds and the ratio reference / new. Skip the slow reference with
--no-reference.

    PYTHONPATH=src python benchmarks/bench_bundle.py [--cycles 3000000] [--no-reference]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT / "tests" / "data" / "shared"


def tiled(trace, cycles: int):
    """The trace's waves repeated back to back on their own SIMD slots until `cycles`."""
    from asterism.profile.att import InstRecord, Trace, Wave

    begin = min(w.begin for w in trace.waves)
    period = max(w.end for w in trace.waves) - begin
    copies = max(1, cycles // period)
    waves = []
    for k in range(copies):
        shift = k * period
        for w in trace.waves:
            waves.append(Wave(
                se=w.se, simd=w.simd, slot=w.slot, id=k, cu=w.cu, begin=w.begin + shift,
                end=w.end + shift,
                instructions=[InstRecord(r.time + shift, r.category, r.stall, r.duration,
                                         r.line) for r in w.instructions],
                timeline=list(w.timeline), waitcnt=list(w.waitcnt)))
    return Trace(code=trace.code, waves=waves, info=trace.info, realtime=trace.realtime,
                 extra_files=dict(trace.extra_files))


def big_shape(trace, cycles: int, waves: int = 32):
    """`waves` waves over `cycles` cycles: the trace's waves copied onto new CUs until
    there are `waves`, each one's stream run 3 times back to back, every time stretched so
    the span is `cycles` (gaps grow, stalls and durations stay)."""
    from asterism.profile.att import InstRecord, Trace, Wave

    begin = min(w.begin for w in trace.waves)
    out = []
    for k in range(waves):
        w = trace.waves[k % len(trace.waves)]
        recs, shift = [], 0
        for _rep in range(3):
            recs += [InstRecord(r.time - begin + shift, r.category, r.stall, r.duration, r.line)
                     for r in w.instructions]
            shift += w.end - begin
        scale = cycles / max(shift, 1)
        recs = [InstRecord(int(r.time * scale), r.category, r.stall, r.duration, r.line)
                for r in recs]
        end = recs[-1].time + recs[-1].duration + 4
        out.append(Wave(se=w.se, simd=w.simd, slot=w.slot + k // len(trace.waves), id=0,
                        cu=w.cu + 16 * (k // len(trace.waves)), begin=0, end=end,
                        instructions=recs, timeline=[], waitcnt=list(w.waitcnt) * 3))
    return Trace(code=trace.code, waves=out, info=trace.info, realtime=trace.realtime,
                 extra_files=dict(trace.extra_files))


def reference_timeline(trace, out: Path) -> None:
    """The timeline as `trace plot` drew it before: one bar per instruction."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from asterism.profile.isa_text import mnemonic, unit_name

    waves = trace.waves
    origin = min(w.begin for w in waves)
    fig = Figure(figsize=(14, 2.0 + 0.45 * len(waves)), dpi=110)
    ax = fig.add_subplot(1, 1, 1)
    for y, wave in enumerate(waves):
        issue: dict[str, list] = {}
        stall: dict[str, list] = {}
        for rec in wave.instructions:
            row = trace.code.row(rec.line)
            unit = unit_name(mnemonic(row.isa) if row else "", rec.category)
            if rec.stall:
                stall.setdefault(unit, []).append((rec.time - origin, rec.stall))
            if rec.duration > rec.stall:
                issue.setdefault(unit, []).append((rec.time - origin + rec.stall,
                                                   rec.duration - rec.stall))
        for segs in stall.values():
            ax.broken_barh(segs, (y + 0.38, 0.5), hatch="///", linewidth=0)
        for segs in issue.values():
            ax.broken_barh(segs, (y + 0.38, 0.5), linewidth=0)
    ax.set_xlim(0, max(w.end for w in waves) - origin)
    FigureCanvasAgg(fig)
    fig.savefig(out, format="png")


def timed(label: str, fn, results: dict) -> object:
    t, c = time.perf_counter(), time.process_time()
    value = fn()
    results[label] = time.perf_counter() - t
    cpu = time.process_time() - c
    print(f"  {label:<28} {results[label]:8.2f} s wall {cpu:8.2f} s CPU", flush=True)
    return value


def bench(name: str, trace_dir: Path | None, trace, tmp: Path, reference: bool) -> None:
    from asterism.profile import pictures
    from asterism.profile.att import read_att
    from asterism.profile.att_writer import write_att
    from asterism.profile.bundle import BundleRequest, build_bundle
    from asterism.profile.report import analyze

    res: dict[str, float] = {}
    if trace_dir is None:
        trace_dir = tmp / f"{name}_att"
        write_att(trace, trace_dir)
    trace = timed("read_att", lambda: read_att(trace_dir), res)
    n = sum(len(w.instructions) for w in trace.waves)
    span = max(w.end for w in trace.waves) - min(w.begin for w in trace.waves)
    print(f"{name}: {len(trace.waves)} waves, {n} records, {span} cycles")
    report = timed("analyze", lambda: analyze(trace), res)
    arr = timed("arrays", lambda: pictures.trace_arrays(trace), res)
    timed("timeline.png", lambda: pictures.plot_timeline(trace, report, tmp / "t.png",
                                                         arrays=arr), res)
    timed("stalls.png", lambda: pictures.plot_stalls(report, tmp / "s.png"), res)
    timed("hotspots.png", lambda: pictures.plot_hotspots(report, tmp / "h.png"), res)
    timed("source_heat.png", lambda: pictures.plot_source_heat(report, tmp / "x.png"), res)
    timed("view.html", lambda: pictures.write_html(trace, report, tmp / "v.html",
                                                   arrays=arr), res)
    out = tmp / f"{name}_bundle"
    timed("whole bundle (CLI path)", lambda: build_bundle(BundleRequest(trace_dir, out)), res)
    shutil.rmtree(out)
    timed("bundle --no-what-if", lambda: build_bundle(BundleRequest(trace_dir, out,
                                                                    what_if=False)), res)
    shutil.rmtree(out)
    from asterism.profile import trace_plot

    timed("trace plot (CLI path)", lambda: trace_plot(trace_dir, tmp / "p.png"), res)
    worst = max(res[k] for k in res if k.endswith((".png", ".html")))
    print(f"  slowest picture: {worst:.2f} s (arrays shared: +{res['arrays']:.2f} s)")
    if reference:
        ref = timed("reference timeline", lambda: reference_timeline(trace, tmp / "r.png"), res)
        del ref
        print(f"  ratio reference / new timeline: "
              f"{res['reference timeline'] / (res['timeline.png'] + res['arrays']):.1f}x")


def main() -> int:
    """Run the benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=3_000_000, help="synthetic capture length")
    ap.add_argument("--no-reference", action="store_true", help="skip the slow reference")
    ap.add_argument("--shape-only", action="store_true",
                    help="only the 32-wave 3 M-cycle shape (skip the shared captures and the "
                         "tiled one)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from asterism.profile.att import read_att

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name in () if args.shape_only else ("pa_mqa_logits_fp4_small",
                                                 "flash_attn_func_small"):
            bench(name, SHARED / "att" / name, None, tmp, not args.no_reference)
        flash = read_att(SHARED / "att" / "flash_attn_func_small")
        bench(f"32 waves over {args.cycles} cycles", None, big_shape(flash, args.cycles),
              tmp, not args.no_reference)
        if not args.shape_only:
            big = tiled(flash, args.cycles)
            bench(f"flash x{len(big.waves) // 8} ({args.cycles} cycles)", None,
                  replace(big), tmp, not args.no_reference)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

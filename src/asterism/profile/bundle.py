"""Profiling bundles: one self-contained directory per kernel, readable with no GPU.

``build_bundle`` writes::

    DIR/REPORT.md            headline (verdict, bound, top candidate), optimization
                             candidates (each change replayed through the timing model,
                             ranked by modeled time saved: asterism.profile.whatif), the
                             kernel's structure (loops, phases, time per phase per wave,
                             load balance, bound: asterism.profile.structure), wave states,
                             stall taxonomy, occupancy, hotspots with disassembly context
                             and source lines, waitcnt producers, counters (TFLOPS and GB/s
                             with --flops/--bytes), baseline table
    DIR/report.json          the same figures, machine-readable
    DIR/pictures/            timeline.png, stalls.png, hotspots.png, source_heat.png,
                             view.html (interactive timeline, hotspot table and source
                             panel linked)
    DIR/att/<capture>/       the capture as given (AMD's ATT viewer opens it)
    DIR/baseline/<capture>/  the --baseline capture, when given
    DIR/counters/            the rocprofv3 counter files, as given
    DIR/source/              the source files the capture's rows point to: the capture's
                             snapshots, and local files only inside the capture folder or a
                             --source-dir folder (links resolved), or named with --source or
                             --kernel-file; the others are listed as left out, not read
    DIR/kernel/              the code object as given, its ISA listing and `asterism stats`

Everything is read and checked first, then written into a temporary sibling directory that
is renamed to DIR at the end: an error leaves no DIR behind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from asterism.errors import AsterismError
from asterism.profile.att import (
    Trace,
    TraceError,
    folder_entries,
    read_att,
    record_arrays,
    source_files,
)
from asterism.profile.counters import CounterData, derived_metrics, read_counters_each
from asterism.profile.escape import md_code, md_text
from asterism.profile.insights import (
    Candidate,
    Context,
    OccupancyInfo,
    candidates,
    kernel_dispatches,
    modeled_candidates,
    more_waves_reason,
    occupancy_info,
    rank_candidates,
    verdict,
)
from asterism.profile.report import Report, analyze, render_json
from asterism.textio import read_input_file


class BundleError(AsterismError):
    """A bundle that cannot be made (output exists, bad input)."""


@dataclass(frozen=True)
class Skipped:
    """An input (or a part of one) left out of the bundle, and why."""

    input: str  # "capture", "baseline", "source", "counters"
    name: str
    reason: str


@dataclass
class BundleRequest:
    """What goes into a bundle."""

    capture: str | Path
    out: str | Path
    counters: list[str | Path] = field(default_factory=list)
    sources: list[str | Path] = field(default_factory=list)
    kernel_file: str | Path | None = None
    baseline: str | Path | None = None
    title: str | None = None
    top: int = 10
    # Folders whose files the bundle may copy as sources when the rows point into them
    # (besides the capture folder itself).
    source_dirs: list[str | Path] = field(default_factory=list)
    # What-if replays of the candidates (asterism.profile.whatif): on, and their budget in
    # records replayed per change.
    what_if: bool = True
    what_if_records: int = 60_000
    target: str | None = None  # the captured chip when neither counters nor kernel say it
    flops: float | None = None  # the kernel's floating-point operations per dispatch
    bytes: float | None = None  # the bytes it moves per dispatch
    peak_gbps: float | None = None  # the GPU's peak memory bandwidth, GB/s


@dataclass
class Analysis:
    """One capture, analyzed, with what the bundle adds to the report."""

    trace: Trace
    report: Report
    occupancy: OccupancyInfo
    candidates: list[Candidate]
    verdict: str
    dispatches: list[Any]
    structure: Any = None  # asterism.profile.structure.Structure
    whatifs: Any = None  # asterism.profile.whatif.WhatIfs (None: not replayed)
    work: Work | None = None


@dataclass(frozen=True)
class Work:
    """What one dispatch of the kernel does, as the user gives it (--flops, --bytes) and the
    peak bandwidth to hold its rate against (--peak-gbps)."""

    flops: float | None = None
    bytes: float | None = None
    peak_gbps: float | None = None

    def rates(self, d: Any) -> list[tuple[str, float, str]]:
        """(name, value, how) of TFLOPS and GB/s for a dispatch with a duration."""
        ns = d.duration_ns
        if not ns or ns <= 0:
            return []
        out = []
        if self.flops:
            out.append(("TFLOPS", self.flops / ns / 1e3, "--flops / duration"))
        if self.bytes:
            out.append(("GB/s", self.bytes / ns, "--bytes / duration"))
        return out

    def bytes_per_s(self, dispatches: list[Any]) -> float | None:
        """--bytes over the mean duration of the dispatches that have one."""
        durs = [d.duration_ns for d in dispatches if d.duration_ns]
        if not self.bytes or not durs:
            return None
        return self.bytes / (sum(durs) / len(durs)) * 1e9


def _kernel_name(trace: Trace) -> str | None:
    names = trace.kernel_names()
    return names[0] if names else None


def _codeobj(trace: Trace) -> int | None:
    return next((r.codeobj for r in trace.code.rows if not r.is_label and r.codeobj), None)


def analyze_capture(trace: Trace, counters: CounterData | None = None,
                    stats: list[Any] | None = None, what_if: bool = False,
                    what_if_records: int = 60_000, target: str | None = None,
                    progress: Callable[[str], None] | None = None,
                    report: Report | None = None, work: Work | None = None) -> Analysis:
    """Analyze a trace with what the counters and the code object tell about its kernel:
    structure and bound always, what-if replays of the candidates when `what_if`."""
    from asterism.profile.structure import analyze_structure

    report = report if report is not None else analyze(trace)
    name = _kernel_name(trace)
    dispatches = kernel_dispatches(counters, name)
    kstats = next((s for s in stats or [] if s.name == name), (stats or [None])[0])
    vgprs = None
    agprs = sgprs = lds = 0
    wg = None
    wg_source = res_source = ""
    if kstats is not None:
        target, vgprs, agprs, sgprs, lds = (kstats.target.split(":")[0], kstats.vgprs,
                                            kstats.agprs, kstats.sgprs, kstats.lds_bytes)
        res_source = "the code object's kernel descriptor"
    elif counters is not None and name is not None:
        sym = counters.kernel(name, _codeobj(trace))
        gpus = counters.gpus()
        if sym is not None and gpus:
            target, vgprs, agprs, sgprs, lds = (gpus[0].name, sym.vgprs, sym.agprs, sym.sgprs,
                                                sym.lds_bytes)
            res_source = "rocprofv3's kernel symbol"
        elif gpus and target is None:
            target = gpus[0].name
    sized = [d for d in dispatches if d.workgroup_size]
    if sized:
        wg = -(-sized[0].workgroup_size // 64)
        wg_source = "the dispatch's workgroup size (rocprofv3)"
    elif kstats is not None and getattr(kstats, "workgroup_size", None):
        x, y, z = kstats.workgroup_size
        wg, wg_source = -(-(x * y * z) // 64), "the code object's workgroup size"
    occ = occupancy_info(trace, target, vgprs, agprs, sgprs, lds, wg, wg_source, res_source)
    work = work or Work()
    structure = analyze_structure(trace, report, target, occ.theoretical,
                                  work.bytes_per_s(dispatches),
                                  work.peak_gbps * 1e9 if work.peak_gbps else None)
    rules = candidates(Context(report, occ, dispatches))
    whatifs = None
    modeled: list[Candidate] = []
    if what_if and trace.waves:
        from asterism.profile.whatif import run_whatifs

        whatifs = run_whatifs(trace, report, structure, _replay_target(target),
                              what_if_records, progress, more_waves_reason(occ))
        modeled = modeled_candidates(whatifs, report, structure, occ,
                                     _grid_text(dispatches, counters))
    return Analysis(trace, report, occ, rank_candidates(modeled, rules), verdict(report),
                    dispatches, structure, whatifs, work)


def _grid_text(dispatches: list[Any], counters: CounterData | None) -> str | None:
    """ "the grid has 512 workgroups for 256 CUs (2.00 per CU; dispatch 5)" when known."""
    gpus = counters.gpus() if counters is not None else []
    d = next((d for d in dispatches if d.grid and d.workgroup_size), None)
    if d is None or not gpus or not gpus[0].cu_count:
        return None
    items = d.grid[0] * d.grid[1] * d.grid[2]
    wgs = -(-items // d.workgroup_size)
    cus = gpus[0].cu_count
    return (f"the grid has {wgs:,} workgroups for {cus} CUs ({wgs / cus:.2f} per CU; "
            f"dispatch {d.dispatch_id}, rocprofv3)")


def _replay_target(target: str | None) -> str:
    """The chip the replays model: the captured one when asterism knows it, else gfx950
    (the captures' chip so far)."""
    from asterism.target import get_target

    try:
        return get_target(target or "gfx950").name
    except AsterismError:
        return "gfx950"


# ---------------------------------------------------------------------------- Markdown


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f} %" if whole else "-"


def _headline(a: Analysis, title: str | None, counters: CounterData | None) -> list[str]:
    r = a.report
    gpu = counters.gpus()[0] if counters and counters.gpus() else None
    out = [f"# {md_text(title or ', '.join(r.kernels) or 'Kernel report')}", ""]
    out.append(f"**Verdict:** {a.verdict}.")
    out.append("")
    if a.structure is not None:
        out.append(f"**Bound:** {a.structure.bound.text}.")
        out.append("")
    top = next((c for c in a.candidates if (c.modeled or 0) > 0), None)
    if top is not None:
        out.append(f"**Top candidate:** {top.title}: **modeled** {top.modeled:,} cycles of "
                   "kernel time saved.")
        out.append("")
    out.append("| | |")
    out.append("|---|---|")
    out.append(f"| kernel | {md_code(', '.join(r.kernels) or '?', table=True)} |")
    if gpu is not None:
        out.append(f"| GPU | {md_text(gpu.product or gpu.name)} ({md_text(gpu.name)}, "
                   f"{gpu.cu_count} CUs) |")
    kind = ("**modeled** by " + md_text(r.producer or "a timing model") + ", not measured"
            if r.modeled else "hardware capture (rocprofv3 ATT)")
    out.append(f"| trace | {kind}; {r.waves} waves, {r.instructions} instructions |")
    span = f"{r.span} cycles"
    if r.clock_hz:
        span += f" = {r.span / r.clock_hz * 1e6:.2f} us at {r.clock_hz / 1e9:.2f} GHz"
    out.append(f"| traced span | {span} |")
    for d in a.dispatches[:3]:
        dur = f"{d.duration_ns / 1000:.2f} us" if d.duration_ns is not None else "?"
        grid = "x".join(map(str, d.grid)) if d.grid else "?"
        wg = "x".join(map(str, d.workgroup)) if d.workgroup else "?"
        out.append(f"| dispatch {d.dispatch_id} | {dur}, grid {grid}, workgroup {wg} |")
    if len(a.dispatches) > 3:
        out.append(f"| dispatches | {len(a.dispatches)} in the counter files |")
    if counters and counters.command:
        out.append(f"| command | {md_code(' '.join(counters.command), table=True)} |")
    out.append("")
    return out


def _states(r: Report) -> list[str]:
    total = sum(r.states.values())
    out = ["## Wave states", "", "| state | cycles | share |", "|---|---:|---:|"]
    out += [f"| {n} | {c} | {_pct(c, total)} |" for n, c in r.states.items()]
    busy = r.stall_cycles + r.issue_cycles
    out += ["", f"Instruction cycles: {busy} = {r.issue_cycles} issue + {r.stall_cycles} stall "
            f"({_pct(r.stall_cycles, busy)} stalled); {r.idle_cycles} idle cycles between "
            f"instructions; {r.wave_cycles} wave-cycles (sum of wave lifetimes).", ""]
    return out


def _stalls(r: Report) -> list[str]:
    busy = r.stall_cycles + r.issue_cycles
    out = ["## Stall taxonomy", "",
           "| cause | stall cycles | % of stall | % of instruction cycles |",
           "|---|---:|---:|---:|"]
    for cause, c in sorted(r.stalls.items(), key=lambda kv: -kv[1]):
        out.append(f"| {cause} | {c} | {_pct(c, r.stall_cycles)} | {_pct(c, busy)} |")
    out += ["", "| unit | executed | cycles | stall |", "|---|---:|---:|---:|"]
    out += [f"| {u.unit} | {u.count} | {u.cycles} | {u.stall} |" for u in r.units]
    out.append("")
    return out


def _occupancy(o: OccupancyInfo) -> list[str]:
    out = ["## Occupancy", ""]
    out.append(f"- observed: at most **{o.observed_per_simd}** wave(s) per SIMD at once on "
               "the traced CUs" if o.observed_per_simd is not None else
               "- observed: unknown (no occupancy data)")
    if o.theoretical is None:
        out.append("- theoretical: unknown (give the code object with --kernel-file or "
                   "rocprofv3's results JSON with --counters)")
    else:
        regs = f"{o.vgprs} VGPRs" + (f" + {o.agprs} AGPRs" if o.agprs else "")
        out.append(f"- theoretical on {md_text(o.target or '?')}: **{o.theoretical}** wave(s) "
                   "per SIMD, "
                   f"limited by **{', '.join(o.limited_by)}** ({regs}, {o.sgprs} SGPRs, "
                   f"{o.lds_bytes} bytes LDS; from {o.resource_source})")
        lim = ", ".join(f"{k} {v}" for k, v in o.limits.items() if k != "workgroups_per_cu")
        out.append(f"- per-resource limits (waves per SIMD): {lim}; "
                   f"{o.limits.get('workgroups_per_cu')} workgroup(s) per CU")
        if "vgprs" in o.limited_by and o.theoretical < (o.max_waves_per_simd or 8):
            out.append(f"- {o.theoretical + 1} waves per SIMD need at most "
                       f"{o.vgprs_for(o.theoretical + 1)} unified VGPRs per lane")
    if o.waves_per_workgroup:
        out.append(f"- {o.waves_per_workgroup} wave(s) per workgroup "
                   f"({o.workgroup_source or 'given'})")
    out.append("")
    return out


def _hotspots(r: Report, top: int) -> list[str]:
    from asterism.profile.report import render_markdown

    # The analyzer's own hotspot table and per-hotspot context, reused verbatim.
    text = render_markdown(r, top=top, rank="stall")
    start = text.index("## Top ")
    # (the waitcnt producers follow the hotspots there; REPORT.md has them in their own
    # section, _wait_producers)
    end = min(i for i in (text.find("## s_waitcnt producers"), text.index("## Source mapping"))
              if i >= 0)
    return text[start:end].rstrip().splitlines() + [""]


def _sources(r: Report, top: int) -> list[str]:
    from asterism.profile.pictures import source_heat

    out = ["## Source lines by stall", ""]
    heat = source_heat(r, top)
    if not heat:
        return out + [f"No source locations: 0 of {r.executed_rows} executed instructions map "
                      "to source.", ""]
    out.append(f"{r.mapped_rows} of {r.executed_rows} executed instructions map to source.")
    out += ["", "| location | text | instructions | hits | cycles | stall |",
            "|---|---|---:|---:|---:|---:|"]
    for h in heat:
        out.append(f"| {md_code(h['location'], table=True)} | {md_code(h['text'], table=True)} "
                   f"| {h['instructions']} "
                   f"| {h['hits']} | {h['cycles']} | {h['stall']} |")
    return out + [""]


def _counters(a: Analysis, counters: CounterData | None) -> list[str]:
    out = ["## Counters", ""]
    if counters is None:
        return out + ["No counter file given (--counters).", ""]
    out.append("Files: " + ", ".join(md_code(Path(f).name) for f in counters.files) + ".")
    out.append("")
    name = a.report.kernels[0] if a.report.kernels else None
    sym = counters.kernel(name, _codeobj(a.trace)) if name else None
    if sym is not None:
        out.append(f"Kernel symbol {md_code(sym.name)} (code object {sym.code_object_id}): "
                   f"{sym.vgprs} arch VGPRs, {sym.agprs} AGPRs, {sym.sgprs} SGPRs, "
                   f"{sym.lds_bytes} bytes LDS, {sym.scratch_bytes} bytes scratch.")
        out.append("")
    if not a.dispatches:
        out.append(f"No kernel-dispatch or counter records for this kernel in the files "
                   f"({len(counters.dispatches)} dispatch(es) of other kernels); rerun "
                   "rocprofv3 with --kernel-trace and --pmc to get durations and counters.")
        return out + [""]
    names = sorted({n for d in a.dispatches for n in d.counters})
    out.append("| dispatch | duration (us) | " + " | ".join(md_text(n) for n in names) + " |")
    out.append("|---:|---:|" + "---:|" * len(names))
    for d in a.dispatches:
        dur = f"{d.duration_ns / 1000:.3f}" if d.duration_ns is not None else "-"
        vals = " | ".join(f"{d.counters[n]:g}" if n in d.counters else "-" for n in names)
        out.append(f"| {d.dispatch_id} | {dur} | {vals} |")
    out.append("")
    rates = [(d, [(m.name, v, m.unit, m.text) for m, v in derived_metrics(d)]
              + [(n, v, "", how) for n, v, how in (a.work or Work()).rates(d)])
             for d in a.dispatches]
    if any(m for _, m in rates):
        out += ["| dispatch | derived rate | value | from |", "|---:|---|---:|---|"]
        for d, ms in rates:
            for name, v, unit, how in ms:
                out.append(f"| {d.dispatch_id} | {name} | {v:.4g} {unit} | {how} |")
        out.append("")
    elif a.work is not None and (a.work.flops or a.work.bytes):
        out += ["--flops/--bytes given but no dispatch of this kernel has a duration: give "
                "rocprofv3's kernel trace (*_kernel_trace.csv or the results JSON).", ""]
    return out


def _candidates(a: Analysis) -> list[str]:
    out = ["## Optimization candidates", ""]
    if not a.candidates:
        return out + ["No rule fired (no single cause holds enough of the stall).", ""]
    w = a.whatifs
    if w is not None:
        out.append(f"Each change was replayed through the {w.target} timing model with the "
                   f"capture's memory latencies ({w.waves} of {w.total_waves} traced waves, "
                   f"{w.records:,} records per replay) and ranked by the **modeled** kernel "
                   "time it saves on the traced CUs (first wave start to last wave end). "
                   "Lines marked *measured* come from the capture, *modeled* from the "
                   "replays. The candidates after the replayed ones rank by the cycles the "
                   "capture shows they could recover at best (not replayed).")
        if w.pruned:
            out.append("")
            out.append("Not replayed (removing the wait saves under 0.5 % of the modeled "
                       "time, which bounds them): " + ", ".join(w.pruned) + ".")
        if w.errors:
            out.append("")
            out.append("Not replayed (the model refused the changed stream): "
                       + "; ".join(md_text(e) for e in w.errors[:5]) + ".")
    else:
        out.append("Ranked by the cycles each could recover at best (measured, summed over "
                   "the traced waves; occupancy figures are upper bounds: another wave "
                   "issuing during the stalls). No change was replayed (--no-what-if).")
    out.append("")
    for n, c in enumerate(a.candidates, 1):
        if c.modeled is not None:
            gain = (f"**modeled** {c.modeled:,} cycles saved" if c.modeled > 0
                    else "**modeled**: no gain")
        elif c.recoverable is not None and c.share is not None:
            gain = f"measured {c.recoverable:,} cycles ({c.share:.1f} % of stall) at best"
        else:
            gain = "no cycle estimate"
        out.append(f"### {n}. {c.title}: {gain}")
        out.append("")
        out += [f"- {e}" for e in c.evidence]
        out.append(f"- **suggestion:** {c.suggestion}")
        out.append("")
    return out


def _structure(a: Analysis) -> list[str]:
    st = a.structure
    if st is None:
        return []
    out = ["## Kernel structure", "", f"**Bound:** {st.bound.text}.", "",
           "| bound | figure |", "|---|---|"]
    out += [f"| {k}{' (this one)' if k == st.bound.kind else ''} | {md_text(v)} |"
            for k, v in st.bound.figures.items()]
    out.append("")
    if st.mfma_flops and a.report.span and a.report.clock_hz:
        secs = a.report.span / a.report.clock_hz
        out.append(f"The traced waves' MFMAs do {st.mfma_flops:,} floating-point operations "
                   f"in the traced span: {st.mfma_flops / secs / 1e12:.2f} TFLOPS over the "
                   f"{len(st.mfma_busy)} traced SIMDs.")
        out.append("")
    if st.loops:
        out += ["| loop | lines | head executions per wave |", "|---:|---|---|"]
        for k, lp in enumerate(st.loops):
            groups: dict[int, int] = {}
            for n in lp.iterations.values():
                groups[n] = groups.get(n, 0) + 1
            its = ", ".join(f"{n} ({k2} waves)" for n, k2 in sorted(groups.items()))
            out.append(f"| {k} | {lp.head}-{lp.tail} | {its} |")
        out.append("")
    else:
        out += ["No loop: no traced wave jumped backwards.", ""]
    names = list(a.structure.balance.wave_cycles)
    out += ["Phases in address order, with each wave's time in them (the gap before each "
            "instruction, its stall and its issue; barriers and waits count in the phase "
            "before them):", "",
            "| # | loop | phase | barriers after | cycles per wave (min / mean / max) "
            "| stall (mean) |", "|---:|---:|---|---:|---|---:|"]
    for ph in st.phases:
        cyc = [ph.cycles.get(n, 0) for n in names] or [0]
        stall = [ph.stall.get(n, 0) for n in names] or [0]
        loop = "-" if ph.loop is None else str(ph.loop)
        out.append(f"| {ph.index} | {loop} | {md_text(ph.describe())} | {ph.barriers} | "
                   f"{min(cyc):,} / {sum(cyc) // len(cyc):,} / {max(cyc):,} | "
                   f"{sum(stall) // len(stall):,} |")
    out.append("")
    bal = st.balance
    out += ["### Load balance", "",
            f"- {md_text(st.bound.figures['imbalance'])}"]
    if bal.mean_waves_per_simd is not None:
        out.append(f"- {md_text(st.bound.figures.get('occupancy', ''))}")
    if len(bal.cu_span) > 1:
        cus = sorted(bal.cu_span.items(), key=lambda kv: kv[1])
        out.append("- busy span per traced CU (occupancy.json): " + ", ".join(
            f"{k} {v:,}" for k, v in cus))
    return out + [""]


def _wait_producers(r: Report, top: int) -> list[str]:
    from asterism.profile.report import render_markdown

    text = render_markdown(r, top=top, rank="stall")
    if "## s_waitcnt producers" not in text:
        return ["## s_waitcnt producers", "", "No s_waitcnt drained a traced producer.", ""]
    start = text.index("## s_waitcnt producers")
    return text[start:text.index("## Source mapping")].rstrip().splitlines() + [""]


def _baseline(a: Analysis, b: Analysis, b_path: str, top: int) -> list[str]:
    ra, rb = a.report, b.report
    out = ["## Before / after", "", f"Baseline (before): {md_code(b_path)}; this capture is "
           "after.",
           "", "| metric | before | after | change |", "|---|---:|---:|---:|"]

    def row(name: str, x: float, y: float) -> None:
        change = f"{100.0 * (y - x) / x:+.1f} %" if x else "-"
        out.append(f"| {name} | {x:g} | {y:g} | {change} |")

    row("traced span (cycles)", rb.span, ra.span)
    row("mean wave lifetime (cycles)", rb.wave_cycles / max(rb.waves, 1),
        ra.wave_cycles / max(ra.waves, 1))
    row("instructions per wave", rb.instructions / max(rb.waves, 1),
        ra.instructions / max(ra.waves, 1))
    row("stall cycles", rb.stall_cycles, ra.stall_cycles)
    row("issue cycles", rb.issue_cycles, ra.issue_cycles)
    for cause in rb.stalls:
        row(f"stall: {cause}", rb.stalls.get(cause, 0), ra.stalls.get(cause, 0))
    for da, db in zip(a.dispatches, b.dispatches, strict=False):
        if da.duration_ns is not None and db.duration_ns is not None:
            row("dispatch duration (ns)", db.duration_ns, da.duration_ns)
        for n in sorted(set(da.counters) & set(db.counters)):
            row(n, db.counters[n], da.counters[n])
        break
    out += ["", "| # | before: hotspot (stall) | after: hotspot (stall) |", "|---:|---|---|"]
    hb, ha = rb.hotspots(top), ra.hotspots(top)
    for i in range(max(len(hb), len(ha))):
        cb = f"{md_code(hb[i].isa, table=True)} ({hb[i].stall})" if i < len(hb) else ""
        ca = f"{md_code(ha[i].isa, table=True)} ({ha[i].stall})" if i < len(ha) else ""
        out.append(f"| {i + 1} | {cb} | {ca} |")
    return out + [""]


SKIPPED_SHOWN = 50  # entries of "Inputs left out" in REPORT.md (report.json has them all)


def _skipped(skipped: list[Skipped]) -> list[str]:
    if not skipped:
        return []
    out = ["## Inputs left out", "",
           "These were not read or not copied into the bundle:", ""]
    out += [f"- {s.input}: {md_code(s.name)}: {md_text(s.reason)}"
            for s in skipped[:SKIPPED_SHOWN]]
    if len(skipped) > SKIPPED_SHOWN:
        out.append(f"- and {len(skipped) - SKIPPED_SHOWN} more (report.json lists them all)")
    return out + [""]


def render_bundle_markdown(a: Analysis, title: str | None = None,
                           counters: CounterData | None = None,
                           baseline: tuple[Analysis, str] | None = None, top: int = 10,
                           files: list[str] | None = None,
                           skipped: list[Skipped] | None = None) -> str:
    """REPORT.md of a bundle."""
    out = _headline(a, title, counters)
    if files:
        out += ["Bundle contents: " + ", ".join(f"[`{f}`]({f})" for f in files) + ".", ""]
    out += _skipped(skipped or [])
    out += ["![wave timeline](pictures/timeline.png)", ""]
    out += _candidates(a)
    out += _structure(a)
    out += _states(a.report)
    out += ["![stalls and wave states](pictures/stalls.png)", ""]
    out += _stalls(a.report)
    out += _occupancy(a.occupancy)
    out += ["![hotspots](pictures/hotspots.png)", ""]
    out += _hotspots(a.report, top)
    out += _sources(a.report, top)
    out += _wait_producers(a.report, top)
    out += _counters(a, counters)
    if baseline is not None:
        out += _baseline(a, baseline[0], baseline[1], top)
    return "\n".join(out)


def render_bundle_json(a: Analysis, counters: CounterData | None = None,
                       baseline: Analysis | None = None, top: int = 10,
                       skipped: list[Skipped] | None = None) -> str:
    """report.json of a bundle: the analyzer's JSON plus verdict, occupancy, candidates,
    counters, the baseline's totals and the inputs left out."""
    data = json.loads(render_json(a.report, top=top))
    data["skipped"] = [asdict(s) for s in skipped or []]
    data["verdict"] = a.verdict
    data["occupancy"] = asdict(a.occupancy)
    data["candidates"] = [asdict(c) for c in a.candidates]
    if a.structure is not None:
        st = a.structure
        data["structure"] = {
            "bound": asdict(st.bound), "loops": [asdict(lp) for lp in st.loops],
            "phases": [{**asdict(p), "name": p.name, "description": p.describe()}
                       for p in st.phases],
            "balance": {**asdict(st.balance), "wave_loss": st.balance.wave_loss,
                        "cu_loss": st.balance.cu_loss,
                        "mean_waves_per_simd": st.balance.mean_waves_per_simd,
                        "busy_waves_per_simd": st.balance.busy_waves_per_simd},
            "mfma_busy": st.mfma_busy, "mfma_flops": st.mfma_flops}
    if a.whatifs is not None:
        w = a.whatifs
        data["what_if"] = {
            "note": "modeled: replays of the capture through asterism's timing model",
            "target": w.target, "waves": w.waves, "total_waves": w.total_waves,
            "records": w.records, "errors": w.errors, "pruned": w.pruned,
            "results": [{"kind": r.scenario.kind, "lines": r.scenario.lines,
                         "what": r.scenario.what, "memory": r.scenario.memory,
                         "base_span": r.base_span, "span": r.span, "saved": r.saved,
                         "saved_wave_cycles": r.saved_wave_cycles} for r in w.best()]}
    data["dispatches"] = [{**asdict(d), "duration_ns": d.duration_ns,
                           "derived": {**{m.name: v for m, v in derived_metrics(d)},
                                       **{n: v for n, v, _ in (a.work or Work()).rates(d)}}}
                          for d in a.dispatches]
    if baseline is not None:
        rb = baseline.report
        data["baseline"] = {"path": rb.path, "span": rb.span, "stall_cycles": rb.stall_cycles,
                            "issue_cycles": rb.issue_cycles, "stalls": rb.stalls,
                            "verdict": baseline.verdict,
                            "hotspots": [h.line for h in rb.hotspots(top)]}
    return json.dumps(data, indent=1)


# ---------------------------------------------------------------------------- the bundle


# Characters kept in the name of a file the bundle writes from a name in the input.
_UNSAFE_NAME_RE = re.compile(r"[^A-Za-z0-9._+-]")


def _safe_name(original: str) -> str:
    """A file name for the bundle from a path in the input: its last component with
    anything but letters, digits and ``._+-`` made ``_``, no leading dot (never ``..``),
    at most 100 characters."""
    base = re.split(r"[/\\]", original)[-1]
    return _UNSAFE_NAME_RE.sub("_", base).lstrip(".")[:100] or "source"


@dataclass
class SourcePolicy:
    """Which local files the bundle may read as sources: those inside the capture folder
    and the named folders (after resolving links), and the named files."""

    folders: list[Path]
    files: set[Path]

    @classmethod
    def of(cls, req: BundleRequest) -> SourcePolicy:
        """The capture folder and what the request names (--source-dir, --source,
        --kernel-file), resolved."""
        folders = [Path(os.path.realpath(req.capture))]
        folders += [Path(os.path.realpath(d)) for d in req.source_dirs]
        files = {Path(os.path.realpath(f)) for f in req.sources}
        if req.kernel_file is not None:
            files.add(Path(os.path.realpath(req.kernel_file)))
        return cls(folders, files)

    def allows(self, path: str) -> Path | None:
        """The resolved path of `path` if the bundle may read it, else None."""
        try:
            real = Path(os.path.realpath(path))
        except (OSError, ValueError):  # a NUL byte, a loop of links
            return None
        if real in self.files or any(f == real or f in real.parents for f in self.folders):
            return real
        return None


_OUTSIDE = ("outside the capture folder and not named (--source FILE, --source-dir DIR or "
            "--kernel-file): not read")


def _row_paths(trace: Trace) -> list[str]:
    """The distinct file paths the code rows' source locations name, in row order."""
    seen: dict[str, None] = {}
    for row in trace.code.rows:
        for loc in filter(None, (p.strip() for p in row.source.split(";"))):
            path = loc.split(", ")[0].rpartition(":")[0]
            if path:
                seen.setdefault(path)
    return list(seen)


def _copy_sources(trace: Trace, req: BundleRequest, dest: Path,
                  skipped: list[Skipped]) -> list[str]:
    """The source files of the capture's rows that the policy allows and the named ones,
    into `dest`; the rows' files it does not allow go to `skipped`."""
    written: dict[str, str] = {}

    def name_for(original: str) -> str:
        base = _safe_name(original)
        name, n = base, 1
        while name in written.values() or name == "INDEX.json":
            n += 1
            name = f"{n}_{base}"
        return name

    def copy(original: str, real: Path) -> None:
        try:
            data = read_input_file(real, follow_links=False, error=BundleError,
                                   what="source file")
        except BundleError as err:
            skipped.append(Skipped("source", original, err.message.split(": ", 1)[-1]))
            return
        name = written[original] = name_for(original)
        (dest / name).write_bytes(data)

    shipped = source_files(trace)
    for original, lines in sorted(shipped.items()):
        name = written[original] = name_for(original)
        (dest / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    policy = SourcePolicy.of(req)
    done = {Path(os.path.realpath(p)) for p in req.sources}
    # Row locations that point to a file the user let the bundle read (a modeled trace's
    # .mlir/.py, a source folder given with --source-dir).
    for path in _row_paths(trace):
        if path in written:
            continue
        real = policy.allows(path)
        if real is None:
            skipped.append(Skipped("source", path, _OUTSIDE))
        elif real not in done:
            done.add(real)
            copy(path, real)
    for p in req.sources:
        if str(p) not in written:
            copy(str(p), Path(os.path.realpath(p)))
    if written:
        (dest / "INDEX.json").write_text(json.dumps(written, indent=1) + "\n",
                                         encoding="utf-8")
    return sorted(written.values())


def _kernel_files(path: Path, dest: Path, stats: list[Any]) -> None:
    from asterism.api import disassembly_listing, load_code_object
    from asterism.profile.stats import render_stats, stats_json

    shutil.copyfile(path, dest / path.name)
    _obj, data = load_code_object(str(path))
    (dest / "kernel.s").write_text(disassembly_listing(data, path.name), encoding="utf-8")
    (dest / "stats.txt").write_text(render_stats(stats), encoding="utf-8")
    (dest / "stats.json").write_text(stats_json(stats), encoding="utf-8")


def _check_inputs(req: BundleRequest) -> None:
    out = Path(req.out)
    if out.exists():
        raise BundleError(f"{out}: already exists; give a new directory with -o (a bundle "
                          "is written whole or not at all)")
    if not out.parent.is_dir():
        raise BundleError(f"{out.parent}: no such folder for the bundle")
    for src in req.sources:
        if not Path(src).is_file():
            raise BundleError(f"{src}: source file not found (--source)")
    for f in req.counters:  # (a name that is not there is a mistake on the command line)
        if not Path(f).exists():
            raise BundleError(f"{f}: counter file is missing (--counters)")
    for folder in req.source_dirs:
        if not Path(folder).is_dir():
            raise BundleError(f"{folder}: no such folder (--source-dir)")
    if req.kernel_file is not None and not Path(req.kernel_file).is_file():
        raise BundleError(f"{req.kernel_file}: kernel file not found (--kernel-file)")


def build_bundle(req: BundleRequest, note: Callable[[str], None] | None = None,
                 progress: Callable[[str], None] | None = None,
                 after_read: Callable[[Trace], None] | None = None) -> Path:
    """Write the bundle directory of `req` (see the module doc); returns its path. `note`
    hears about every input left out (see :class:`Skipped`), `progress` about each what-if
    replay, `after_read` gets the capture as soon as it is read (the `asterism` command
    keeps it out of the garbage collector's scans)."""
    _check_inputs(req)
    trace = read_att(req.capture)
    if after_read is not None:
        after_read(trace)
    skipped = [Skipped("capture", n, why) for n, why in trace.skipped]
    # A counter file that cannot be used is left out (and named), never fatal to the bundle.
    counters, bad_counters = read_counters_each(req.counters)
    skipped += [Skipped("counters", Path(f).name, why) for f, why in bad_counters]
    used_counters = [f for f in req.counters if str(f) not in dict(bad_counters)]
    stats = None
    if req.kernel_file is not None:
        from asterism.profile.stats import code_object_stats

        stats = code_object_stats(str(req.kernel_file))
    work = Work(req.flops, req.bytes, req.peak_gbps)
    records = record_arrays(trace)  # (read by the analysis and by the pictures)
    analysis = analyze_capture(trace, counters, stats, req.what_if, req.what_if_records,
                               req.target, progress, report=analyze(trace, records=records),
                               work=work)
    base = None
    if req.baseline is not None:
        base_trace = read_att(req.baseline)
        skipped += [Skipped("baseline", n, why) for n, why in base_trace.skipped]
        base = analyze_capture(base_trace, counters, stats, target=req.target)

    out = Path(req.out)
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex}"
    try:
        tmp.mkdir()
        files = _write_contents(req, tmp, analysis, stats, skipped, used_counters, records)
        for s in skipped:
            if note is not None:
                note(f"left out: {s.input} {s.name}: {s.reason}")
        (tmp / "REPORT.md").write_text(render_bundle_markdown(
            analysis, req.title, counters,
            (base, str(req.baseline)) if base is not None else None, req.top, files,
            skipped) + "\n", encoding="utf-8")
        (tmp / "report.json").write_text(render_bundle_json(analysis, counters, base, req.top,
                                                            skipped)
                                         + "\n", encoding="utf-8")
        if out.exists():
            raise BundleError(f"{out}: appeared while the bundle was written")
        tmp.rename(out)
    except OSError as exc:  # a full disk, a folder that went away: the user's error to read
        shutil.rmtree(tmp, ignore_errors=True)
        raise BundleError(f"{out}: cannot write the bundle: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _copy_capture(folder: Path, dest: Path) -> None:
    """The regular files of a capture folder, copied (links, subfolders and special files
    are left out: :func:`~asterism.profile.att.folder_entries`)."""
    dest.mkdir()
    files, _ = folder_entries(folder)
    for name in files:
        (dest / name).write_bytes(read_input_file(folder / name, follow_links=False,
                                                  error=BundleError))


def _write_contents(req: BundleRequest, tmp: Path, a: Analysis,
                    stats: list[Any] | None, skipped: list[Skipped],
                    counters: list[str | Path], records: list[Any] | None = None) -> list[str]:
    """Everything but REPORT.md and report.json (`records`: the capture's record arrays);
    returns the entries made."""
    from asterism.profile import pictures

    made = ["REPORT.md", "report.json", "pictures/"]
    pics = tmp / "pictures"
    pics.mkdir()
    arrays = pictures.trace_arrays(a.trace, records)
    pictures.plot_timeline(a.trace, a.report, pics / "timeline.png", arrays=arrays)
    pictures.plot_stalls(a.report, pics / "stalls.png")
    pictures.plot_hotspots(a.report, pics / "hotspots.png")
    pictures.plot_source_heat(a.report, pics / "source_heat.png")
    pictures.write_html(a.trace, a.report, pics / "view.html", arrays=arrays)
    att = tmp / "att"
    att.mkdir()
    _copy_capture(Path(req.capture), att / Path(req.capture).resolve().name)
    made.append("att/")
    if req.baseline is not None:
        (tmp / "baseline").mkdir()
        _copy_capture(Path(req.baseline), tmp / "baseline" / Path(req.baseline).resolve().name)
        made.append("baseline/")
    if counters:
        (tmp / "counters").mkdir()
        names: set[str] = set()
        for f in counters:
            name, n = _safe_name(Path(f).name), 1
            while name in names:  # two files of one name from different folders
                n += 1
                name = f"{n}_{_safe_name(Path(f).name)}"
            names.add(name)
            (tmp / "counters" / name).write_bytes(
                read_input_file(f, error=BundleError, what="counter file"))
        made.append("counters/")
    src = tmp / "source"
    src.mkdir()
    if _copy_sources(a.trace, req, src, skipped):
        made.append("source/")
    else:
        src.rmdir()
    if req.kernel_file is not None and stats is not None:
        (tmp / "kernel").mkdir()
        _kernel_files(Path(req.kernel_file), tmp / "kernel", stats)
        made.append("kernel/")
    return made


__all__ = ["Analysis", "BundleError", "BundleRequest", "Skipped", "TraceError", "analyze_capture",
           "build_bundle", "render_bundle_json", "render_bundle_markdown"]

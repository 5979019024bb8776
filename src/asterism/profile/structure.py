"""The kernel's structure as a capture shows it: loops, their phases, time per phase per
wave, load balance across waves and CUs, and the bound (what limits the kernel, with the
figure behind it).

Loops come from the executed streams: a branch followed by an instruction at a lower or
equal address is a backward jump; its target is the loop head and the branch its tail
(jumps to one head are merged, the furthest tail kept). A wave's iteration count is how
often it executed the head.

Phases come from the instruction text, in address order: every executed row gets a class
(MFMA, transcendental VALU such as ``v_exp_f32``, DMA = ``buffer_load ... lds``, other
global memory, LDS, VALU, scalar/control); ``s_barrier`` rows and loop heads/tails cut the
code into segments; inside a segment each row takes the class of the nearest "heavy" row
(MFMA, transcendental, DMA, global memory) within :data:`REACH` rows, so the LDS reads
feeding MFMAs belong to the MFMA phase and the VALU between ``v_exp`` to the softmax-like
phase; runs shorter than :data:`MIN_PHASE_ROWS` join their neighbour. Each record's time
(the gap since the wave's previous instruction ended, its stall and its issue) goes to its
row's phase, so a wave's phase times add up to its lifetime (less the time before its
first instruction).

The bound compares five figures (compute: the busiest SIMD's MFMA pipe time over the span;
imbalance: the time the waves wait for the slowest one; occupancy: resident waves per SIMD
on average against what the resources allow; latency: the share of instruction cycles
stalled on memory waits and barriers; bandwidth: bytes per second when the dispatch's bytes
and duration are known) and names the one that limits most.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from asterism.profile.att import Trace, Wave
from asterism.profile.isa_text import is_barrier, is_mfma, is_waitcnt, mnemonic
from asterism.profile.report import Report

REACH = 12  # rows: how far a heavy row colors its neighbours
MIN_PHASE_ROWS = 4  # a shorter run joins the phase before it
TRANSCENDENTAL = ("v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_", "v_sin_", "v_cos_")
HEAVY = ("mfma", "trans", "dma", "global")
CLASS_NAMES = {"mfma": "MFMA", "trans": "VALU + transcendental", "dma": "DMA (global to LDS)",
               "global": "global memory", "lds": "LDS", "valu": "VALU",
               "scalar": "scalar/control"}
SHORT_NAMES = {"mfma": "MFMA", "trans": "transcendental", "dma": "DMA", "global": "global",
               "lds": "LDS"}


def row_class(isa: str) -> str:
    """The phase class of one instruction (see the module doc)."""
    mn = mnemonic(isa)
    if is_mfma(mn):
        return "mfma"
    if mn.startswith(TRANSCENDENTAL):
        return "trans"
    if mn.startswith(("buffer_load", "global_load")) and (" lds" in isa or isa.endswith("lds")):
        return "dma"
    if mn.startswith(("buffer_", "global_", "flat_", "scratch_")):
        return "global"
    if mn.startswith("ds_"):
        return "lds"
    if mn.startswith("v_"):
        return "valu"
    return "scalar"


def _is_branch(mn: str) -> bool:
    return mn.startswith(("s_branch", "s_cbranch", "s_setpc", "s_swappc"))


@dataclass
class Loop:
    """A loop of the kernel: head and tail lines, iterations per traced wave."""

    head: int  # code.json line of the first instruction of the body
    tail: int  # line of the furthest backward branch to the head
    iterations: dict[str, int] = field(default_factory=dict)  # wave name -> head executions

    def contains(self, line: int) -> bool:
        """True if `line` is in the body."""
        return self.head <= line <= self.tail


@dataclass
class Phase:
    """A run of the code that does one kind of work."""

    index: int
    kind: str  # a key of CLASS_NAMES
    first: int  # code.json lines, inclusive
    last: int
    loop: int | None  # index into Structure.loops of the innermost loop holding it
    counts: dict[str, int] = field(default_factory=dict)  # row class -> executed rows
    mnemonics: dict[str, int] = field(default_factory=dict)  # notable mnemonics -> rows
    barriers: int = 0  # s_barrier rows right after it
    cycles: dict[str, int] = field(default_factory=dict)  # wave name -> cycles
    stall: dict[str, int] = field(default_factory=dict)  # wave name -> stall cycles

    @property
    def name(self) -> str:
        """What the phase does, e.g. "MFMA"."""
        return CLASS_NAMES[self.kind]

    def describe(self) -> str:
        """Its kind and what it holds, e.g. "MFMA (lines 766-940: 32 MFMA, 40 LDS)"."""
        parts = [f"{n} {SHORT_NAMES[k]}" for k, n in
                 sorted(self.counts.items(), key=lambda kv: -kv[1]) if k in HEAVY + ("lds",)]
        notable = ", ".join(f"{n}x {m}" for m, n in sorted(self.mnemonics.items(),
                                                         key=lambda kv: -kv[1])[:2])
        held = ", ".join(parts[:3]) + (f"; {notable}" if notable else "")
        return f"{self.name} (lines {self.first}-{self.last}" + (f": {held})" if held else ")")


@dataclass
class Balance:
    """How evenly the work is spread over the traced waves and the traced CUs."""

    wave_instructions: dict[str, int]
    wave_cycles: dict[str, int]
    cu_span: dict[str, int]  # "SE<se> CU<cu>" -> first wave start to last wave end on it
    cu_busy: dict[str, int]  # the same CUs: sum of their waves' lifetimes
    window: int  # cycles from the first wave start to the last wave end on the traced CUs
    simds_per_cu: int

    @property
    def wave_spread(self) -> tuple[int, int]:
        """Fewest and most instructions of a traced wave."""
        v = list(self.wave_instructions.values()) or [0]
        return min(v), max(v)

    @property
    def wave_loss(self) -> float:
        """1 - mean/max of the traced waves' lifetimes: the share of the slowest wave's
        time the average wave is done and waiting."""
        v = list(self.wave_cycles.values())
        return 1.0 - (sum(v) / len(v)) / max(v) if v and max(v) else 0.0

    @property
    def cu_loss(self) -> float:
        """1 - mean/max of the traced CUs' spans: the share of the slowest CU's time the
        average CU is empty."""
        v = list(self.cu_span.values())
        return 1.0 - (sum(v) / len(v)) / max(v) if v and max(v) else 0.0

    @property
    def loss(self) -> float:
        """The imbalance figure: across CUs when several are traced, else across waves."""
        return self.cu_loss if len(self.cu_span) > 1 else self.wave_loss

    @property
    def mean_waves_per_simd(self) -> float | None:
        """Resident waves per SIMD averaged over the whole window of the traced CUs."""
        simds = len(self.cu_span) * self.simds_per_cu
        return sum(self.cu_busy.values()) / (simds * self.window) if simds and self.window \
            else None

    @property
    def busy_waves_per_simd(self) -> float | None:
        """Resident waves per SIMD while each CU is busy (its own span)."""
        total = sum(self.cu_span.values()) * self.simds_per_cu
        return sum(self.cu_busy.values()) / total if total else None


@dataclass
class Bound:
    """What limits the kernel: the kind, the figures of every kind, and a sentence."""

    kind: str  # compute | bandwidth | latency | occupancy | imbalance
    text: str
    figures: dict[str, str]  # kind -> the figure behind it
    scores: dict[str, float]  # kind -> how much of the time it explains (0..1)


@dataclass
class Structure:
    """Loops, phases, balance and bound of one capture."""

    loops: list[Loop]
    phases: list[Phase]
    balance: Balance
    bound: Bound
    mfma_busy: dict[str, int]  # "SE<se> CU<cu> SIMD<s>" -> cycles the matrix core ran
    mfma_flops: int  # floating-point operations of the traced MFMAs (all lanes)


# ---------------------------------------------------------------------------- loops


def find_loops(trace: Trace) -> list[Loop]:
    """The loops the traced waves ran (backward jumps), outermost first."""
    # Per line (once): its address and whether it branches; labels are left out.
    vaddr = {r.line: r.vaddr for r in trace.code.rows if not r.is_label}
    branch = {r.line for r in trace.code.rows if not r.is_label and _is_branch(mnemonic(r.isa))}
    tails: dict[int, int] = {}
    for wave in trace.waves:
        prev = None
        for rec in wave.instructions:
            here = vaddr.get(rec.line)
            if here is None:
                continue
            if prev in branch and here <= vaddr[prev]:
                tails[rec.line] = max(tails.get(rec.line, rec.line), prev)
            prev = rec.line
    loops = [Loop(h, t) for h, t in tails.items()]
    for wave in trace.waves:
        name = wave_name(wave)
        heads = {lp.head: 0 for lp in loops}
        for rec in wave.instructions:
            if rec.line in heads:
                heads[rec.line] += 1
        for lp in loops:
            lp.iterations[name] = heads[lp.head]
    loops.sort(key=lambda lp: (lp.head - lp.tail, lp.head))  # longest (outermost) first
    return loops


# ---------------------------------------------------------------------------- phases


def _segments(lines: Sequence[int], classes: dict[int, str], cuts: set[int]) -> list[list[int]]:
    """Executed lines cut at barriers (dropped) and at `cuts` (a cut line starts a segment)."""
    out: list[list[int]] = [[]]
    for ln in lines:
        if classes[ln] == "barrier":
            out.append([])
            continue
        if ln in cuts and out[-1]:
            out.append([])
        out[-1].append(ln)
    return [s for s in out if s]


def _label(seg: list[int], classes: dict[int, str]) -> list[str]:
    """Each row's phase class: its nearest heavy row's within REACH, else its own."""
    heavy = [i for i, ln in enumerate(seg) if classes[ln] in HEAVY]
    out = []
    j = 0
    for i, ln in enumerate(seg):
        while j + 1 < len(heavy) and abs(heavy[j + 1] - i) <= abs(heavy[j] - i):
            j += 1
        if heavy and abs(heavy[j] - i) <= REACH:
            out.append(classes[seg[heavy[j]]])
        else:
            own = classes[ln]
            out.append("valu" if own in ("valu", "lds") else "scalar" if own != "wait"
                       else (out[-1] if out else "scalar"))
    return out


def find_phases(trace: Trace, loops: list[Loop]) -> list[Phase]:
    """The phases of the executed code in address order (see the module doc)."""
    executed = sorted({rec.line for w in trace.waves for rec in w.instructions})
    classes: dict[int, str] = {}
    isa: dict[int, str] = {}
    lines = []
    for ln in executed:
        row = trace.code.row(ln)
        if row is None or row.is_label:
            continue
        mn = mnemonic(row.isa)
        isa[ln] = mn
        classes[ln] = ("barrier" if is_barrier(mn) else "wait" if is_waitcnt(mn)
                       else row_class(row.isa))
        lines.append(ln)
    cuts = {lp.head for lp in loops} | {lp.tail + 1 for lp in loops}
    runs: list[list[tuple[int, str]]] = []
    for seg in _segments(lines, classes, cuts):
        labels = _label(seg, classes)
        start = len(runs)
        for ln, lab in zip(seg, labels, strict=True):
            if len(runs) > start and runs[-1][-1][1] == lab:
                runs[-1].append((ln, lab))
            else:
                runs.append([(ln, lab)])
        # Short runs join the run before them (in this segment), else the one after.
        k = start
        while k < len(runs):
            if len(runs[k]) < MIN_PHASE_ROWS and len(runs) - start > 1:
                into = k - 1 if k > start else k + 1
                lab = runs[into][0][1]
                merged = sorted(runs[k] + runs[into])
                runs[min(k, into)] = [(ln, lab) for ln, _ in merged]
                del runs[max(k, into)]
                k = max(start, k - 1)
                continue
            k += 1
        # Neighbours that became the same kind are one phase.
        k = start + 1
        while k < len(runs):
            if runs[k][0][1] == runs[k - 1][0][1]:
                runs[k - 1] += runs[k]
                del runs[k]
            else:
                k += 1
    barrier_after = {}
    for ln in lines:
        if classes[ln] == "barrier":
            prev = max((r for r in range(len(runs)) if runs[r][-1][0] < ln), default=None)
            if prev is not None:
                barrier_after[prev] = barrier_after.get(prev, 0) + 1
    phases = []
    for k, run in enumerate(runs):
        first, last = run[0][0], run[-1][0]
        inner = [i for i, lp in enumerate(loops) if lp.head <= first and last <= lp.tail]
        ph = Phase(k, run[0][1], first, last, inner[-1] if inner else None,
                   barriers=barrier_after.get(k, 0))
        for ln, _ in run:
            c = classes[ln]
            ph.counts[c] = ph.counts.get(c, 0) + 1
            if c in ("trans", "mfma", "dma"):
                ph.mnemonics[isa[ln]] = ph.mnemonics.get(isa[ln], 0) + 1
        phases.append(ph)
    return phases


def phase_times(trace: Trace, phases: list[Phase]) -> None:
    """Fill each phase's cycles and stall per wave (see the module doc)."""
    of_line: dict[int, int] = {}  # line -> index of its phase
    for k, ph in enumerate(phases):
        for ln in range(ph.first, ph.last + 1):
            of_line[ln] = k
    for wave in trace.waves:
        # This wave's sums per phase index (None: not in this wave), then into the phases.
        cycles: list[int | None] = [None] * len(phases)
        stall = [0] * len(phases)
        prev_end = wave.begin
        current = -1
        for rec in wave.instructions:
            k = of_line.get(rec.line, current)  # barriers and waits between phases: the last
            end = rec.time + rec.duration
            if k >= 0:
                gap = end - prev_end
                cycles[k] = (cycles[k] or 0) + (gap if gap > 0 else 0)
                stall[k] += rec.stall
                current = k
            if end > prev_end:
                prev_end = end
        name = wave_name(wave)
        for ph, cyc, st in zip(phases, cycles, stall, strict=True):
            if cyc is not None:
                ph.cycles[name] = ph.cycles.get(name, 0) + cyc
                ph.stall[name] = ph.stall.get(name, 0) + st


# ---------------------------------------------------------------------------- balance


def balance(trace: Trace, simds_per_cu: int = 4) -> Balance:
    """Instructions and lifetimes per traced wave; span and busy time per traced CU
    (occupancy.json, which lists every wave of the traced CUs; else the traced waves)."""
    insts = {wave_name(w): sum(1 for r in w.instructions if r.line) for w in trace.waves}
    cycles = {wave_name(w): w.duration for w in trace.waves}
    spans: list[tuple[int, int, int, int]] = []  # (se, cu, begin, end)
    if trace.occupancy is not None and trace.occupancy.events:
        for se, evs in trace.occupancy.events.items():
            open_: dict[tuple[int, int, int], int] = {}
            for e in sorted(evs, key=lambda e: (e.time, e.start)):
                key = (e.cu, e.simd, e.slot)
                if e.start:
                    open_[key] = e.time
                elif key in open_:
                    spans.append((se, e.cu, open_.pop(key), e.time))
    if not spans:
        spans = [(w.se, w.cu, w.begin, w.end) for w in trace.waves]
    busy: dict[str, int] = {}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for se, cu, b, e in spans:
        key = f"SE{se} CU{cu}"
        busy[key] = busy.get(key, 0) + (e - b)
        first[key] = min(first.get(key, b), b)
        last[key] = max(last.get(key, e), e)
    span = {k: last[k] - first[k] for k in busy}
    window = (max(last.values()) - min(first.values())) if spans else 0
    return Balance(insts, cycles, span, busy, window, simds_per_cu)


# ---------------------------------------------------------------------------- bound


def mfma_usage(trace: Trace, target: str | None) -> tuple[dict[str, int], int]:
    """Cycles each SIMD's matrix core ran (passes x 4 per MFMA, from the ISA database;
    the issue cycles when unknown) and the MFMAs' floating-point operations."""
    from asterism.emu.mfma import mfma_info

    info: dict[int, tuple[int, int]] = {}
    for row in trace.code.rows:
        mn = mnemonic(row.isa) if not row.is_label else ""
        if not is_mfma(mn):
            continue
        try:
            mi = mfma_info(target or "gfx950", mn)
            info[row.line] = (4 * mi.passes if mi.passes else 0,
                              2 * mi.m * mi.n * mi.k * mi.blocks // (2 if mi.sparse else 1))
        except (ValueError, KeyError, AttributeError):
            info[row.line] = (0, 0)
    busy: dict[str, int] = {}
    flops = 0
    for w in trace.waves:
        ran, mfmas = 0, False  # this wave's matrix-core cycles; whether it ran an MFMA
        for rec in w.instructions:
            got = info.get(rec.line)
            if got is None:
                continue
            cyc, fl = got
            ran += cyc or max(rec.duration - rec.stall, 1)
            flops += fl
            mfmas = True
        if mfmas:
            key = f"SE{w.se} CU{w.cu} SIMD{w.simd}"
            busy[key] = busy.get(key, 0) + ran
    return busy, flops


def decide_bound(report: Report, bal: Balance, mfma_busy: dict[str, int],
                 theoretical: int | None, bytes_per_s: float | None = None,
                 peak_bytes_per_s: float | None = None) -> Bound:
    """The bound with the figure behind each kind (see the module doc): compute or
    bandwidth when that unit is busy 60 % of the time or more, else the bigger loss of
    imbalance and latency; latency is "occupancy" when fewer waves are resident while the
    CUs are busy than the resources allow (more waves would hide it)."""
    span = max(report.span, 1)
    figures: dict[str, str] = {}
    scores: dict[str, float] = {}
    top_mfma = max(mfma_busy.values(), default=0)
    scores["compute"] = min(top_mfma / span, 1.0)
    figures["compute"] = (f"the busiest SIMD's matrix core ran {top_mfma:,} of "
                          f"{report.span:,} cycles ({100 * scores['compute']:.0f} %)")
    lo, hi = bal.wave_spread
    scores["imbalance"] = bal.loss
    text = (f"traced waves run {lo:,} to {hi:,} instructions "
            f"({min(bal.wave_cycles.values(), default=0):,} to "
            f"{max(bal.wave_cycles.values(), default=0):,} cycles)")
    if len(bal.cu_span) > 1:
        text += (f"; the {len(bal.cu_span)} traced CUs are busy for "
                 f"{min(bal.cu_span.values()):,} to {max(bal.cu_span.values()):,} cycles: the "
                 f"average CU is empty {100 * bal.cu_loss:.0f} % of the slowest one's time")
    else:
        text += f": the average wave is done {100 * bal.wave_loss:.0f} % before the slowest"
    figures["imbalance"] = text
    busy = report.stall_cycles + report.issue_cycles
    waits = sum(report.stalls.get(c, 0) for c in ("vmcnt wait", "lgkmcnt wait", "barrier"))
    scores["latency"] = waits / busy if busy else 0.0
    figures["latency"] = (f"{100 * scores['latency']:.0f} % of the instruction cycles stall on "
                          "memory waits and barriers")
    resident = bal.busy_waves_per_simd
    if resident is not None:
        allowed = f", the resources allow {theoretical}" if theoretical else ""
        mean = bal.mean_waves_per_simd or 0.0
        figures["occupancy"] = (f"{resident:.2f} waves per SIMD while a traced CU is busy, "
                                f"{mean:.2f} over the whole {bal.window:,}-cycle window"
                                f"{allowed}")
        scores["occupancy"] = (scores["latency"] if theoretical and resident < theoretical - 0.5
                               else 0.0)
    if bytes_per_s is not None:
        gbs = bytes_per_s / 1e9
        if peak_bytes_per_s:
            scores["bandwidth"] = min(bytes_per_s / peak_bytes_per_s, 1.0)
            figures["bandwidth"] = (f"{gbs:,.0f} GB/s, {100 * scores['bandwidth']:.0f} % of "
                                    f"{peak_bytes_per_s / 1e9:,.0f} GB/s")
        else:
            figures["bandwidth"] = f"{gbs:,.0f} GB/s (no peak given to compare with)"
    if scores["compute"] >= 0.6:
        kind = "compute"
    elif scores.get("bandwidth", 0.0) >= 0.6:
        kind = "bandwidth"
    elif scores["imbalance"] >= scores["latency"]:
        kind = "imbalance"
    else:
        kind = "occupancy" if scores.get("occupancy") else "latency"
    return Bound(kind, f"{kind}-bound: {figures[kind]}", figures, scores)


def analyze_structure(trace: Trace, report: Report, target: str | None = None,
                      theoretical: int | None = None, bytes_per_s: float | None = None,
                      peak_bytes_per_s: float | None = None) -> Structure:
    """Loops, phases with their time per wave, balance and bound of a capture."""
    loops = find_loops(trace)
    phases = find_phases(trace, loops)
    phase_times(trace, phases)
    bal = balance(trace)
    busy, flops = mfma_usage(trace, target)
    bound = decide_bound(report, bal, busy, theoretical, bytes_per_s, peak_bytes_per_s)
    return Structure(loops, phases, bal, bound, busy, flops)


def wave_name(wave: Wave) -> str:
    """The name a wave goes by in these tables (its file name without .json)."""
    return wave.filename.removesuffix(".json")


__all__ = ["Balance", "Bound", "Loop", "Phase", "Structure", "analyze_structure", "balance",
           "decide_bound", "find_loops", "find_phases", "mfma_usage", "phase_times",
           "row_class", "wave_name"]

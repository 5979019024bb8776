"""Hotspot analysis of a thread trace: totals, wave states, stall causes, hot instructions.

``analyze(trace)`` builds a :class:`Report`; ``render_markdown`` and ``render_json`` print
it. All cycle figures are summed over the traced waves.

Per-instruction totals (``Report.listing``) use the decoder's definitions, so on a hardware
capture they equal code.json's Hit/Latency/Stall/Idle columns: hits = executions, cycles =
sum of ``duration`` (stall + issue), stall = sum of ``stall``, idle = gap between the end of
the wave's previous instruction and this one's first issue attempt.

Stall causes: every executed instruction with ``stall > 0`` puts its stall cycles in one
bucket, chosen by the first rule that matches:

1. ``s_waitcnt`` -> "vmcnt wait" if it drained vector-memory producers (see
   :mod:`asterism.profile.waitcnt`), else "lgkmcnt wait" if it drained LDS/scalar/message
   producers. Vector memory wins when both drained because its latency is the longest.
   With no producer known (they completed before the trace, or scalar loads were in
   flight so order is unknown) the counters in the text decide, vmcnt first; a wait on
   expcnt alone is "other".
2. ``s_barrier`` -> "barrier".
3. "MFMA dependency": an MFMA of the same wave issued less than :data:`MFMA_WINDOW`
   cycles before the stalled instruction first tried to issue, and the stalled instruction
   is a VALU op (MFMA included: the matrix core shares the VALU issue port, and dependent
   MFMAs queue), or an ``s_nop`` (compilers pad MFMA result hazards with them), or any
   instruction that touches a register that MFMA writes. A stalled MFMA is always "MFMA
   dependency": it waits for the matrix core, which may be busy with another wave's MFMA
   on the same SIMD (the case the mfma_10 experiment shows).
4. category VMEM or FLAT -> "VMEM issue" (the memory pipeline did not accept the op).
5. category LDS -> "LDS".
6. category SMEM -> "SMEM".
7. everything else -> "other" (VALU/SALU dependencies, branches, plain s_nop...).

These rules read the instruction text and the trace's categories; they are heuristics for
ranking, not hardware ground truth (the trace records how long an instruction stalled,
not why).

The s_waitcnt producers of a hardware capture are the decoder's own links (its wave files
record them); only a modeled trace has them recomputed (:mod:`asterism.profile.waitcnt`).

Hotspots are ranked by stall cycles (``rank="stall"``, the default: what there is to fix)
or by total cycles (``rank="cycles"``); each shows its share of all stall cycles and of
all instruction cycles. When the capture ships the source files its rows point to
(``snapshots.json``), each row also carries the text of its source line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from asterism.profile.att import (
    FORMAT_VERSION,
    Trace,
    TraceError,
    Wave,
    record_array,
    source_files,
    state_name,
)
from asterism.profile.escape import md_code, md_fence, md_text
from asterism.profile.isa_text import (
    is_barrier,
    is_mfma,
    is_waitcnt,
    memory_kind,
    mnemonic,
    operand_text,
    unit_name,
    vector_regs,
    waitcnt_counts,
    writes_first_operand,
)
from asterism.profile.waitcnt import LineKinds, trace_wait_events
from asterism.textio import load_json_bounded
from asterism.timing.result import InstCategory, WaveState

STALL_CAUSES = ("vmcnt wait", "lgkmcnt wait", "barrier", "MFMA dependency", "VMEM issue",
                "LDS", "SMEM", "other")

# Hotspot orders: by stall cycles (what there is to fix), or by total cycles.
RANKS = ("stall", "cycles")

# Cycles after an MFMA issues during which a stall next to it is blamed on it: the longest
# single MFMA on gfx942/gfx950 takes 16 passes of 4 cycles.
MFMA_WINDOW = 64


@dataclass
class InstStats:
    """One static instruction (code row) with its totals over all traced waves."""

    line: int
    vaddr: int
    codeobj: int
    isa: str
    source: str = ""
    source_text: str = ""  # the text of the source line, when the capture ships the file
    unit: str = ""
    hits: int = 0
    cycles: int = 0
    stall: int = 0
    idle: int = 0
    causes: dict[str, int] = field(default_factory=dict)  # stall cycles per cause
    is_label: bool = False

    @property
    def issue(self) -> int:
        """Cycles spent issuing (not stalled)."""
        return self.cycles - self.stall

    @property
    def cause(self) -> str:
        """The stall cause with the most cycles ("" if it never stalled)."""
        return max(self.causes, key=lambda c: self.causes[c]) if self.causes else ""


@dataclass
class WaveSummary:
    """Totals of one traced wave."""

    file: str
    se: int
    cu: int
    simd: int
    slot: int
    id: int
    begin: int
    end: int
    cycles: int
    instructions: int
    stall: int
    states: dict[str, int]  # cycles per wave state


@dataclass
class ProducerRef:
    """A memory instruction an s_waitcnt waited for."""

    line: int
    vaddr: int
    isa: str
    kind: str  # VMEM, FLAT, SMEM, LDS, MSG


@dataclass
class WaitLinkStats:
    """An s_waitcnt and the producers it waited for on one counter, over all waves."""

    line: int
    vaddr: int
    isa: str
    counter: str
    producers: list[ProducerRef]
    occurrences: int
    stall: int  # stall cycles of those s_waitcnt executions


@dataclass
class UnitStats:
    """Totals per execution unit (category, MFMA and s_waitcnt split out)."""

    unit: str
    count: int
    cycles: int
    stall: int


@dataclass
class SourceStats:
    """Totals per source location (capture's debug lines or a given PC map)."""

    location: str
    instructions: int
    hits: int
    cycles: int
    stall: int


@dataclass
class Report:
    """Everything the renderers print about one trace."""

    kernels: list[str]
    path: str | None
    modeled: bool
    producer: str | None
    gfxip: int
    format_version: str
    waves: int
    instructions: int
    wave_cycles: int  # sum of wave lifetimes
    begin: int
    end: int
    stall_cycles: int
    issue_cycles: int
    idle_cycles: int
    clock_hz: float | None
    states: dict[str, int]
    per_wave: list[WaveSummary]
    stalls: dict[str, int]
    units: list[UnitStats]
    listing: list[InstStats]
    wait_links: list[WaitLinkStats]
    sources: list[SourceStats]
    mapped_rows: int  # executed rows that have a source location
    executed_rows: int
    unknown_pc_records: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # folder entries not read

    @property
    def span(self) -> int:
        """Cycles from the first wave's start to the last wave's end."""
        return self.end - self.begin

    def hotspots(self, top: int = 10, rank: str = "stall") -> list[InstStats]:
        """The `top` executed instructions with the most stall cycles (then cycles), or with
        the most cycles (then stall) for ``rank="cycles"``."""
        rows = [r for r in self.listing if r.hits and not r.is_label]
        if rank == "stall":
            rows.sort(key=lambda r: (-r.stall, -r.cycles, r.line))
        elif rank == "cycles":
            rows.sort(key=lambda r: (-r.cycles, -r.stall, r.line))
        else:
            raise TraceError(f"--rank must be one of {', '.join(RANKS)}, got {rank!r}")
        return rows[:max(top, 0)]

    def stall_share(self, row: InstStats) -> float | None:
        """Percent of all stall cycles spent in `row` (None if nothing stalled)."""
        return 100.0 * row.stall / self.stall_cycles if self.stall_cycles else None

    def cycle_share(self, row: InstStats) -> float | None:
        """Percent of all instruction cycles (stall + issue) spent in `row`."""
        total = self.stall_cycles + self.issue_cycles
        return 100.0 * row.cycles / total if total else None

    def context(self, line: int, lines: int = 3) -> list[InstStats]:
        """The listing around `line`: `lines` rows before and after it."""
        for i, row in enumerate(self.listing):
            if row.line == line:
                return self.listing[max(i - lines, 0): i + lines + 1]
        return []

    def waits_of(self, line: int) -> list[WaitLinkStats]:
        """The producer links of the s_waitcnt at `line`."""
        return [w for w in self.wait_links if w.line == line]


def load_source_map(path: str | Path) -> dict[int, str]:
    """Read a PC -> location map: a JSON object keyed by address (decimal or ``0x`` hex)."""
    file = Path(path)
    data = load_json_bounded(file, error=TraceError, what="source map file")
    if not isinstance(data, dict):
        raise TraceError(f"{file}: a source map is a JSON object {{address: location}}")
    out: dict[int, str] = {}
    for key, value in data.items():
        try:
            addr = int(key, 0)
        except ValueError:
            raise TraceError(f"{file}: key {key!r} is not an address") from None
        if not isinstance(value, str):
            raise TraceError(f"{file}: location of {key} must be a string")
        out[addr] = value
    return out


def _split_location(location: str) -> tuple[str, int] | None:
    """("file", line) of a ``file:line`` location (the first one if several are joined)."""
    first = location.split(";")[0].split(", ")[0].strip()
    path, sep, line = first.rpartition(":")
    ok = sep and path and line.isascii() and line.isdigit() and len(line) <= 9  # (not '²')
    return (path, int(line)) if ok else None


def _source_line(location: str, files: Mapping[str, list[str]]) -> str:
    where = _split_location(location)
    if where is None or where[0] not in files:
        return ""
    lines = files[where[0]]
    return lines[where[1] - 1].strip() if 0 < where[1] <= len(lines) else ""


def _classify(mn: str, category: int, isa: str, drained: list[str],
              recent_mfma: bool, touches_mfma_dst: bool) -> str:
    if is_waitcnt(mn):
        if "vmcnt" in drained:
            return "vmcnt wait"
        if "lgkmcnt" in drained:
            return "lgkmcnt wait"
        counts = waitcnt_counts(isa)
        if "vmcnt" in counts:
            return "vmcnt wait"
        if "lgkmcnt" in counts:
            return "lgkmcnt wait"
        return "other"
    if is_barrier(mn):
        return "barrier"
    if is_mfma(mn):
        return "MFMA dependency"
    if recent_mfma and (category == InstCategory.VALU or mn.startswith("s_nop")
                        or (category == InstCategory.NONE and mn.startswith("v_"))):
        return "MFMA dependency"
    if touches_mfma_dst:
        return "MFMA dependency"
    if category in (InstCategory.VMEM, InstCategory.FLAT):
        return "VMEM issue"
    if category == InstCategory.LDS:
        return "LDS"
    if category == InstCategory.SMEM:
        return "SMEM"
    return "other"


@dataclass(frozen=True, slots=True)
class _LineFacts:
    """What the stall rules read from one row's text, worked out once per row."""

    regs: frozenset  # vector registers named after the mnemonic (none for s_waitcnt)
    dest: frozenset  # vector registers of the first operand
    mfma: bool
    writes: bool  # the first operand is a destination

    @classmethod
    def of(cls, mn: str, isa: str) -> _LineFacts:
        ops = operand_text(isa)
        return cls(frozenset(vector_regs(isa[len(mn):]) if not is_waitcnt(mn) else ()),
                   frozenset(vector_regs(ops[0]) if ops else ()), is_mfma(mn),
                   writes_first_operand(mn))


@dataclass
class _WaveSums:
    """What :func:`_wave_sums` adds up of one wave's records (label records left out)."""

    unknown: int  # records of a label row (unknown PC)
    stall: int
    duration: int
    idle: dict[int, int]  # line -> idle gap before its executions (lines with one)
    idle_total: int
    watched: list[tuple[int, int, int, int, int]]  # (index, time, category, stall, line)


def _sums_by(values: np.ndarray, groups: np.ndarray, n_groups: int) -> list[int]:
    """The sum of `values` per group index (exact: Python integers where int64 could
    overflow)."""
    bound = int(np.abs(values).max()) * len(values) if len(values) else 0
    if bound < 1 << 53:  # every partial sum exact in float64
        return np.bincount(groups, weights=values, minlength=n_groups).astype(np.int64).tolist()
    if bound < 1 << 62:
        sums = np.zeros(n_groups, dtype=np.int64)
        np.add.at(sums, groups, values)
        return sums.tolist()
    out = [0] * n_groups
    for g, v in zip(groups.tolist(), values.tolist(), strict=True):
        out[g] += v
    return out


def _wave_sums(wave: Wave, label: Mapping[int, bool], tracked: Mapping[int, bool],
               pairs: dict[tuple[int, int], list[int]], raw: np.ndarray | None = None
               ) -> _WaveSums:
    """Add the wave's records into `pairs` ((line, category) -> [executions, cycles, stall],
    new pairs in order of first execution) in NumPy; its idle gaps per line, totals, and
    the records the stall causes need in order: stalled ones and those of `tracked` lines.
    A line the code listing does not have is an error; a label row's records are unknown.
    `raw`: the wave's :func:`~asterism.profile.att.record_array` when the caller has it."""
    recs = wave.instructions
    n = len(recs)
    if not n:
        return _WaveSums(0, 0, 0, {}, 0, [])
    raw = record_array(wave) if raw is None else raw
    lines, first, inv = np.unique(raw[:, 4], return_index=True, return_inverse=True)
    line_list = lines.tolist()
    missing = [k for k, ln in enumerate(line_list) if ln not in label]
    if missing:
        i = min(int(first[k]) for k in missing)
        raise TraceError(f"wave {wave.filename}: instruction #{i} refers to line "
                         f"{recs[i].line}, which the code listing does not have")
    is_label = np.array([label[ln] for ln in line_list], dtype=bool)[inv]
    index = np.flatnonzero(~is_label)
    v, vinv = raw[index], inv[index]
    t, cat, st, dur = v[:, 0], v[:, 1], v[:, 2], v[:, 3]
    # (line, category) pairs of this wave, first executions first
    width = int(cat.max()) + 1 if len(cat) else 1
    keys, kfirst, kinv = np.unique(vinv * width + cat, return_index=True, return_inverse=True)
    counts = np.bincount(kinv, minlength=len(keys)).tolist()
    cycles = _sums_by(dur, kinv, len(keys))
    stall = _sums_by(st, kinv, len(keys))
    for k in np.argsort(kfirst, kind="stable").tolist():
        line_k, cat_k = divmod(int(keys[k]), width)
        pair = pairs.get((line_list[line_k], cat_k))
        if pair is None:
            pair = pairs[(line_list[line_k], cat_k)] = [0, 0, 0]
        pair[0] += counts[k]
        pair[1] += cycles[k]
        pair[2] += stall[k]
    # Idle gap before each record: from the latest end so far (the wave's begin at first).
    ends = np.maximum.accumulate(np.concatenate(([wave.begin], (t + dur)[:-1])))
    gaps = np.maximum(t - ends, 0)
    idle_lines = _sums_by(gaps, vinv, len(lines))
    idle = {line_list[k]: g for k, g in enumerate(idle_lines) if g}
    watch = (st > 0) | np.array([tracked[ln] for ln in line_list], dtype=bool)[vinv]
    sel = np.flatnonzero(watch)
    watched = list(zip(index[sel].tolist(), t[sel].tolist(), cat[sel].tolist(),
                       st[sel].tolist(), v[sel, 4].tolist(), strict=True))
    return _WaveSums(n - len(index), sum(stall), sum(cycles), idle, sum(idle_lines), watched)


def analyze(trace: Trace, source_map: Mapping[int, str] | None = None, *,
            pictures_only: bool = False, records: Sequence[np.ndarray] | None = None
            ) -> Report:
    """Analyze a trace; `source_map` maps PCs (code-object vaddr) to IR/Python locations.
    `pictures_only`: what the pictures draw (totals, stall causes, per-line figures for the
    hotspots) without the source texts, the s_waitcnt producer lists and the per-line unit
    tallies (``trace plot``; a bundle analyzes once in full and draws from that).
    `records`: the waves' :func:`~asterism.profile.att.record_arrays`, when the caller has
    them (the pictures read them too)."""
    code = trace.code
    listing = [
        InstStats(line=r.line, vaddr=r.vaddr, codeobj=r.codeobj, isa=r.isa,
                  source=(source_map or {}).get(r.vaddr, r.source), is_label=r.is_label)
        for r in code.rows
    ]
    files = source_files(trace) if not pictures_only else {}
    if files:
        for stats in listing:
            stats.source_text = _source_line(stats.source, files)
    by_line = {s.line: s for s in listing}
    text = {r.line: (mnemonic(r.isa), r.isa) for r in code.rows}
    facts = {ln: _LineFacts.of(mn, isa) for ln, (mn, isa) in text.items()}
    # Per (line, category), in order of first execution: [executions, cycles, stall]; the
    # per-line and per-unit totals are added up from these after the records.
    pairs: dict[tuple[int, int], list[int]] = {}
    label = {ln: s.is_label for ln, s in by_line.items()}
    # Registers an MFMA writes: only writes to these can end an MFMA result's flight.
    mfma_regs = frozenset().union(*(f.dest for f in facts.values() if f.mfma))
    tracked = {ln: f.mfma or (f.writes and not f.dest.isdisjoint(mfma_regs))
               for ln, f in facts.items()}
    unit_counts: dict[int, dict[str, int]] = {}
    stalls = dict.fromkeys(STALL_CAUSES, 0)
    states: dict[str, int] = {}
    per_wave: list[WaveSummary] = []
    links: dict[tuple[int, str], WaitLinkStats] = {}
    units: dict[str, UnitStats] = {}
    n_inst = stall_total = dur_total = idle_total = unknown = 0
    causes_of: dict[tuple[int, int, bool, bool], str] = {}  # _classify of a non-wait stall
    line_kinds = LineKinds()  # (the rows' wait kinds, worked out once for all waves)

    for k, wave in enumerate(trace.waves):
        events = trace_wait_events(wave, code, trace.modeled, line_kinds)
        drained_at: dict[int, list[str]] = {}
        for ev in events:
            drained_at.setdefault(ev.index, []).append(ev.counter)
        sums = _wave_sums(wave, label, tracked, pairs, records[k] if records else None)
        for line, gap in sums.idle.items():
            by_line[line].idle += gap
        idle_total += sums.idle_total
        last_mfma: int | None = None
        mfma_dst: dict[tuple[str, int], int] = {}  # register -> issue time of its MFMA
        # In record order: the stalled records and those that start or end an MFMA
        # result's flight (the only ones the stall causes depend on).
        for i, t, category, st, line in sums.watched:
            fact = facts[line]
            if st > 0:
                touches = any(r in mfma_dst and t - mfma_dst[r] < MFMA_WINDOW
                              for r in fact.regs)
                recent = last_mfma is not None and t - last_mfma < MFMA_WINDOW
                drained = drained_at.get(i)
                if drained is None:
                    key = (line, category, recent, touches)
                    cause = causes_of.get(key)
                    if cause is None:
                        mn, isa = text[line]
                        cause = causes_of[key] = _classify(mn, category, isa, [], recent,
                                                           touches)
                else:
                    mn, isa = text[line]
                    cause = _classify(mn, category, isa, drained, recent, touches)
                causes = by_line[line].causes
                causes[cause] = causes.get(cause, 0) + st
                stalls[cause] += st
            # Track which registers hold MFMA results that may still be in flight.
            if fact.mfma:
                last_mfma = t + st
                for r in fact.dest:
                    mfma_dst[r] = t + st
            elif fact.writes and mfma_dst:
                for r in fact.dest:
                    mfma_dst.pop(r, None)
        wave_n = len(wave.instructions) - sums.unknown
        wave_stall = sums.stall
        unknown += sums.unknown
        dur_total += sums.duration
        n_inst += wave_n
        stall_total += wave_stall
        wave_states: dict[str, int] = {}
        for state, cycles in sorted(wave.state_cycles().items()):
            name = state_name(state)
            wave_states[name] = cycles
            states[name] = states.get(name, 0) + cycles
        per_wave.append(WaveSummary(wave.filename, wave.se, wave.cu, wave.simd, wave.slot,
                                    wave.id, wave.begin, wave.end, wave.duration, wave_n,
                                    wave_stall, wave_states))
        for ev in events if not pictures_only else ():
            key = (ev.line, ev.counter)
            wl = links.get(key)
            if wl is None:
                row = by_line[ev.line]
                wl = links[key] = WaitLinkStats(ev.line, row.vaddr, row.isa, ev.counter,
                                                [], 0, 0)
            wl.occurrences += 1
            wl.stall += wave.instructions[ev.index].stall
            have = {p.line for p in wl.producers}
            for p in ev.producers:
                prec = wave.instructions[p]
                if prec.line not in have:
                    have.add(prec.line)
                    prow = by_line[prec.line]
                    pmn = text[prec.line][0]
                    wl.producers.append(ProducerRef(prow.line, prow.vaddr, prow.isa,
                                                    memory_kind(pmn, prec.category) or "?"))

    for (line, category), (count, cycles, stall) in pairs.items():
        unit = unit_name(text[line][0], category)
        stats = by_line[line]
        stats.hits += count
        stats.cycles += cycles
        stats.stall += stall
        if not pictures_only:
            counts = unit_counts.setdefault(line, {})
            counts[unit] = counts.get(unit, 0) + count
        u = units.get(unit)
        if u is None:
            u = units[unit] = UnitStats(unit, 0, 0, 0)
        u.count += count
        u.cycles += cycles
        u.stall += stall
    for stats in listing:
        counts = unit_counts.get(stats.line)
        if counts:
            stats.unit = max(counts, key=lambda u: counts[u])
        elif not stats.is_label:
            mn = text[stats.line][0]
            stats.unit = "MFMA" if is_mfma(mn) else ""
        stats.causes = {c: stats.causes[c] for c in STALL_CAUSES if c in stats.causes}
    for wl in links.values():
        wl.producers.sort(key=lambda p: p.line)

    sources: dict[str, SourceStats] = {}
    executed = [s for s in listing if s.hits and not s.is_label]
    for s in executed:
        if not s.source:
            continue
        src = sources.setdefault(s.source, SourceStats(s.source, 0, 0, 0, 0))
        src.instructions += 1
        src.hits += s.hits
        src.cycles += s.cycles
        src.stall += s.stall

    # Present states in enum order, then any unknown codes.
    order = [s.name for s in WaveState]
    states = {k: states[k] for k in sorted(states, key=lambda k: (
        order.index(k) if k in order else len(order), k))}
    begin = min((w.begin for w in trace.waves), default=0)
    end = max((w.end for w in trace.waves), default=0)
    return Report(
        kernels=trace.kernel_names(),
        path=str(trace.path) if trace.path is not None else None,
        modeled=trace.modeled,
        producer=trace.producer,
        gfxip=trace.info.gfxip,
        format_version=trace.info.version or FORMAT_VERSION,
        waves=len(trace.waves),
        instructions=n_inst,
        wave_cycles=sum(w.duration for w in trace.waves),
        begin=begin,
        end=end,
        stall_cycles=stall_total,
        issue_cycles=dur_total - stall_total,
        idle_cycles=idle_total,
        clock_hz=trace.realtime.shader_clock_hz() if trace.realtime else None,
        states=states,
        per_wave=per_wave,
        stalls=stalls,
        units=sorted(units.values(), key=lambda u: (-u.cycles, u.unit)),
        listing=listing,
        wait_links=sorted(links.values(), key=lambda w: (-w.stall, w.line, w.counter)),
        sources=sorted(sources.values(), key=lambda s: (-s.cycles, s.location)),
        mapped_rows=sum(1 for s in executed if s.source),
        executed_rows=len(executed),
        unknown_pc_records=unknown,
        skipped=list(trace.skipped),
    )


# ---------------------------------------------------------------------------- rendering


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _short_location(location: str) -> str:
    """``name.py:12`` for a ``/long/path/name.py:12`` location (the table stays narrow)."""
    where = _split_location(location)
    return f"{Path(where[0]).name}:{where[1]}" if where else location


def _source_cell(h: InstStats) -> str:
    if not h.source:
        return "-"
    cell = md_code(_short_location(h.source), table=True)
    return cell + (f" {md_code(h.source_text, table=True)}" if h.source_text else "")


def _provenance(report: Report) -> str:
    if report.modeled:
        who = f" by {md_text(report.producer)}" if report.producer else ""
        return (f"> **MODELED TRACE** — produced{who} from a timing model, not measured on "
                "hardware. Cycle counts are the model's estimates.")
    return (f"> Hardware capture (rocprofv3 ATT decoder output, format "
            f"{report.format_version}, gfxip {report.gfxip}).")


def render_markdown(report: Report, top: int = 10, context: int = 3, rank: str = "stall") -> str:
    """The report as Markdown, with the `top` hotspots (ranked by `rank`, see RANKS) and
    `context` lines around each."""
    out: list[str] = []
    title = ", ".join(report.kernels) or "(unnamed kernel)"
    out.append(f"# Trace report: {md_text(title)}")
    out.append("")
    out.append(_provenance(report))
    if report.path:
        out.append("")
        out.append(f"Trace: {md_code(report.path)}")
    if report.skipped:
        out.append("")
        out.append("Not read in the trace folder: " + "; ".join(
            f"{md_code(name)}: {md_text(why)}" for name, why in report.skipped) + ".")
    out.append("")

    out.append("## Totals")
    out.append("")
    out.append("| metric | value |")
    out.append("|---|---|")
    out.append(f"| waves traced | {report.waves} |")
    out.append(f"| instructions executed | {report.instructions} |")
    out.append(f"| wave-cycles (sum of wave lifetimes) | {report.wave_cycles} |")
    span = f"{report.span} ({report.begin}..{report.end})"
    if report.clock_hz:
        span += f", {report.span / report.clock_hz * 1e6:.2f} us at " \
                f"{report.clock_hz / 1e9:.2f} GHz"
    out.append(f"| span (cycles) | {span} |")
    busy = report.stall_cycles + report.issue_cycles
    out.append(f"| stall cycles | {report.stall_cycles} ({_pct(report.stall_cycles, busy)} of "
               "instruction cycles) |")
    out.append(f"| issue cycles | {report.issue_cycles} |")
    out.append(f"| idle cycles (between instructions) | {report.idle_cycles} |")
    if report.unknown_pc_records:
        out.append(f"| records with unknown PC (skipped) | {report.unknown_pc_records} |")
    out.append("")

    out.append("## Wave states")
    out.append("")
    total_states = sum(report.states.values())
    names = list(report.states)
    out.append("| state | cycles | share |")
    out.append("|---|---:|---:|")
    for name, cycles in report.states.items():
        out.append(f"| {name} | {cycles} | {_pct(cycles, total_states)} |")
    out.append("")
    if report.per_wave:
        out.append("| wave | CU | begin | cycles | instructions | stall | "
                   + " | ".join(names) + " |")
        out.append("|---|---:|---:|---:|---:|---:|" + "---:|" * len(names))
        for w in report.per_wave:
            cells = " | ".join(str(w.states.get(n, 0)) for n in names)
            out.append(f"| {w.file.removesuffix('.json')} | {w.cu} | {w.begin} | {w.cycles} | "
                       f"{w.instructions} | {w.stall} | {cells} |")
        out.append("")

    out.append("## Stall causes")
    out.append("")
    out.append("| cause | stall cycles | share |")
    out.append("|---|---:|---:|")
    for cause, cycles in sorted(report.stalls.items(), key=lambda kv: -kv[1]):
        out.append(f"| {cause} | {cycles} | {_pct(cycles, report.stall_cycles)} |")
    out.append("")

    out.append("## Instruction units")
    out.append("")
    out.append("| unit | executed | cycles | stall |")
    out.append("|---|---:|---:|---:|")
    for u in report.units:
        out.append(f"| {u.unit} | {u.count} | {u.cycles} | {u.stall} |")
    out.append("")

    hot = report.hotspots(top, rank)
    with_source = any(h.source for h in hot)
    out.append(f"## Top {len(hot)} hotspots (by {'stall ' if rank == 'stall' else ''}cycles)")
    out.append("")
    out.append("| # | line | PC | stall | % of stall | cycles | % of cycles | idle | hits | cause "
               "| instruction |" + (" source |" if with_source else ""))
    out.append("|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|"
               + ("---|" if with_source else ""))
    for n, h in enumerate(hot, 1):
        out.append(f"| {n} | {h.line} | 0x{h.vaddr:x} | {h.stall} | "
                   f"{_share(report.stall_share(h))} | {h.cycles} | "
                   f"{_share(report.cycle_share(h))} | {h.idle} | {h.hits} | "
                   f"{h.cause or '-'} | {md_code(h.isa, table=True)} |"
                   + (f" {_source_cell(h)} |" if with_source else ""))
    out.append("")
    for n, h in enumerate(hot, 1):
        out.append(f"### {n}. line {h.line}, PC 0x{h.vaddr:x}: {md_code(h.isa)}")
        out.append("")
        if h.source:
            out.append(f"Source: {md_code(h.source)}" + (f": {md_code(h.source_text)}"
                                                          if h.source_text else ""))
            out.append("")
        for wl in report.waits_of(h.line):
            prods = "; ".join(f"line {p.line} ({p.kind}) {md_code(p.isa)}"
                              for p in wl.producers)
            out.append(f"Waited on ({wl.counter}): {prods}")
            out.append("")
        block = [f"   {'cycles':>7} {'stall':>7} {'hits':>5} {'line':>5}  {'pc':<8} "
                 "instruction"]
        for row in report.context(h.line, context):
            mark = ">>" if row.line == h.line else "  "
            pc = f"0x{row.vaddr:x}"
            block.append(f"{mark} {row.cycles:>7} {row.stall:>7} {row.hits:>5} {row.line:>5}  "
                         f"{pc:<8} {row.isa}")
        out += md_fence(block)
        out.append("")

    if report.wait_links:
        shown = report.wait_links[:max(top, 0)]
        out.append("## s_waitcnt producers")
        out.append("")
        more = len(report.wait_links) - len(shown)
        out.append(f"The {len(shown)} waits with the most stall"
                   + (f" ({more} more in the JSON report)" if more > 0 else "") + ".")
        out.append("")
        out.append("| waitcnt line | PC | counter | times | stall "
                   "| waited on (line: instruction) |")
        out.append("|---:|---|---|---:|---:|---|")
        for wl in shown:
            prods = "<br>".join(f"{p.line}: {md_code(p.isa, table=True)}"
                                for p in wl.producers)
            out.append(f"| {wl.line} | 0x{wl.vaddr:x} | {wl.counter} | {wl.occurrences} | "
                       f"{wl.stall} | {prods} |")
        out.append("")

    out.append("## Source mapping")
    out.append("")
    if not report.sources:
        out.append(f"No source locations: 0 of {report.executed_rows} executed instructions "
                   "map to source (the code object has no line table and no PC map was "
                   "given).")
    else:
        out.append(f"{report.mapped_rows} of {report.executed_rows} executed instructions map "
                   "to source.")
        out.append("")
        out.append("| location | instructions | hits | cycles | stall |")
        out.append("|---|---:|---:|---:|---:|")
        for s in report.sources[:max(top, 0)]:
            out.append(f"| {md_code(s.location, table=True)} | {s.instructions} | {s.hits} | "
                       f"{s.cycles} | "
                       f"{s.stall} |")
    out.append("")
    return "\n".join(out)


def _stats_dict(s: InstStats) -> dict[str, Any]:
    d = asdict(s)
    d["issue"] = s.issue
    d["cause"] = s.cause
    return d


def _hotspot_dict(report: Report, h: InstStats, context: int) -> dict[str, Any]:
    return {**_stats_dict(h),
            "stall_share_pct": report.stall_share(h),
            "cycle_share_pct": report.cycle_share(h),
            "context": [_stats_dict(c) for c in report.context(h.line, context)],
            "waited_on": [asdict(w) for w in report.waits_of(h.line)]}


def render_json(report: Report, top: int = 10, context: int = 3, rank: str = "stall") -> str:
    """The report as JSON: all figures, the full listing and the `top` hotspots (ranked by
    `rank`, see RANKS)."""
    data: dict[str, Any] = {
        "kernels": report.kernels,
        "path": report.path,
        "modeled": report.modeled,
        "producer": report.producer,
        "provenance": "model" if report.modeled else "hardware",
        "gfxip": report.gfxip,
        "format_version": report.format_version,
        "totals": {
            "waves": report.waves,
            "instructions": report.instructions,
            "wave_cycles": report.wave_cycles,
            "begin": report.begin,
            "end": report.end,
            "span": report.span,
            "stall_cycles": report.stall_cycles,
            "issue_cycles": report.issue_cycles,
            "idle_cycles": report.idle_cycles,
            "clock_hz": report.clock_hz,
            "unknown_pc_records": report.unknown_pc_records,
        },
        "states": report.states,
        "per_wave": [asdict(w) for w in report.per_wave],
        "stalls": report.stalls,
        "units": [asdict(u) for u in report.units],
        "hotspot_rank": rank,
        "hotspots": [_hotspot_dict(report, h, context) for h in report.hotspots(top, rank)],
        "wait_links": [asdict(w) for w in report.wait_links],
        "sources": [asdict(s) for s in report.sources],
        "mapped_rows": report.mapped_rows,
        "executed_rows": report.executed_rows,
        "listing": [_stats_dict(s) for s in report.listing],
        "skipped": [{"name": n, "reason": why} for n, why in report.skipped],
    }
    return json.dumps(data, indent=2)

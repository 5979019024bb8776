"""Replay a captured thread trace through the timing model and measure the model's error.

A capture records, per traced wave, every executed instruction in order (code.json row,
issue time, stall, duration). That stream is enough to drive the timing model without
executing anything (`timing.replay.TraceDrivenModel`): each wave starts at its measured
begin, on the SIMD and slot it ran on, and issues the same instructions in the same order;
waves of one traced CU share its units and barriers. The model's records are then compared
with the measured ones: cycles per wave and in total, per instruction category, the stall
split (vmcnt, lgkmcnt, MFMA/VALU dependency, barrier) and the top-10 hotspot lists.

Memory behaviour comes from the model (``memory="model"``: LDS, scalar and vector
latencies of target/data/timing.toml; a vector load's addresses are unknown, so it takes
``memory.vmem_unknown``; scalar loads hit or miss by the cache line their base registers and
offset name, a miss paying ``memory.smem_miss``; stores leave through the CU's write-out queue
at ``memory.store_unknown`` cycles each, or one cycle per 64-byte block where the lanes'
address pattern follows from the code (a static analysis of the executed stream,
timing/lanes.py; such a vector load also costs its cache-line lookups); VALU results reach
other units as timing/valu.py says; a taken branch to code the CU pair has not fetched waits
for its instruction line, timing/icache.py, by the code.json addresses; a DS instruction
holds its SIMD pair's LDS port and ``s_setprio`` orders the issue, as in a kernel run;
``off`` leaves any of these seven out: timing.params.REPLAY_MECHANISMS) or from
the capture
(``memory="measured"``): each memory instruction completes
as long after its modeled issue as it did after its measured issue, where that is known
(the capture's waitcnt links name the accesses each ``s_waitcnt`` drained, and the wait's
measured end bounds their completion; ``s_endpgm``'s end bounds the rest), and the vector
memory path accepts each instruction no sooner than it did (its measured issue stall:
address coalescing and queue back-pressure, which depend on addresses a trace does not
carry). The rest of the model (issue, ports, dependencies, MFMA pipeline, waits, barriers)
is then tested on its own. ``memory="accept"`` takes only the vector memory path's
acceptance from the capture (what the lanes' addresses cost at issue) and models every
latency: it tests the latencies as if the model knew the addresses' coalescing.
``memory="accept-scalar"`` is accept with the scalar loads' latencies from the capture too:
in both shipped captures every scalar load reads the kernel's arguments, and that latency is
set by the dispatch, not by the kernel's code (measured 772-784 cycles for pa_mqa's first two
argument lines, 1016-1084 for its next four, 1424-1476 for flash_attn's one: where the
arguments were written and how warm the SQC was, which no capture shows); it tests the rest
of the model without that spread.

Barriers: one per workgroup. A capture names no workgroups, so the traced waves of each CU
are grouped by asterism.profile.workgroups (their measured barrier releases, else their
launch bursts); ``barrier_groups="cu"`` makes all traced waves of a CU one group instead
(what the replay did before workgroups were inferred; kept to measure the difference).

Calibration (fitting the fittable parameters to captures) is asterism.profile.calibrate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asterism.errors import AsterismError
from asterism.profile.att import Trace, Wave, category_name, read_att
from asterism.profile.workgroups import BY_BARRIERS, WorkgroupGuess, infer_workgroups
from asterism.support.gcpause import gc_paused
from asterism.timing.params import params_note, replay_off
from asterism.timing.result import InstCategory

MEMORY_MODES = ("model", "measured", "accept", "accept-scalar")
BARRIER_GROUPS = ("workgroup", "cu")  # a barrier per inferred workgroup, or per traced CU
BY_CU = "all traced waves of the CU"
STALL_CLASSES = ("vmcnt", "lgkmcnt", "mfma_valu", "barrier", "other")
TOP_N = 10
MODEL_LABEL = "modeled"


class ReplayError(AsterismError):
    """A capture that cannot be replayed (no waves, unknown instructions, bad options)."""


@dataclass(frozen=True)
class Figures:
    """What one side (measured or modeled) of a replay adds up to."""

    cycles: int  # sum over waves of end - begin
    stall: int
    per_category: dict[str, tuple[int, int]]  # name -> (cycles, stall)
    stall_split: dict[str, int]  # STALL_CLASSES -> cycles
    per_line: dict[int, tuple[int, int]]  # code.json line -> (cycles, stall)

    def stall_shares(self) -> dict[str, float]:
        """Each stall class as a percentage of all stall cycles."""
        total = sum(self.stall_split.values()) or 1
        return {k: 100.0 * v / total for k, v in self.stall_split.items()}

    def top(self, rank: str = "stall", n: int = TOP_N) -> list[int]:
        """The `n` code lines with the most stall (or cycles), ties by line."""
        key = 1 if rank == "stall" else 0
        lines = sorted(self.per_line, key=lambda ln: (-self.per_line[ln][key], ln))
        return lines[:n]


@dataclass(frozen=True)
class WaveComparison:
    """One traced wave: measured and modeled lifetime."""

    name: str
    cu: int
    simd: int
    slot: int
    instructions: int
    measured: int
    modeled: int

    @property
    def error(self) -> float:
        """Modeled minus measured, as a percentage of measured."""
        return 100.0 * (self.modeled - self.measured) / max(self.measured, 1)


@dataclass(frozen=True)
class BarrierGroup:
    """One barrier group of a replay (an inferred workgroup, or a whole traced CU): its
    waves, what the grouping rests on, and the barrier stall measured and modeled."""

    se: int
    cu: int
    waves: tuple[str, ...]
    evidence: str
    measured_stall: int
    modeled_stall: int

    def to_json(self) -> dict[str, Any]:
        """The group as plain data."""
        return {"se": self.se, "cu": self.cu, "waves": list(self.waves),
                "evidence": self.evidence, "measured_barrier_stall": self.measured_stall,
                "modeled_barrier_stall": self.modeled_stall}


@dataclass
class ReplayResult:
    """A replay's comparison of modeled with measured figures."""

    capture: str
    kernel: str
    target: str
    memory: str
    waves: list[WaveComparison]
    measured: Figures
    modeled: Figures
    texts: dict[int, str]  # code.json line -> ISA text
    measured_latencies: int = 0  # memory instructions given a measured latency
    params_file: str | None = None  # the parameter file over timing.toml (--params)
    modeled_records: dict[str, list[tuple[int, int, int, int, int]]] = field(
        default_factory=dict)  # wave name -> modeled records (for pictures)
    measured_records: dict[str, list[tuple[int, int, int, int, int]]] = field(
        default_factory=dict)
    barrier_grouping: str = "workgroup"
    barrier_groups: list[BarrierGroup] = field(default_factory=list)
    off: tuple[str, ...] = ()  # mechanisms left out (--timing-off)
    paths: Any = None  # timing.result.PathUse: scalar misses, store write-out, VALU paths
    patterns: PatternUse | None = None  # the lanes' address patterns (None: left out)

    @property
    def cycles_error(self) -> float:
        """Total modeled cycles minus measured, in percent of measured."""
        return 100.0 * (self.modeled.cycles - self.measured.cycles) / max(self.measured.cycles, 1)

    def hotspot_overlap(self, rank: str = "stall", n: int = TOP_N) -> int:
        """How many of the measured top-`n` lines are also in the modeled top-`n`."""
        return len(set(self.measured.top(rank, n)) & set(self.modeled.top(rank, n)))

    def stall_split_error(self) -> dict[str, float]:
        """Per stall class: modeled share minus measured share, in percentage points."""
        m, o = self.measured.stall_shares(), self.modeled.stall_shares()
        return {k: o[k] - m[k] for k in STALL_CLASSES}

    def to_json(self) -> dict[str, Any]:
        """Every figure as plain data; modeled figures are labelled as such."""
        def side(f: Figures) -> dict[str, Any]:
            return {"cycles": f.cycles, "stall": f.stall,
                    "per_category": {k: {"cycles": c, "stall": s}
                                     for k, (c, s) in sorted(f.per_category.items())},
                    "stall_split": dict(f.stall_split),
                    "stall_split_percent": {k: round(v, 2) for k, v in
                                            f.stall_shares().items()},
                    "top_stall": f.top("stall"), "top_cycles": f.top("cycles")}

        return {"capture": self.capture, "kernel": self.kernel, "target": self.target,
                "memory": self.memory, "note": "modeled figures come from asterism's timing "
                "model (not measured); measured figures from the capture",
                "params_file": self.params_file,
                "measured_cycles": self.measured.cycles, "modeled_cycles": self.modeled.cycles,
                "cycles_error_percent": round(self.cycles_error, 2),
                "hotspot_overlap_stall": self.hotspot_overlap("stall"),
                "hotspot_overlap_cycles": self.hotspot_overlap("cycles"),
                "stall_split_error_points": {k: round(v, 2) for k, v in
                                             self.stall_split_error().items()},
                "measured_memory_latencies": self.measured_latencies,
                "timing_off": list(self.off),
                "paths": self.paths.to_json() if self.paths else None,
                "lane_patterns": self.patterns.to_json() if self.patterns else None,
                "barrier_grouping": self.barrier_grouping,
                "barrier_groups": [g.to_json() for g in self.barrier_groups],
                "waves": [{"name": w.name, "cu": w.cu, "simd": w.simd, "slot": w.slot,
                           "instructions": w.instructions, "measured_cycles": w.measured,
                           "modeled_cycles": w.modeled, "error_percent": round(w.error, 2)}
                          for w in self.waves],
                "measured": side(self.measured), "modeled": side(self.modeled)}

    def summary(self) -> str:
        """A readable comparison table (modeled figures labelled)."""
        source = {"measured": "measured where the capture links them",
                  "accept": "model (vector memory acceptance measured)",
                  "accept-scalar": "model (vector memory acceptance and scalar load "
                                   "latencies measured)"}.get(self.memory, "model")
        out = [f"replay of {self.capture} ({self.kernel}, {self.target}), memory latencies: "
               f"{source}",
               *([f"  {note}"] if (note := params_note(self.params_file)) else []),
               *([f"  mechanisms left out: {', '.join(self.off)}"] if self.off else []),
               f"  total cycles of the traced waves: measured {self.measured.cycles}, "
               f"{MODEL_LABEL} {self.modeled.cycles} ({self.cycles_error:+.1f} %)",
               "", "  wave                  insts   measured    modeled   error"]
        for w in self.waves:
            out.append(f"  {w.name:<20s} {w.instructions:6d} {w.measured:10d} {w.modeled:10d} "
                       f"{w.error:+6.1f} %")
        out += ["", "  category       measured cycles / stall      modeled cycles / stall"]
        for name in sorted(set(self.measured.per_category) | set(self.modeled.per_category)):
            mc, ms = self.measured.per_category.get(name, (0, 0))
            oc, os_ = self.modeled.per_category.get(name, (0, 0))
            out.append(f"  {name:<12s} {mc:12d} / {ms:<10d}   {oc:12d} / {os_:<10d}")
        out += ["", "  stall split      measured   modeled   (points)"]
        ms, os_ = self.measured.stall_shares(), self.modeled.stall_shares()
        for k in STALL_CLASSES:
            out.append(f"  {k:<12s} {ms[k]:9.1f} % {os_[k]:8.1f} %   {os_[k] - ms[k]:+6.1f}")
        out += self._barrier_lines()
        if self.paths is not None and (lines := self.paths.lines()):
            out += ["", *lines]
        if self.patterns is not None and self.patterns.executed:
            out += ["", *self.patterns.lines()]
        out += ["", f"  top-{TOP_N} hotspots by stall: {self.hotspot_overlap('stall')} of "
                    f"{TOP_N} in both lists (by cycles: {self.hotspot_overlap('cycles')})",
                "     line  measured stall  modeled stall  instruction"]
        for line in self.measured.top("stall"):
            mark = "*" if line in self.modeled.top("stall") else " "
            out.append(f"  {mark}{line:6d} {self.measured.per_line[line][1]:15d} "
                       f"{self.modeled.per_line.get(line, (0, 0))[1]:14d}  "
                       f"{self.texts.get(line, '')}")
        return "\n".join(out) + "\n"

    def _barrier_lines(self) -> list[str]:
        """The summary's barrier groups (only when a traced wave passed a barrier)."""
        if not any(g.measured_stall or g.modeled_stall or g.evidence == BY_BARRIERS
                   for g in self.barrier_groups):
            return []
        per_cu: dict[tuple[int, int], int] = {}
        for g in self.barrier_groups:
            per_cu[(g.se, g.cu)] = per_cu.get((g.se, g.cu), 0) + 1
        cus = ", ".join(f"SE {se} CU {cu}: {n}" for (se, cu), n in per_cu.items())
        how = ("one per workgroup as inferred from the capture (asterism.profile.workgroups)"
               if self.barrier_grouping == "workgroup" else "one per traced CU")
        out = ["", f"  barrier groups, {how}; per CU: {cus}",
               "    SE  CU  waves  grouped by           barrier stall measured  "
               f"{MODEL_LABEL}"]
        for g in self.barrier_groups:
            out.append(f"    {g.se:2d} {g.cu:3d} {len(g.waves):6d}  {g.evidence:<26s} "
                       f"{g.measured_stall:10d} {g.modeled_stall:10d}")
        return out


# ---------------------------------------------------------------------------- replay


def _figures(waves: Iterable[tuple[int, int, Sequence]], classify: Mapping[int, str]) -> Figures:
    """Sum (begin, end, records) of several waves into Figures."""
    cycles = stall = 0
    per_cat: dict[str, list[int]] = {}
    split = dict.fromkeys(STALL_CLASSES, 0)
    per_line: dict[int, list[int]] = {}
    for begin, end, records in waves:
        cycles += end - begin
        for rec in records:
            _time, cat, st, dur, line = rec[:5]
            stall += st
            c = per_cat.setdefault(category_name(cat), [0, 0])
            c[0] += dur
            c[1] += st
            pl = per_line.setdefault(line, [0, 0])
            pl[0] += dur
            pl[1] += st
            split[classify.get(line, "other")] += st
    return Figures(cycles, stall, {k: (v[0], v[1]) for k, v in per_cat.items()}, split,
                   {k: (v[0], v[1]) for k, v in per_line.items()})


def _stall_class(static) -> str:
    """Which stall class a line's stall counts in (the same rule for both sides)."""
    if static.kind == "waitcnt":
        vm, lgkm = static.wait
        return "vmcnt" if vm < 63 or lgkm >= 15 else "lgkmcnt"
    if static.kind == "barrier":
        return "barrier"
    if static.category == InstCategory.VALU:
        return "mfma_valu"
    return "other"


@dataclass
class _Program:
    """The capture's code rows as model instructions."""

    statics: list
    fallthrough: list[int]
    index_of_line: dict[int, int]
    line_of_index: list[int]
    texts: dict[int, str]
    classify: dict[int, str]
    memory_lines: set[int]
    addresses: list[int]  # each instruction's code-object address (code.json Vaddr)

    @property
    def barrier_lines(self) -> set[int]:
        """The code lines that are s_barrier."""
        return {line for line, cls in self.classify.items() if cls == "barrier"}


_INFOS: dict[tuple[int, str], tuple[Trace, list, list]] = {}


def _instructions(trace: Trace, target: str) -> tuple[list, list]:
    """The capture's instruction rows and their emulator OpInfos (parsed once per trace)."""
    from asterism.emu.info import PlainInst, make_infos
    from asterism.errors import ParseError
    from asterism.mc.asm_syntax import InstParser
    from asterism.mc.matcher import MatchError, select_form

    cached = _INFOS.get((id(trace), target))
    if cached is not None and cached[0] is trace:
        return cached[1], cached[2]
    parser = InstParser()
    rows = [r for r in trace.code.rows if not r.is_label and r.isa.strip()]
    insts = []
    for r in rows:
        try:
            inst = parser.parse(r.isa)
            inst.form = select_form(inst, target)
        except (ParseError, MatchError, AsterismError) as err:
            raise ReplayError(f"code.json line {r.line}: cannot read '{r.isa}' as a {target} "
                              f"instruction: {err}") from None
        insts.append(inst)
    plain = [PlainInst(r.vaddr, 4, inst) for r, inst in zip(rows, insts, strict=True)]
    infos = make_infos(plain, target)
    if len(_INFOS) >= 8:  # calibration replays a few traces many times; keep those
        _INFOS.pop(next(iter(_INFOS)))
    _INFOS[(id(trace), target)] = (trace, rows, infos)
    return rows, infos


_PROGRAMS: dict[tuple[int, str, int], tuple[Any, Any, _Program]] = {}


def _program(trace: Trace, target: str, tm) -> _Program:
    """The trace's code rows as model instructions (made once per code listing, target and
    timing model: the what-if replays run one trace many times with its waves swapped)."""
    key = (id(trace.code), target, id(tm))
    cached = _PROGRAMS.get(key)
    if cached is not None and cached[0] is trace.code and cached[1] is tm:
        return cached[2]
    prog = _make_program(trace, target, tm)
    if len(_PROGRAMS) >= 8:  # as _INFOS: a few traces (and timing models) at a time
        _PROGRAMS.pop(next(iter(_PROGRAMS)))
    _PROGRAMS[key] = (trace.code, tm, prog)
    return prog


def _make_program(trace: Trace, target: str, tm) -> _Program:
    from asterism.timing.static import make_static

    rows, infos = _instructions(trace, target)
    statics = [make_static(info, tm) for info in infos]
    index_of_line = {r.line: i for i, r in enumerate(rows)}
    line_of_index = [r.line for r in rows]
    fallthrough = list(range(1, len(rows) + 1))
    classify = {}
    memory_lines = set()
    for i, r in enumerate(rows):
        st = statics[i]
        classify[r.line] = _stall_class(st)
        if st.kind == "mem":
            memory_lines.add(r.line)
    return _Program(statics, fallthrough, index_of_line, line_of_index,
                    {r.line: r.isa for r in rows}, classify, memory_lines,
                    [r.vaddr for r in rows])


def measured_latencies(wave: Wave, memory_lines: set[int]) -> dict[int, int]:
    """Stream position -> measured cycles from a memory instruction's issue to the end of
    the first ``s_waitcnt`` that drained it (the capture's waitcnt links).

    The links list, per executed wait that drained something, the static lines it waited
    for; a link belongs to the next execution of its wait line whose producers all have an
    executed, not yet drained instance (a wait that drained nothing has no link)."""
    return _latencies([r for r in wave.instructions if r.line != 0], wave.waitcnt,
                      memory_lines)


def _latencies(records: Sequence, links: Sequence, memory_lines: set[int]) -> dict[int, int]:
    """measured_latencies of a wave's records without the line-0 ones (`links`: its
    waitcnt links)."""
    out: dict[int, int] = {}
    pending: dict[int, int] = {}  # line -> position of its latest undrained execution
    k, n = 0, len(links)
    want = links[0].line if n else -1  # the wait line of the next link (-1: none left)
    last = records[-1] if records else None
    message = InstCategory.MESSAGE
    for pos, rec in enumerate(records):
        line = rec.line
        if line in memory_lines:
            pending[line] = pos
            continue
        while line == want and all(p in pending for p in links[k].producers):
            release = rec.time + rec.duration
            for p in links[k].producers:
                q = pending.pop(p)
                out[q] = max(1, release - records[q].issue_time)
            k += 1
            want = links[k].line if k < n else -1
        if rec is last and rec.category == message:
            # s_endpgm waits for every outstanding access: its end bounds their completion
            release = rec.time + rec.duration
            for q in pending.values():
                out[q] = max(1, release - records[q].issue_time)
            pending.clear()
    return out


def measured_acceptance(wave: Wave, memory_lines: set[int]) -> dict[int, int]:
    """Stream position -> measured issue stall of each vector memory instruction (VMEM or
    FLAT category): how long the memory path made it wait."""
    return _acceptance([r for r in wave.instructions if r.line != 0], memory_lines)


def _acceptance(records: Sequence, memory_lines: set[int]) -> dict[int, int]:
    """measured_acceptance of a wave's records without the line-0 ones."""
    vector = (InstCategory.VMEM, InstCategory.FLAT)
    return {pos: r.stall for pos, r in enumerate(records)
            if r.stall and r.line in memory_lines and r.category in vector}


_PatternKey = tuple[int, str, int, int, int]
_PATTERNS: dict[_PatternKey, tuple[Any, dict[tuple[int, ...], dict[int, int]]]] = {}
_PATTERN_STREAMS = 512  # streams remembered per code listing (what-ifs replay variants)


def lane_patterns(trace: Trace, target: str, store_block: int, load_block: int,
                  path_bytes: int) -> list[dict[int, int]]:
    """Per traced wave: stream position -> 64-byte blocks (stores) or cache lines (loads)
    its vector memory instruction's lanes touch (a store's per clock group of lanes, the path
    taking `path_bytes` a clock), where that follows from the code (timing.lanes; each
    distinct stream analysed once per code listing)."""
    from asterism.timing.lanes import lane_patterns as derive

    key = (id(trace.code), target, store_block, load_block, path_bytes)
    cached = _PATTERNS.get(key)
    if cached is None or cached[0] is not trace.code:
        if len(_PATTERNS) >= 8:
            _PATTERNS.pop(next(iter(_PATTERNS)))
        cached = _PATTERNS[key] = (trace.code, {})
    memo = cached[1]
    rows, infos = _instructions(trace, target)
    index_of_line = {r.line: i for i, r in enumerate(rows)}
    out = []
    for wave in trace.waves:
        stream = tuple(index_of_line.get(r.line, -1) for r in wave.instructions if r.line != 0)
        got = memo.get(stream)
        if got is None:
            got = {} if -1 in stream else derive(stream, infos, store_block, load_block,
                                                        path_bytes)
            if len(memo) >= _PATTERN_STREAMS:
                memo.pop(next(iter(memo)))
            memo[stream] = got
        out.append(got)
    return out


@dataclass(frozen=True)
class PatternUse:
    """What the lane address patterns (timing/lanes.py) gave a replay: per code line of a
    vector memory instruction, how many of its executions got a derived pattern and the
    blocks (stores: 64-byte write requests) or lines (loads: 128 bytes) they touch."""

    executed: dict[int, int]  # code line -> executions (vector memory instructions)
    derived: dict[int, dict[int, int]]  # code line -> {blocks: executions}
    stores: frozenset[int]  # the code lines that are stores

    def lines(self) -> list[str]:
        """The summary's lines."""
        got = [ln for ln in self.executed if self.derived.get(ln)]
        out = [f"  lane address patterns (static analysis of the code, not measured): "
               f"{len(got)} of {len(self.executed)} vector memory instructions got their "
               "lanes' pattern (assumed: v0 = lane id + a multiple of 64, i.e. a 1-D "
               "workgroup; uniform base 64-byte aligned; all 64 lanes active); the rest pay "
               "memory.store_unknown / vmem_unknown"]
        for kind, unit in (("stores", "64-byte write requests"), ("loads", "128-byte lines")):
            items = [f"{ln}: {'/'.join(str(b) for b in sorted(self.derived[ln]))}"
                     for ln in sorted(got) if (ln in self.stores) == (kind == "stores")]
            if items:
                out.append(f"    {kind} (code line: {unit}): {', '.join(items)}")
        return out

    def to_json(self) -> dict[str, Any]:
        """The patterns as plain data."""
        return {"instructions": len(self.executed),
                "derived": sum(1 for ln in self.executed if self.derived.get(ln)),
                "per_line": {str(ln): {"store": ln in self.stores,
                                       "executions": self.executed[ln],
                                       "blocks": {str(b): n for b, n in
                                                  sorted(self.derived.get(ln, {}).items())}}
                             for ln in sorted(self.executed)}}


def _pattern_use(prog: _Program, kept: Sequence, streams: Sequence[list[int]],
                 patterns: Sequence[dict[int, int]] | None) -> PatternUse | None:
    """Summarise the derived lane patterns of the replayed waves (None: mechanism off)."""
    if patterns is None:
        return None
    executed: dict[int, int] = {}
    derived: dict[int, dict[int, int]] = {}
    stores = set()
    for stream, pats in zip(streams, patterns, strict=True):
        for pos, index in enumerate(stream):
            st = prog.statics[index]
            if st.mem not in ("vmem", "flat"):
                continue
            line = prog.line_of_index[index]
            executed[line] = executed.get(line, 0) + 1
            if st.store:
                stores.add(line)
            if pos in pats:
                d = derived.setdefault(line, {})
                d[pats[pos]] = d.get(pats[pos], 0) + 1
    return PatternUse(executed, derived, frozenset(stores))


def _guesses(trace: Trace, barrier_lines: set[int], grouping: str) -> list[WorkgroupGuess]:
    """The barrier groups: inferred workgroups, or one group per traced CU."""
    if grouping == "workgroup":
        return infer_workgroups(trace.waves, barrier_lines)
    by_cu: dict[tuple[int, int], list[int]] = {}
    for i, w in enumerate(trace.waves):
        by_cu.setdefault((w.se, w.cu), []).append(i)
    return [WorkgroupGuess(se, cu, tuple(m), BY_CU) for (se, cu), m in by_cu.items()]


def _run(trace: Trace, target: str, memory: str, timing, barrier_groups: str = "workgroup",
         off: Iterable[str] = ()
         ) -> tuple[Any, Any, _Program, list, dict[int, Any], int, list[WorkgroupGuess], Any]:
    """Run the model on the trace's streams: (target, model, program, [(wave, records)],
    wave row -> modeled WaveTiming, memory instructions given a measured latency, the
    barrier groups, what the scalar-miss / store / VALU-path mechanisms did: a
    timing.result.PathUse); `off`: mechanisms left out (timing.params.REPLAY_MECHANISMS)."""
    from asterism.target import get_target
    from asterism.target.timing import get_timing
    from asterism.timing.memory import path_use
    from asterism.timing.replay import StreamWave, TraceDrivenModel

    if memory not in MEMORY_MODES:
        raise ReplayError(f"memory must be one of {', '.join(MEMORY_MODES)}, got {memory!r}")
    if barrier_groups not in BARRIER_GROUPS:
        raise ReplayError(f"barrier groups must be one of {', '.join(BARRIER_GROUPS)}, got "
                          f"{barrier_groups!r}")
    off = replay_off(off)
    if not trace.waves:
        raise ReplayError("the capture has no traced waves to replay")
    tgt = get_target(target)
    tm = timing or get_timing(tgt.name)
    prog = _program(trace, tgt.name, tm)
    patterns = None if "lane_patterns" in off else lane_patterns(
        trace, tgt.name, tm.memory["write_bytes"], tm.memory["line_bytes"],
        tm.memory["vmem_bytes_per_cycle"])
    guesses = _guesses(trace, prog.barrier_lines, barrier_groups)
    workgroup_of = {i: k for k, g in enumerate(guesses) for i in g.waves}
    index_of_line = prog.index_of_line
    cu_ids: dict[tuple[int, int], int] = {}
    pairs: dict[tuple[int, int], int] = {}
    inputs, kept = [], []
    n_measured = 0
    for wi, wave in enumerate(trace.waves):
        records = [r for r in wave.instructions if r.line != 0]
        try:
            stream = [index_of_line[r.line] for r in records]
        except KeyError as err:
            raise ReplayError(f"{wave.filename}: record names code.json line {err.args[0]}, "
                              "which is not an instruction") from None
        lat = accept = None
        if memory == "measured":
            lat = _latencies(records, wave.waitcnt, prog.memory_lines)
        elif memory == "accept-scalar":
            lat = {pos: cycles for pos, cycles in
                   _latencies(records, wave.waitcnt, prog.memory_lines).items()
                   if prog.statics[stream[pos]].mem == "smem"}
        if memory != "model":
            accept = _acceptance(records, prog.memory_lines)
        n_measured += len(lat or {})
        cu = cu_ids.setdefault((wave.se, wave.cu), len(cu_ids))
        # the CUs of a shader engine share an instruction cache in pairs (timing/icache.py)
        pair = pairs.setdefault((wave.se, wave.cu // 2), len(pairs))
        inputs.append(StreamWave(cu, wave.simd, wave.slot, wave.begin, stream, lat, accept,
                                 workgroup_of[wi], pair,
                                 patterns[wi] if patterns is not None else None))
        kept.append((wave, records))
    # The collector paused while the model runs: it makes a record tuple per instruction and
    # no cycles that matter (see asterism.support.gcpause).
    with gc_paused():
        model = TraceDrivenModel(tgt, tm, prog.statics, prog.fallthrough, inputs,
                                 kernel=trace.path.name if trace.path else "replay", off=off,
                                 addresses=prog.addresses)
        by_row = {m.wave: m for m in model.run()}
    return tgt, tm, prog, kept, by_row, n_measured, guesses, path_use(model.memory, model.valu,
                                                                    model.icache, model.coexec)


def replay_cycles(trace: Trace, target: str = "gfx950", memory: str = "model",
                  timing=None, barrier_groups: str = "workgroup", off: Iterable[str] = ()
                  ) -> list[tuple[int, int]]:
    """(measured, modeled) cycles of each traced wave: what a calibration scores, without
    the figures `replay_trace` adds up."""
    _tgt, _tm, _prog, kept, by_row, _n, _g, _p = _run(trace, target, memory, timing,
                                                      barrier_groups, off)
    return [(wave.duration, (by_row[k].end if k in by_row else wave.begin) - wave.begin)
            for k, (wave, _records) in enumerate(kept)]


def replay_trace(trace: Trace, target: str = "gfx950", memory: str = "model",
                 timing=None, name: str = "", barrier_groups: str = "workgroup",
                 off: Iterable[str] = ()) -> ReplayResult:
    """Replay every traced wave of `trace` through the timing model (`timing`: a
    target.timing.TimingModel, default the target's) and compare with the capture;
    `memory`: one of MEMORY_MODES (see the module docstring); `barrier_groups`: a barrier
    per inferred workgroup or per traced CU (BARRIER_GROUPS); `off`: mechanisms left out
    (timing.params.REPLAY_MECHANISMS: smem_miss, store_queue, valu_paths, icache, lds_ports,
    setprio, lane_patterns)."""
    tgt, tm, prog, kept, by_row, n_measured, guesses, paths = _run(
        trace, target, memory, timing, barrier_groups, off)
    patterns = None if "lane_patterns" in replay_off(off) else _pattern_use(
        prog, kept, [[prog.index_of_line[r.line] for r in records] for _w, records in kept],
        lane_patterns(trace, tgt.name, tm.memory["write_bytes"], tm.memory["line_bytes"],
                      tm.memory["vmem_bytes_per_cycle"]))
    comparisons, modeled_side, measured_side = [], [], []
    modeled_records, measured_records = {}, {}
    for k, (wave, records) in enumerate(kept):
        m = by_row.get(k)
        recs = [(t, c, s, d, prog.line_of_index[i - 1]) for t, c, s, d, i in m.records] \
            if m else []
        m_end = m.end if m else wave.begin
        comparisons.append(WaveComparison(wave.filename.removesuffix(".json"), wave.cu,
                                          wave.simd, wave.slot, len(records), wave.duration,
                                          m_end - wave.begin))
        modeled_side.append((wave.begin, m_end, recs))
        measured_side.append((wave.begin, wave.end,
                              [(r.time, r.category, r.stall, r.duration, r.line)
                               for r in records]))
        modeled_records[comparisons[-1].name] = recs
        measured_records[comparisons[-1].name] = measured_side[-1][2]
    kernels = trace.kernel_names()
    groups = [_barrier_group(g, comparisons, measured_side, modeled_side, prog.barrier_lines)
              for g in guesses]
    return ReplayResult(str(trace.path or name), kernels[0] if kernels else name, tgt.name,
                        memory, comparisons, _figures(measured_side, prog.classify),
                        _figures(modeled_side, prog.classify), prog.texts, n_measured,
                        tm.source or None, modeled_records, measured_records, barrier_groups,
                        groups, tuple(sorted(replay_off(off))), paths, patterns)


def _barrier_group(guess: WorkgroupGuess, comparisons: Sequence[WaveComparison],
                   measured: Sequence[tuple[int, int, Sequence]],
                   modeled: Sequence[tuple[int, int, Sequence]],
                   barrier_lines: set[int]) -> BarrierGroup:
    """A barrier group with its measured and modeled barrier stall (summed over waves)."""
    def stall(side: Sequence[tuple[int, int, Sequence]]) -> int:
        return sum(rec[2] for i in guess.waves for rec in side[i][2]
                   if rec[4] in barrier_lines)

    return BarrierGroup(guess.se, guess.cu, tuple(comparisons[i].name for i in guess.waves),
                        guess.evidence, stall(measured), stall(modeled))


def replay(path: str | Path, target: str = "gfx950", memory: str = "model",
           timing=None, params=None, barrier_groups: str = "workgroup",
           off: Iterable[str] = ()) -> ReplayResult:
    """Read the ATT capture folder at `path` and replay it (see `replay_trace`); `params`: a
    timing-model parameter file (path or target.timing.TimingParams) when `timing` is not
    given."""
    replay_off(off)  # (a bad name fails before the capture is read)
    if timing is None and params is not None:
        from asterism.target import get_target
        from asterism.target.timing import get_timing

        timing = get_timing(get_target(target).name, params)
    trace = read_att(path)
    return replay_trace(trace, target, memory, timing, name=Path(path).name,
                        barrier_groups=barrier_groups, off=off)


def plot_replay(result: ReplayResult, out_png: str | Path, waves: int = 4) -> Path:
    """Measured vs modeled timeline of the first `waves` waves (one row each side)."""
    from asterism.profile.pictures import require_matplotlib

    figure, canvas, patch = require_matplotlib()
    names = list(result.measured_records)[:waves]
    colors = {}
    palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
               "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#17becf", "#8c564b"]
    fig = figure(figsize=(12, 0.9 * 2 * max(1, len(names)) + 1.2))
    canvas(fig)
    ax = fig.add_subplot(1, 1, 1)
    y = 0
    ticks, labels = [], []
    for name in names:
        for side, recs in (("measured", result.measured_records[name]),
                           (MODEL_LABEL, result.modeled_records.get(name, []))):
            spans = [(t, max(d, 1)) for t, _c, _s, d, _l in recs]
            cats = [category_name(c) for _t, c, _s, _d, _l in recs]
            for cat in cats:
                colors.setdefault(cat, palette[len(colors) % len(palette)])
            ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=[colors[c] for c in cats])
            ticks.append(y)
            labels.append(f"{name} {side}")
            y += 1
    ax.set_yticks(ticks, labels)
    ax.invert_yaxis()  # each wave: measured above modeled
    ax.set_xlabel("cycles (shader clock)")
    ax.set_title(f"{result.kernel}: measured vs {MODEL_LABEL} timeline "
                 f"(memory: {result.memory})")
    ax.legend(handles=[patch(color=c, label=k) for k, c in colors.items()],
              loc="upper right", fontsize=7, ncol=4)
    fig.tight_layout()
    out = Path(out_png)
    fig.savefig(out, dpi=110)
    return out


__all__ = ["BARRIER_GROUPS", "MEMORY_MODES", "STALL_CLASSES", "BarrierGroup", "Figures",
           "PatternUse", "ReplayError", "ReplayResult", "WaveComparison", "lane_patterns",
           "measured_acceptance", "measured_latencies", "plot_replay", "replay",
           "replay_cycles", "replay_trace"]


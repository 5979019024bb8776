"""What a timed run produces: per-wave records in the ATT decoder's codes, the run's figures
(summary, JSON), and per instruction the LDS bank conflicts (`LdsCost`) and cache lines
(`LineCost`) the mechanisms charged. Modeled, not measured.

The instruction category and wave state codes are those of rocprofv3's ATT decoder (its
``inst_category_t`` and ``wstate_type_t``): facts of the trace format, kept here, below both
the model that records them and the trace reader/writer (asterism.profile.att) that reads
and writes them. Writing a result as an ATT folder is asterism.profile.att_export's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from asterism.timing.params import params_note

MODEL_NOTE = "modeled, not measured"


class InstCategory(IntEnum):
    """Instruction category codes of the wave records (decoder enum ``inst_category_t``)."""

    NONE = 0
    SMEM = 1  # scalar memory
    SALU = 2  # scalar ALU
    VMEM = 3  # vector memory (buffer/global/scratch)
    FLAT = 4  # flat: vector memory or LDS
    LDS = 5  # local data share
    VALU = 6  # vector ALU, MFMA included
    JUMP = 7  # branch taken
    NEXT = 8  # branch not taken
    IMMED = 9  # internal: s_waitcnt, s_nop, s_setprio...
    CONTEXT = 10  # wave context save/restore
    MESSAGE = 11  # s_sendmsg, s_endpgm
    BVH = 12  # ray tracing


class WaveState(IntEnum):
    """Wave state codes of the ``timeline`` (decoder enum ``wstate_type_t``).

    In the capture, an ``s_waitcnt`` that blocks shows as WAIT and an instruction whose issue
    is blocked (dependency, busy unit) as STALL; IDLE covers the gap before the first issue.
    """

    EMPTY = 0
    IDLE = 1
    EXEC = 2
    WAIT = 3
    STALL = 4


# The same codes as plain ints: the model's records hold ints (the hot loop compares them).
CAT_SMEM, CAT_SALU, CAT_VMEM = int(InstCategory.SMEM), int(InstCategory.SALU), \
    int(InstCategory.VMEM)
CAT_FLAT, CAT_LDS, CAT_VALU = int(InstCategory.FLAT), int(InstCategory.LDS), \
    int(InstCategory.VALU)
CAT_JUMP, CAT_NEXT = int(InstCategory.JUMP), int(InstCategory.NEXT)
CAT_IMMED, CAT_MESSAGE = int(InstCategory.IMMED), int(InstCategory.MESSAGE)
IDLE, EXEC, WAIT, STALL = (int(WaveState.IDLE), int(WaveState.EXEC), int(WaveState.WAIT),
                           int(WaveState.STALL))


@dataclass
class WaveTiming:
    """One modeled wave: where it ran, when, and its instruction records."""

    cu: int
    simd: int
    slot: int
    wv: int  # how many waves occupied this CU/SIMD/slot before it
    workgroup: tuple[int, int, int]
    wave: int  # index of the wave in its workgroup
    begin: int
    end: int
    # [time, category, stall, duration, line] as in the ATT wave files (line = index + 1)
    records: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    stall_states: list[int] = field(default_factory=list)  # WAIT or STALL per record
    barriers: int = 0  # s_barrier instructions it passed
    barrier_stall: int = 0  # cycles it waited in them

    @property
    def cycles(self) -> int:
        """Cycles from launch to end."""
        return self.end - self.begin

    @property
    def stall(self) -> int:
        """Cycles spent stalled (sum over the records)."""
        return sum(r[2] for r in self.records)

    def timeline(self) -> list[tuple[int, int]]:
        """[state, cycles] runs as in the ATT wave files (IDLE until the first attempt)."""
        spans: list[list[int]] = []

        def add(state: int, cycles: int) -> None:
            if cycles <= 0:
                return
            if spans and spans[-1][0] == state:
                spans[-1][1] += cycles
            else:
                spans.append([state, cycles])
        prev_end = None
        for rec, stall_state in zip(self.records, self.stall_states, strict=True):
            time, _cat, stall, duration, _line = rec
            if prev_end is None:
                add(IDLE, time - self.begin)
            else:
                add(EXEC, time - prev_end)
            add(stall_state, stall)
            add(EXEC, duration - stall)
            prev_end = time + duration
        return [(s, c) for s, c in spans]


@dataclass(frozen=True)
class LevelUse:
    """How the whole grid used one shared level of the memory system (HBM or L2), modeled:
    bytes moved, the rate that makes over the run, the chip's peak, how many accesses the
    modeled CUs' share of it delayed, and whether it bound the run."""

    name: str
    grid_bytes: int  # the whole grid (the modeled CUs' bytes, scaled)
    modeled_bytes: int  # moved by the modeled CUs
    achieved_gbps: float  # grid_bytes over the modeled run time
    peak_gbps: float
    accesses: int  # accesses of the modeled CUs that used the level
    delayed: int  # ... that completed later than their latency alone would have
    delay_cycles: int  # ... by this many cycles in all
    binds: bool

    @property
    def percent(self) -> float:
        """Achieved rate as a percentage of the peak."""
        return 100.0 * self.achieved_gbps / self.peak_gbps if self.peak_gbps else 0.0

    def to_json(self) -> dict[str, Any]:
        """The figures as plain data."""
        return {"grid_bytes": self.grid_bytes, "modeled_bytes": self.modeled_bytes,
                "achieved_gbps": round(self.achieved_gbps, 1), "peak_gbps": self.peak_gbps,
                "percent": round(self.percent, 1), "accesses": self.accesses,
                "delayed_accesses": self.delayed, "delay_cycles": self.delay_cycles,
                "binds": self.binds}


@dataclass(frozen=True)
class BandwidthUse:
    """The whole-grid bandwidth ceiling of a timed run (asterism.timing.bandwidth), modeled:
    the CUs the grid keeps busy, and the use of each shared level."""

    active_cus: int
    levels: tuple[LevelUse, ...]
    footprint: str  # how HBM bytes shared between CUs were counted

    @property
    def binds(self) -> bool:
        """True if a level bound the run."""
        return any(lv.binds for lv in self.levels)

    def line(self) -> str:
        """One summary line: each level's rate against its peak, and the verdict."""
        parts = [f"{lv.name} {lv.achieved_gbps:,.0f} GB/s of {lv.peak_gbps:,.0f} "
                 f"({lv.percent:.1f} %)" for lv in self.levels]
        bound = [lv.name for lv in self.levels if lv.binds]
        verdict = f"{' and '.join(bound)} binds" if bound else "does not bind"
        return (f"bandwidth ({MODEL_NOTE}; whole grid, {self.active_cus} CUs active): "
                f"{', '.join(parts)}: {verdict}")

    def to_json(self) -> dict[str, Any]:
        """The figures as plain data."""
        return {"note": MODEL_NOTE, "active_cus": self.active_cus, "binds": self.binds,
                "footprint": self.footprint,
                **{lv.name: lv.to_json() for lv in self.levels}}


@dataclass
class LdsCost:
    """LDS bank conflicts of one instruction over the modeled waves (asterism/timing/lds.py)."""

    executions: int = 0  # executions with an active lane accessing LDS
    conflict_cycles: int = 0  # sum of conflict_cycles * (busiest bank's addresses - 1) per phase
    added_cycles: int = 0  # cycles the banks added to the LDS time beyond the bandwidth cost

    @property
    def per_execution(self) -> float:
        """Conflict cycles per execution."""
        return self.conflict_cycles / self.executions if self.executions else 0.0


@dataclass
class LineCost:
    """Cache lines of one vector memory instruction over the modeled waves (memory.py)."""

    executions: int = 0
    lines: int = 0  # distinct 128-byte lines its active lanes touched, summed over executions
    added_cycles: int = 0  # cycles the line lookups added beyond the bytes rule

    @property
    def mean_lines(self) -> float:
        """Lines per execution."""
        return self.lines / self.executions if self.executions else 0.0


@dataclass
class PathUse:
    """What the scalar-cache miss (memory.py), the store write-out queue (stores.py), the
    VALU result paths (valu.py), the instruction cache (icache.py) and the MFMA's hold on
    packed VALU instructions (mfma.py) did in one run, over the modeled waves. Modeled."""

    scalar_misses: int = 0  # scalar loads that paid memory.smem_miss
    scalar_miss_cycles: int = 0  # ... that latency, summed
    stores: int = 0  # vector stores through the write-out queue
    store_cycles: int = 0  # their write requests' cycles (one 64-byte request per clock)
    store_queued: int = 0  # cycles they waited for the stores ahead of them on their CU
    valu_waits: int = 0  # instructions a VALU result path held past their other limits
    valu_wait_cycles: int = 0  # ... by that many cycles, summed
    icache_misses: int = 0  # instruction lines a taken branch had to fetch (icache.py)
    icache_wait_cycles: int = 0  # cycles waves waited for them beyond dispatch.taken_branch
    packed_waits: int = 0  # packed-FP32 / DOT VALU instructions an MFMA held (mfma.py)
    packed_wait_cycles: int = 0  # ... past their other limits, summed
    mfma_memory_waits: int = 0  # DS / vector memory instructions an MFMA held (mfma.py)
    mfma_memory_wait_cycles: int = 0  # ... past their other limits, summed

    def lines(self) -> list[str]:
        """The summary's lines (empty when nothing happened)."""
        out = []
        if self.scalar_misses:
            out.append(f"  scalar-cache misses ({MODEL_NOTE}): {self.scalar_misses} scalar "
                       f"loads of a line not read before, {self.scalar_miss_cycles} cycles "
                       "of latency (memory.smem_miss)")
        if self.stores:
            out.append(f"  store write-out ({MODEL_NOTE}): {self.stores} stores, "
                       f"{self.store_cycles} cycles of 64-byte write requests, "
                       f"{self.store_queued} cycles queued behind earlier stores")
        if self.valu_waits:
            out.append(f"  VALU result paths ({MODEL_NOTE}): {self.valu_waits} instructions "
                       f"waited {self.valu_wait_cycles} cycles for a VALU result on a path "
                       "other than the VALU's bypass (DS / vector memory after a VALU, SGPRs "
                       "a VALU wrote)")
        if self.icache_misses:
            out.append(f"  instruction-cache misses ({MODEL_NOTE}): {self.icache_misses} "
                       "taken branches to code not fetched yet in the dispatch, waves waited "
                       f"{self.icache_wait_cycles} cycles beyond the taken branch's "
                       "(dispatch.icache_miss)")
        if self.packed_waits:
            out.append(f"  packed VALU after MFMA ({MODEL_NOTE}): {self.packed_waits} "
                       "packed-FP32 / DOT instructions waited "
                       f"{self.packed_wait_cycles} cycles for their SIMD's MFMA (its passes "
                       "+ mfma.packed_extra, + mfma.packed_xdl2x after a 16-byte source)")
        if self.mfma_memory_waits:
            out.append(f"  memory after MFMA ({MODEL_NOTE}): {self.mfma_memory_waits} DS / "
                       f"vector memory instructions waited {self.mfma_memory_wait_cycles} "
                       "cycles for their SIMD's MFMA (mfma.valu_hold, as its VALU)")
        return out

    def to_json(self) -> dict[str, int]:
        """The counts as plain data."""
        return dict(self.__dict__)


TOP_INSTRUCTIONS = 5  # instructions the summary lists per mechanism


@dataclass
class TimingResult:
    """A timed dispatch: the modeled waves and the parameters used. Modeled, not measured."""

    target: str
    kernel: str
    compute_units: int
    modeled_cus: int
    workgroups: int  # in the grid
    modeled_workgroups: int
    waves: list[WaveTiming]
    code: list[tuple[int, str]]  # (address, disassembly) per instruction index
    parameters: dict[str, Any]
    clock_mhz: int
    # per instruction index: LDS bank conflicts (DS instructions, LDS DMA) and cache lines
    # (vector memory instructions) over the modeled waves; empty in a trace replay
    lds_costs: dict[int, LdsCost] = field(default_factory=dict)
    line_costs: dict[int, LineCost] = field(default_factory=dict)
    bandwidth: BandwidthUse | None = None  # None: the ceiling was not modeled
    paths: PathUse | None = None  # scalar misses, store write-out, VALU result paths
    # CU 0's SIMD-pair LDS ports: port -> cycles DS instructions held it (lds.py); empty when
    # the ports are off or no DS instruction ran
    lds_ports: dict[str, int] = field(default_factory=dict)
    raised_priority: int = 0  # modeled waves that raised their priority (s_setprio > 0)

    @property
    def cycles(self) -> int:
        """Cycles from the first modeled wave's launch to the last one's end."""
        if not self.waves:
            return 0
        return max(w.end for w in self.waves) - min(w.begin for w in self.waves)

    def summary(self) -> str:
        """Human-readable figures (says they are modeled)."""
        us = self.cycles / self.clock_mhz
        cus = "CU 0" if self.modeled_cus == 1 else f"CUs 0-{self.modeled_cus - 1}"
        lines = [
            f"timing model ({MODEL_NOTE}): {self.kernel} on {self.target}",
            f"  modeled in detail: {cus} of {self.compute_units}, "
            f"{self.modeled_workgroups} of {self.workgroups} workgroups, {len(self.waves)} "
            f"waves; the other workgroups ran functionally (untimed)",
            f"  kernel: {self.cycles} cycles on the modeled CU(s) (= {us:.3f} us at "
            f"{self.clock_mhz} MHz)",
            *([f"  {note}"] if (note := params_note(self.parameters.get("params_file")))
              else []),
            "  wave  workgroup    cu simd slot   begin     end  cycles  insts   stall",
        ]
        for i, w in enumerate(self.waves):
            wg = ",".join(str(x) for x in w.workgroup)
            lines.append(f"  {i:4d}  {wg + ':' + str(w.wave):<11s} {w.cu:3d} {w.simd:4d} "
                         f"{w.slot:4d} {w.begin:7d} {w.end:7d} {w.cycles:7d} "
                         f"{len(w.records):6d} {w.stall:7d}")
        lines += self.mechanism_lines()
        lines += self.port_priority_lines()
        lines += self._barrier_lines()
        if self.bandwidth is not None:
            lines.append("  " + self.bandwidth.line())
        return "\n".join(lines) + "\n"

    def port_priority_lines(self) -> list[str]:
        """The summary's lines on the SIMD-pair LDS ports and s_setprio (modeled)."""
        out: list[str] = []
        if self.lds_ports:
            busy = ", ".join(f"{k.removeprefix('lds_')} {v} "
                             f"({100 * v / max(self.cycles, 1):.1f} %)"
                             for k, v in sorted(self.lds_ports.items()))
            out.append(f"  LDS SIMD-pair ports ({MODEL_NOTE}): CU 0's DS instructions held them "
                       f"{busy} of the {self.cycles} cycles")
        if self.raised_priority:
            out.append(f"  wave priority ({MODEL_NOTE}): {self.raised_priority} of "
                       f"{len(self.waves)} waves raised theirs with s_setprio (they issue "
                       "before older waves of their SIMD)")
        return out

    def mechanism_lines(self, top: int = TOP_INSTRUCTIONS) -> list[str]:
        """The summary's lines on LDS bank conflicts and cache lines (totals and the `top`
        instructions of each), scalar misses, store write-out and VALU result paths
        (modeled)."""
        out: list[str] = list(self.paths.lines()) if self.paths else []
        if self.lds_costs:
            total = sum(c.conflict_cycles for c in self.lds_costs.values())
            execs = sum(c.executions for c in self.lds_costs.values())
            out.append(f"  LDS bank conflicts ({MODEL_NOTE}): {total} conflict cycles in {execs} "
                       f"executions of {len(self.lds_costs)} instructions accessing LDS")
            worst = sorted(((i, c) for i, c in self.lds_costs.items() if c.conflict_cycles),
                           key=lambda ic: (-ic[1].conflict_cycles, ic[0]))[:top]
            if worst:
                out.append("      pc      execs  conflict cycles  per exec  added  instruction")
                for i, c in worst:
                    out.append(f"    {self._pc(i):>8s} {c.executions:6d} {c.conflict_cycles:16d} "
                               f"{c.per_execution:9.1f} {c.added_cycles:6d}  {self._text(i)}")
        if self.line_costs:
            lines = sum(c.lines for c in self.line_costs.values())
            execs = sum(c.executions for c in self.line_costs.values())
            mean = lines / execs if execs else 0.0
            size = self.parameters.get("memory", {}).get("line_bytes", "?")
            out.append(f"  cache lines ({MODEL_NOTE}): {mean:.1f} lines of {size} B per vector "
                       f"memory instruction ({execs} executions of {len(self.line_costs)} "
                       "instructions); most lines per execution:")
            out.append("      pc      execs  lines/exec  added  instruction")
            most = sorted(self.line_costs.items(),
                          key=lambda ic: (-ic[1].mean_lines, -ic[1].lines, ic[0]))[:top]
            for i, c in most:
                out.append(f"    {self._pc(i):>8s} {c.executions:6d} {c.mean_lines:11.1f} "
                           f"{c.added_cycles:6d}  {self._text(i)}")
        return out

    def _pc(self, index: int) -> str:
        return f"{self.code[index][0]:#x}" if 0 <= index < len(self.code) else "?"

    def _text(self, index: int) -> str:
        return self.code[index][1] if 0 <= index < len(self.code) else ""

    def instructions_json(self) -> dict[str, list[dict[str, Any]]]:
        """Per-instruction LDS bank conflicts and cache lines as plain data, by address."""
        def where(i: int) -> dict[str, Any]:
            return {"index": i, "pc": self.code[i][0] if 0 <= i < len(self.code) else None,
                    "instruction": self._text(i)}
        return {
            "lds_conflicts": [{**where(i), "executions": c.executions,
                               "conflict_cycles": c.conflict_cycles,
                               "conflict_cycles_per_execution": round(c.per_execution, 3),
                               "added_cycles": c.added_cycles}
                              for i, c in sorted(self.lds_costs.items())],
            "cache_lines": [{**where(i), "executions": c.executions, "lines": c.lines,
                             "mean_lines": round(c.mean_lines, 3),
                             "added_cycles": c.added_cycles}
                            for i, c in sorted(self.line_costs.items())]}

    def barrier_groups(self) -> list[dict[str, Any]]:
        """Per workgroup (one barrier each), by CU: its waves, the barriers they passed and
        the cycles they waited in them (modeled)."""
        groups: dict[tuple[int, tuple[int, int, int]], dict[str, Any]] = {}
        for w in self.waves:
            g = groups.setdefault((w.cu, w.workgroup), {
                "cu": w.cu, "workgroup": list(w.workgroup), "waves": 0, "barriers": 0,
                "barrier_stall": 0, "cycles": 0})
            g["waves"] += 1
            g["barriers"] = max(g["barriers"], w.barriers)
            g["barrier_stall"] += w.barrier_stall
            g["cycles"] += w.cycles
        return [groups[k] for k in sorted(groups)]

    def _barrier_lines(self) -> list[str]:
        """The summary's barrier section (only when a barrier was executed)."""
        groups = self.barrier_groups()
        if not any(g["barriers"] for g in groups):
            return []
        per_cu: dict[int, int] = {}
        for g in groups:
            per_cu[g["cu"]] = per_cu.get(g["cu"], 0) + 1
        cus = ", ".join(f"CU {cu}: {n}" for cu, n in sorted(per_cu.items()))
        rule = ("one per CU (wg_barriers off: every wave resident on the CU waits for the "
                "others)" if "wg_barriers" in self.parameters.get("off", ()) else
                "one per workgroup, released when its last running wave arrives")
        out = [f"  barriers ({MODEL_NOTE}): {rule}; workgroups per CU: {cus}",
               "    workgroup     cu  waves  barriers  barrier stall  (of its wave-cycles)"]
        for g in groups:
            wg = ",".join(str(x) for x in g["workgroup"])
            share = 100.0 * g["barrier_stall"] / max(1, g["cycles"])
            out.append(f"    {wg:<12s} {g['cu']:3d} {g['waves']:6d} {g['barriers']:9d} "
                       f"{g['barrier_stall']:14d}  ({share:.1f} %)")
        return out

    def to_json(self) -> dict[str, Any]:
        """The figures as plain data (with the model's note)."""
        return {"note": MODEL_NOTE, "target": self.target, "kernel": self.kernel,
                "cycles": self.cycles, "compute_units": self.compute_units,
                "modeled_cus": self.modeled_cus, "workgroups": self.workgroups,
                "modeled_workgroups": self.modeled_workgroups,
                "waves": [{"cu": w.cu, "simd": w.simd, "slot": w.slot,
                           "workgroup": list(w.workgroup), "wave": w.wave, "begin": w.begin,
                           "end": w.end, "cycles": w.cycles, "instructions": len(w.records),
                           "stall": w.stall, "barrier_stall": w.barrier_stall}
                          for w in self.waves],
                "barrier_groups": self.barrier_groups(),
                "bandwidth": self.bandwidth.to_json() if self.bandwidth else None,
                "paths": self.paths.to_json() if self.paths else None,
                "lds_ports": dict(self.lds_ports), "raised_priority": self.raised_priority,
                "parameters": self.parameters, **self.instructions_json()}


__all__ = ["CAT_FLAT", "CAT_IMMED", "CAT_JUMP", "CAT_LDS", "CAT_MESSAGE", "CAT_NEXT",
           "CAT_SALU", "CAT_SMEM", "CAT_VALU", "CAT_VMEM", "EXEC", "IDLE", "MODEL_NOTE",
           "STALL", "TOP_INSTRUCTIONS", "WAIT", "BandwidthUse", "InstCategory", "LdsCost",
           "LevelUse", "LineCost", "PathUse", "TimingResult", "WaveState", "WaveTiming"]

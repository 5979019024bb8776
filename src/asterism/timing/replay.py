"""The trace-driven driver: the timing model driven by a capture's recorded instruction
streams instead of functional execution (no register values, no addresses, no kernel
arguments needed). asterism.profile.replay builds the streams from an ATT capture and
compares the model's records with the measured ones.

Each wave starts at its measured begin, on the SIMD and slot it ran on, and issues the same
instructions in the same order; the traced waves of one CU share its units, and the waves of
one workgroup (as the caller says: asterism.profile.workgroups infers them from a capture)
share a barrier. Memory completes after the model's latency for its kind or, for stream
positions with a measured latency, after that (memory.StreamMemory). A capture has no
addresses: DS instructions cost their LDS bandwidth without bank conflicts (lds.Lds without
accesses) and vector memory its bytes rule without cache lines, as before those mechanisms
were modeled, except where the lanes' address pattern follows from the code (lanes.py, given
per wave as `StreamWave.blocks`): a store then pays its 64-byte write requests, a load its
line lookups; nor is the whole-grid bandwidth ceiling modeled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asterism.emu.core import END
from asterism.target.timing import TimingModel
from asterism.timing.barriers import Barriers
from asterism.timing.dispatch import Dispatcher
from asterism.timing.icache import InstructionCache
from asterism.timing.issue import IssueModel
from asterism.timing.lds import Lds
from asterism.timing.memory import StreamMemory, scalar_line_keys
from asterism.timing.mfma import CoExec
from asterism.timing.result import WaveTiming
from asterism.timing.state import Cu, ModelWave
from asterism.timing.static import Static
from asterism.timing.valu import ValuPaths


@dataclass
class StreamWave:
    """One wave to replay: where it ran, when it started, the instructions it executed.

    `stream` lists instruction indices (into the model's statics) in execution order;
    `latency` optionally maps a position of the stream to the measured cycles from that
    memory instruction's issue to its completion, and `accept` a vector memory
    instruction's position to its measured issue stall: how long the memory path took to
    accept it (`--memory measured`). `workgroup` names the wave's workgroup on its CU: waves
    with the same cu and workgroup share a barrier (None: all the CU's traced waves do).
    """

    cu: int  # waves with the same cu share its units
    simd: int
    slot: int
    begin: int
    stream: list[int]
    latency: Mapping[int, int] | None = None
    accept: Mapping[int, int] | None = None  # position -> measured issue stall (vector memory)
    workgroup: int | None = None
    icache: int | None = None  # waves with the same icache share an instruction cache (None: cu)
    # position -> 64-byte blocks a store / 128-byte lines a load touches, where the lanes'
    # address pattern follows from the code (timing/lanes.py; None: not derived)
    blocks: Mapping[int, int] | None = None


class TraceDrivenModel(IssueModel):
    """The timing model driven by recorded instruction streams (see the module docstring);
    `fallthrough[i]`: the index after instruction i (a branch to anywhere else is taken);
    `off`: mechanisms left out (timing.params.REPLAY_MECHANISMS); `addresses`: each
    instruction's address (the instruction cache's lines; default 4 bytes each)."""

    def __init__(self, target: Any, tm: TimingModel, statics: list[Static],
                 fallthrough: list[int], waves: list[StreamWave], kernel: str = "",
                 off: frozenset[str] = frozenset(), addresses: list[int] | None = None):
        self.target = target
        self.tm = tm
        self.statics = statics
        self.fallthrough = fallthrough
        self.inputs = waves
        self.kernel = kernel
        lines = [scalar_line_keys(sw.stream, statics, sw.cu, tm.memory["line_bytes"])
                 for sw in waves]
        self.memory = StreamMemory(tm, [sw.latency for sw in waves],
                                   [sw.accept for sw in waves], lines, off=off,
                                   blocks=[sw.blocks for sw in waves])
        self.lds = Lds(tm, ports="lds_ports" not in off)
        self.priorities = "setprio" not in off
        self.valu = ValuPaths(statics, tm, on="valu_paths" not in off)
        self.coexec = CoExec(packed="packed_valu" not in off, memory="mfma_memory" not in off)
        self.icache = InstructionCache(tm, addresses if addresses is not None else
                                       [4 * i for i in range(len(statics))],
                                       {sw.stream[0] for sw in waves if sw.stream},
                                       on="icache" not in off)

    def run(self) -> list[WaveTiming]:
        """Replay every wave together (same CU: shared units; same workgroup: barriers)."""
        t = self.target
        cus: dict[int, Cu] = {}
        waves: list[ModelWave] = []
        groups: dict[tuple[int, int | None], int] = {}  # (cu, workgroup) -> barrier group
        for k, sw in enumerate(self.inputs):
            if not sw.stream:
                continue
            cu = cus.setdefault(sw.cu, Cu(sw.cu, t.simds_per_cu, t.max_waves_per_simd))
            group = groups.setdefault((sw.cu, sw.workgroup), len(groups))
            w = ModelWave(k, None, group, order=k, cu=sw.cu, simd=sw.simd % t.simds_per_cu,
                          slot=sw.slot % t.max_waves_per_simd, begin=sw.begin,
                          ready=sw.begin + self.tm.dispatch["wave_start"], idx=sw.stream[0],
                          state="run", stream=sw.stream,
                          icache=sw.cu if sw.icache is None else sw.icache)
            cu.slots[w.simd][w.slot] = w
            cu.resident[w.simd].append(w)
            waves.append(w)
        for cu in cus.values():
            for resident in cu.resident:
                resident.sort(key=lambda w: (w.begin, w.order))
            cu.workgroups = sum(1 for c, _ in groups if c == cu.index)
        alive = {g: sum(1 for w in waves if w.wg == g) for g in groups.values()}
        self.running = dict(alive)
        self.barriers = Barriers(self.tm, self.running)
        self.dispatch = Dispatcher(alive)
        self._loop(list(cus.values()), waves)
        return [WaveTiming(w.cu, w.simd, w.slot, 0, (w.wg, 0, 0), w.row, w.begin, w.end,
                           w.records, w.stall_states, w.barriers, w.barrier_stall)
                for w in waves]

    def _advance(self, w: ModelWave) -> int:
        w.pos += 1
        if w.pos < len(w.stream):
            w.idx = w.stream[w.pos]
            return w.idx
        w.idx = len(self.statics)
        return END

    def _past_end(self, w: ModelWave, now: int) -> None:
        # A stream that stops without s_endpgm (a truncated capture): the wave ends here.
        self._end(w, now)

    def _taken(self, w: ModelWave, index: int, nxt: int) -> bool:
        return nxt != self.fallthrough[index]

    def _before_issue(self, w: ModelWave) -> None:
        w.issue_pos = w.pos


__all__ = ["StreamWave", "TraceDrivenModel"]

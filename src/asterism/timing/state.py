"""The model's run state: one modeled wave (`ModelWave`) and one CU (`Cu`), plain data that
the engine (issue.py) and the mechanisms read and update, and the issue-cycle grid."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

NEVER = 1 << 62  # a time that never comes


def round_up(t: int, q: int) -> int:
    """`t` rounded up to a multiple of `q` (the next issue-cycle boundary)."""
    return -(-t // q) * q


@dataclass(eq=False)
class ModelWave:
    """One modeled wave: its place, its clock, and what each mechanism keeps of it."""

    row: int  # wave index in the dispatch batch (trace-driven: in the replay)
    group: Any  # the emulator's emu.core.Group of this one wave (None when trace-driven)
    wg: int  # barrier group: its workgroup (the slot in the batch; replay: as inferred)
    order: int = 0  # launch order: lower = older = higher issue priority
    prio: int = 0  # priority.py: user priority set by s_setprio (0 lowest .. 3 highest)
    prio_max: int = 0  # ... the highest it set (the report counts waves that raised theirs)
    cu: int = 0
    simd: int = 0
    slot: int = 0
    wv: int = 0
    begin: int = 0
    ready: int = 0  # when the next instruction may first be tried
    idx: int = 0
    state: str = "wait"  # wait (not launched), run, barrier, done
    regs: dict[int, tuple[int, int]] = field(default_factory=dict)  # key -> ready, srcc ready
    # issue.py: the register dependency time of the instruction at `idx`, cached against
    # (idx, regs_version): waves wait many steps at one instruction and regs change only
    # when the wave issues (regs_version counts those writes)
    regs_version: int = 0
    deps_key: tuple[int, int] = (-1, -1)
    deps_t: int = 0
    vm: list[int] = field(default_factory=list)  # memory.py: completion times of vmcnt entries
    lgkm: list[int] = field(default_factory=list)  # ... and of lgkmcnt entries
    last_in_order: dict[str, int] = field(default_factory=dict)  # memory.py
    xdl_done: int = 0  # mfma.py: when the last MFMA result is written
    arrive: int = 0  # barriers.py: when the wave reached its s_barrier
    barrier_index: int = 0
    barriers: int = 0  # barriers.py: s_barrier instructions passed ...
    barrier_stall: int = 0  # ... and the cycles spent in them
    end: int = 0
    steps: int = 0
    released: bool = False
    records: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    stall_states: list[int] = field(default_factory=list)
    stream: list[int] = field(default_factory=list)  # trace-driven: instruction indices
    pos: int = 0  # trace-driven: position of the current instruction in `stream`
    issue_pos: int = 0  # trace-driven: position of the instruction issuing now
    icache: int = -1  # icache.py: the instruction-cache group (-1: the CU's pair, cu // 2)
    fetch_line: int = -1  # icache.py: the instruction line the wave last issued from


@dataclass(eq=False)
class Cu:
    """One modeled CU: its wave slots, resident waves and shared execution units."""

    index: int
    simds: int
    slots_per_simd: int
    queue: deque = field(default_factory=deque)  # workgroups (lists of ModelWave) to admit
    units: dict[str, int] = field(default_factory=dict)  # lds, vmem: free at
    simd_units: list[dict[str, int]] = field(default_factory=list)
    slots: list[list[ModelWave | None]] = field(default_factory=list)
    resident: list[list[ModelWave]] = field(default_factory=list)  # per SIMD, oldest first
    next_simd: int = 0
    last_launch: int = -(1 << 30)
    workgroups: int = 0
    lds_used: int = 0
    occupants: dict[tuple[int, int], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.simd_units = [{} for _ in range(self.simds)]
        self.slots = [[None] * self.slots_per_simd for _ in range(self.simds)]
        self.resident = [[] for _ in range(self.simds)]


__all__ = ["NEVER", "Cu", "ModelWave", "round_up"]

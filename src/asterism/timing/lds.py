"""What an LDS instruction costs: the CU's LDS is busy max(``occupancy``, bytes /
``lds.bytes_per_cycle``) cycles per wave instruction (a wave64 moves 64 lanes * 4 bytes per
dword), and its lgkmcnt entry completes ``memory.lds`` cycles after issue, in order.

Not modeled yet: bank conflicts (the lanes' addresses), the per-SIMD-pair ports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asterism.isa import Instruction
from asterism.target.timing import TimingModel
from asterism.timing.state import ModelWave

if TYPE_CHECKING:
    from asterism.timing.static import Static


def busy_cycles(isa: Instruction, data_dwords: int, tm: TimingModel) -> int:
    """Cycles a DS instruction moving `data_dwords` per lane keeps the CU's LDS busy."""
    return tm.occupancy_of(isa, data_dwords)


def latency(tm: TimingModel) -> int:
    """Cycles from a DS instruction's issue until its lgkmcnt entry completes."""
    return tm.memory["lds"]


class Lds:
    """The CU's LDS as the engine sees it: what one wave's DS instruction costs at issue."""

    def __init__(self, tm: TimingModel) -> None:
        self.tm = tm

    def cost(self, w: ModelWave, st: Static, now: int) -> int:
        """Cycles the instruction keeps the CU's LDS busy (today its static cost)."""
        return st.occupancy


__all__ = ["Lds", "busy_cycles", "latency"]

"""What an LDS instruction costs: the CU's LDS is busy max(``occupancy``, bytes /
``lds.bytes_per_cycle``) cycles per wave instruction (a wave64 moves 64 lanes * 4 bytes per
dword), and its lgkmcnt entry completes ``memory.lds`` cycles after issue, in order.

Not modeled yet: bank conflicts (the addresses of the lanes), the per-SIMD-pair ports.
"""

from __future__ import annotations

from asterism.isa import Instruction
from asterism.target.timing import TimingModel


def busy_cycles(isa: Instruction, data_dwords: int, tm: TimingModel) -> int:
    """Cycles a DS instruction moving `data_dwords` per lane keeps the CU's LDS busy."""
    return tm.occupancy_of(isa, data_dwords)


def latency(tm: TimingModel) -> int:
    """Cycles from a DS instruction's issue until its lgkmcnt entry completes."""
    return tm.memory["lds"]


__all__ = ["busy_cycles", "latency"]

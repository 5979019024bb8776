"""Wave priority (s_setprio) in the issue arbitration. Modeled, not measured.

The ISA's rule (AMD GCN3 / Vega / CDNA ISA guides, S_SETPRIO: "User settable wave priority is
set to SIMM16[1:0]. 0 = lowest, 3 = highest. The overall wave priority is {SPIPrio[1:0] +
UserPrio[1:0], WaveAge[3:0]}"): among the waves of a SIMD that can issue to one port in an
issue cycle, the one with the higher user priority goes first, and age (launch order) breaks
ties. The system priority (SPIPrio) is the dispatcher's and equal for the waves of one
kernel here, so it does not change the order. Without s_setprio every wave has priority 0
and the order is by age alone, as before. TimingOptions.off "setprio" ignores s_setprio.
"""

from __future__ import annotations

from collections.abc import Sequence

from asterism.timing.state import ModelWave

# s_setprio's field: SIMM16[1:0]
PRIORITY_MASK = 0x3


def priority_of(simm16: int) -> int:
    """The user priority s_setprio `simm16` sets (0 lowest .. 3 highest)."""
    return simm16 & PRIORITY_MASK


def issue_order(waves: Sequence[ModelWave]) -> list[ModelWave]:
    """The SIMD's waves in arbitration order: higher priority first, then older first
    (`waves` is oldest first; the sort is stable)."""
    if all(w.prio == 0 for w in waves):
        return list(waves)
    return sorted(waves, key=lambda w: -w.prio)


__all__ = ["PRIORITY_MASK", "issue_order", "priority_of"]

"""The MFMA pipe: how long an MFMA keeps its SIMD's matrix core (xdl) busy, when its result
may be read, and when the last one in flight is written (s_endpgm waits for it).

An MFMA of P passes keeps the matrix core busy P * ``mfma.cycles_per_pass`` cycles
(v_mfma_f32_16x16x16_f16: 4 passes = 16 cycles); a dependent MFMA reading the result as its
SrcC (the same accumulator registers) may issue ``mfma.dependent_extra`` cycles after that,
any other reader ``mfma.result_extra`` cycles after (target/data/timing.toml). Its SIMD's
VALU takes no other instruction until ``mfma.valu_hold`` cycles after the MFMA's issue (the
engine marks the VALU busy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asterism.emu.info import OpInfo, operand_keys
from asterism.isa import Instruction
from asterism.target.hazards import mfma_passes
from asterism.target.timing import TimingModel
from asterism.timing.state import ModelWave

if TYPE_CHECKING:
    from asterism.timing.static import Static


def busy_cycles(info: OpInfo, isa: Instruction, tm: TimingModel) -> int:
    """Cycles the MFMA keeps the matrix core busy (its passes, from its shape and types)."""
    return (mfma_passes(info.mnemonic, isa.passes, info.mods) or 1) * tm.mfma.cycles_per_pass


def srcc_keys(info: OpInfo) -> tuple[int, ...]:
    """Register keys of the MFMA's SrcC (accumulator input), read with forwarding."""
    return tuple(sorted(operand_keys(info.op("src2")))) if info.has("src2") else ()


def result_ready(busy: int, tm: TimingModel) -> int:
    """Cycles from issue until a reader other than a dependent MFMA's SrcC may issue."""
    return busy + tm.mfma.result_extra


def srcc_ready(busy: int, tm: TimingModel) -> int:
    """Cycles from issue until a dependent MFMA may read the result as its SrcC."""
    return busy + tm.mfma.dependent_extra


def issued(w: ModelWave, st: Static, now: int) -> None:
    """An MFMA issued at `now`: its result is written st.xdl_result cycles later."""
    if now + st.xdl_result > w.xdl_done:
        w.xdl_done = now + st.xdl_result


def drained(w: ModelWave) -> int:
    """When the wave's last MFMA result is written (0 if it ran none)."""
    return w.xdl_done


__all__ = ["busy_cycles", "drained", "issued", "result_ready", "srcc_keys", "srcc_ready"]

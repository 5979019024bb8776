"""The MFMA pipe: how long an MFMA keeps its SIMD's matrix core (xdl) busy, when its result
may be read, and when the last one in flight is written (s_endpgm waits for it).

An MFMA of P passes keeps the matrix core busy P * ``mfma.cycles_per_pass`` cycles
(v_mfma_f32_16x16x16_f16: 4 passes = 16 cycles); a dependent MFMA reading the result as its
SrcC (the same accumulator registers) may issue ``mfma.dependent_extra`` cycles after that,
any other reader ``mfma.result_extra`` cycles after (target/data/timing.toml). Its SIMD's
VALU takes no other instruction until ``mfma.valu_hold`` cycles after the MFMA's issue (the
engine marks the VALU busy).

Packed-FP32 and DOT VALU instructions (`v_pk_{add,fma,mul}_f32`, `v_pk_mov_b32`, `v_dot*`)
wait longer: [llvm-pr] llvm/llvm-project PR #233721 (getPackedVALUIssueCycle; rules fitted to
ATT traces of MI308X and MI350X for every MFMA family) says they issue NumPasses + 2 issue
cycles after the MFMA's issue, one more after an XDL MFMA whose A or B source is 16 bytes or
more ("XDL2x"); packed 16-bit VALU issues like any other VALU. Here: busy +
``mfma.packed_extra`` (+ ``mfma.packed_xdl2x``) cycles after the issue, for every wave of
the SIMD (the engine keeps it per SIMD, as valu_hold). The MI350X captures agree instruction
by instruction: flash_attn_func_small's v_pk_mul/add_f32 tried 28-36 cycles after a
v_mfma_f32_32x32x16_bf16 (8 passes, 16-byte sources) all issue at 44 (351 of them), those
tried at 48 or later do not stall (440); pa_mqa_logits_fp4_small's after a scaled 4-pass
16x16x128 MFMA at 32 (the 28 of the rule plus the scaled MFMA's own late start).
``TimingOptions.off`` "packed_valu" (`trace replay --timing-off packed_valu`) leaves it out.

DS and vector memory instructions of the SIMD are held as its VALU ones, until
``mfma.valu_hold`` after the MFMA's issue ([att] flash_attn_func_small: all 444 DS
instructions tried 4 cycles after a v_mfma_f32_32x32x16_bf16 issue at 8, as the VALU ones;
its SALU and branches tried at 4 issue at 4; [llvm-pr2] llvm/llvm-project PR #239095: LLVM's
gfx950 co-execution table (getMFMACoExecInfo) names the cycle after an MFMA from which DS,
VMEM and VALU may issue, SALU apart). ``TimingOptions.off`` "mfma_memory" leaves it out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asterism.emu.info import OpInfo, operand_keys
from asterism.isa import Instruction
from asterism.isa.facts import packed_f32_or_dot
from asterism.target.hazards import mfma_kind, mfma_passes
from asterism.target.timing import TimingModel
from asterism.timing.state import ModelWave

if TYPE_CHECKING:
    from asterism.timing.static import Static


def busy_cycles(info: OpInfo, isa: Instruction, tm: TimingModel) -> int:
    """Cycles the MFMA keeps the matrix core busy (its passes, from its shape and types)."""
    return (mfma_passes(info.mnemonic, isa.passes, info.mods) or 1) * tm.mfma.cycles_per_pass


def is_packed(isa: Instruction) -> bool:
    """A packed-FP32 or DOT VALU instruction: [llvm-pr] an MFMA holds it until its passes
    end plus two issue cycles (see above); which ones the ISA database says."""
    return packed_f32_or_dot(isa)


def source_bytes(info: OpInfo) -> int:
    """Bytes per lane of the MFMA's widest A / B source (its registers x 4)."""
    widest = 0
    for name in ("src0", "src1"):
        if info.has(name):
            widest = max(widest, 4 * len(operand_keys(info.op(name))))
    return widest


def packed_hold(info: OpInfo, busy: int, tm: TimingModel) -> int:
    """Cycles from the MFMA's issue until its SIMD takes a packed-FP32 or DOT VALU
    instruction: its passes, mfma.packed_extra, and mfma.packed_xdl2x more after an XDL
    MFMA with a 16-byte (or wider) source ([llvm-pr], see the module docstring)."""
    wide = mfma_kind(info.mnemonic) == "xdl" and source_bytes(info) >= 16
    return tm.mfma.packed_hold(0, wide) + busy


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


MEMORY_UNITS = ("lds", "vmem")  # the units whose instructions an MFMA holds as a VALU


class CoExec:
    """What an MFMA holds on its SIMD past its issue in one model run (see the module
    docstring), per (CU, SIMD) until when: packed-FP32 / DOT VALU instructions (`packed`:
    st.packed_hold after the MFMA) and DS / vector memory instructions (`memory`:
    mfma.valu_hold, as the SIMD's other VALU instructions). Off: not held."""

    def __init__(self, packed: bool = True, memory: bool = True) -> None:
        self.packed_on, self.memory_on = packed, memory
        self.packed: dict[tuple[int, int], int] = {}
        self.memory: dict[tuple[int, int], int] = {}
        # for the report (result.PathUse): instructions held past their other limits
        self.packed_waits = self.packed_wait_cycles = 0
        self.memory_waits = self.memory_wait_cycles = 0

    def earliest(self, w: ModelWave, st: Static) -> int:
        """The earliest issue time of `st` on the wave's SIMD (0: not held)."""
        if st.packed and self.packed_on:
            return self.packed.get((w.cu, w.simd), 0)
        if self.memory_on and st.unit in MEMORY_UNITS:
            return self.memory.get((w.cu, w.simd), 0)
        return 0

    def held(self, w: ModelWave, st: Static, other: int) -> None:
        """Count a hold: `st`, which every other limit let issue at `other`, issues when
        the MFMA lets it (the report's figures)."""
        t = self.earliest(w, st)
        if t > other:
            if st.packed:
                self.packed_waits += 1
                self.packed_wait_cycles += t - other
            else:
                self.memory_waits += 1
                self.memory_wait_cycles += t - other

    def issued(self, w: ModelWave, st: Static, now: int, valu_hold: int) -> None:
        """An MFMA issued at `now` on the wave's SIMD: hold what it holds."""
        key = (w.cu, w.simd)
        if self.packed_on and now + st.packed_hold > self.packed.get(key, 0):
            self.packed[key] = now + st.packed_hold
        if self.memory_on and now + valu_hold > self.memory.get(key, 0):
            self.memory[key] = now + valu_hold


__all__ = ["MEMORY_UNITS", "CoExec", "busy_cycles", "drained", "is_packed", "issued",
           "packed_hold", "result_ready", "source_bytes", "srcc_keys", "srcc_ready"]

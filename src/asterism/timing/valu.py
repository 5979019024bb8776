"""VALU result paths to the other units: when a VALU instruction's results reach readers that
are not the VALU's own bypass. Modeled from what the MI350X captures show, not a published
figure.

A VALU instruction's result feeds the next VALU instruction of its wave one issue cycle later
(``latency.valu`` = 4: [llvm] Write32Bit; in both captures 97 % of back-to-back dependent
VALU pairs issue 4 cycles apart). Other readers wait longer ([att], both captures, no exception
among the executions counted):

* ``dispatch.valu_to_memory`` (12): a wave's LDS or vector memory instruction issues no sooner
  than 12 cycles after the wave's last VALU instruction, whether it reads that VALU's result
  or not (of the DS / VMEM instructions that issue within 24 cycles of a VALU,
  flash_attn_func_small 1856 / 537, pa_mqa_logits_fp4_small 32 / 47: none sooner than 12;
  881 of flash's at exactly 12 read no register a recent VALU wrote): memory instructions
  read their VGPRs from the register file after the VALU's in-flight writes, not through
  the VALU's bypass.
* ``dispatch.valu_sgpr_valu`` (12): an SGPR (VCC included) a VALU wrote is read by a VALU
  12 cycles after the writer issued (flash: 2718 reads at 12, none sooner; v_cmp -> v_cndmask).
* ``dispatch.valu_sgpr_salu`` (20): ... and by any other instruction (SALU, SMEM, branch,
  memory) 20 cycles after (flash: 415 at 20, pa_mqa: 19 at 20, none sooner; v_readfirstlane /
  v_cmp_e64 -> s_add / s_and).

In the captures such a wait is not stall: the reader's record starts when the path lets it
go, after an idle gap (flash_attn_func_small: all 1224 DS / vector memory instructions and
410 SALU readers the paths hold show a gap before their record's time, 188 of the memory ones
some stall after it for other reasons; pa_mqa_logits_fp4_small: 64 and 19, the same); the
engine records them so (a VALU reading a VALU-written SGPR: no held case in either capture,
the same convention assumed).

Before this module the model let all of them issue one issue cycle after the VALU (4). Kept
apart from the engine (issue.py asks `earliest` before an issue and tells `issued` after);
``TimingOptions.off`` "valu_paths" (and `trace replay --timing-off valu_paths`) leaves it out.
"""

from __future__ import annotations

from collections.abc import Sequence

from asterism.target.hazards import KEY_SCC, KEY_SGPR
from asterism.target.timing import TimingModel
from asterism.timing.state import ModelWave
from asterism.timing.static import Static

NONE = -(1 << 40)  # a time long past


def is_valu(st: Static) -> bool:
    """A VALU instruction (trans included; MFMA, which runs on the matrix core, not)."""
    return st.unit == "valu" and st.kind == "alu" and not st.xdl_result


def sgpr_keys(keys: Sequence[int]) -> tuple[int, ...]:
    """The scalar registers (SGPRs, VCC, EXEC, M0; not SCC) among register keys."""
    return tuple(k for k in keys if KEY_SGPR <= k < KEY_SCC)


class ValuPaths:
    """The VALU result paths of one model run (see the module docstring): per instruction
    index what it is to them, per wave when its last VALU issued and which SGPRs a VALU wrote
    when. `on=False`: left out (nothing waits)."""

    def __init__(self, statics: Sequence[Static], tm: TimingModel, on: bool = True) -> None:
        d = tm.dispatch
        self.on = on
        self.to_memory = d["valu_to_memory"]
        self.sgpr_valu = d["valu_sgpr_valu"]
        self.sgpr_salu = d["valu_sgpr_salu"]
        self.valu = [is_valu(st) for st in statics]
        self.memory = [st.unit in ("lds", "vmem") for st in statics]
        self.reads = [sgpr_keys(st.uses) for st in statics]
        self.writes = [sgpr_keys(st.defs) for st in statics]
        self.waits = self.wait_cycles = 0  # for the report (result.PathUse)
        self.last_valu: dict[int, int] = {}  # wave row -> issue time of its last VALU
        self.sgpr: dict[int, dict[int, int]] = {}  # wave row -> SGPR key -> VALU write time

    def earliest(self, w: ModelWave, index: int) -> int:
        """The earliest issue time of the wave's instruction `index` these paths allow."""
        if not self.on or index >= len(self.valu):
            return 0
        t = NONE
        if self.memory[index]:
            t = self.last_valu.get(w.row, NONE) + self.to_memory
        reads = self.reads[index]
        if reads:
            written = self.sgpr.get(w.row)
            if written:
                after = self.sgpr_valu if self.valu[index] else self.sgpr_salu
                for k in reads:
                    v = written.get(k)
                    if v is not None and v + after > t:
                        t = v + after
        return t if t > 0 else 0

    def held(self, w: ModelWave, index: int, other: int) -> None:
        """Count a hold: instruction `index`, which every other limit let issue at `other`,
        issues when these paths allow (the report's figure)."""
        t = self.earliest(w, index)
        if t > other:
            self.waits += 1
            self.wait_cycles += t - other

    def issued(self, w: ModelWave, index: int, now: int) -> None:
        """The wave issued instruction `index` at `now`: note a VALU and the SGPRs it wrote
        (an SGPR another unit writes is that unit's again)."""
        if not self.on or index >= len(self.valu):
            return
        writes = self.writes[index]
        if self.valu[index]:
            self.last_valu[w.row] = now
            if writes:
                written = self.sgpr.setdefault(w.row, {})
                for k in writes:
                    written[k] = now
        elif writes:
            written = self.sgpr.get(w.row)
            if written:
                for k in writes:
                    written.pop(k, None)


__all__ = ["ValuPaths", "is_valu", "sgpr_keys"]

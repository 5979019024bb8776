"""What a timed run produces: per-wave records in the ATT decoder's codes, the run's figures
(summary, JSON). Modeled, not measured.

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
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        """The figures as plain data (with the model's note)."""
        return {"note": MODEL_NOTE, "target": self.target, "kernel": self.kernel,
                "cycles": self.cycles, "compute_units": self.compute_units,
                "modeled_cus": self.modeled_cus, "workgroups": self.workgroups,
                "modeled_workgroups": self.modeled_workgroups,
                "waves": [{"cu": w.cu, "simd": w.simd, "slot": w.slot,
                           "workgroup": list(w.workgroup), "wave": w.wave, "begin": w.begin,
                           "end": w.end, "cycles": w.cycles, "instructions": len(w.records),
                           "stall": w.stall} for w in self.waves],
                "parameters": self.parameters}


__all__ = ["CAT_FLAT", "CAT_IMMED", "CAT_JUMP", "CAT_LDS", "CAT_MESSAGE", "CAT_NEXT",
           "CAT_SALU", "CAT_SMEM", "CAT_VALU", "CAT_VMEM", "EXEC", "IDLE", "MODEL_NOTE",
           "STALL", "WAIT", "InstCategory", "TimingResult", "WaveState", "WaveTiming"]

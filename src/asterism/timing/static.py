"""What the timing model needs of one instruction, worked out once per dispatch: its kind,
issue port, ATT category, execution unit and how long it holds it, the registers it reads
and writes and when its results are ready, its counter entries, its wait or own duration.

The facts come from tables, not from a chain of mnemonic tests: program-control
instructions the model handles itself are looked up by mnemonic in `CONTROL` (the ISA
database files them as SALU with nothing that sets them apart: s_waitcnt, s_nop, s_barrier,
...); every other instruction by its timing class (asterism.target.timing.timing_class, from
the ISA database's unit, flags and MFMA passes) in `BY_CLASS`. The numbers of each mechanism
come from its module (mfma.py, lds.py, memory.py); the parameters from
target/data/timing.toml.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from asterism.emu.info import OpInfo, operand_keys
from asterism.isa import Instruction
from asterism.isa.syntax import decode_waitcnt
from asterism.mc.operands import Reg
from asterism.target.timing import TimingModel, timing_class
from asterism.timing import lds, memory, mfma, priority
from asterism.timing.result import (
    CAT_FLAT,
    CAT_IMMED,
    CAT_JUMP,
    CAT_LDS,
    CAT_MESSAGE,
    CAT_SALU,
    CAT_SMEM,
    CAT_VALU,
    CAT_VMEM,
)


@dataclass(slots=True)
class Static:
    """What the model needs of one instruction (computed once per dispatch)."""

    kind: str  # alu, mem, waitcnt, nop, barrier, endpgm, branch
    port: str | None
    category: int
    unit: str | None  # execution unit: per SIMD (valu, xdl, salu, smem, branch) or per CU
    occupancy: int = 0
    uses: tuple[int, ...] = ()
    srcc: tuple[int, ...] = ()
    defs: tuple[int, ...] = ()
    ready: int = 0  # cycles after issue until the result may be read
    ready_srcc: int = 0  # ... by a dependent MFMA's SrcC
    streams: tuple[tuple[str, bool], ...] = ()
    mem: str = ""  # lds, smem, vmem, flat
    store: bool = False
    wait: tuple[int, int] = (63, 15)  # s_waitcnt vmcnt, lgkmcnt
    cycles: int = 0  # s_nop / s_sleep / internal: own duration
    clock: str = ""  # s_memtime / s_memrealtime
    sdata: int = -1
    taken_always: bool = False
    xdl_result: int = 0  # MFMA: cycles until its result is written
    index: int = -1  # the instruction's index (the mechanisms' per-instruction figures)
    lds_form: str = ""  # lds.py's phase-rule family ("tr": a transposed read)
    lds_port: int = 0  # DS: cycles it holds its SIMD pair's LDS port (lds.port_cycles)
    # cycles the wave spends issuing it (0: one issue cycle): a VALU-unit instruction that
    # keeps the VALU longer than a slot (gfx950 trans: 8) holds its wave as long ([att])
    issue: int = 0
    # scalar memory: the registers and immediate its address is made of (a replay, which has
    # no addresses, tells loads of one cache line apart by them: memory.scalar_line_keys)
    sbase: tuple[int, ...] = ()
    soffset: tuple[int, ...] = ()
    offset: int = 0
    prio: int = -1  # s_setprio: the user priority it sets (priority.py); -1 otherwise
    # mfma.py: a packed-FP32 / DOT VALU instruction (held after an MFMA of its SIMD), and an
    # MFMA's hold on them (cycles from its issue)
    packed: bool = False
    packed_hold: int = 0


def simm16(info: OpInfo) -> int:
    """The instruction's 16-bit immediate (0 if it has none)."""
    # An Imm, or the printer's syntax object for s_waitcnt (`lgkmcnt(0)`): both carry .value
    value = getattr(info.op("simm16"), "value", 0)
    return value if isinstance(value, int) else 0


def data_dwords(info: OpInfo) -> int:
    """Dwords per lane a memory instruction moves (its widest data operand)."""
    best = 1
    form = info.form
    if form is None:
        return best
    data = 0
    for spec, op in zip(form.operands, info.inst.operands, strict=False):
        if isinstance(op, Reg) and spec.name in ("vdst", "vdata", "data", "data0", "data1",
                                                 "sdata", "sdst"):
            if spec.name in ("data0", "data1"):
                data += op.count
            else:
                best = max(best, op.count)
    return max(best, data)


# ---------------------------------------------------------------------------- by mnemonic


def _endpgm(info: OpInfo, tm: TimingModel) -> Static:
    return Static("endpgm", "branch", CAT_MESSAGE, "branch", uses=tuple(sorted(info.uses)))


def _waitcnt(info: OpInfo, tm: TimingModel) -> Static:
    w = decode_waitcnt(simm16(info))
    return Static("waitcnt", None, CAT_IMMED, None, wait=(w["vmcnt"], w["lgkmcnt"]))


def _nop(info: OpInfo, tm: TimingModel) -> Static:
    # s_nop N: N + 1 issue cycles
    return Static("nop", None, CAT_IMMED, None,
                  cycles=tm.issue_cycles * ((simm16(info) & 0xF) + 1))


def _sleep(info: OpInfo, tm: TimingModel) -> Static:
    # s_sleep N: 64 N clocks (at least an issue cycle)
    return Static("nop", None, CAT_IMMED, None,
                  cycles=max(tm.issue_cycles, 64 * (simm16(info) & 0x7F)))


def _barrier(info: OpInfo, tm: TimingModel) -> Static:
    return Static("barrier", None, CAT_IMMED, None)


def _setprio(info: OpInfo, tm: TimingModel) -> Static:
    # one issue cycle, no unit, like the other internal SOPP instructions
    return Static("nop", None, CAT_IMMED, None, cycles=tm.issue_cycles,
                  prio=priority.priority_of(simm16(info)))


def _internal(category: int) -> Callable[[OpInfo, TimingModel], Static]:
    def rule(info: OpInfo, tm: TimingModel) -> Static:
        return Static("nop", None, category, None, cycles=tm.issue_cycles)
    return rule


# Internal SOPP instructions: one issue cycle, no unit (s_sendmsg* are MESSAGE in ATT;
# s_setprio also sets the wave's priority, _setprio).
_INTERNAL = ("s_sethalt", "s_icache_inv", "s_ttracedata", "s_incperflevel",
             "s_decperflevel", "s_trap", "s_setkill")
CONTROL: dict[str, Callable[[OpInfo, TimingModel], Static]] = {
    "s_endpgm": _endpgm, "s_waitcnt": _waitcnt, "s_nop": _nop, "s_sleep": _sleep,
    "s_barrier": _barrier, "s_setprio": _setprio,
    **dict.fromkeys(_INTERNAL, _internal(CAT_IMMED)),
    "s_sendmsg": _internal(CAT_MESSAGE), "s_sendmsghalt": _internal(CAT_MESSAGE)}


# ---------------------------------------------------------------------------- by class


def _branch(info: OpInfo, isa: Instruction, cls: str, tm: TimingModel) -> Static:
    flags = isa.flags
    return Static("branch", "branch", CAT_JUMP, "branch", tm.occupancy["branch"],
                  uses=tuple(sorted(info.uses)), defs=tuple(sorted(info.defs)),
                  ready=tm.latency["salu"], ready_srcc=tm.latency["salu"],
                  taken_always="unconditional" in flags or "call" in flags)


def _alu(info: OpInfo, isa: Instruction, cls: str, tm: TimingModel) -> Static:
    lat = tm.latency[cls]
    busy = tm.occupancy[cls]
    # [att] a wave64 VALU instruction whose lanes take the VALU longer than one issue cycle
    # (gfx950 v_exp_f32, v_rcp_f32: 8) holds its wave as long: the next instruction, of any
    # kind, starts after it.
    issue = busy if tm.unit_of(cls) == "valu" and busy > tm.issue_cycles else 0
    return Static("alu", tm.issue_ports[cls], CAT_SALU if cls == "salu" else CAT_VALU,
                  tm.unit_of(cls), busy, tuple(sorted(info.uses)), (),
                  tuple(sorted(info.defs)), lat, lat, issue=issue,
                  packed=tm.unit_of(cls) == "valu" and mfma.is_packed(isa))


def _mfma(info: OpInfo, isa: Instruction, cls: str, tm: TimingModel) -> Static:
    busy = mfma.busy_cycles(info, isa, tm)
    srcc = mfma.srcc_keys(info)
    uses = tuple(k for k in sorted(info.uses) if k not in srcc)
    return Static("alu", tm.issue_ports[cls], CAT_VALU, tm.unit_of(cls), busy, uses, srcc,
                  tuple(sorted(info.defs)), mfma.result_ready(busy, tm),
                  mfma.srcc_ready(busy, tm), xdl_result=mfma.result_ready(busy, tm),
                  packed_hold=mfma.packed_hold(info, busy, tm))


def _lds(info: OpInfo, isa: Instruction, cls: str, tm: TimingModel) -> Static:
    return Static("mem", tm.issue_ports[cls], CAT_LDS, tm.unit_of(cls),
                  lds.busy_cycles(isa, data_dwords(info), tm), tuple(sorted(info.uses)),
                  streams=memory.counter_streams(info), mem="lds",
                  lds_form=lds.form_of(info.mnemonic),
                  lds_port=lds.port_cycles(cls, data_dwords(info), tm))


def _smem(info: OpInfo, isa: Instruction, cls: str, tm: TimingModel) -> Static:
    clock, sdata = "", -1
    if info.mnemonic in ("s_memtime", "s_memrealtime"):
        # the model's clock is written to sdata (asterism.timing.functional)
        clock = info.mnemonic.removeprefix("s_")
        op = info.op("sdata")
        if isinstance(op, Reg):
            sdata = op.index + (108 if op.kind == "ttmp" else 0)
    sbase = tuple(sorted(operand_keys(info.op("sbase")))) if info.has("sbase") else ()
    soffset = tuple(sorted(operand_keys(info.op("soffset")))) if info.has("soffset") else ()
    offset = getattr(info.op("offset"), "value", 0) if info.has("offset") else 0
    return Static("mem", tm.issue_ports[cls], CAT_SMEM, tm.unit_of(cls), tm.occupancy[cls],
                  tuple(sorted(info.uses)), streams=memory.counter_streams(info), mem="smem",
                  store="may_store" in isa.flags, clock=clock, sdata=sdata, sbase=sbase,
                  soffset=soffset, offset=offset if isinstance(offset, int) else 0)


def _vmem(info: OpInfo, isa: Instruction, cls: str, tm: TimingModel) -> Static:
    # The ATT decoder files FLAT, GLOBAL and SCRATCH instructions under FLAT, buffer
    # instructions under VMEM.
    enc = info.enc
    flags = isa.flags
    return Static("mem", tm.issue_ports[cls],
                  CAT_FLAT if enc in ("FLAT", "GLOBAL", "SCRATCH") else CAT_VMEM,
                  tm.unit_of(cls), memory.vmem_busy(cls, data_dwords(info), tm),
                  tuple(sorted(info.uses)), streams=memory.counter_streams(info),
                  mem="flat" if enc == "FLAT" else "vmem",
                  store="may_store" in flags and "may_load" not in flags)


BY_CLASS: dict[str, Callable[[OpInfo, Instruction, str, TimingModel], Static]] = {
    "branch": _branch, "salu": _alu, "valu": _alu, "trans": _alu, "mfma": _mfma,
    "ds_read": _lds, "ds_write": _lds, "smem": _smem, "vmem_read": _vmem,
    "vmem_write": _vmem}


def make_static(info: OpInfo, tm: TimingModel) -> Static:
    """What the model needs of one instruction (its kind, port, unit, registers, counters)."""
    st = _make_static(info, tm)
    st.index = info.index
    return st


def _make_static(info: OpInfo, tm: TimingModel) -> Static:
    isa = info.isa
    if isa is None:  # not in the ISA database: an internal cycle
        return Static("nop", None, CAT_IMMED, None, cycles=tm.issue_cycles)
    rule = CONTROL.get(info.mnemonic)
    if rule is not None:
        return rule(info, tm)
    cls = timing_class(isa)
    # A call (s_call_b64, s_swappc_b64) is a SALU instruction that branches.
    return BY_CLASS["branch" if "call" in isa.flags else cls](info, isa, cls, tm)


__all__ = ["BY_CLASS", "CONTROL", "Static", "data_dwords", "make_static", "simm16"]

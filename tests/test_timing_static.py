"""The timing model's per-instruction facts come from tables (asterism/timing/static.py:
program control by mnemonic, everything else by timing class). They must be exactly what the
mnemonic if-chain the model used before gave (kept below, frozen, as the reference) for
every form of every instruction of both targets' ISA databases, with random operands."""

from __future__ import annotations

import random
from dataclasses import astuple, replace

import pytest

from asterism.emu import sanitizer as san
from asterism.emu.info import OpInfo, PlainInst, make_infos, operand_keys
from asterism.errors import AsterismError
from asterism.isa import get_isa
from asterism.isa.syntax import decode_waitcnt
from asterism.mc.operands import Reg
from asterism.mc.random_inst import random_inst
from asterism.target.hazards import mfma_passes
from asterism.target.timing import TimingModel, get_timing, timing_class
from asterism.timing.lds import port_cycles
from asterism.timing.mfma import packed_hold
from asterism.timing.priority import priority_of
from asterism.timing.static import Static, data_dwords, make_static, simm16

CAT_SMEM, CAT_SALU, CAT_VMEM, CAT_FLAT, CAT_LDS, CAT_VALU = 1, 2, 3, 4, 5, 6
CAT_JUMP, CAT_IMMED, CAT_MESSAGE = 7, 9, 11
_INTERNAL_SOPP = ("s_setprio", "s_sethalt", "s_icache_inv", "s_ttracedata", "s_incperflevel",
                  "s_decperflevel", "s_trap", "s_sendmsg", "s_sendmsghalt", "s_setkill")


# ------------------------------------------------- the if-chain of emu/timing.py (frozen)


# [llvm-pr] PR #233721's packed-FP32 and DOT VALU instructions, by hand (what the ISA
# database's flags must give, timing/mfma.is_packed)
_PACKED_F32 = {"v_pk_add_f32", "v_pk_fma_f32", "v_pk_mul_f32", "v_pk_mov_b32"}


def _packed_f32_or_dot(mnemonic: str) -> bool:
    return mnemonic in _PACKED_F32 or mnemonic.startswith("v_dot")

def _simm(info: OpInfo) -> int:
    value = getattr(info.op("simm16"), "value", 0)
    return value if isinstance(value, int) else 0


def _data_dwords(info: OpInfo) -> int:
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


def old_make_static(info: OpInfo, tm: TimingModel) -> Static:
    """The mnemonic if-chain (emu/timing.py's make_static before the table)."""
    isa = info.isa
    if isa is None:
        return Static("nop", None, CAT_IMMED, None, cycles=tm.issue_cycles)
    m = info.mnemonic
    slot = tm.issue_cycles
    uses = tuple(sorted(info.uses))
    if m == "s_endpgm":
        return Static("endpgm", "branch", CAT_MESSAGE, "branch", uses=uses)
    if m == "s_waitcnt":
        w = decode_waitcnt(_simm(info))
        return Static("waitcnt", None, CAT_IMMED, None, wait=(w["vmcnt"], w["lgkmcnt"]))
    if m == "s_nop":
        return Static("nop", None, CAT_IMMED, None, cycles=slot * ((_simm(info) & 0xF) + 1))
    if m == "s_sleep":
        return Static("nop", None, CAT_IMMED, None, cycles=max(slot, 64 * (_simm(info) & 0x7F)))
    if m == "s_barrier":
        return Static("barrier", None, CAT_IMMED, None)
    if m in _INTERNAL_SOPP:
        cat = CAT_MESSAGE if m.startswith("s_sendmsg") else CAT_IMMED
        return Static("nop", None, cat, None, cycles=slot)
    cls = timing_class(isa)
    port = tm.issue_ports[cls]
    unit = tm.unit_of(cls)
    defs = tuple(sorted(info.defs))
    if cls == "branch" or "call" in isa.flags:
        return Static("branch", "branch", CAT_JUMP, "branch", tm.occupancy["branch"],
                      uses=uses, defs=defs, ready=tm.latency["salu"],
                      ready_srcc=tm.latency["salu"],
                      taken_always=("unconditional" in isa.flags or "call" in isa.flags
                                    or m in ("s_setpc_b64", "s_swappc_b64")))
    if cls in ("salu", "valu", "trans"):
        cat = CAT_SALU if cls == "salu" else CAT_VALU
        lat = tm.latency[cls]
        return Static("alu", port, cat, unit, tm.occupancy[cls], uses, (), defs, lat, lat)
    if cls == "mfma":
        passes = mfma_passes(m, isa.passes, info.mods) or 1
        busy = passes * tm.mfma.cycles_per_pass
        srcc = tuple(sorted(operand_keys(info.op("src2")))) if info.has("src2") else ()
        return Static("alu", port, CAT_VALU, "xdl", busy, tuple(k for k in uses
                                                               if k not in srcc), srcc, defs,
                      busy + tm.mfma.result_extra, busy + tm.mfma.dependent_extra,
                      xdl_result=busy + tm.mfma.result_extra)
    mc = san.classify(info)
    streams = mc.streams if mc is not None else ()
    if mc is not None and mc.lds_dma:
        streams = tuple(s for s in streams if s[0] != san.LGKM)
    dwords = _data_dwords(info)
    if cls in ("ds_read", "ds_write"):
        return Static("mem", port, CAT_LDS, "lds", tm.occupancy_of(isa, dwords), uses,
                      streams=streams, mem="lds")
    if cls == "smem":
        clock = m.removeprefix("s_") if m in ("s_memtime", "s_memrealtime") else ""
        sdata = -1
        if clock:
            op = info.op("sdata")
            if isinstance(op, Reg):
                sdata = op.index + (108 if op.kind == "ttmp" else 0)
        return Static("mem", port, CAT_SMEM, "smem", tm.occupancy["smem"], uses,
                      streams=streams, mem="smem", store="may_store" in isa.flags,
                      clock=clock, sdata=sdata)
    flat = info.enc == "FLAT"
    category = CAT_FLAT if info.enc in ("FLAT", "GLOBAL", "SCRATCH") else CAT_VMEM
    bw = tm.memory["vmem_bytes_per_cycle"]
    busy = max(tm.occupancy[cls], -(-64 * 4 * dwords // bw))
    store = "may_store" in isa.flags and "may_load" not in isa.flags
    return Static("mem", port, category, "vmem", busy, uses,
                  streams=streams, mem="flat" if flat else "vmem", store=store)


# ------------------------------------------------------------------------------- the test

def _infos(target: str, per_form: int) -> list[OpInfo]:
    """OpInfos of `per_form` random instructions of every form of the target's database."""
    rng = random.Random(f"timing-static-{target}")
    insts = []
    for instr in get_isa(target).instructions.values():
        for form in instr.forms:
            for _ in range(per_form):
                try:
                    inst = random_inst(form, rng)
                except AsterismError:
                    continue  # (a form the generator cannot fill)
                inst.form = form
                insts.append(inst)
    return make_infos([PlainInst(8 * i, 8, inst) for i, inst in enumerate(insts)], target)


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_table_gives_the_if_chains_facts_for_every_instruction(target):
    tm = get_timing(target)
    infos = _infos(target, 2)
    mnemonics = {info.mnemonic for info in infos}
    assert len(mnemonics) > 0.95 * len(get_isa(target).instructions)
    kinds = set()
    for info in infos:
        try:
            want = old_make_static(info, tm)
        except AsterismError as err:  # (no timing class: the table must say the same)
            with pytest.raises(type(err), match=str(err)):
                make_static(info, tm)
            continue
        got = make_static(info, tm)
        # Fields the bank and line mechanisms added: the instruction's index and its LDS
        # phase-rule family ("tr" for the gfx950 transposed reads).
        assert got.index == info.index
        assert got.lds_form == ("tr" if info.mnemonic.startswith("ds_read_b")
                                and "_tr_b" in info.mnemonic else ""), info.text
        # facts the if-chain did not have: the wave's issue cycles of a VALU-unit
        # instruction longer than a slot (trans), a scalar load's address registers
        cls = timing_class(info.isa) if info.isa is not None else ""
        busy = tm.occupancy.get(cls, 0)
        assert got.issue == (busy if cls in ("valu", "trans") and busy > 4 and
                             got.kind == "alu" else 0), info.text
        if got.mem == "smem" and info.has("sbase"):
            assert got.sbase == tuple(sorted(operand_keys(info.op("sbase")))), info.text
        else:
            assert (got.sbase, got.offset) == ((), 0), info.text
        # the SIMD-pair LDS port a DS instruction holds, the priority s_setprio sets
        if cls in ("ds_read", "ds_write") and got.mem == "lds":
            assert got.lds_port == port_cycles(cls, data_dwords(info), tm), info.text
        else:
            assert got.lds_port == 0, info.text
        assert got.prio == (priority_of(simm16(info)) if info.mnemonic == "s_setprio"
                            else -1), info.text
        # the MFMA co-execution facts (mfma.py): packed-FP32 / DOT VALU, an MFMA's hold
        assert got.packed == (bool(cls) and tm.unit_of(cls) == "valu" and got.kind == "alu"
                              and not got.xdl_result and _packed_f32_or_dot(info.mnemonic)), info.text
        assert got.packed_hold == (packed_hold(info, got.occupancy, tm)
                                   if got.xdl_result else 0), info.text
        plain = replace(got, issue=0, sbase=(), soffset=(), offset=0, index=-1, lds_form="",
                        lds_port=0, prio=-1, packed=False, packed_hold=0)
        assert astuple(plain) == astuple(want), info.text
        kinds.add(got.kind)
    assert kinds == {"alu", "mem", "waitcnt", "nop", "barrier", "endpgm", "branch"}


def test_lds_dma_holds_vmcnt_only():
    # the rule the table takes from the sanitizer's classification (the if-chain filtered)
    info = next(i for i in _infos("gfx950", 1) if i.mnemonic == "buffer_load_dword")
    info.inst.modifiers["lds"] = True
    st = make_static(info, get_timing("gfx950"))
    assert [c for c, _ in st.streams] == [san.VM]

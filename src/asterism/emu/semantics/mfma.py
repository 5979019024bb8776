"""MFMA / SMFMAC instructions: operands gathered from the register file, math in emu/mfma.py.

The register images (waves, 64, nregs) of A, B and C are passed to `mfma.execute_mfma`,
which knows every instruction's lane layout, CBSZ/ABID/BLGP, sparsity and scales. D is written
under EXEC (assumption: lanes with EXEC off keep their old D).
"""

from __future__ import annotations

import numpy as np

from asterism.emu.core import Group
from asterism.emu.errors import CompileError
from asterism.emu.info import OpInfo
from asterism.emu.semantics.registry import Table
from asterism.emu.sops import const_bits, is_const
from asterism.emu.vops import store, vreg_row
from asterism.isa import get_isa
from asterism.mc.operands import Mod, Reg

TABLE = Table("mfma")
builder = TABLE.builder

U32 = np.uint32


def _regs(info: OpInfo, op, count: int | None = None):
    if isinstance(op, Mod):
        op = op.operand
    if not isinstance(op, Reg) or op.kind not in ("v", "a"):
        raise CompileError(f"MFMA operand {op} is not a vector register range")
    row = vreg_row(info, op)
    n = count or op.count
    if n == 1:
        return lambda g: g.v[row][:, :, None]
    return lambda g: np.stack([g.v[row + k] for k in range(n)], axis=-1)


def _mfma(info: OpInfo):
    from asterism.emu import mfma as M

    try:
        minfo = M.mfma_info(info.target, info.mnemonic)
    except ValueError as exc:
        raise CompileError(str(exc)) from None
    a = _regs(info, info.op("src0"))
    b = _regs(info, info.op("src1"))
    dst = info.op("vdst")
    drow = vreg_row(info, dst)
    nd = dst.count
    cbsz = int(info.mods.get("cbsz", 0))
    abid = int(info.mods.get("abid", 0))
    blgp = int(info.mods.get("blgp", 0))
    sparse = minfo.sparse
    if sparse:
        c = _regs(info, dst)
        idx = _regs(info, info.op("src2"), 1)
    else:
        c_op = info.op("src2")
        idx = None
        if is_const(c_op):
            bits = const_bits(c_op.operand if isinstance(c_op, Mod) else c_op,
                              "f32" if minfo.out_type == "f32" else "int", 32)
            if minfo.out_type == "f64":
                bits64 = const_bits(c_op.operand if isinstance(c_op, Mod) else c_op, "f64", 64)
                lo, hi = bits64 & 0xFFFFFFFF, bits64 >> 32
                pattern = np.array([lo, hi] * (nd // 2), U32)
            else:
                pattern = np.full(nd, bits, U32)
            c = lambda g: np.broadcast_to(pattern, (g.n, 64, nd))
        else:
            c = _regs(info, c_op)
    scale_a = scale_b = None
    if minfo.scaled:
        scale_a = _regs(info, info.op("scale_src0"), 1)
        scale_b = _regs(info, info.op("scale_src1"), 1)
    op_sel = tuple(info.mods.get("op_sel", (0, 0)))[:2]
    op_sel_hi = tuple(info.mods.get("op_sel_hi", (0, 0)))[:2]
    target = info.target
    name = minfo.mnemonic
    nxt = info.next_index
    fast = _register_run(info, minfo, cbsz, abid, blgp)
    if fast is not None:
        return fast

    def run(g: Group) -> int:
        d = M.execute_mfma(
            target, name, a(g), b(g), c(g), cbsz=cbsz, abid=abid, blgp=blgp,
            scale_a=scale_a(g) if scale_a else None, scale_b=scale_b(g) if scale_b else None,
            op_sel=op_sel if minfo.scaled else (0, 0),
            op_sel_hi=op_sel_hi if minfo.scaled else (0, 0),
            sparse_idx=idx(g) if idx is not None else None)
        d = np.asarray(d).astype(U32, copy=False)
        for k in range(nd):
            store(g, g.v[drow + k], d[:, :, k], None)
        return nxt
    return run


def _register_run(info: OpInfo, minfo, cbsz: int, abid: int, blgp: int):
    """The op of an MFMA that runs straight on the register file (emu/mfma.py
    RegisterPlan), or None (then execute_mfma runs it)."""
    from asterism.emu import mfma as M

    plan = M.register_plan(info.target, minfo.mnemonic, cbsz, abid, blgp)
    if plan is None:
        return None
    ops = [info.op("src0"), info.op("src1"), info.op("src2"), info.op("vdst")]
    regs = [op.operand if isinstance(op, Mod) else op for op in ops]
    if any(isinstance(op, Mod) and (op.neg or op.abs) for op in ops):
        return None
    a_op, b_op, c_op, d_op = regs
    for op, need in ((a_op, plan.a_nregs), (b_op, plan.b_nregs), (d_op, plan.d_nregs)):
        if not isinstance(op, Reg) or op.kind not in ("v", "a") or op.count < need:
            return None
    if d_op.count != plan.d_nregs:
        return None
    arow, brow, drow = vreg_row(info, a_op), vreg_row(info, b_op), vreg_row(info, d_op)
    na, nb, nd = plan.a_nregs, plan.b_nregs, plan.d_nregs
    if is_const(c_op):
        bits = const_bits(c_op, "f32", 32)
        c_value = float(np.array([bits], U32).view(np.float32)[0])
        crow = -1
    elif isinstance(c_op, Reg) and c_op.kind in ("v", "a") and c_op.count >= nd:
        crow = vreg_row(info, c_op)
    else:
        return None
    nxt = info.next_index

    def run(g: Group) -> int:
        v = g.v
        c = c_value if crow < 0 else v[crow:crow + nd]
        d = M.mfma_on_registers(plan, v[arow:arow + na], v[brow:brow + nb], c)
        out = v[drow:drow + nd]
        if g.exec_full:
            out.view(np.float32)[...] = d  # (rounded to f32 as astype rounds)
        else:
            np.copyto(out, d.astype(np.float32).view(U32), where=g.exec)
        return nxt
    return run


def _register() -> None:
    for target in ("gfx942", "gfx950"):
        db = get_isa(target).instructions
        for m in db:
            # (the name first: the database entry is made only when it is needed)
            if m.startswith(("v_mfma_", "v_smfmac_")) and db[m].unit == "mfma":
                builder(m)(_mfma)


_register()

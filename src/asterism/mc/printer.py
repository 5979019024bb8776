"""Assembly printer: `mc.Inst` -> LLVM AMDGPU assembly syntax.

One printing path for everything: IR lowered to MC, parsed asm and decoded machine code.
For decoded instructions the text equals llvm-objdump's (modifiers in LLVM's order, defaults
omitted the way LLVM omits them).
"""

from __future__ import annotations

from asterism.isa.syntax import DPP_NAMED, DPP_ROW_NEWBCAST, MTBUF_DFMT, MTBUF_NFMT
from asterism.mc.inst import Inst
from asterism.mc.operands import Imm, Operand

OMOD_TEXT = {1: "mul:2", 2: "mul:4", 3: "div:2"}


def format_operand(op: Operand) -> str:
    """The text of one operand."""
    return str(op)


def _bits(values) -> str:
    return "[" + ",".join(str(int(v)) for v in values) + "]"


def format_dpp_ctrl(ctrl: int) -> str:
    """LLVM's text for a DPP control value."""
    if ctrl <= 0xFF:
        q = [(ctrl >> (2 * k)) & 3 for k in range(4)]
        return f"quad_perm:{_bits(q)}"
    if 0x101 <= ctrl <= 0x10F:
        return f"row_shl:{ctrl - 0x100}"
    if 0x111 <= ctrl <= 0x11F:
        return f"row_shr:{ctrl - 0x110}"
    if 0x121 <= ctrl <= 0x12F:
        return f"row_ror:{ctrl - 0x120}"
    if DPP_ROW_NEWBCAST <= ctrl <= DPP_ROW_NEWBCAST + 15:
        return f"row_newbcast:{ctrl - DPP_ROW_NEWBCAST}"
    if ctrl in DPP_NAMED:
        return DPP_NAMED[ctrl]
    return f"dpp_ctrl:0x{ctrl:x}"


def format_modifiers(inst: Inst) -> list[str]:
    """Modifier tokens of `inst` in LLVM's printing order."""
    form = inst.form
    enc = form.enc if form else None
    m = inst.modifiers
    out: list[str] = []
    if m or enc in _PRINTS_DEFAULTS:
        _FAMILY_PRINTERS.get(enc, _generic_modifiers)(inst, m, out)
    return out


def _flag(m: dict, out: list[str], name: str, text: str | None = None) -> None:
    if m.get(name):
        out.append(text or name)


def _ds_modifiers(inst: Inst, m: dict, out: list[str]) -> None:
    if "offset0" in m or "offset1" in m:
        if m.get("offset0"):
            out.append(f"offset0:{m['offset0']}")
        if m.get("offset1"):
            out.append(f"offset1:{m['offset1']}")
    elif m.get("offset"):
        out.append(f"offset:{m['offset']}")
    _flag(m, out, "gds")


def _flat_modifiers(inst: Inst, m: dict, out: list[str]) -> None:
    if m.get("offset"):
        out.append(f"offset:{m['offset']}")
    for name in ("sc0", "nt", "sc1"):
        _flag(m, out, name)


def _buffer_modifiers(inst: Inst, m: dict, out: list[str]) -> None:
    if inst.form.enc == "MTBUF":
        fmt = m.get("format", 1)
        dfmt, nfmt = fmt & 0xF, (fmt >> 4) & 0x7
        names = ([MTBUF_DFMT[dfmt]] if dfmt != 1 else []) + ([MTBUF_NFMT[nfmt]] if nfmt else [])
        if names:
            out.append(f"format:[{','.join(names)}]")
    _flag(m, out, "idxen")
    _flag(m, out, "offen")
    if m.get("offset"):
        out.append(f"offset:{m['offset']}")
    for name in ("sc0", "nt", "sc1"):
        _flag(m, out, name)
    _flag(m, out, "lds")


def _smem_modifiers(inst: Inst, m: dict, out: list[str]) -> None:
    if m.get("offset") is not None and "offset" in m:
        off = m["offset"]
        out.append(f"offset:{Imm(off, fmt='hex')}")
    _flag(m, out, "glc")
    _flag(m, out, "nv")


def _vop3p_modifiers(inst: Inst, m: dict, out: list[str]) -> None:
    n = len(m.get("op_sel", m.get("op_sel_hi", ())))
    default_hi = (0,) * n if _mix(inst) else (1,) * n
    if any(m.get("op_sel", ())):
        out.append(f"op_sel:{_bits(m['op_sel'])}")
    if m.get("op_sel_hi") is not None and tuple(m["op_sel_hi"]) != default_hi:
        out.append(f"op_sel_hi:{_bits(m['op_sel_hi'])}")
    if any(m.get("neg_lo", ())):
        out.append(f"neg_lo:{_bits(m['neg_lo'])}")
    if any(m.get("neg_hi", ())):
        out.append(f"neg_hi:{_bits(m['neg_hi'])}")
    _flag(m, out, "clamp")


def _mfma_modifiers(inst: Inst, m: dict, out: list[str]) -> None:
    if inst.form.enc == "MAI_SCALE":
        if any(m.get("op_sel", ())):
            out.append(f"op_sel:{_bits(m['op_sel'])}")
        out.append(f"op_sel_hi:{_bits(m.get('op_sel_hi', (0, 0, 0)))}")
    for name in ("cbsz", "abid", "blgp"):
        if m.get(name):
            out.append(f"{name}:{m[name]}")
    if any(m.get("neg", ())):
        out.append(f"neg:{_bits(m['neg'])}")


def _dpp_modifiers(inst: Inst, m: dict, out: list[str]) -> None:
    out.append(format_dpp_ctrl(m.get("dpp_ctrl", 0xE4)))
    out.append(f"row_mask:0x{m.get('row_mask', 0xF):x}")
    out.append(f"bank_mask:0x{m.get('bank_mask', 0xF):x}")
    _flag(m, out, "bound_ctrl", "bound_ctrl:1")


def _sdwa_modifiers(inst: Inst, m: dict, out: list[str]) -> None:
    _flag(m, out, "clamp")
    if m.get("omod"):
        out.append(OMOD_TEXT[m["omod"]])
    for name in ("dst_sel", "dst_unused", "src0_sel", "src1_sel"):
        if name in m:
            out.append(f"{name}:{m[name]}")


def _generic_modifiers(inst: Inst, m: dict, out: list[str]) -> None:
    """VOP3 and anything else with generic modifiers."""
    if m.get("bitop3"):
        table = int(m["bitop3"])
        out.append(f"bitop3:{table}" if table <= 10 else f"bitop3:0x{table:x}")
    if m.get("op_sel"):
        out.append(f"op_sel:{_bits(m['op_sel'])}")
    _flag(m, out, "clamp")
    if m.get("omod"):
        out.append(OMOD_TEXT[m["omod"]])


# Families that print something for an instruction without modifiers (default controls).
_PRINTS_DEFAULTS = {"DPP", "MAI_SCALE"}
# Encoding -> the printer of its modifiers (others use _generic_modifiers).
_FAMILY_PRINTERS = {
    "DS": _ds_modifiers, "FLAT": _flat_modifiers, "GLOBAL": _flat_modifiers,
    "SCRATCH": _flat_modifiers, "MUBUF": _buffer_modifiers, "MTBUF": _buffer_modifiers,
    "SMEM": _smem_modifiers, "VOP3P": _vop3p_modifiers, "MAI": _mfma_modifiers,
    "MAI_SCALE": _mfma_modifiers, "DPP": _dpp_modifiers, "SDWA": _sdwa_modifiers,
}


def _mix(inst: Inst) -> bool:
    return "_mix" in inst.mnemonic


def format_inst(inst: Inst) -> str:
    """The assembly text of one instruction (LLVM's; text that must assemble back to exactly
    its words is mc/lossless.py's `lossless_text`)."""
    ops = inst.operands
    form = inst.form
    if form is not None and ops:
        # LLVM omits optional immediates that are zero (s_endpgm 0 prints as s_endpgm).
        last = form.operands[-1] if form.operands else None
        if last is not None and last.optional and isinstance(ops[-1], Imm) and ops[-1].value == 0:
            ops = ops[:-1]
    text = inst.mnemonic
    if ops:
        text += " " + ", ".join(map(str, ops))  # (format_operand is str)
    mods = format_modifiers(inst)
    if mods:
        text += " " + " ".join(mods)
    return text

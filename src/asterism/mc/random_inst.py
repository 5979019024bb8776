"""Random instructions for differential testing against LLVM.

`random_inst(form, rng)` builds an `Inst` for a database form with random operands (register
numbers and classes, inline constants, literals, special immediates) and random modifiers
within the encodable ranges. Some combinations are rejected by LLVM (e.g. two SGPRs on the
constant bus); the differential tests compare only what LLVM accepts and report the rest.
"""

from __future__ import annotations

import random

from asterism.isa import Form, OperandSpec, syntax
from asterism.mc.inst import Inst
from asterism.mc.matcher import fixed_alternative
from asterism.mc.operands import (
    OFF,
    FloatImm,
    Imm,
    Literal,
    Mod,
    Off,
    Operand,
    Reg,
    Special,
    Syntax,
)

# Named scalar registers LLVM takes for gfx942/gfx950 in any scalar slot of that width ...
NAMED_32 = ["vcc_lo", "vcc_hi", "exec_lo", "exec_hi", "m0", "flat_scratch_lo",
            "flat_scratch_hi", "xnack_mask_lo", "xnack_mask_hi"]
NAMED_64 = ["vcc", "exec", "flat_scratch", "xnack_mask"]
# ... and the constant registers of the source codes (read only).
SRC_CONSTANTS_32 = ["src_shared_base", "src_shared_limit", "src_private_base",
                    "src_private_limit", "src_pops_exiting_wave_id", "src_vccz", "src_execz",
                    "src_scc"]
SRC_CONSTANTS_64 = ["src_shared_base", "src_shared_limit", "src_private_base",
                    "src_private_limit"]
# Slots whose field is a full source code (8-bit SSRC or 9-bit SRC), where those constants fit.
SOURCE_SLOTS = {"src0", "src1", "src2", "vsrc1", "ssrc0", "ssrc1", "scale_src0", "scale_src1"}
INLINE_FLOATS = [0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0]
REG_ALTERNATIVES = {"vgpr", "agpr", "sgpr", "ttmp", "named", "src_constant"}


def slot_alternatives(form: Form, spec: OperandSpec) -> tuple[str, ...]:
    """The operand classes LLVM's assembler accepts in one slot, which random_operand draws
    among: vgpr agpr sgpr ttmp named src_constant inline_int inline_float literal off fixed
    label syntax imm."""
    if spec.fixed:
        alternative = fixed_alternative(form, spec)
        return ("fixed",) + (_scalar_alternatives(alternative) if alternative else ())
    if spec.syntax:
        return ("label",) if spec.syntax == "label" else ("syntax",)
    out: list[str] = []
    for kind in spec.kinds:
        if kind == "s":
            out += _scalar_alternatives(spec)
        elif kind in _KIND_ALTERNATIVES:
            out += _KIND_ALTERNATIVES[kind]
    return tuple(out) or ("imm",)


_KIND_ALTERNATIVES = {"v": ("vgpr",), "a": ("agpr",), "i": ("inline_int", "inline_float"),
                      "l": ("literal",), "off": ("off",)}


def _scalar_alternatives(spec: OperandSpec) -> tuple[str, ...]:
    out = ["sgpr", "ttmp"]
    if _named(spec, NAMED_32, NAMED_64):
        out.append("named")
    if spec.role == "use" and spec.name in SOURCE_SLOTS and "i" in spec.kinds and _named(
            spec, SRC_CONSTANTS_32, SRC_CONSTANTS_64):
        out.append("src_constant")
    return tuple(out)


def _named(spec: OperandSpec, names_32: list[str], names_64: list[str]) -> list[str]:
    """The names of a list that fit the slot's width and are not excluded from it."""
    names = names_32 if (spec.width or 1) == 1 else names_64 if spec.width == 2 else []
    return [n for n in names if n not in spec.excludes]


def alternative_of(spec: OperandSpec, op: Operand) -> str:
    """The class (one of slot_alternatives') of an operand written in a slot."""
    if isinstance(op, Mod):
        op = op.operand
    if spec.fixed and isinstance(op, Special) and op.name == spec.fixed:
        return "fixed"
    if isinstance(op, Reg):
        return {"v": "vgpr", "a": "agpr", "s": "sgpr", "ttmp": "ttmp"}[op.kind]
    if isinstance(op, Special):
        return "src_constant" if op.name in SRC_CONSTANTS_32 else "named"
    if spec.syntax:
        return "label" if spec.syntax == "label" else "syntax"
    if isinstance(op, Off):
        return "off"
    if not [k for k in spec.kinds if k != "k"]:
        return "imm"
    if isinstance(op, Imm):
        return "inline_int" if syntax.inline_int_code(op.value) is not None else "literal"
    if isinstance(op, FloatImm):
        return "inline_float" if syntax.inline_float_code(op.value) is not None else "literal"
    return "literal"


def _reg(rng: random.Random, kind: str, width: int, align: int, limit: int) -> Reg:
    step = max(align, 1)
    if kind in ("s", "ttmp") and width >= 2:
        step = 2 if width == 2 else 4
    top = limit - width
    index = rng.randrange(0, top // step + 1) * step
    return Reg(kind, index, width)


def _constant(rng: random.Random, alternative: str, type_: str | None) -> Operand:
    if alternative == "inline_float":
        return FloatImm(rng.choice(INLINE_FLOATS))
    if alternative == "inline_int":
        return Imm(rng.randint(-16, 64))
    # A literal that is not an inline constant.
    if type_ in ("f16", "bf16", "i16", "v2f16", "v2i16", "v2bf16"):
        value = rng.randrange(0x41, 0x10000)
    else:
        value = rng.randrange(0x41, 1 << 32)
    while syntax.inline_int_code(value) is not None:
        value += 100
    return Literal(value)


def _register(rng: random.Random, alternative: str, spec: OperandSpec) -> Operand:
    """A register of one class for a slot (a fixed slot's alternative is an SGPR pair)."""
    width = spec.width or (2 if spec.fixed else 1)
    if alternative in ("vgpr", "agpr"):
        return _reg(rng, alternative[0], width, spec.align, 256)
    if alternative == "sgpr":
        return _reg(rng, "s", width, 1, 102)
    if alternative == "ttmp":
        return _reg(rng, "ttmp", width, 1, 16)
    if alternative == "named":
        return Special(rng.choice(_named(spec, NAMED_32, NAMED_64) or NAMED_64))
    return Special(rng.choice(_named(spec, SRC_CONSTANTS_32, SRC_CONSTANTS_64)))


def random_operand(form: Form, spec: OperandSpec, rng: random.Random,
                   alternative: str | None = None) -> Operand:
    """A random value for one operand slot, of a random class of slot_alternatives (or of
    `alternative`)."""
    if alternative is None:
        alternative = rng.choice(slot_alternatives(form, spec))
    if alternative == "fixed":
        return Special(spec.fixed)
    if spec.syntax == "waitcnt":
        value = syntax.encode_waitcnt(rng.randint(0, 63), rng.randint(0, 7), rng.randint(0, 15))
        return Syntax(value, syntax.format_waitcnt(value))
    if spec.syntax == "hwreg":
        reg = rng.choice(list(syntax.HWREG_NAMES))
        offset, size = rng.randint(0, 31), rng.randint(1, 32)
        value = syntax.encode_hwreg(reg, offset, size)
        return Syntax(value, syntax.format_hwreg(value))
    if spec.syntax in ("sendmsg", "gpr_idx"):
        return Syntax(1, "sendmsg(MSG_INTERRUPT)" if spec.syntax == "sendmsg" else "gpr_idx(SRC0)")
    if spec.syntax == "label":
        return Imm(rng.randint(-32768, 32767))
    if alternative == "imm":
        return _immediate_field(form, spec, rng)
    if alternative in REG_ALTERNATIVES:
        op = _register(rng, alternative, spec)
    elif alternative == "off":
        op = OFF
    else:
        op = _constant(rng, alternative, spec.type)
    packed_sdwa = form.enc == "SDWA" and "_pk_" in form.mnemonic  # LLVM does not print them
    packed_sdwa |= form.enc == "VOP3P" and "_mix" not in form.mnemonic  # neg_lo/neg_hi there
    if spec.mods and spec.role == "use" and rng.random() < 0.3 \
            and alternative in REG_ALTERNATIVES and not packed_sdwa:
        if form.enc == "SDWA" and spec.type and spec.type.lstrip("v2").startswith("i"):
            op = Mod(op, sext=True)
        elif spec.type is None or not spec.type.lstrip("v2").startswith("i"):
            op = Mod(op, neg=rng.random() < 0.5, abs=rng.random() < 0.5)
    return op


def _immediate_field(form: Form, spec: OperandSpec, rng: random.Random) -> Operand:
    if form.enc == "SMEM" and spec.name == "offset":
        return Imm(rng.randint(-(1 << 20), (1 << 20) - 1), fmt="hex")
    if form.enc == "SMEM" and spec.name == "sdata":
        return Imm(rng.randint(0, 127))
    if form.enc == "SOPK":
        return Imm(rng.randint(0, 0xFFFF), fmt="hex")
    return Imm(rng.randint(0, 0xFFFF))


def random_modifiers(form: Form, rng: random.Random, operands: list[Operand]) -> dict:
    """Random modifiers for a form, within their encodable ranges."""
    m: dict[str, object] = {}
    enc = form.enc
    n_src = sum(1 for s in form.operands if s.name in ("src0", "src1", "src2"))
    if enc == "VOP3" and form.mnemonic.startswith("v_bitop3"):
        m["bitop3"] = rng.randint(0, 255)
    elif enc == "VOP3":
        if "clamp" in form.modifiers and rng.random() < 0.3:
            m["clamp"] = True
        if "omod" in form.modifiers and rng.random() < 0.3:
            m["omod"] = rng.randint(1, 3)
        if "op_sel" in form.modifiers and rng.random() < 0.4:
            m["op_sel"] = tuple(rng.randint(0, 1) for _ in range(n_src + 1))
    elif enc == "VOP3P":
        for name in ("op_sel", "op_sel_hi", "neg_lo", "neg_hi"):
            if name in form.modifiers and rng.random() < 0.4:
                m[name] = tuple(rng.randint(0, 1) for _ in range(n_src))
        if "clamp" in form.modifiers and rng.random() < 0.3:
            m["clamp"] = True
    elif enc == "MAI":
        for name, hi in (("cbsz", 7), ("abid", 15), ("blgp", 7)):
            if name in form.modifiers and rng.random() < 0.3:
                m[name] = rng.randint(0, hi)
    elif enc == "DS" and form.mnemonic == "ds_swizzle_b32":
        off = rng.randint(0, 0xFFFF)
        m["offset"] = Syntax(off, syntax.format_swizzle(off))
    elif enc == "DS":
        if "offset0" in form.modifiers or "offset1" in form.modifiers:
            m["offset0"], m["offset1"] = rng.randint(0, 255), rng.randint(0, 255)
        elif "offset" in form.modifiers:
            m["offset"] = rng.choice([0, rng.randint(0, 65535)])
        if "gds" in form.modifiers and rng.random() < 0.2:
            m["gds"] = True
    elif enc in ("FLAT", "GLOBAL", "SCRATCH"):
        lo = 0 if enc == "FLAT" else -4096
        if "offset" in form.modifiers:
            m["offset"] = rng.choice([0, rng.randint(lo, 4095)])
        for name in ("sc0", "sc1", "nt"):
            if name in form.modifiers and rng.random() < 0.3:
                m[name] = True
        if form.fixed.get("sc0"):
            m["sc0"] = True  # a returning atomic
    elif enc in ("MUBUF", "MTBUF"):
        if form.base_variant == "lds":
            m["lds"] = True
        vaddr = next((op for s, op in zip(form.operands, operands) if s.name == "vaddr"), None)
        if isinstance(vaddr, Reg):
            if vaddr.count == 2:
                m["idxen"] = m["offen"] = True
            elif rng.random() < 0.5:
                m["offen"] = True
            else:
                m["idxen"] = True
        m["offset"] = rng.choice([0, rng.randint(0, 4095)])
        for name in ("sc0", "sc1", "nt"):
            if name in form.modifiers and rng.random() < 0.3:
                m[name] = True
        if form.fixed.get("sc0"):
            m["sc0"] = True
        if enc == "MTBUF":
            m["format"] = rng.randint(1, 15) | (rng.randint(0, 7) << 4)
    elif enc == "SMEM":
        if "glc" in form.modifiers and rng.random() < 0.3:
            m["glc"] = True
    elif enc == "DPP":
        ctrl = rng.choice([rng.randint(0, 255), 0x100 + rng.randint(1, 15),
                           0x110 + rng.randint(1, 15), 0x120 + rng.randint(1, 15), 0x130, 0x134,
                           0x138, 0x13C, 0x140, 0x141, 0x142, 0x143])
        if any(s.width == 2 for s in form.operands if not s.fixed):
            ctrl = 0x150 + rng.randint(0, 15)  # 64-bit DPP only has row_newbcast
        m["dpp_ctrl"] = ctrl
        m["row_mask"], m["bank_mask"] = rng.randint(0, 15), rng.randint(0, 15)
        if rng.random() < 0.3:
            m["bound_ctrl"] = True
    elif enc == "SDWA":
        sels = syntax.SDWA_SEL
        if form.format != "VOPC" and "dst_sel:" in form.example:
            m["dst_sel"] = rng.choice(sels)
            m["dst_unused"] = rng.choice(syntax.SDWA_UNUSED)
            if "clamp" in form.modifiers and rng.random() < 0.2:
                m["clamp"] = True
            if "omod" in form.modifiers and rng.random() < 0.2:
                m["omod"] = rng.randint(1, 3)
        m["src0_sel"] = rng.choice(sels)
        if any(s.name == "vsrc1" for s in form.operands):
            m["src1_sel"] = rng.choice(sels)
    return m


JOINT = {"vdst", "data", "data0", "data1", "vdata", "src2"}


def random_inst(form: Form, rng: random.Random,
                alternatives: dict[int, str] | None = None) -> Inst:
    """A random instruction of `form` (printed mnemonic, random operands and modifiers);
    `alternatives` forces the class of some operands (by position)."""
    forced = alternatives or {}
    ops = [random_operand(form, spec, rng, forced.get(k))
           for k, spec in enumerate(form.operands)]
    # Memory data/destination and MFMA C/D switch between VGPRs and AGPRs together.
    if form.enc in ("DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF", "MTBUF", "MAI", "MAI_SCALE") \
            and not form.mnemonic.startswith("v_smfmac"):
        kind = rng.choice(["v", "a"])
        for k, spec in enumerate(form.operands):
            if spec.name in JOINT and isinstance(ops[k], Reg) and kind in spec.kinds \
                    and (form.enc.startswith("MAI") or spec.name != "src2"):
                ops[k] = Reg(kind, ops[k].index, ops[k].count)
    if form.enc in ("MUBUF", "MTBUF"):
        for k, spec in enumerate(form.operands):
            if spec.name == "vaddr" and rng.random() < 0.2:
                ops[k] = Reg("v", rng.randrange(0, 127) * 2, 2)  # idxen + offen
    if form.enc == "VOP3" and any(s.name == "sdst" for s in form.operands):
        # VOP3b has no abs field (LLVM silently drops |x| there; asterism rejects it).
        ops = [Mod(o.operand, neg=o.neg) if isinstance(o, Mod) else o for o in ops]
    inst = Inst(form.printed_mnemonic, ops, form=form)
    inst.modifiers = random_modifiers(form, rng, ops)
    return inst

"""Form selection and operand checking: which database form encodes an `Inst` as written.

An explicit suffix (_e32, _e64, _dpp, _sdwa) is honoured. Without one, the choice is LLVM's:
the 32-bit encoding (VOP1/VOP2/VOPC) when the operands fit it, else the 64-bit VOP3 form; DPP
or SDWA when their controls are present. Errors name the instruction, the operand (by its
database name) and what was expected.
"""

from __future__ import annotations

from asterism.errors import VerifyError
from asterism.isa import Form, IsaDatabase, OperandSpec, get_isa, syntax
from asterism.isa.database import KIND_NAMES
from asterism.mc.inst import Inst
from asterism.mc.operands import (
    FloatImm,
    Imm,
    Label,
    Literal,
    Mod,
    Off,
    Operand,
    Reg,
    Special,
    Syntax,
)

DPP_MODIFIERS = {"dpp_ctrl", "row_mask", "bank_mask", "bound_ctrl"}
SDWA_MODIFIERS = {"dst_sel", "dst_unused", "src0_sel", "src1_sel"}
# Encoding preference when no suffix is written (LLVM tries the short encodings first).
ENC_ORDER = {"VOP1": 0, "VOP2": 0, "VOPC": 0, "VOP3": 1, "VOP3P": 1, "MAI": 1, "MAI_SCALE": 1,
             "DPP": 2, "SDWA": 2}
SRC_FIELDS = {"src0", "src1", "src2", "vsrc1", "ssrc0", "ssrc1", "scale_src0", "scale_src1"}
VALU_ENCS = {"VOP1", "VOP2", "VOPC", "VOP3", "VOP3P", "MAI", "MAI_SCALE", "DPP", "SDWA"}


class MatchError(Exception):
    """Why one form does not fit (collected to explain the best candidate)."""

    def __init__(self, score: int, message: str):
        super().__init__(message)
        self.score = score
        self.message = message


def operand_kind(op: Operand) -> str:
    """The database kind of a written operand: v a s i l k off label fixed."""
    if isinstance(op, Mod):
        op = op.operand
    if isinstance(op, Reg):
        return "s" if op.kind in ("s", "ttmp") else op.kind
    if isinstance(op, Special):
        return "s"
    if isinstance(op, Off):
        return "off"
    if isinstance(op, Label):
        return "label"
    if isinstance(op, Syntax):
        return "k"
    if isinstance(op, Literal):
        return "l"
    if isinstance(op, Imm):
        return "i" if syntax.inline_int_code(op.value) is not None else "l"
    if isinstance(op, FloatImm):
        return "i" if syntax.inline_float_code(op.value) is not None else "l"
    return "?"


def _describe(op: Operand) -> str:
    return str(op)


def _expected(spec: OperandSpec) -> str:
    kinds = [KIND_NAMES.get(k, k) for k in spec.kinds]
    text = " or ".join(kinds) if kinds else "nothing"
    if spec.width and spec.is_register:
        text += f" ({spec.width} register{'s' if spec.width > 1 else ''})"
    return text


def _reg_count(op: Operand) -> int:
    if isinstance(op, Mod):
        op = op.operand
    if isinstance(op, Reg):
        return op.count
    if isinstance(op, Special):
        return op.count
    return 0


def check_operand(inst: Inst, form: Form, pos: int, spec: OperandSpec, op: Operand) -> None:
    """Raise MatchError if `op` cannot be operand `pos` (`spec`) of `form`."""
    where = f"operand {pos + 1} ({spec.name})"
    if spec.fixed:
        name = op.name if isinstance(op, Special) else None
        if name != spec.fixed:
            raise MatchError(pos, f"{where}: expected {spec.fixed}, got {_describe(op)}")
        return
    if isinstance(op, Mod):
        if not spec.mods:
            raise MatchError(pos, f"{where}: source modifiers (neg/abs/sext) are not allowed")
    kind = operand_kind(op)
    kinds = set(spec.kinds)
    if kind == "label":
        if spec.syntax == "label":
            return
        raise MatchError(pos, f"{where}: expected {_expected(spec)}, got label {op}")
    if kind == "k" and spec.syntax:
        return
    if kind in ("i", "l") and "k" in kinds:
        return  # a plain immediate field; range is checked by the encoder
    if kind == "i" and "i" not in kinds and "l" in kinds:
        kind = "l"
    if kind not in kinds:
        raise MatchError(pos, f"{where}: expected {_expected(spec)}, got {_describe(op)}")
    base = op.operand if isinstance(op, Mod) else op
    if isinstance(base, Special) and base.name in spec.excludes:
        raise MatchError(pos, f"{where}: {base.name} is not allowed here")
    if kind in ("v", "a", "s") and spec.width:
        count = _reg_count(op)
        if count != spec.width and not _width_flexible(form, spec, count):
            raise MatchError(pos, f"{where}: expected {spec.width} register"
                                  f"{'s' if spec.width > 1 else ''}, got {_describe(op)}"
                                  f" ({count})")
        reg = op.operand if isinstance(op, Mod) else op
        if isinstance(reg, Reg) and reg.kind in ("v", "a") and spec.align > 1 \
                and reg.index % spec.align:
            raise MatchError(pos, f"{where}: register range {reg} must start at a multiple"
                                  f" of {spec.align}")
        if isinstance(reg, Reg) and reg.kind == "s" and reg.count > 1:
            need = 2 if reg.count == 2 else 4
            if reg.index % need:
                raise MatchError(pos, f"{where}: SGPR range {reg} must start at a multiple of"
                                      f" {need}")


def _width_flexible(form: Form, spec: OperandSpec, count: int) -> bool:
    # gfx950 f8f6f4 MFMA: A/B are 8, 6 or 4 registers depending on cbsz/blgp.
    if "f8f6f4" in form.mnemonic and spec.name in ("src0", "src1"):
        return count in (4, 6, 8)
    # MUBUF with idxen+offen takes a VGPR pair as the address.
    if form.enc in ("MUBUF", "MTBUF") and spec.name == "vaddr":
        return count in (1, 2)
    return False


def check_constant_bus(inst: Inst, form: Form) -> None:
    """gfx9 VALU instructions read at most one distinct SGPR or literal."""
    if form.enc not in VALU_ENCS:
        return
    scalars: set[str] = set()
    for spec, op in zip(form.operands, inst.operands):
        if spec.name not in SRC_FIELDS or spec.role != "use":
            continue
        base = op.operand if isinstance(op, Mod) else op
        kind = operand_kind(base)
        if kind == "s":
            scalars.add(str(base))
        elif kind == "l":
            scalars.add(f"literal {base}")
    if any(spec.fixed == "vcc" and spec.role == "use" for spec in form.operands):
        scalars.add("vcc")
    if len(scalars) > 1:
        raise MatchError(99, "reads more than one SGPR or literal "
                             f"({', '.join(sorted(scalars))}); gfx9 VALU instructions have one "
                             "constant-bus read")


def _modifier_fits(form: Form, inst: Inst) -> str | None:
    names = set(inst.modifiers)
    explicit = inst.mnemonic.lower().endswith(form.suffix) and form.suffix != ""
    if form.enc == "DPP" and not names & DPP_MODIFIERS and not explicit:
        return "no DPP controls"
    if form.enc == "SDWA" and not names & SDWA_MODIFIERS and not explicit:
        return "no SDWA selects"
    if names & DPP_MODIFIERS and form.enc != "DPP":
        return "DPP controls need the _dpp form"
    if names & SDWA_MODIFIERS and form.enc != "SDWA":
        return "SDWA selects need the _sdwa form"
    if "lds" in names and form.enc in ("MUBUF", "MTBUF") and form.base_variant != "lds":
        return "lds"
    if form.base_variant == "lds" and "lds" not in names:
        return "not lds"
    # Atomics: sc0 (glc for scalar atomics) selects the form that returns the old value.
    bit = "glc" if form.enc == "SMEM" else "sc0"
    if form.returns and not inst.modifiers.get(bit):
        return f"the returning atomic needs {bit}"
    if not form.returns and inst.modifiers.get(bit) and "atomic" in form.instruction.flags:
        return f"{bit} selects the returning form of the atomic (with a destination)"
    for name in ("clamp", "omod"):
        if name in names and form.enc in ("VOP1", "VOP2", "VOPC"):
            return f"{name} needs the _e64 form"
        if name in names and form.enc == "VOP3" and name not in form.modifiers:
            return f"{name} is not supported by {form.mnemonic}"
    if "op_sel" in names and form.enc in ("VOP1", "VOP2", "VOPC", "DPP"):
        return "op_sel needs the _e64 form"
    return None


def candidate_forms(isa: IsaDatabase, inst: Inst) -> list[Form]:
    """Forms that could encode `inst`, in preference order."""
    key = (isa.target, inst.mnemonic)
    cached = _CANDIDATES.get(key)
    if cached is None:
        cached = _CANDIDATES[key] = _candidate_forms(isa, inst.mnemonic)
    return cached


_CANDIDATES: dict[tuple[str, str], list[Form]] = {}


def _candidate_forms(isa: IsaDatabase, mnemonic: str) -> list[Form]:
    found = isa.resolve(mnemonic)
    if found is None:
        return []
    instr, suffix = found
    forms = list(instr.forms)
    if suffix:
        forms = [f for f in forms if f.suffix == suffix
                 or (suffix == "_e32" and f.enc in ("VOP1", "VOP2", "VOPC"))
                 or (suffix == "_e64" and f.enc == "VOP3")]
    return sorted(forms, key=lambda f: ENC_ORDER.get(f.enc, 0))


def select_form(inst: Inst, target: str) -> Form:
    """Choose the form that encodes `inst` as written; raises VerifyError if none fits."""
    isa = get_isa(target)
    found = isa.resolve(inst.mnemonic)
    if found is None:
        near = isa.similar(inst.mnemonic.split("_e")[0])
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        other = "gfx950" if isa.target == "gfx942" else "gfx942"
        if get_isa(other).resolve(inst.mnemonic) is not None:
            raise VerifyError(f"{inst.mnemonic} is not available on {isa.target}"
                              f" (it exists on {other})", inst.loc)
        raise VerifyError(f"unknown instruction '{inst.mnemonic}' for {isa.target}{hint}",
                          inst.loc)
    forms = candidate_forms(isa, inst)
    if not forms:
        raise VerifyError(f"{inst.mnemonic}: no such encoding on {isa.target}", inst.loc)
    errors: list[MatchError] = []
    for form in forms:
        try:
            match_form(inst, form)
            return form
        except MatchError as err:
            errors.append(err)
    best = max(errors, key=lambda e: e.score)
    raise VerifyError(f"{inst.mnemonic}: {best.message}", inst.loc)


def match_form(inst: Inst, form: Form) -> None:
    """Raise MatchError unless `inst`'s operands and modifiers fit `form`."""
    why = _modifier_fits(form, inst)
    if why:
        raise MatchError(-1, why)
    specs = form.operands
    ops = inst.operands
    n_required = len(specs) - (1 if specs and specs[-1].optional else 0)
    if not n_required <= len(ops) <= len(specs):
        want = f"{n_required}" if n_required == len(specs) else f"{n_required}-{len(specs)}"
        names = ", ".join(s.name for s in specs) or "none"
        raise MatchError(-1, f"expected {want} operands ({names}), got {len(ops)}")
    for pos, (spec, op) in enumerate(zip(specs, ops)):
        check_operand(inst, form, pos, spec, op)
    check_constant_bus(inst, form)
    check_form_rules(inst, form)


# Modifiers every form of an encoding takes (beyond the probed form.modifiers).
FAMILY_MODIFIERS = {
    "MAI_SCALE": {"op_sel", "op_sel_hi", "cbsz", "blgp"},
    "DPP": DPP_MODIFIERS,
    "SDWA": SDWA_MODIFIERS | {"clamp", "omod"},
    "MUBUF": {"offen", "idxen", "lds"},
    "MTBUF": {"offen", "idxen", "format"},
    "SMEM": {"offset", "glc"},
}


# Operands that one AGPR-select bit switches together (memory data/destination, MFMA C/D).
_MEM_JOINT = {"vdst", "data", "data0", "data1", "vdata"}
JOINT_AGPR = {"DS": _MEM_JOINT, "FLAT": _MEM_JOINT, "GLOBAL": _MEM_JOINT, "SCRATCH": _MEM_JOINT,
              "MUBUF": _MEM_JOINT, "MTBUF": _MEM_JOINT, "MAI": {"vdst", "src2"},
              "MAI_SCALE": {"vdst", "src2"}}


def check_form_rules(inst: Inst, form: Form) -> None:
    """Per-form rules beyond operand kinds: allowed modifiers, gds, DPP64, MFMA overlap."""
    allowed = set(form.modifiers) | FAMILY_MODIFIERS.get(form.enc, set())
    if form.mnemonic.startswith("v_bitop3"):
        allowed.add("bitop3")
    if form.enc == "DS" and "offset" in allowed | {"offset0", "offset1"}:
        allowed |= {"offset0", "offset1"} if "offset0" in form.modifiers else {"offset"}
    for name in inst.modifiers:
        if name not in allowed:
            raise MatchError(50, f"modifier '{name}' is not valid for {form.printed_mnemonic}")
    if form.enc == "DS" and " gds" in form.example and not inst.modifiers.get("gds"):
        raise MatchError(50, "needs the gds modifier")
    if form.enc == "DPP" and any(s.width == 2 for s in form.operands if not s.fixed):
        ctrl = int(inst.modifiers.get("dpp_ctrl", 0xE4))
        if not 0x150 <= ctrl <= 0x15F:
            raise MatchError(50, "64-bit DPP only supports row_newbcast")
    joint = JOINT_AGPR.get(form.enc)
    if joint and not form.mnemonic.startswith("v_smfmac"):  # smfmac's src2 is an index
        kinds = {op.kind for spec, op in zip(form.operands, inst.operands)
                 if spec.name in joint and isinstance(op, Reg) and op.kind in ("v", "a")}
        if len(kinds) > 1:
            raise MatchError(50, f"{', '.join(sorted(joint & {s.name for s in form.operands}))}"
                                 " must all be VGPRs or all AGPRs")
    if form.enc == "VOP3P" and "_mix" not in form.mnemonic:
        if any(isinstance(op, Mod) for op in inst.operands):
            raise MatchError(50, "packed instructions take neg_lo/neg_hi, not -x or |x|")
    if "f8f6f4" in form.mnemonic:
        from asterism.mc.decoder import F8F6F4_REGS

        for spec, op in zip(form.operands, inst.operands):
            if spec.name in ("src0", "src1") and isinstance(op, Reg):
                sel = "cbsz" if spec.name == "src0" else "blgp"
                want = F8F6F4_REGS.get(int(inst.modifiers.get(sel, 0)), 8)
                if op.count != want:
                    raise MatchError(50, f"{spec.name} {op}: {sel}:{inst.modifiers.get(sel, 0)}"
                                         f" needs {want} registers")
    if form.enc == "MAI" and not form.mnemonic.startswith("v_smfmac") \
            and "f8f6f4" not in form.mnemonic:  # (LLVM checks neither)
        names = [s.name for s in form.operands]
        if "vdst" in names and "src2" in names and len(inst.operands) == len(names):
            dst = inst.operands[names.index("vdst")]
            c = inst.operands[names.index("src2")]
            # (the rule applies to accumulators wider than 4 registers, as in LLVM)
            if isinstance(dst, Reg) and isinstance(c, Reg) and dst.count > 4 \
                    and dst.overlaps(c) and dst != c:
                raise MatchError(50, f"src2 {c} must not partially overlap the destination {dst}")
    if form.enc == "SMEM" and form.mnemonic.startswith(("s_buffer_", "s_atc_probe_buffer")):
        for spec, op in zip(form.operands, inst.operands):
            if spec.name == "offset" and isinstance(op, Imm) and not 0 <= op.value < (1 << 20):
                raise MatchError(50, f"offset {op.value}: expected a 20-bit unsigned offset")

"""Match instruction ops against the ISA database: form selection and operand/modifier checks.

Everything an instruction op accepts comes from the database form of its target: the
mnemonic, the operand count and order, each operand's register file, width, alignment and
immediate kind, the modifiers. The few encoding rules the database does not record (SGPR
tuple alignment, the gfx9 constant-bus limit, offset field signedness, MUBUF address modes)
mirror `asterism.mc.matcher`, which applies the same rules to assembly input.

Register values may be relocatable here (the register allocator places them later): their
file and width are checked, their alignment is the allocator's job.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Attribute, SSAValue

from asterism.ir.ops import (
    FLAG_MODIFIERS,
    INSTRUCTION_OPS,
    INT_MODIFIERS,
    LIST_MODIFIERS,
    NAME_MODIFIERS,
    KernargOffsetOp,
    LdsAllocOp,
    LiteralOp,
    ModValue,
)
from asterism.ir.types import (
    NAMED_REGISTER_CLASSES,
    RELOCATABLE,
    OffType,
    RegisterType,
    SpecialRegType,
    TokenType,
    type_text,
)
from asterism.isa import (
    Form,
    Instruction,
    IsaDatabase,
    OperandSpec,
    get_isa,
    known_isa_targets,
    syntax,
)
from asterism.isa.formats import FORMATS
from asterism.mc.matcher import APERTURES, fixed_alternative
from asterism.mc.operands import SPECIAL_REGISTERS

# Database operands that are not SSA operands in the IR: waits are written as counters
# (vmcnt = 0 ...), branch targets are block successors.
IR_SKIPPED_SYNTAX = ("waitcnt", "label")
WAITCNT_COUNTERS = ("vmcnt", "expcnt", "lgkmcnt")

# Format-level modifiers the database's per-form lists leave out (they belong to the
# encoding, not the opcode); names as in asterism.mc.inst.
ENCODING_MODIFIERS: dict[str, frozenset[str]] = {
    "DPP": frozenset({"dpp_ctrl", "row_mask", "bank_mask", "bound_ctrl"}),
    "SDWA": frozenset({"dst_sel", "dst_unused", "src0_sel", "src1_sel"}),
    "VOP3P": frozenset({"op_sel", "op_sel_hi", "neg_lo", "neg_hi"}),
    "MAI_SCALE": frozenset({"op_sel", "op_sel_hi"}),
    "MUBUF": frozenset({"offen", "idxen", "lds"}),
    "MTBUF": frozenset({"offen", "idxen", "format"}),
}
# Database spellings that describe an operand property rather than a modifier.
_DB_MODIFIER_ALIASES = {"src0_sext": "sext"}

# Integer modifier ranges that do not depend on the form.
INT_RANGES: dict[str, tuple[int, int]] = {
    "omod": (0, 3), "offset0": (0, 255), "offset1": (0, 255), "cbsz": (0, 7), "abid": (0, 15),
    "blgp": (0, 7), "row_mask": (0, 15), "bank_mask": (0, 15), "dpp_ctrl": (0, 0x1FF),
    "format": (0, 127), **{k: (0, v) for k, v in syntax.WAITCNT_MAX.items()},
}
# gfx9 VALU instructions read at most this many distinct SGPRs/literals (the constant bus).
CONSTANT_BUS_LIMIT = 1
VALU_ENCODINGS = frozenset({"VOP1", "VOP2", "VOPC", "VOP3", "VOP3P", "MAI", "MAI_SCALE", "DPP"})
SOURCE_FIELDS = frozenset({"src0", "src1", "src2", "vsrc1", "ssrc0", "ssrc1", "scale_src0",
                           "scale_src1"})
FAMILY_OF_ENCODING: dict[str, str] = {enc: cls.FAMILY for cls in INSTRUCTION_OPS
                                      for enc in cls.ENCODINGS}


class MatchError(Exception):
    """An instruction op that does not fit its database form; `operand` is its index."""

    def __init__(self, message: str, operand: int | None = None, score: int = 0):
        super().__init__(message)
        self.message = message
        self.operand = operand
        self.score = score


@dataclass(frozen=True)
class Shape:
    """What an IR operand is, as far as the ISA cares."""

    kind: str  # "v", "a", "s", "ttmp" (register files), "special", "imm", "off", "token", ...
    index: int = RELOCATABLE
    count: int = 1
    special: str | None = None
    imm: int | float | None = None  # None: a value known only later (kernarg offsets)
    imm_type: str | None = None
    literal: bool = False  # an explicit amdgcn.literal (always encoded as a literal)
    text: str = ""
    key: object = None  # identity for constant-bus counting of relocatable SGPRs

    @property
    def is_register(self) -> bool:
        """True for register files and named registers."""
        return self.kind in ("v", "a", "s", "ttmp", "special")

    @property
    def file_kind(self) -> str:
        """The database kind letter (named and trap registers are scalar)."""
        return "s" if self.kind in ("special", "ttmp") else self.kind


def immediate_of(value: SSAValue, layout: object | None = None) -> tuple[int | float | None,
                                                                         str | None, bool]:
    """(value, type, is_literal) of an immediate-producing op; value None if not yet known."""
    op = value.owner
    if isinstance(op, ConstantOp):
        attr = op.value
        if isinstance(attr, IntegerAttr):
            return attr.value.data, str(attr.type), False
        if isinstance(attr, FloatAttr):
            return float(attr.value.data), str(attr.type), False
    if isinstance(op, LiteralOp):
        return op.value, "i32", True
    if isinstance(op, KernargOffsetOp):
        offsets = getattr(layout, "arg_offsets", None) or {}
        return offsets.get(op.arg.data), "i32", False
    if isinstance(op, LdsAllocOp):
        offsets = getattr(layout, "lds_offsets", None) or {}
        return offsets.get(op.sym.data), "i32", False
    return None, None, False


def is_immediate(value: SSAValue) -> bool:
    """True if `value` comes from an op that produces an immediate."""
    return isinstance(value.owner, ConstantOp | LiteralOp | KernargOffsetOp | LdsAllocOp)


def shape_of(value: SSAValue, layout: object | None = None) -> Shape:
    """Describe an IR value for matching."""
    t = value.type
    text = type_text(t)
    if isinstance(t, RegisterType):
        return Shape(t.KIND, t.first, t.width, text=text,
                     key=(t.KIND, t.first, t.width) if t.is_fixed else id(value))
    if isinstance(t, SpecialRegType):
        return Shape("special", count=t.width, special=t.reg_name, text=text,
                     key=t.reg_name)
    if isinstance(t, OffType):
        return Shape("off", text="off")
    if isinstance(t, TokenType):
        return Shape("token", text=text)
    if is_immediate(value):
        imm, imm_type, literal = immediate_of(value, layout)
        shown = text if imm is None else f"{'literal ' if literal else ''}{_fmt_num(imm)}"
        return Shape("imm", imm=imm, imm_type=imm_type, literal=literal, text=shown)
    return Shape("other", text=text)


# --- exact operand keys ------------------------------------------------------------------
#
# Matching an op against its forms costs tens of microseconds; a kernel repeats a few hundred
# operand patterns thousands of times. These keys hold everything a Shape tells the checks
# (file, index, width, alignment, named register, immediate value and kind, and which operands
# are the same relocatable value, for the constant bus) and nothing that only appears in
# messages, so two ops with equal keys are accepted or rejected alike.

_PLAIN_TYPES = (OffType, TokenType)


def type_key(t: Attribute) -> tuple | type | None:
    """A hashable stand-in for an amdgcn type, equal exactly when the types are equal (hashing
    the xDSL attribute itself is several times slower); None for other types."""
    cls = type(t)
    if cls in NAMED_REGISTER_CLASSES:
        return (cls, t.index.data, t.count.data, t.align.data)  # type: ignore[attr-defined]
    if cls is SpecialRegType:
        return (cls, t.reg.data)  # type: ignore[attr-defined]
    if cls in _PLAIN_TYPES:
        return cls
    return None


def operands_key(values: Sequence[SSAValue], layout: object | None = None) -> tuple | None:
    """The exact matching key of an op's operands (see above); None if an operand is of a
    kind no form accepts (such ops are never cached: they only produce errors)."""
    keys: list[object] = []
    values = tuple(values)  # (an op's operand view indexes slowly)
    for value in values:
        t = value.type
        key = type_key(t)
        if key is None:
            if not is_immediate(value):
                return None
            imm, imm_type, literal = immediate_of(value, layout)
            # The Python type separates 1 from 1.0 and True; floats by their bits (-0.0).
            shown = imm.hex() if isinstance(imm, float) else imm
            key = ("imm", type(imm), shown, imm_type, literal)
        elif type(key) is tuple and key[1] == RELOCATABLE:
            # Relocatable values are told apart by identity (constant-bus reads of SGPRs):
            # keep the index of the first operand that is the same value.
            key = (key, values.index(value))
        keys.append(key)
    return tuple(keys)


def is_relocatable_key(key: object) -> bool:
    """True if an operand key (of `operands_key`) stands for a relocatable register."""
    return type(key) is tuple and type(key[0]) is tuple


def modifiers_key(mods: Mapping[str, ModValue]) -> tuple:
    """The exact key of decoded modifiers (the value's type separates True from 1)."""
    return tuple((name, type(value), value) for name, value in mods.items())


def _fmt_num(v: float) -> str:
    if isinstance(v, int) and (v > 0xFFFF or v < -0xFFFF):
        return hex(v)
    return repr(v) if isinstance(v, float) else str(v)


@dataclass(frozen=True)
class Match:
    """The database form an instruction op stands for."""

    instruction: Instruction
    form: Form
    suffix: str
    specs: tuple[OperandSpec, ...]  # the IR operands' specs (skipped syntax operands removed)

    @property
    def def_positions(self) -> list[int]:
        """Indices of the destination operands (the op returns them, in this order)."""
        return [i for i, s in enumerate(self.specs) if s.role == "def"]

    @property
    def has_token(self) -> bool:
        """True if the instruction is counted by a wait counter (returns a token)."""
        return bool(self.form.counters)

    @property
    def source_positions(self) -> list[int]:
        """Indices of the source operands that source modifiers (neg/abs/sext) index."""
        return [i for i, s in enumerate(self.specs) if s.role == "use" and not s.fixed]

    def result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        """The result types destination passing implies for these operand types."""
        types = [operand_types[i] for i in self.def_positions if i < len(operand_types)]
        if self.has_token:
            types.append(TokenType())
        return types


def ir_specs(form: Form) -> tuple[OperandSpec, ...]:
    """The operands of `form` that are SSA operands in the IR."""
    return tuple(s for s in form.operands if s.syntax not in IR_SKIPPED_SYNTAX)


def resolve(isa: IsaDatabase, mnemonic: str) -> tuple[Instruction, str]:
    """(instruction, suffix) of a mnemonic, or a MatchError saying where it exists."""
    found = isa.resolve(mnemonic)
    if found is not None:
        return found
    for other in known_isa_targets():
        if other != isa.target and get_isa(other).resolve(mnemonic) is not None:
            raise MatchError(f"'{mnemonic}' is not available on {isa.target} "
                             f"(it is a {other} instruction)")
    near = isa.similar(mnemonic)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    raise MatchError(f"unknown instruction '{mnemonic}' for {isa.target}{hint}")


def _suffix_ok(form: Form, suffix: str) -> bool:
    if not suffix:
        return True
    # A VOP3-only opcode has no printed suffix but answers to _e64, as in LLVM.
    return form.suffix == suffix or (suffix == "_e64" and form.enc == "VOP3")


def family_forms(inst: Instruction, suffix: str, encodings: Sequence[str]) -> list[Form]:
    """The forms of `inst` an op of this family (and suffix) can stand for."""
    return [f for f in inst.forms if f.enc in encodings and _suffix_ok(f, suffix)]


def families_of(inst: Instruction, suffix: str = "") -> list[str]:
    """`amdgcn.<family>` names that can hold `inst` (with `suffix`)."""
    out: list[str] = []
    for f in inst.forms:
        if _suffix_ok(f, suffix):
            name = f"amdgcn.{FAMILY_OF_ENCODING[f.enc]}"
            if name not in out:
                out.append(name)
    return out


def match_op(isa: IsaDatabase, encodings: Sequence[str], mnemonic: str,
             shapes: Sequence[Shape], mods: Mapping[str, ModValue],
             decode_only: bool = False) -> Match:
    """The form of `mnemonic` in `encodings` that fits the operands; MatchError if none.
    `decode_only` (an instruction kept as decoded) checks the operands' kinds only: not
    widths, alignment, field ranges, the constant bus or the modifiers."""
    inst, suffix = resolve(isa, mnemonic)
    forms = family_forms(inst, suffix, encodings)
    if decode_only:
        forms.sort(key=variant_flags, reverse=True)
    if not forms:
        where = families_of(inst, suffix)
        fam = ", ".join(where) if where else "none"
        raise MatchError(f"'{mnemonic}' has no {'/'.join(encodings)} encoding; write it as "
                         f"{fam}")
    errors: list[MatchError] = []
    for form in forms:
        try:
            match = _match_form(inst, form, suffix, shapes, mods, decode_only)
        except MatchError as err:
            errors.append(err)
            continue
        return match
    best = max(errors, key=lambda e: e.score)
    if len(forms) > 1 and all(e.operand is None for e in errors):
        variants = "; ".join(f"{f.variant or f.enc}: {e.message}" for f, e in zip(forms, errors))
        best = MatchError(f"no form fits ({variants})")
    hint = _other_family_hint(inst, suffix, encodings, shapes, mods)
    if hint:
        best = MatchError(f"{best.message}; {hint}", best.operand, best.score)
    raise best


_HINT_ORDER = {"VOP3": 0, "VOP3P": 0, "DPP": 2, "SDWA": 2}


def _other_family_hint(inst: Instruction, suffix: str, encodings: Sequence[str],
                       shapes: Sequence[Shape], mods: Mapping[str, ModValue]) -> str:
    for form in sorted(inst.forms, key=lambda f: _HINT_ORDER.get(f.enc, 1)):
        if form.enc in encodings:
            continue
        try:
            _match_form(inst, form, "", shapes, {})
        except MatchError:
            continue
        return (f"the {form.enc} encoding accepts these operands "
                f"(write amdgcn.{FAMILY_OF_ENCODING[form.enc]})")
    return ""


def _match_form(inst: Instruction, form: Form, suffix: str, shapes: Sequence[Shape],
                mods: Mapping[str, ModValue], decode_only: bool = False) -> Match:
    specs = ir_specs(form)
    n_optional = sum(1 for s in specs if s.optional)
    if not len(specs) - n_optional <= len(shapes) <= len(specs):
        names = ", ".join(s.name for s in specs) or "none"
        want = (str(len(specs)) if not n_optional
                else f"{len(specs) - n_optional} to {len(specs)}")
        raise MatchError(f"takes {want} operand{'s' if len(specs) != 1 else ''} ({names}), "
                         f"got {len(shapes)}", None, -1)
    for pos, (spec, shape) in enumerate(zip(specs, shapes)):
        problem = check_operand(form, spec, shape, mods, decode_only)
        if problem:
            raise MatchError(f"operand #{pos} ({spec.name}) {problem}", pos, pos)
    _check_literals(form, specs, shapes)
    match = Match(inst, form, suffix, specs)
    if decode_only:
        _check_variant_flags(form, mods)
        return match
    _check_constant_bus(form, specs, shapes)
    try:
        check_modifiers(match, mods, shapes)
    except MatchError as err:
        raise MatchError(err.message, err.operand, len(specs)) from None
    return match


def describe_spec(spec: OperandSpec, width: int | None = None) -> str:
    """Plain words for what an operand slot accepts."""
    if spec.fixed:
        return spec.fixed
    files = {"v": "VGPR", "a": "AGPR", "s": "SGPR"}
    regs = [files[k] for k in spec.kinds if k in files]
    parts: list[str] = []
    w = spec.width if width is None else width
    if regs:
        text = " or ".join(regs)
        if w > 1:
            text += f" range of {w} registers"
            if spec.align > 1:
                text += f" aligned to {spec.align}"
        parts.append(text)
    if "i" in spec.kinds:
        parts.append("an inline constant")
    if "l" in spec.kinds:
        parts.append("a 32-bit literal")
    if "k" in spec.kinds:
        parts.append("an immediate")
    if "off" in spec.kinds:
        parts.append("off")
    return ", ".join(parts[:-1]) + (" or " if len(parts) > 1 else "") + parts[-1] \
        if parts else "nothing"


def _expected_width(form: Form, spec: OperandSpec, shape: Shape,
                    mods: Mapping[str, ModValue]) -> tuple[int, ...]:
    # gfx950 f8f6f4 MFMA: A/B take 8, 6 or 4 registers depending on cbsz/blgp (as mc.matcher).
    if "f8f6f4" in form.mnemonic and spec.name in ("src0", "src1"):
        return (4, 6, 8)
    # MUBUF/MTBUF with both idxen and offen address with a VGPR pair.
    if form.enc in ("MUBUF", "MTBUF") and spec.name == "vaddr":
        return (2,) if mods.get("idxen") and mods.get("offen") else (1,)
    return (spec.width,)


def _accepts_off(form: Form, spec: OperandSpec) -> bool:
    # MUBUF/MTBUF address with `off` when neither offen nor idxen is set (offset-only).
    return "off" in spec.kinds or (form.enc in ("MUBUF", "MTBUF") and spec.name == "vaddr")


def check_operand(form: Form, spec: OperandSpec, shape: Shape,
                  mods: Mapping[str, ModValue], decode_only: bool = False) -> str | None:
    """Why `shape` cannot be operand `spec` of `form` (None if it can); `decode_only`
    checks only the operand's kind (register file, immediate, off)."""
    got = f"got {shape.text}"
    if spec.fixed:
        if shape.kind == "special" and shape.special == spec.fixed:
            return None
        alternative = fixed_alternative(form, spec)
        if alternative is None:
            return f"must be {spec.fixed} (!amdgcn.special<{spec.fixed}>), {got}"
        if not shape.is_register or shape.file_kind != "s":
            return (f"must be {spec.fixed} (!amdgcn.special<{spec.fixed}>) or an SGPR pair, "
                    f"{got}")
        spec = alternative  # (an SDWA compare with its sd bit: any SGPR pair)
    if spec.role == "def" and not shape.is_register:
        return (f"is a destination: it needs a register value (e.g. from amdgcn.alloca), "
                f"{got}")
    if shape.is_register:
        if shape.file_kind not in spec.kinds:
            return f"expects {describe_spec(spec)}, {got}"
        if shape.kind == "special" and (shape.special not in SPECIAL_REGISTERS
                                        or shape.special in getattr(spec, "excludes", ())):
            return f"cannot be {shape.special} here (expects {describe_spec(spec)})"
        if decode_only:
            return None
        aperture = shape.kind == "special" and shape.special in APERTURES
        if aperture and "i" not in spec.kinds:
            return (f"cannot be the constant {shape.special} (it reads as an inline constant; "
                    f"this slot expects {describe_spec(spec)})")
        widths = _expected_width(form, spec, shape, mods)
        # An aperture (a 64-bit value) reads as a source of any width, like a constant (as
        # mc.matcher and LLVM take it).
        if shape.count not in widths and not (aperture and spec.role == "use"):
            want = " or ".join(str(w) for w in widths)
            return (f"expects {describe_spec(spec, widths[0])} ({want} register"
                    f"{'s' if widths != (1,) else ''}), {got} ({shape.count})")
        if shape.index != RELOCATABLE:
            align = spec.align
            if shape.kind == "s" and shape.count > 1:
                align = max(align, 2 if shape.count == 2 else 4)  # SGPR tuple alignment
            if align > 1 and shape.index % align:
                return (f"needs a register range aligned to {align}, {got} "
                        f"(starts at {shape.kind}{shape.index})")
        return None
    if shape.kind == "off":
        return None if _accepts_off(form, spec) else f"expects {describe_spec(spec)}, got off"
    if shape.kind == "imm":
        if decode_only and {"i", "l", "k"} & set(spec.kinds):
            return None
        return _check_immediate(form, spec, shape)
    return f"expects {describe_spec(spec)}, {got}"


INV_2PI = syntax.INLINE_FLOATS[248]


def canonical_float(value: float) -> float:
    """1/(2*pi) at any precision (an f16 constant rounds it) as the inline constant's value."""
    return INV_2PI if abs(value - INV_2PI) < 1e-4 else value


def is_inline(value: float) -> bool:
    """True if `value` is an inline constant (no literal needed)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return syntax.inline_int_code(value) is not None
    return value == 0.0 or syntax.inline_float_code(canonical_float(value)) is not None


INLINE_TEXT = "integers -16..64; 0.5, 1.0, 2.0, 4.0, their negatives; 1/(2*pi)"


def field_range(form: Form, spec: OperandSpec) -> tuple[int, int, str]:
    """(lo, hi, description) of a plain immediate field operand."""
    if form.enc == "SMEM" and spec.name == "offset":
        if any(s.name == "sbase" and s.width == 4 for s in form.operands):
            return 0, (1 << 20) - 1, "20-bit unsigned"  # s_buffer_*: unsigned, as LLVM
        return -(1 << 20), (1 << 20) - 1, "21-bit signed"
    if spec.name == "simm16":
        return -(1 << 15), (1 << 16) - 1, "16-bit"
    fmt = FORMATS.get(form.format)
    fld = fmt.fields.get(spec.name) if fmt else None
    if fld is not None:
        return -(1 << (fld.width - 1)), (1 << fld.width) - 1, f"{fld.width}-bit"
    return -(1 << 31), (1 << 32) - 1, "32-bit"


def _check_immediate(form: Form, spec: OperandSpec, shape: Shape) -> str | None:
    kinds = spec.kinds
    v = shape.imm
    if not {"i", "l", "k"} & set(kinds):
        return f"expects {describe_spec(spec)}, got the constant {shape.text}"
    if shape.literal:
        if "l" in kinds:
            return None
        return f"cannot take a literal ({describe_spec(spec)} expected), got {shape.text}"
    if "k" in kinds and not {"i", "l"} & set(kinds):
        if v is None:
            return None
        if isinstance(v, float):
            return f"is an integer immediate field, got {shape.text}"
        lo, hi, what = field_range(form, spec)
        if not lo <= v <= hi:
            return f"is a {what} immediate field: {v} is out of range [{lo}, {hi}]"
        return None
    if v is None:
        return None
    if "i" in kinds and is_inline(v):
        return None
    if "l" not in kinds:
        return (f"takes an inline constant here ({INLINE_TEXT}): {shape.text} would need a "
                f"32-bit literal, which the {form.enc} encoding cannot hold")
    if isinstance(v, int):
        if not -(1 << 31) <= v <= (1 << 32) - 1:
            return f"takes a 32-bit literal, {shape.text} does not fit in 32 bits"
        return None
    if (spec.type or "").endswith("f64") and not math.isinf(v):
        low = struct.unpack("<Q", struct.pack("<d", v))[0] & 0xFFFFFFFF
        if low:
            return (f"is a 64-bit float operand whose literal holds only the high 32 bits: "
                    f"{shape.text} is not representable")
    return None


def _literal_key(spec: OperandSpec, shape: Shape) -> object | None:
    if shape.kind != "imm" or "l" not in spec.kinds:
        return None
    if shape.literal or shape.imm is None or not ("i" in spec.kinds and is_inline(shape.imm)):
        return ("lit", shape.imm, shape.literal)
    return None


def _check_literals(form: Form, specs: Sequence[OperandSpec], shapes: Sequence[Shape]) -> None:
    keys = {k for s, sh in zip(specs, shapes) if (k := _literal_key(s, sh)) is not None}
    if len(keys) > 1:
        raise MatchError("an instruction holds one 32-bit literal; these operands need "
                         f"{len(keys)} different literals", None, 100)


def _check_constant_bus(form: Form, specs: Sequence[OperandSpec],
                        shapes: Sequence[Shape]) -> None:
    if form.enc not in VALU_ENCODINGS:
        return
    reads: set[object] = set()
    for spec, shape in zip(specs, shapes):
        if spec.role == "use" and spec.fixed == "vcc":
            reads.add("vcc")
            continue
        if spec.name not in SOURCE_FIELDS or spec.role != "use":
            continue
        if shape.kind in ("s", "ttmp", "special"):
            reads.add(shape.key)
        elif (key := _literal_key(spec, shape)) is not None:
            reads.add(key)
    if len(reads) > CONSTANT_BUS_LIMIT:
        raise MatchError(f"reads {len(reads)} different SGPRs/literals; gfx9 VALU "
                         f"instructions have {CONSTANT_BUS_LIMIT} constant-bus read "
                         "(move one value to a VGPR)", None, 100)


# --- modifiers ------------------------------------------------------------------------------


def allowed_modifiers(match: Match) -> set[str]:
    """Modifier names the matched form accepts."""
    form = match.form
    names = {_DB_MODIFIER_ALIASES.get(m, m) for m in form.modifiers}
    names |= ENCODING_MODIFIERS.get(form.enc, frozenset())
    if form.enc == "SDWA" and not any(s.name == "vdst" for s in match.specs):
        names -= {"dst_sel", "dst_unused"}
    if any(s.syntax == "waitcnt" for s in form.operands):
        names |= set(WAITCNT_COUNTERS)
    if form.enc not in ("VOP3P", "MAI", "MAI_SCALE") and any(s.mods for s in match.specs):
        names |= {"neg", "abs", "sext"}
    elif "_mix" in form.mnemonic:
        names |= {"neg", "abs"}  # (v_fma_mix*: -x and |x| per source, in NEG / NEG_HI)
    return names


def offset_range(form: Form) -> tuple[int, int, str]:
    """(lo, hi, description) of the `offset` modifier of a memory form."""
    if form.enc == "DS":
        width = FORMATS["DS"].fields["offset0"].width + FORMATS["DS"].fields["offset1"].width
        return 0, (1 << width) - 1, f"{width}-bit unsigned"
    fmt = FORMATS.get(form.format)
    width = fmt.fields["offset"].width if fmt and "offset" in fmt.fields else 12
    if form.enc in ("GLOBAL", "SCRATCH"):
        return -(1 << (width - 1)), (1 << (width - 1)) - 1, f"{width}-bit signed"
    if form.enc == "FLAT":
        # FLAT (generic) addresses take only the non-negative half of the field on gfx9.
        return 0, (1 << (width - 1)) - 1, f"{width - 1}-bit unsigned"
    return 0, (1 << width) - 1, f"{width}-bit unsigned"


def check_modifiers(match: Match, mods: Mapping[str, ModValue],
                    shapes: Sequence[Shape]) -> None:
    """Raise MatchError if a modifier is unknown to the form or out of range."""
    allowed = allowed_modifiers(match)
    form = match.form
    for name, value in mods.items():
        if name not in allowed:
            listed = ", ".join(sorted(allowed)) or "none"
            raise MatchError(f"modifier '{name}' is not accepted by this {form.enc} form "
                             f"(accepted: {listed})")
        problem = _check_modifier_value(match, name, value)
        if problem:
            raise MatchError(f"modifier {name}: {problem}")
    _check_variant_flags(form, mods)
    if form.enc == "DS" and form.mnemonic.startswith("ds_gws") and not mods.get("gds"):
        raise MatchError("GWS instructions need the gds modifier")  # as mc.matcher / LLVM
    if form.enc == "DPP" and any(s.width == 2 for s in match.specs):
        ctrl = mods.get("dpp_ctrl")
        lo = syntax.DPP_ROW_NEWBCAST
        if not isinstance(ctrl, int) or not lo <= ctrl <= lo + 15:
            raise MatchError(f"64-bit DPP supports only row_newbcast: dpp_ctrl = {lo:#x} + n "
                             "(0..15)")
    if form.enc in ("MUBUF", "MTBUF"):
        _check_buffer_addressing(match, mods, shapes)


def _check_variant_flags(form: Form, mods: Mapping[str, ModValue]) -> None:
    """MatchError unless the flags that select `form`'s variant are set."""
    for name, value in form.fixed.items():
        # A variant implied by a modifier (returning atomics: sc0/glc; LDS loads: lds).
        if name in FLAG_MODIFIERS and value and not mods.get(name):
            what = "returns the old value" if "rtn" in (form.variant or "") else form.variant
            raise MatchError(f"this form ({what}) needs the {name} modifier")


def variant_flags(form: Form) -> int:
    """How many modifier flags select `form`'s variant (a decoded instruction, which the
    rules do not narrow down, takes the most specific variant its flags allow)."""
    return sum(1 for name, value in form.fixed.items() if name in FLAG_MODIFIERS and value)


def _check_modifier_value(match: Match, name: str, value: ModValue) -> str | None:
    form = match.form
    if name in FLAG_MODIFIERS:
        return None if value is True else f"is a flag (write just '{name}'), got {value!r}"
    if name in INT_MODIFIERS:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"expects an integer, got {value!r}"
        lo, hi, what = offset_range(form) if name == "offset" else (*INT_RANGES[name], "")
        if not lo <= value <= hi:
            return f"{value} is out of range [{lo}, {hi}]" + (f" ({what})" if what else "")
        return None
    if name in LIST_MODIFIERS:
        if not isinstance(value, tuple) or any(v not in (0, 1) for v in value):
            return f"expects a list of 0/1 bits such as [0, 1], got {value!r}"
        if len(value) > 4:
            return f"has {len(value)} bits; at most 4"
        if name == "neg" and form.enc == "MAI":
            # f64 MFMAs: neg:[a,b,c] is the BLGP field (bits 61-63), not per-source modifiers
            return None if len(value) <= 3 else f"has {len(value)} bits; at most 3 (A, B, C)"
        if name in ("neg", "abs", "sext"):
            sources = match.source_positions
            for k, bit in enumerate(value):
                if not bit:
                    continue
                if k >= len(sources) or not match.specs[sources[k]].mods:
                    return f"source #{k} does not accept input modifiers"
                t = match.specs[sources[k]].type or ""
                if name == "sext" and t and not t.lstrip("v2").startswith("i"):
                    return f"sext applies to integer sources; source #{k} is {t}"
                if name != "sext" and t.lstrip("v2").startswith("i"):
                    return f"{name} applies to float sources; source #{k} is {t}"
        return None
    if name in NAME_MODIFIERS:
        names = syntax.SDWA_UNUSED if name == "dst_unused" else syntax.SDWA_SEL
        if value not in names:
            return f"expects one of {', '.join(names)}, got {value!r}"
        return None
    return "unknown modifier"


def _check_buffer_addressing(match: Match, mods: Mapping[str, ModValue],
                             shapes: Sequence[Shape]) -> None:
    form = match.form
    pos = next((i for i, s in enumerate(match.specs) if s.name == "vaddr"), None)
    addressed = bool(mods.get("offen") or mods.get("idxen"))
    if pos is not None and pos < len(shapes):
        if shapes[pos].kind == "off" and addressed:
            raise MatchError("offen/idxen need a VGPR address in vaddr, not off", pos)
        if shapes[pos].kind != "off" and not addressed:
            raise MatchError("vaddr is a VGPR but neither offen nor idxen is set (pass off "
                             "as vaddr for an offset-only access)", pos)
    if form.variant != "lds" and mods.get("lds"):
        raise MatchError("lds loads take no vdata operand (vaddr, srsrc, soffset)")


def check_results(match: Match, operand_types: Sequence[Attribute],
                  result_types: Sequence[Attribute]) -> None:
    """Raise MatchError unless the results are the destinations (then the token)."""
    expected = match.result_types(operand_types)
    names = [match.specs[i].name for i in match.def_positions]
    if match.has_token:
        names.append("token")
    if len(result_types) != len(expected):
        listed = ", ".join(names) if names else "nothing"
        raise MatchError(f"returns {len(expected)} value{'s' if len(expected) != 1 else ''} "
                         f"({listed}), but the op has {len(result_types)} result"
                         f"{'s' if len(result_types) != 1 else ''}")
    for k, (want, got) in enumerate(zip(expected, result_types)):
        if want != got:
            what = ("the completion token !amdgcn.token" if names[k] == "token"
                    else f"the type of its destination operand {names[k]} "
                         f"({type_text(want)})")
            raise MatchError(f"result #{k} must have {what}, got {type_text(got)} "
                             "(destination passing: the result is the destination register)")

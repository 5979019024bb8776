"""Form selection and operand checking: which database form encodes an `Inst` as written.

An explicit suffix (_e32, _e64, _dpp, _sdwa) is honoured. Without one, the choice is LLVM's:
the 32-bit encoding (VOP1/VOP2/VOPC) when the operands fit it, else the 64-bit VOP3 form; DPP
or SDWA when their controls are present. Errors name the instruction, the operand (by its
database name) and what was expected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from asterism.errors import VerifyError
from asterism.isa import Form, IsaDatabase, OperandSpec, get_isa, syntax
from asterism.isa.database import KIND_NAMES
from asterism.mc.inst import Inst
from asterism.mc.operand_codes import F8F6F4_REGS, _as_signed
from asterism.mc.operands import (
    SPECIAL_REGISTERS,
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
from asterism.mc.per_form import PerForm

DPP_MODIFIERS = {"dpp_ctrl", "row_mask", "bank_mask", "bound_ctrl"}
SDWA_MODIFIERS = {"dst_sel", "dst_unused", "src0_sel", "src1_sel"}
# Encoding preference when no suffix is written (LLVM tries the short encodings first).
ENC_ORDER = {"VOP1": 0, "VOP2": 0, "VOPC": 0, "VOP3": 1, "VOP3P": 1, "MAI": 1, "MAI_SCALE": 1,
             "DPP": 2, "SDWA": 2}
SRC_FIELDS = {"src0", "src1", "src2", "vsrc1", "ssrc0", "ssrc1", "scale_src0", "scale_src1"}
# The aperture constants are source codes, not register ranges: LLVM reads them at any width.
APERTURES = {"src_shared_base", "src_shared_limit", "src_private_base", "src_private_limit",
             "shared_base", "shared_limit", "private_base", "private_limit"}
VALU_ENCS = {"VOP1", "VOP2", "VOPC", "VOP3", "VOP3P", "MAI", "MAI_SCALE", "DPP", "SDWA"}


class MatchError(Exception):
    """Why one form does not fit (collected to explain the best candidate)."""

    def __init__(self, score: int, message: str, operand: int | None = None):
        super().__init__(message)
        self.score = score
        self.message = message
        self.operand = operand  # index of the written operand at fault, if one is


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
        return "i" if syntax.inline_float_code(op.value) is not None and not op.lit else "l"
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


def fixed_alternative(form: Form, spec: OperandSpec) -> OperandSpec | None:
    """What a fixed-register slot also accepts, or None: an SDWA compare writes vcc or, with
    its `sd` bit, any SGPR pair (as LLVM's assembler and decoder take it)."""
    if spec.fixed == "vcc" and spec.role == "def" and form.enc == "SDWA" \
            and form.format == "VOPC":
        return replace(spec, fixed=None, kinds=("s",), width=2)
    return None


def _is_buffer_vaddr(form: Form, spec: OperandSpec) -> bool:
    return form.enc in ("MUBUF", "MTBUF") and spec.name == "vaddr"


def _check_buffer_vaddr(inst: Inst, pos: int, where: str, op: Operand) -> bool:
    """A buffer address is `off` exactly when neither offen nor idxen is set (as LLVM's
    assembler takes it); True when `op` is `off` and that is right."""
    indexed = bool(inst.modifiers.get("offen") or inst.modifiers.get("idxen"))
    if isinstance(op, Off):
        if indexed:
            raise MatchError(pos, f"{where}: offen/idxen need an address VGPR, got off")
        return True
    if not indexed and operand_kind(op) in ("v", "a"):
        raise MatchError(pos, f"{where}: an address VGPR needs offen or idxen (without them "
                              "the address is `off`)")
    return False


def check_operand(inst: Inst, form: Form, pos: int, spec: OperandSpec, op: Operand) -> None:
    """Raise MatchError if `op` cannot be operand `pos` (`spec`) of `form`."""
    where = f"operand {pos + 1} ({spec.name})"
    if _is_buffer_vaddr(form, spec) and _check_buffer_vaddr(inst, pos, where, op):
        return
    if spec.fixed:
        name = op.name if isinstance(op, Special) else None
        if name == spec.fixed:
            return
        alternative = fixed_alternative(form, spec)
        if alternative is None:
            raise MatchError(pos, f"{where}: expected {spec.fixed}, got {_describe(op)}")
        if operand_kind(op) != "s":
            raise MatchError(pos, f"{where}: expected {spec.fixed} or an SGPR pair, got "
                                  f"{_describe(op)}")
        spec = alternative
    if isinstance(op, Mod):
        if not spec.mods:
            raise MatchError(pos, f"{where}: source modifiers (neg/abs/sext) are not allowed")
        if spec.mod_kind == "none":
            raise MatchError(pos, f"{where}: source modifiers are not accepted here (LLVM's "
                             "assembler takes none, though the bits decode)")
        if spec.mod_kind == "int" and (op.neg or op.abs):
            raise MatchError(pos, f"{where}: an integer operand takes sext(), not neg/abs")
        if spec.mod_kind == "fp" and op.sext:
            raise MatchError(pos, f"{where}: a float operand takes neg/abs, not sext()")
    kind = operand_kind(op)
    kinds = set(spec.kinds)
    if kind == "label":
        if spec.syntax == "label":
            return
        raise MatchError(pos, f"{where}: expected {_expected(spec)}, got label {op}")
    if kind == "k" and spec.syntax:
        return
    _check_forced_literal(pos, where, spec, op)
    if kind in ("i", "l") and "k" in kinds:
        return  # a plain immediate field; range is checked by the encoder
    if kind == "l" and isinstance(op, Imm) and syntax.inline_int_code(
            _as_signed(op.value, spec.type)) is not None:
        kind = "i"  # 0xffffffff is -1 for a 32-bit operand
    if kind == "i" and "i" not in kinds and "l" in kinds:
        kind = "l"
    if kind not in kinds:
        raise MatchError(pos, f"{where}: expected {_expected(spec)}, got {_describe(op)}")
    base = op.operand if isinstance(op, Mod) else op
    if isinstance(base, Special) and base.name in spec.excludes:
        raise MatchError(pos, f"{where}: {base.name} is not allowed here")
    if isinstance(base, Special) and base.name in APERTURES and "i" not in kinds:
        raise MatchError(pos, f"{where}: the constant {base.name} is not allowed here (a "
                              "register operand)")
    if kind in ("v", "a", "s") and spec.width and not (
            isinstance(base, Special) and base.name in APERTURES and spec.role == "use"):
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


def _check_forced_literal(pos: int, where: str, spec: OperandSpec, op: Operand) -> None:
    """lit(float) and lit64(...) where LLVM's assembler refuses them on gfx9."""
    if isinstance(op, FloatImm) and spec.type == "i64" and (
            op.lit or syntax.inline_float_code(op.value) is None):
        raise MatchError(pos, f"{where}: a 64-bit integer operand takes a float only as an "
                              "inline constant")
    spelling = op.spelling if isinstance(op, Literal) else op.lit if isinstance(
        op, FloatImm) else ""
    if spelling == "lit64" and spec.type and spec.type.lstrip("v2").startswith(("f", "bf")):
        raise MatchError(pos, f"{where}: lit64 is not supported on this GPU (for a "
                              f"{spec.type} operand)")


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
    bus = _BUS(form)
    if bus is None:
        return
    positions, reads_vcc = bus
    ops = inst.operands
    scalars: set[str] = set()
    for pos in positions:
        if pos >= len(ops):
            break
        op = ops[pos]
        base = op.operand if isinstance(op, Mod) else op
        kind = operand_kind(base)
        if kind == "s":
            # v_writelane's lane select may be M0 besides an SGPR value (as LLVM allows).
            if not (form.mnemonic == "v_writelane_b32" and str(base) == "m0"):
                scalars.add(str(base))
        elif kind == "l":
            scalars.add(f"literal {base}")
    if reads_vcc:
        scalars.add("vcc")
    if len(scalars) > 1:
        raise MatchError(99, "reads more than one SGPR or literal "
                             f"({', '.join(sorted(scalars))}); gfx9 VALU instructions have one "
                             "constant-bus read")


def _bus_sources(form: Form) -> tuple[tuple[int, ...], bool] | None:
    """(positions of the source operands, reads vcc implicitly) of a VALU form, else None."""
    if form.enc not in VALU_ENCS:
        return None
    positions = tuple(pos for pos, spec in enumerate(form.operands)
                      if spec.name in SRC_FIELDS and spec.role == "use")
    return positions, any(spec.fixed == "vcc" and spec.role == "use" for spec in form.operands)


_BUS = PerForm(_bus_sources)


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
    forms = [f for f in instr.forms if f.assembles]
    if suffix:
        forms = [f for f in forms if f.suffix == suffix
                 or (suffix == "_e32" and f.enc in ("VOP1", "VOP2", "VOPC"))
                 or (suffix == "_e64" and f.enc == "VOP3")]
    return sorted(forms, key=lambda f: ENC_ORDER.get(f.enc, 0))


def select_form(inst: Inst, target: str) -> Form:
    """Choose the form that encodes `inst` as written; raises VerifyError if none fits."""
    key = _shape_key(inst, target)
    if key is not None:
        known = _BY_SHAPE.get(key)
        if known is not None:
            form, value_checks = known
            try:
                for rule in value_checks:
                    rule(inst, form)
            except MatchError:
                pass  # (this instruction's values decide: the full path below)
            else:
                return form
    candidates = _RESOLVED.get((target, inst.mnemonic))
    if candidates is None:
        candidates = _resolve_forms(inst, target)
    refused_so_far = True  # (every earlier candidate refused whatever the values)
    for form, quick in candidates:
        if quick.fits(inst):
            if key is not None and refused_so_far:
                if len(_BY_SHAPE) >= _BY_SHAPE_LIMIT:
                    _BY_SHAPE.clear()
                _BY_SHAPE[key] = (form, quick.rules.value_checks)
            return form
        if quick.refuses(inst):
            continue  # (match_form would raise: its message is made below if needed)
        refused_so_far = False
        try:
            match_form(inst, form)  # the authority: decides and explains
            return form
        except MatchError:
            pass
    errors: list[MatchError] = []
    for form, _quick in candidates:  # (none fits: the authority explains each)
        try:
            match_form(inst, form)
        except MatchError as err:
            # (without its traceback: that would hold this frame, which holds `errors`, in a
            # reference cycle only the cyclic collector frees)
            errors.append(err.with_traceback(None))
        else:  # pragma: no cover - refuses() said it would raise
            raise AssertionError(f"{form.mc_name}: _QuickMatch.refuses refused {inst}")
    best = max(errors, key=lambda e: e.score)
    refused = _decode_only_family(inst, candidates[0][0])
    if refused:
        raise VerifyError(f"{inst.mnemonic}: LLVM's assembler has no {refused} form of this "
                          "instruction (its words only decode)", inst.loc)
    err = VerifyError(f"{inst.mnemonic}: {best.message}", inst.loc)
    err.operand = best.operand  # the parser turns it into the operand's column
    raise err


# ---------------------------------------------------------------- choices by shape
#
# select_form's choice is remembered by the instruction's shape: its mnemonic, its modifier
# names (with the values of those whose value _modifier_fits or the buffer-address test
# reads) and, per operand, what the quick tests read of it (a register's kind, count and
# index alignment; whether a constant is inline; a special register's name; a literal's
# spelling...), never the register numbers or constant values themselves. A choice is
# remembered only when _QuickMatch decided it from the shape alone: every earlier candidate
# refused (refuses() reads the shape only) and the chosen one fits. The rules that read
# values (an MFMA's C overlapping its destination, gds, DPP64, dot op_sel, f8f6f4 sizes, a
# buffer SMEM offset) are run again on every reuse; if one refuses, the full path decides.
# tests/test_mc_speedups.py holds the remembered choice equal to the full path's.

# Modifiers whose value (not only their presence) a quick test reads.
_VALUE_MODIFIERS = frozenset({"sc0", "glc", "offen", "idxen"})
_BY_SHAPE: dict[tuple, tuple[Form, tuple[Callable[[Inst, Form], None], ...]]] = {}
_BY_SHAPE_LIMIT = 1 << 16


def _shape_key(inst: Inst, target: str) -> tuple | None:
    """The shape of `inst` (see above), or None for an operand kind the table does not
    take (then the full path decides every time)."""
    key: list = [target, inst.mnemonic]
    mods = inst.modifiers
    if mods:
        key.append(tuple([(name, value) if name in _VALUE_MODIFIERS else name
                          for name, value in mods.items()]))
    for op in inst.operands:
        shape = _operand_shape(op)
        if shape is None:
            return None
        key.append(shape)
    try:
        return tuple(key)
    except TypeError:  # pragma: no cover - (modifier values are hashable)
        return None


def _operand_shape(op: Operand) -> object:
    """What the quick tests read of one operand (None: not kept by shape)."""
    t = type(op)
    if t is Reg:
        # (the index only as far as alignment goes: SGPR tuples by 2 or 4, VGPRs and AGPRs
        # by 2; a trap temporary's never)
        kind, count = op.kind, op.count
        if kind == "s":
            return (kind, count, 0 if count == 1 else op.index & (1 if count == 2 else 3))
        return (kind, count, 0 if kind == "ttmp" else op.index & 1)
    if t is Imm:
        return 1 if -16 <= op.value <= 64 else 2
    if t is Special:
        return op.name
    if t is FloatImm:
        if op.lit:
            return 3
        return 4 if syntax.inline_float_code(op.value) is not None else 5
    if t is Literal:
        return 6 if op.spelling == "lit" else 7
    if t is Syntax:
        return 8
    if t is Label:
        return 9
    if t is Off:
        return 10
    if t is Mod:
        inner = _operand_shape(op.operand)
        return None if inner is None else ("mod", op.neg, op.abs, op.sext, inner)
    return None


def _decode_only_family(inst: Inst, form: Form) -> str | None:
    """"DPP" or "SDWA" if `inst` asks for that family and its only such forms are
    decode-only."""
    names = set(inst.modifiers)
    for enc, mods in (("DPP", DPP_MODIFIERS), ("SDWA", SDWA_MODIFIERS)):
        if names & mods and any(f.enc == enc and not f.assembles
                                for f in form.instruction.forms):
            return enc
    return None


# (target, mnemonic as written) -> (candidate form, its quick matcher), for mnemonics that
# have some.
_RESOLVED: dict[tuple[str, str], list[tuple[Form, _QuickMatch]]] = {}


def _resolve_forms(inst: Inst, target: str) -> list[tuple[Form, _QuickMatch]]:
    """The candidate forms of `inst`'s mnemonic with their quick matchers; raises
    VerifyError if there are none."""
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
    candidates = _RESOLVED[(target, inst.mnemonic)] = [(f, _QUICK(f)) for f in forms]
    return candidates


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
        try:
            check_operand(inst, form, pos, spec, op)
        except MatchError as err:
            err.operand = pos
            raise
    check_constant_bus(inst, form)
    check_form_rules(inst, form)


# ---------------------------------------------------------------- the quick path
#
# Most instructions fit their first candidate form. `_QuickMatch.fits` answers "certainly
# fits" with tests specialised per form and operand slot; any other answer falls through to
# match_form, which stays the one authority on rejections and their messages. The quick tests
# therefore only need to be exact when they accept.


class _QuickMatch:
    """Per-form tests that accept instructions match_form would accept."""

    def __init__(self, form: Form):
        specs = form.operands
        self.form = form
        self.n_max = len(specs)
        self.n_min = len(specs) - (1 if specs and specs[-1].optional else 0)
        self.tests = tuple(_operand_test(form, spec) for spec in specs)
        # (a buffer address: its test needs offen/idxen, which an operand test cannot see)
        self.vaddr = next(((pos, _buffer_vaddr_test(spec)) for pos, spec in enumerate(specs)
                           if _is_buffer_vaddr(form, spec)), None)
        # The register kinds each slot takes (None: a fixed register or a buffer address,
        # which check_operand treats apart): a register of another kind cannot fit.
        self.register_kinds = tuple(
            None if spec.fixed or _is_buffer_vaddr(form, spec) else frozenset(spec.kinds)
            for spec in specs)
        bus = _BUS(form)
        self.checks_bus = bus is not None
        self.bus_positions, self.bus_reads_vcc = bus if bus is not None else ((), False)
        self.rules = _RULES(form)
        # _modifier_fits by mnemonic (no modifiers) or (mnemonic, modifier names)
        self.modifier_fits: dict[str | tuple[str, tuple[str, ...]], str | None] = {}

    def fits(self, inst: Inst) -> bool:
        """True if `inst` fits the form; False if match_form must decide."""
        mods = inst.modifiers
        key = (inst.mnemonic, tuple(mods)) if mods else inst.mnemonic
        why = self.modifier_fits.get(key, _UNKNOWN)
        if why is _UNKNOWN:
            if len(self.modifier_fits) > 4096:
                self.modifier_fits.clear()
            why = self.modifier_fits[key] = _modifier_fits(self.form, inst)
        if why:
            return False
        ops = inst.operands
        if not self.n_min <= len(ops) <= self.n_max:
            return False
        for test, op in zip(self.tests, ops):
            if not test(op):
                return False
        if self.vaddr is not None:
            pos, vaddr_test = self.vaddr
            if pos < len(ops) and not vaddr_test(ops[pos], bool(
                    mods.get("offen") or mods.get("idxen"))):
                return False
        if self.checks_bus and _bus_reads(ops, self.bus_positions, self.bus_reads_vcc) > 1:
            return False  # maybe the same register twice: match_form compares them
        allowed = self.rules.allowed
        for name in mods:
            if name not in allowed:
                return False
        try:
            for rule in self.rules.checks:
                rule(inst, self.form)
        except MatchError:
            return False
        return True


    def refuses(self, inst: Inst) -> bool:
        """True if match_form certainly raises for `inst` (its modifiers do not fit, it has
        too few or too many operands, or a register of a kind its slot does not take);
        False if match_form must decide."""
        mods = inst.modifiers
        key = (inst.mnemonic, tuple(mods)) if mods else inst.mnemonic
        if self.modifier_fits.get(key):
            return True
        ops = inst.operands
        if not self.n_min <= len(ops) <= self.n_max:
            return True
        for kinds, op in zip(self.register_kinds, ops):
            if kinds is None:
                continue
            t = type(op)
            if t is Reg:
                if ("s" if op.kind == "ttmp" else op.kind) not in kinds:
                    return True
            elif t is Special and "s" not in kinds:
                return True
        return False


_UNKNOWN = object()
_QUICK = PerForm(_QuickMatch)


def _buffer_vaddr_test(spec: OperandSpec) -> Callable[[Operand, bool], bool]:
    """test(op, indexed): accepts the buffer addresses check_operand accepts (and maybe not
    all of them): `off` without offen/idxen, else a VGPR (a pair with both) of the slot's
    kinds and alignment."""
    kinds, width, align = spec.kinds, spec.width, spec.align

    def test(op: Operand, indexed: bool) -> bool:
        t = type(op)
        if t is Off:
            return not indexed
        return indexed and t is Reg and op.kind in ("v", "a") and op.kind in kinds and (
            op.count == width or op.count in (1, 2)) and (align <= 1 or not op.index % align)

    return test


def _bus_reads(ops: list[Operand], positions: tuple[int, ...], reads_vcc: bool) -> int:
    """How many source operands are SGPRs or literals, counting repeats (an upper bound of
    check_constant_bus's distinct reads); 2 for anything unusual."""
    reads = 1 if reads_vcc else 0
    n = len(ops)
    for pos in positions:
        if pos >= n:
            break
        op = ops[pos]
        if type(op) is Mod:
            op = op.operand
        t = type(op)
        if t is Reg:
            if op.kind == "s" or op.kind == "ttmp":
                reads += 1
        elif t is Imm:
            if not -16 <= op.value <= 64:
                reads += 1
        elif t is Special or t is Literal:
            reads += 1
        elif t is FloatImm:
            if syntax.inline_float_code(op.value) is None or op.lit:
                reads += 1
        elif not (t is Syntax or t is Label or t is Off):
            return 2
    return reads


def _operand_test(form: Form, spec: OperandSpec) -> Callable[[Operand], bool]:
    """A test accepting the operands check_operand accepts in this slot (and maybe not all
    of them: a rejection is re-checked by check_operand)."""
    if _is_buffer_vaddr(form, spec):
        # `off` or a VGPR depending on offen/idxen, which an operand test cannot see: tested
        # apart (_buffer_vaddr_test).
        return lambda op: True
    if spec.fixed:
        fixed = spec.fixed
        alternative = fixed_alternative(form, spec)
        if alternative is not None:
            other = _operand_test(form, alternative)
            return lambda op: (type(op) is Special and op.name == fixed) or other(op)
        return lambda op: type(op) is Special and op.name == fixed
    kinds = set(spec.kinds)
    allow_mods, excludes, width, align = spec.mods, spec.excludes, spec.width, spec.align
    mod_kind = spec.mod_kind
    reg_kinds = {"v": "v", "a": "a", "s": "s", "ttmp": "s"}
    any_imm = "k" in kinds  # a plain immediate field takes inline and literal values alike
    inline_ok = any_imm or "i" in kinds or "l" in kinds
    literal_ok = any_imm or "l" in kinds
    syntax_ok = bool(spec.syntax) or "k" in kinds
    label_ok = spec.syntax == "label"
    off_ok = "off" in kinds

    def test(op: Operand) -> bool:
        t = type(op)
        if t is Mod:
            if not allow_mods or mod_kind == "none" or (
                    mod_kind == "int" and (op.neg or op.abs)) or (
                    mod_kind == "fp" and op.sext):
                return False
            op = op.operand
            t = type(op)
        if t is Reg:
            if reg_kinds.get(op.kind) not in kinds:
                return False
            if not width:
                return True
            if op.count != width:
                return False  # (maybe a flexible width: check_operand knows)
            if op.kind == "s":
                return op.count == 1 or not op.index % (2 if op.count == 2 else 4)
            return align <= 1 or op.kind == "ttmp" or not op.index % align
        if t is Special:
            return "s" in kinds and op.name not in excludes and (
                not width or SPECIAL_REGISTERS.get(op.name) == width
                or (op.name in APERTURES and spec.role == "use")) and (
                op.name not in APERTURES or "i" in kinds)
        if t is Imm:
            return inline_ok if -16 <= op.value <= 64 else literal_ok
        if t is FloatImm:
            if op.lit:
                return False  # (check_operand knows where LLVM refuses it)
            if syntax.inline_float_code(op.value) is not None:
                return inline_ok
            return literal_ok and spec.type != "i64"
        if t is Literal:
            return literal_ok and op.spelling == "lit"
        if t is Syntax:
            return syntax_ok
        if t is Label:
            return label_ok
        if t is Off:
            return off_ok
        return False

    return test


# Modifiers every form of an encoding takes (beyond the probed form.modifiers).
FAMILY_MODIFIERS = {
    "MAI_SCALE": {"op_sel", "op_sel_hi", "cbsz", "blgp"},
    "DPP": DPP_MODIFIERS,
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
    rules = _RULES(form)
    for name in inst.modifiers:
        if name not in rules.allowed:
            raise MatchError(50, f"modifier '{name}' is not valid for {form.printed_mnemonic}")
    for rule in rules.checks:
        rule(inst, form)


@dataclass(frozen=True)
class _FormRules:
    """The modifiers a form allows and the rules (in checking order) that concern it."""

    allowed: frozenset[str]
    checks: tuple[Callable[[Inst, Form], None], ...]
    # (the checks that read operand or modifier values, not only the shape: run again when
    # select_form reuses a choice by shape)
    value_checks: tuple[Callable[[Inst, Form], None], ...] = ()


def _form_rules(form: Form) -> _FormRules:
    allowed = set(form.modifiers) | FAMILY_MODIFIERS.get(form.enc, set())
    if form.enc == "SDWA":
        allowed |= _sdwa_selects(form)
    if form.mnemonic.startswith("v_bitop3"):
        allowed.add("bitop3")
    if form.enc == "DS" and "offset" in allowed | {"offset0", "offset1"}:
        allowed |= {"offset0", "offset1"} if "offset0" in form.modifiers else {"offset"}
    checks = []
    if form.enc == "DS" and " gds" in form.example:
        checks.append(_rule_gds)
    if form.enc == "DPP" and any(s.width == 2 for s in form.operands if not s.fixed):
        checks.append(_rule_dpp64)
    if JOINT_AGPR.get(form.enc) and not form.mnemonic.startswith("v_smfmac"):
        checks.append(_joint_agpr_rule(form))  # (smfmac's src2 is an index)
    if form.enc == "VOP3P" and "_mix" not in form.mnemonic:
        checks.append(_rule_packed_mods)
    if form.enc == "VOP3P" and "dot" in form.instruction.flags:
        checks.append(_rule_dot_op_sel)
    if "f8f6f4" in form.mnemonic:
        checks.append(_rule_f8f6f4_sizes)
    if form.enc == "MAI" and not form.mnemonic.startswith("v_smfmac") \
            and "f8f6f4" not in form.mnemonic:  # (LLVM checks neither)
        checks.append(_mfma_overlap_rule(form))
    if form.enc == "SMEM" and form.mnemonic.startswith(("s_buffer_", "s_atc_probe_buffer")):
        checks.append(_rule_smem_buffer_offset)
    value_checks = tuple(c for c in checks if not getattr(c, "shape_only", False))
    return _FormRules(frozenset(allowed), tuple(checks), value_checks)


_RULES = PerForm(_form_rules)


def _sdwa_selects(form: Form) -> set[str]:
    """The SDWA select modifiers of a form's operands (clamp/omod come from the database)."""
    names = {spec.name for spec in form.operands}
    out = {"dst_sel", "dst_unused"} if "vdst" in names else set()
    if "src0" in names:
        out.add("src0_sel")
    if names & {"src1", "vsrc1"}:
        out.add("src1_sel")
    return out


def _rule_gds(inst: Inst, form: Form) -> None:
    if not inst.modifiers.get("gds"):
        raise MatchError(50, "needs the gds modifier")


def _rule_dpp64(inst: Inst, form: Form) -> None:
    ctrl = int(inst.modifiers.get("dpp_ctrl", 0xE4))
    if not 0x150 <= ctrl <= 0x15F:
        raise MatchError(50, "64-bit DPP only supports row_newbcast")


def _joint_agpr_rule(form: Form) -> Callable[[Inst, Form], None]:
    """The rule: the operands one AGPR-select bit switches are all VGPRs or all AGPRs."""
    joint = JOINT_AGPR[form.enc]
    positions = [pos for pos, spec in enumerate(form.operands) if spec.name in joint]
    message = (f"{', '.join(sorted(joint & {s.name for s in form.operands}))}"
               " must all be VGPRs or all AGPRs")

    def rule_joint_agpr(inst: Inst, form: Form) -> None:
        ops = inst.operands
        kinds = {op.kind for op in (ops[pos] for pos in positions if pos < len(ops))
                 if isinstance(op, Reg) and op.kind in ("v", "a")}
        if len(kinds) > 1:
            raise MatchError(50, message)

    rule_joint_agpr.shape_only = True  # type: ignore[attr-defined]  # (register kinds only)
    return rule_joint_agpr


def _rule_packed_mods(inst: Inst, form: Form) -> None:
    if any(isinstance(op, Mod) for op in inst.operands):
        raise MatchError(50, "packed instructions take neg_lo/neg_hi, not -x or |x|")


_rule_packed_mods.shape_only = True  # type: ignore[attr-defined]  # (source modifiers only)


def _rule_dot_op_sel(inst: Inst, form: Form) -> None:
    # As LLVM's assembler on gfx940+: a VOP3P dot instruction takes op_sel 0 and no written
    # op_sel_hi (its validation compares op_sel_hi with the unwritten default).
    op_sel = inst.modifiers.get("op_sel") or 0
    if (op_sel if isinstance(op_sel, int) else any(op_sel)) or "op_sel_hi" in inst.modifiers:
        raise MatchError(50, "invalid op_sel operand: dot instructions on gfx940+ take "
                         "op_sel 0 and the default op_sel_hi")


def _rule_f8f6f4_sizes(inst: Inst, form: Form) -> None:
    for spec, op in zip(form.operands, inst.operands):
        if spec.name in ("src0", "src1") and isinstance(op, Reg):
            sel = "cbsz" if spec.name == "src0" else "blgp"
            want = F8F6F4_REGS.get(int(inst.modifiers.get(sel, 0)), 8)
            if op.count != want:
                raise MatchError(50, f"{spec.name} {op}: {sel}:{inst.modifiers.get(sel, 0)}"
                                     f" needs {want} registers")


def _mfma_overlap_rule(form: Form) -> Callable[[Inst, Form], None]:
    """The rule: an MFMA's C operand does not partially overlap its destination."""
    names = [s.name for s in form.operands]
    if "vdst" not in names or "src2" not in names:
        return lambda inst, form: None
    n, dst_pos, c_pos = len(names), names.index("vdst"), names.index("src2")

    def rule_mfma_overlap(inst: Inst, form: Form) -> None:
        if len(inst.operands) == n:
            dst = inst.operands[dst_pos]
            c = inst.operands[c_pos]
            # (the rule applies to accumulators wider than 4 registers, as in LLVM)
            if isinstance(dst, Reg) and isinstance(c, Reg) and dst.count > 4 \
                    and dst.overlaps(c) and dst != c:
                raise MatchError(50, f"src2 {c} must not partially overlap the destination"
                                     f" {dst}")

    return rule_mfma_overlap


def _rule_smem_buffer_offset(inst: Inst, form: Form) -> None:
    for spec, op in zip(form.operands, inst.operands):
        if spec.name == "offset" and isinstance(op, Imm) and not 0 <= op.value < (1 << 20):
            raise MatchError(50, f"offset {op.value}: expected a 20-bit unsigned offset")

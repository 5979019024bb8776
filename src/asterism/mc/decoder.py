"""Decoder: machine code bytes -> `mc.Inst` (with its ISA database form).

Table-driven: the format comes from the identifying bits (isa/formats.py), the opcode and
addressing variant select a database form, and each operand slot of the form is read from
its field. Printing the result (mc/printer.py) gives llvm-objdump's text.

What does not depend on the bits at hand is worked out once per form (`_Plan`): which fields
decide the variant, which may hold the literal marker, the reader of each operand slot and
of the modifiers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from asterism.cache import compile_cached
from asterism.errors import AsterismError, DecodeError
from asterism.isa import Form, OperandSpec, get_isa, syntax
from asterism.isa.formats import (
    DPP,
    FORMATS,
    SDWA,
    SRC_DPP,
    SRC_LITERAL,
    SRC_SDWA,
    Format,
    format_of,
)
from asterism.isa.syntax import SDWA_SEL, SDWA_UNUSED, format_swizzle
from asterism.mc.inst import Inst
from asterism.mc.operand_codes import (
    F8F6F4_REGS,
    VOP_SRC_FIELDS,
    decode_scalar_reg,
    decode_src,
    op_sel_positions,
)
from asterism.mc.operands import OFF, Imm, Literal, Mod, Operand, Reg, Special, Syntax
from asterism.mc.per_form import PerForm
from asterism.support.gcpause import pause_cyclic_gc, resume_cyclic_gc


@dataclass(slots=True)
class DecodedInst:
    """One decoded instruction: where it is, its bytes and the instruction."""

    address: int
    size: int
    inst: Inst
    raw: bytes

    @property
    def words(self) -> list[int]:
        """The instruction's little-endian dwords (as llvm-objdump lists them)."""
        return [int.from_bytes(self.raw[i:i + 4], "little") for i in range(0, len(self.raw), 4)]


_SOP_ENCS = ("SOP1", "SOP2", "SOPC", "SOPK")
_MEMORY_ENCS = ("DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF", "MTBUF")


class _Word:
    """Field access to an instruction word (and its DPP/SDWA/literal extras)."""

    __slots__ = ("fmt", "value", "extra", "literal", "_table")

    def __init__(self, fmt: Format, value: int, extra: int | None = None,
                 literal: int | None = None):
        self.fmt = fmt
        self.value = value
        self.extra = extra
        self.literal = literal
        self._table = _FIELD_TABLES[fmt.name]

    def __getitem__(self, name: str) -> int:
        lo, mask = self._table[name]
        return (self.value >> lo) & mask


_FIELD_TABLES: dict[str, dict[str, tuple[int, int]]] = {}


def _field_table(fmt: Format) -> dict[str, tuple[int, int]]:
    """name -> (lo, mask) of a format's fields (Field.mask is computed on each use)."""
    return {name: (f.lo, f.mask) for name, f in fmt.fields.items()}


_FIELD_TABLES.update({name: _field_table(fmt) for name, fmt in FORMATS.items()})




# What Decoder.decode looks at beyond the opcode: DPP/SDWA of the short VOP formats, the
# scaled-MFMA prefix of VOP3P, the segment of FLAT.
_VOP_SHORT, _VOP3P, _FLAT = 1, 2, 3
_SPECIAL = {"VOP1": _VOP_SHORT, "VOP2": _VOP_SHORT, "VOPC": _VOP_SHORT, "VOP3P": _VOP3P,
            "FLAT": _FLAT}
_ENCODINGS = {"VOP3P": ("VOP3P", "MAI")}


def _route(fmt: Format | None) -> tuple[Format, str, int, int, int, tuple[str, ...], int] | None:
    """(format, its name, size, opcode lo and mask, the encodings its words have unless other
    bits say otherwise, what else to look at) for Decoder.decode."""
    if fmt is None:
        return None
    op = fmt.fields["op"]
    return (fmt, fmt.name, fmt.size, op.lo, op.mask, _ENCODINGS.get(fmt.name, (fmt.name,)),
            _SPECIAL.get(fmt.name, 0))


# The route of each value of a first dword's bits 23..31 (they identify the format: see
# formats.format_of).
_ROUTES = [_route(format_of(top << 23)) for top in range(512)]
_FLAT_SEGMENTS = {0: ("FLAT",), 1: ("SCRATCH",), 2: ("GLOBAL",)}
_SEG_LO, _SEG_MASK = _FIELD_TABLES["FLAT"]["seg"]
_IMM_LO, _IMM_MASK = _FIELD_TABLES["SMEM"]["imm"]
_SOE_LO, _SOE_MASK = _FIELD_TABLES["SMEM"]["soe"]
assert all(FORMATS[name].fields["src0"].lo == 0 and FORMATS[name].fields["src0"].width == 9
           for name in ("VOP1", "VOP2", "VOPC"))
assert all(f.size in (4, 8) for f in FORMATS.values())  # (Decoder.decode reads 4 or 8 bytes)


class Decoder:
    """Decodes machine code of one target."""

    def __init__(self, target: str):
        self.isa = get_isa(target)
        self.target = self.isa.target
        self._scale_prefix = self._find_scale_prefix()
        # (format, first encoding, opcode) -> the candidate forms' plans
        self._candidates: dict[tuple[str, str, int], _Choice] = {}
        # the same keys -> the plan, when it is the only candidate and has no variant bits
        self._lone: dict[tuple[str, str, int], _Plan] = {}

    def _find_scale_prefix(self) -> int | None:
        inst = self.isa.instructions.get("v_mfma_ld_scale_b32")
        return inst.forms[0].opcode if inst else None

    # -------------------------------------------------------------- entry points

    def locate(self, data: bytes, offset: int = 0, address: int = 0
               ) -> tuple[_Plan, int, int | None, int | None, _Word | None, int]:
        """(plan, value, extra, literal, prefix, size) of the instruction at `data[offset:]`
        (located at `address`): the plan of its form, its one or two words, the DPP/SDWA
        dword, the literal, the scaled-MFMA prefix word and its size in bytes."""
        available = len(data) - offset
        if available < 4:
            raise DecodeError(f"truncated instruction at 0x{address:x}")
        # (read two dwords at once when there are: most formats are 8 bytes)
        value = int.from_bytes(data[offset:offset + (8 if available >= 8 else 4)], "little")
        w0 = value & 0xFFFFFFFF
        route = _ROUTES[w0 >> 23]
        if route is None:
            raise DecodeError(f"0x{address:x}: no encoding format matches word 0x{w0:08x}")
        fmt, name, size, op_lo, op_mask, encs, special = route
        if available < size:
            raise DecodeError(f"0x{address:x}: truncated {name} instruction")
        if size == 4:
            value = w0
        op = (value >> op_lo) & op_mask
        extra = literal = prefix = None
        if special:
            if special == _VOP_SHORT:
                src0 = value & 0x1FF  # (src0 is bits 0..8 of all three)
                if src0 in (SRC_DPP, SRC_SDWA):
                    if available < size + 4:
                        raise DecodeError(f"0x{address:x}: truncated DPP/SDWA instruction")
                    extra = int.from_bytes(data[offset + size:offset + size + 4], "little")
                    size += 4
                    encs = ("DPP",) if src0 == SRC_DPP else ("SDWA",)
            elif special == _VOP3P:
                if op == self._scale_prefix and available >= 16:
                    nxt = int.from_bytes(data[offset + 8:offset + 16], "little")
                    nfmt = format_of(nxt & 0xFFFFFFFF)
                    if nfmt is not None and nfmt.name == "VOP3P":
                        nop = (nxt >> op_lo) & op_mask
                        if self.isa.by_opcode.get(("VOP3P", "MAI_SCALE", nop)):
                            prefix, value, op = _Word(fmt, value), nxt, nop
                            encs = ("MAI_SCALE",)
                            size = 16
            else:  # FLAT: the segment field says which family
                encs = _FLAT_SEGMENTS.get((value >> _SEG_LO) & _SEG_MASK, ("FLAT",))
        key = (name, encs[0], op)  # (the first encoding tells the candidate lists apart)
        plan = self._lone.get(key)
        if plan is None:
            plan = self._choose_plan(key, encs, value)
            if plan is None:
                raise DecodeError(f"0x{address:x}: no {'/'.join(encs)} instruction with opcode"
                                  f" {op} on {self.target} (word 0x{w0:08x})")
        needs_literal = plan.needs_literal
        if needs_literal is not None and needs_literal(value):
            if available < size + 4:
                raise DecodeError(f"0x{address:x}: truncated literal")
            literal = int.from_bytes(data[offset + size:offset + size + 4], "little")
            size += 4
        return plan, value, extra, literal, prefix, size

    def decode(self, data: bytes, offset: int = 0, address: int = 0) -> DecodedInst:
        """Decode the instruction at `data[offset:]` (located at `address`)."""
        plan, value, extra, literal, prefix, size = self.locate(data, offset, address)
        inst = plan.build(value, extra, literal, prefix)
        if inst is None:
            raise _invalid_word(plan, data, offset, address)
        raw = data[offset:offset + size]
        return DecodedInst(address, size, inst, raw if type(raw) is bytes else bytes(raw))

    def _choose_plan(self, key: tuple[str, str, int], encs: tuple[str, ...],
                     value: int) -> _Plan | None:
        """The plan of the form the word encodes, among the candidates of its opcode."""
        choice = self._candidates.get(key)
        if choice is None:
            name, _enc, op = key
            plans = [_PLANS(f) for enc in encs
                     for f in self.isa.by_opcode.get((name, enc, op), [])]
            choice = self._candidates[key] = _Choice(plans)
            if len(plans) == 1 and plans[0].always_fits:
                self._lone[key] = plans[0]
        # (the choice depends only on the variant bits: remembered by their values)
        bits = value & choice.variant_bits
        plan = choice.by_bits.get(bits)
        if plan is None:
            plan = self._select_plan(choice.plans, value)
            if plan is not None and len(choice.by_bits) < 4096:
                choice.by_bits[bits] = plan
        return plan

    # -------------------------------------------------------------- form selection

    @staticmethod
    def _select_plan(plans: list[_Plan], value: int) -> _Plan | None:
        """The candidate whose variant fields match the most (the first of equals)."""
        best, best_score = None, -1
        for plan in plans:
            score = 0  # variant fields matched (before the first mismatch)
            ok = True
            for lo, mask, want in plan.variant_fields:
                if (value >> lo) & mask != want:
                    ok = False
                    break
                score += 1
            if plan.smem_offset_variant:
                # imm=1, soe=0: immediate offset; otherwise an SGPR offset (in SOFFSET when
                # soe=1, else in OFFSET[6:0]), plus the immediate as offset: when imm=1.
                ok = (plan.form.base_variant == "imm") == (
                    (value >> _IMM_LO) & _IMM_MASK == 1 and (value >> _SOE_LO) & _SOE_MASK == 0)
            if ok and score > best_score:
                best, best_score = plan, score
        return best


def _invalid_word(plan: _Plan, data: bytes, offset: int, address: int) -> DecodeError:
    """The error for a word whose form `plan` is, with an operand code or modifier bit the
    form cannot have."""
    w0 = int.from_bytes(data[offset:offset + 4], "little")
    return DecodeError(f"0x{address:x}: {plan.mnemonic} with an operand code or "
                       f"modifier bit it cannot have (word 0x{w0:08x})")


class _Choice:
    """The candidate plans of one (format, encoding, opcode), with the plan chosen for each
    value of the bits the choice depends on (the variant fields, SMEM imm/soe)."""

    def __init__(self, plans: list[_Plan]):
        self.plans = plans
        self.variant_bits = 0
        for plan in plans:
            for lo, mask, _want in plan.variant_fields:
                self.variant_bits |= mask << lo
            if plan.smem_offset_variant:
                fields = FORMATS["SMEM"].fields
                self.variant_bits |= (fields["imm"].mask << fields["imm"].lo
                                      | fields["soe"].mask << fields["soe"].lo)
        self.by_bits: dict[int, _Plan] = {}


class PlanDispatch:
    """Words -> a function made per plan (the listing's line function), found from the first
    dword without running Decoder.locate: for each format, a table keyed by the first
    dword's opcode bits (with FLAT's segment, and the variant bits of the opcodes learnt so
    far), filled by `learn` with what locate chose.

    `routes[w0 >> 23]` is (key mask, table) (an empty table where no format is);
    `table.get(w0 & mask)` is the function of the word's plan, or a chooser among the plans
    of an opcode whose variant bits are not all in the first dword, or None (not learnt
    yet). The functions are called as f(words, k, ...) with words[k] the first dword and
    words[k + 1] readable, and return an int: -1 when they cannot take the word (the caller
    then locates it). What a key cannot tell, the functions must check: a VOP1/VOP2/VOPC
    plan's function refuses the words whose src0 is the DPP or SDWA code (`short_vop`),
    whose plans are others. Words with a DPP/SDWA dword or a scaled-MFMA prefix are never
    learnt."""

    def __init__(self, decoder: Decoder, make: Callable[[_Plan], Callable[..., int]]):
        self._decoder = decoder
        self._make = make
        self._made: dict[_Plan, Callable[..., int]] = {}
        self._variants: dict[tuple[str, int], dict[int, Callable[..., int]]] = {}
        none: tuple[int, dict] = (0, {})
        self._formats: dict[str, tuple[int, dict]] = {}
        self.routes: list[tuple[int, dict]] = [
            none if route is None else self._formats.setdefault(
                route[1], (_key_mask(route[0]), {})) for route in _ROUTES]

    def learn(self, plan: _Plan, value: int, extra: int | None, prefix: _Word | None
              ) -> Callable[..., int] | None:
        """Remember `plan`, located for the word `value`, under the word's key; returns its
        function (None for a word that is not learnt)."""
        if extra is not None or prefix is not None:
            return None
        w0 = value & 0xFFFFFFFF
        _fmt, name, _size, op_lo, op_mask, encs, special = _ROUTES[w0 >> 23]
        op = (w0 >> op_lo) & op_mask
        decoder = self._decoder
        if special == _VOP3P and op == decoder._scale_prefix:
            return None  # (a prefix of the next instruction, or not: the next words tell)
        if special == _FLAT:
            encs = _FLAT_SEGMENTS.get((w0 >> _SEG_LO) & _SEG_MASK, ("FLAT",))
        key = (name, encs[0], op)
        made = self._made.get(plan)
        if made is None:
            made = self._made[plan] = self._make(plan)
        mask, table = self._formats[name]
        if decoder._lone.get(key) is plan:
            table[w0 & mask] = made
            return made
        choice = decoder._candidates.get(key)
        if choice is None or choice.by_bits.get(value & choice.variant_bits) is not plan:
            return None
        bits = choice.variant_bits
        if not bits >> 32:  # (the first dword decides: key on its variant bits too)
            if bits & ~mask:
                mask, table = self._widen(name, mask | bits)
            table[w0 & mask] = made
            return made
        variants = self._variants.get((name, w0 & mask))
        if variants is None:
            variants = self._variants[(name, w0 & mask)] = {}
            table[w0 & mask] = _chooser(bits, variants)
        variants[value & bits] = made
        return made

    def _widen(self, name: str, mask: int) -> tuple[int, dict]:
        """Key format `name`'s words on `mask` from now on (what was learnt is forgotten)."""
        old = self._formats[name]
        new = self._formats[name] = (mask, {})
        routes = self.routes
        for i, route in enumerate(routes):  # (in place: a running listing holds the list)
            if route is old:
                routes[i] = new
        self._variants = {k: v for k, v in self._variants.items() if k[0] != name}
        return new


def short_vop(plan: _Plan) -> bool:
    """True for the plans of VOP1/VOP2/VOPC words, which are another plan's (DPP, SDWA)
    when src0 holds SRC_DPP or SRC_SDWA."""
    return plan.form.enc in ("VOP1", "VOP2", "VOPC")


def _key_mask(fmt: Format) -> int:
    """The first-dword bits that, with the format, decide the candidate plans (PlanDispatch)."""
    op = fmt.fields["op"]
    assert op.lo + op.width <= 32
    mask = op.mask << op.lo
    if _SPECIAL.get(fmt.name) == _FLAT:
        mask |= _SEG_MASK << _SEG_LO
    return mask


def _chooser(variant_bits: int, variants: dict[int, Callable[..., int]]) -> Callable[..., int]:
    """The function among an opcode's plans chosen by the word's variant bits (-1 for bits
    not learnt yet)."""

    def choose(words: list[int], k: int, *args) -> int:
        made = variants.get((words[k] | words[k + 1] << 32) & variant_bits)
        return -1 if made is None else made(words, k, *args)

    return choose


class _Plan:
    """How to decode one form: its variant bits, literal fields, slot and modifier readers."""

    def __init__(self, form: Form):
        self.form = form
        fmt = FORMATS[form.format]
        table = _FIELD_TABLES[fmt.name]
        self.mnemonic = form.printed_mnemonic
        # (lo, mask, value) of the fields the addressing variant fixes (in form order)
        smem = form.enc == "SMEM"
        self.variant_fields = [(*table[name], value) for name, value in form.fixed.items()
                               if not (smem and name == "imm")]  # imm is decided with soe
        self.smem_offset_variant = smem and form.base_variant in ("imm", "soff")
        # A lone candidate without variant bits is the answer whatever the word says.
        self.always_fits = not self.variant_fields and not self.smem_offset_variant
        self.literal_fields, self.literal_always = self._literal_facts(form, fmt)
        self.needs_literal: Callable[[int], bool] | None = (
            _generic_needs_literal(form, fmt) if self.literal_fields is None
            else _compile_needs_literal(form, self.literal_fields, self.literal_always))
        self.slots = tuple(_slot(form, spec, fmt) for spec in form.operands)
        # (position, (width, type)) of the slots whose table holds the literal marker
        self.literal_slots = tuple((pos, slot.table.literal) for pos, slot in enumerate(self.slots)
                                   if isinstance(slot.table, _Table) and slot.table.literal)
        # Facts of the form the modifier readers use.
        self.srcs = [i for i, s in enumerate(form.operands) if s.name in VOP_SRC_FIELDS]
        self.has_sdst = any(s.name == "sdst" for s in form.operands)
        self.op_sel_positions = op_sel_positions(form)
        self.modifiers = _modifier_reader(form)
        # (whether the reader wraps or replaces operands, or only adds modifiers)
        self.modifiers_touch_operands = self.modifiers in _OPERAND_TOUCHING_READERS
        self.quiet_bits = _quiet_bits(form, self.modifiers, self.has_sdst)
        # Bits LLVM's decoder holds at fixed values for the form (the word is invalid else).
        self.reserved_mask, self.reserved_value = form.reserved
        self.reserved_extra_mask, self.reserved_extra_value = form.reserved_extra
        # (compiled on the first call: a listing prints most plans without it)
        self.build: Callable[[int, int | None, int | None, _Word | None], Inst | None] = \
            self._first_build

    def _first_build(self, value: int, extra: int | None, literal: int | None,
                     prefix: _Word | None) -> Inst | None:
        self.build = _compile_build(self)
        return self.build(value, extra, literal, prefix)

    @staticmethod
    def _literal_facts(form: Form, fmt: Format) -> tuple[list[tuple[int, int]] | None, bool]:
        """(fields that may hold the literal marker, whether a literal always follows); None
        fields if a source slot has no field (the generic check then raises as it did)."""
        fields: list[tuple[int, int]] = []
        for spec in form.operands:
            if spec.name == "literal":
                return fields, True
            if spec.name in ("src0", "src1", "src2", "ssrc0", "ssrc1") and (
                    spec.is_register or spec.kinds):
                if form.enc in ("DPP", "SDWA") and spec.name == "src0":
                    continue
                fld = fmt.fields.get(spec.name)
                if fld is None:
                    return None, False
                if fld.width != 9 and form.enc not in _SOP_ENCS:
                    continue
                fields.append((fld.lo, fld.mask))
        return fields, False


_PLANS = PerForm(_Plan)


def _compile_build(plan: _Plan) -> Callable[[int, int | None, int | None, _Word | None],
                                            Inst | None]:
    """build(value, extra, literal, prefix): the form's Inst from the word (None if it
    holds a code or modifier bit the form cannot have).

    The function is generated for the form so that reading its operands is one expression
    per slot with the field positions as constants (a loop over the slots costs about twice
    as much). It does what this would, slot by slot:
        word = _Word(fmt, value, extra, literal)
        operands = [read(slot) for slot in plan.slots]
        replace each _LITERAL of plan.literal_slots by the Literal of the word
        mods = {}
        if plan.quiet_bits is None or value & plan.quiet_bits:
            plan.modifiers(plan, word, prefix, operands, mods)
        return Inst(plan.mnemonic, operands, mods, plan.form)
    (the _Word only when a reader needs it).
    """
    env: dict[str, object] = {"Inst": Inst, "_LITERAL": _LITERAL, "_INVALID": _INVALID,
                              "_Word": _Word, "fmt": FORMATS[plan.form.format],
                              "decode_src": decode_src,
                              "SRC_LITERAL": SRC_LITERAL, "plan": plan, "form": plan.form,
                              "mnemonic": plan.mnemonic, "read_modifiers": plan.modifiers}
    reads = []
    checks: list[int] = []  # slots whose table has _INVALID entries
    for k, slot in enumerate(plan.slots):
        if slot.table is None:
            env[f"read{k}"] = slot.read
            reads.append(f"read{k}(word, prefix)")
            checks.append(k)  # (a reader may find a code the operand cannot have too)
            continue
        env[f"table{k}"] = slot.table
        reads.append(f"table{k}[{slot_index(slot)}]")
        if isinstance(slot.table, _Table) and slot.table.checked:
            checks.append(k)
    make_word = "word = _Word(fmt, value, extra, literal)"
    lines = ["def build(value, extra, literal, prefix):"]
    word_made = any(slot.table is None for slot in plan.slots)
    if word_made:
        lines.append(f"    {make_word}")
    lines.append(f"    operands = [{', '.join(reads)}]")
    tests = [f"operands[{k}] is _INVALID" for k in checks]
    tests[:0] = reserved_tests(plan)
    if tests:
        lines.append(f"    if {' or '.join(tests)}:")
        lines.append("        return None  # (a code or modifier bit the form cannot have)")
    for pos, (width, type_) in plan.literal_slots:
        lines += [f"    if operands[{pos}] is _LITERAL:",
                  f"        operands[{pos}] = decode_src(SRC_LITERAL, {width}, type_={type_!r},"
                  " literal=literal)"]
    lines.append("    mods = {}")
    if plan.modifiers is not None:
        indent = "    "
        if plan.quiet_bits is not None:
            lines.append(f"    if value & {plan.quiet_bits:#x}:")
            indent += "    "
        if not word_made:
            lines.append(f"{indent}{make_word}")
        lines.append(f"{indent}read_modifiers(plan, word, prefix, operands, mods)")
    lines.append("    return Inst(mnemonic, operands, mods, form)" if plan.form.enc
                 else "    return None")
    source = "\n".join(lines) + "\n"
    name = f"<decoder plan of {plan.form.mc_name or plan.mnemonic}>"
    exec(compile_cached(source, name), env)
    return env["build"]  # type: ignore[return-value]


def reserved_tests(plan: _Plan) -> list[str]:
    """Python tests (on `value` and `extra`) that are true when a reserved bit of the word or
    of the DPP/SDWA dword is off the value LLVM's decoder holds it at."""
    tests = []
    if plan.reserved_mask:
        tests.append(f"value & {plan.reserved_mask:#x} != {plan.reserved_value:#x}")
    if plan.reserved_extra_mask:
        tests.append(f"extra & {plan.reserved_extra_mask:#x} != {plan.reserved_extra_value:#x}")
    return tests


def slot_index(slot: _Slot, value: str = "value") -> str:
    """The Python expression of a table slot's index in the word `value`."""
    index = (f"({value} >> {slot.lo}) & {slot.mask}" if slot.lo else f"{value} & {slot.mask}"
             ) if slot.mask else "0"
    if slot.agpr_mask:
        index += f" | ((({value} >> {slot.agpr_lo}) & {slot.agpr_mask}) << {slot.shift})"
    return index


def _compile_needs_literal(form: Form, fields: list[tuple[int, int]], always: bool
                           ) -> Callable[[int], bool] | None:
    """needs_literal(value): True if a 32-bit literal follows the instruction word (the
    buffer soffset or a source field holds the literal code, or the form always has one);
    None if no word of the form has one. Generated, as _compile_build, with the field
    positions as constants."""
    tests = needs_literal_tests(form, fields, always)
    if not tests:
        return None
    source = f"def needs_literal(value):\n    return {' or '.join(tests)}\n"
    env: dict[str, object] = {}
    exec(compile_cached(source, f"<literal test of {form.mc_name or form.mnemonic}>"), env)
    return env["needs_literal"]  # type: ignore[return-value]


def needs_literal_tests(form: Form, fields: list[tuple[int, int]], always: bool) -> list[str]:
    """Python tests on `value` any of which is true when a literal follows the word (see
    _compile_needs_literal; "True" if one always does, none if none ever does)."""
    tests = [f"(value >> {lo}) & {mask} == {SRC_LITERAL}" for lo, mask in fields]
    if form.enc in ("MUBUF", "MTBUF"):
        soffset = FORMATS[form.format].fields["soffset"]
        tests.insert(0, f"(value >> {soffset.lo}) & {soffset.mask} == {SRC_LITERAL}")
    if always:
        tests.append("True")
    return tests


def _generic_needs_literal(form: Form, fmt: Format) -> Callable[[int], bool]:
    """needs_literal for forms with a source slot the format has no field for (it raises
    KeyError on the missing field, as reading that slot would)."""

    def needs_literal(value: int) -> bool:
        if form.enc in ("MUBUF", "MTBUF") and fmt.fields["soffset"].get(value) == SRC_LITERAL:
            return True
        for spec in form.operands:
            if spec.name == "literal":
                return True
            if spec.name in ("src0", "src1", "src2", "ssrc0", "ssrc1") and (
                    spec.is_register or spec.kinds):
                if form.enc in ("DPP", "SDWA") and spec.name == "src0":
                    continue
                if fmt.fields[spec.name].width != 9 and form.enc not in _SOP_ENCS:
                    continue
                if fmt.fields[spec.name].get(value) == SRC_LITERAL:
                    return True
        return False

    return needs_literal


# ---------------------------------------------------------------------- operand slots
#
# Most operands are a function of one field (and maybe an AGPR-select bit): they are read
# from a table indexed by those bits, filled on first use and shared by the slots of the
# same kind (operands are immutable). The other slots have a reader function.

SlotReader = Callable[[_Word, "_Word | None"], Operand]


class _Slot(NamedTuple):
    """How to read one operand: table[((value >> lo) & mask) | (((value >> agpr_lo) &
    agpr_mask) << shift)] when there is a table, else read(word, prefix). The agpr bits
    select AGPRs, or (a buffer address) offen and idxen."""

    lo: int
    mask: int
    agpr_lo: int
    agpr_mask: int
    shift: int
    table: dict[int, Operand] | None
    read: SlotReader | None


class _Table(dict):
    """index -> make(index), made on first use. `literal` is the (width, type) of the
    Literal that replaces a _LITERAL entry, for tables that have one."""

    def __init__(self, make: Callable[[int], Operand],
                 literal: tuple[int, str | None] | None = None):
        super().__init__()
        self._make = make
        self.literal = literal
        self.checked = False  # may hold _INVALID entries (set by _table for those kinds)

    def __missing__(self, index: int) -> Operand:
        op = self._make(index)
        if len(self) < _TABLE_LIMIT:
            self[index] = op
        return op


_TABLE_LIMIT = 1 << 16
_TABLES: dict[tuple, _Table] = {}  # shared tables by what their entries depend on
_LITERAL = object()  # table entry of the literal code: replaced by the Literal after the read
_INVALID = object()  # table entry of a code the operand cannot have (the word is rejected)
_REGS: dict[tuple[str, int, int], Reg] = {}


def _reg(kind: str, index: int, count: int) -> Reg:
    """The Reg (one object per register range)."""
    reg = _REGS.get((kind, index, count))
    if reg is None:
        reg = _REGS[(kind, index, count)] = Reg(kind, index, count)
    return reg


def _shared(op: Operand | None) -> Operand | None:
    return _reg(op.kind, op.index, op.count) if type(op) is Reg else op


def _scalar_entry(code: int, width: int) -> object:
    """The table entry of a scalar register code: _INVALID for a code that names no
    register, or one that cannot start a range of `width` (SGPR/TTMP pairs start even,
    wider ranges at a multiple of 4 and only SGPRs/TTMPs have them; upper halves, m0...), as
    llvm-objdump rejects them."""
    op = decode_scalar_reg(code, width)
    if op is None:
        return _INVALID
    if width >= 2:
        align = 2 if width == 2 else 4
        if type(op) is Reg and op.index % align or type(op) is Special and (
                width > 2 or op.name in syntax.NOT_PAIR_STARTS):
            return _INVALID
    return _shared(op)


def _src_entry(code: int, width: int, type_: str | None, agpr: bool) -> object:
    """The table entry of a source code: _LITERAL, _INVALID (reserved codes, scalar
    registers that cannot start the operand's range, ranges past the last vector register)
    or the operand."""
    if code == SRC_LITERAL:
        return _LITERAL
    if code < syntax.SRC_VGPR_BASE and syntax.inline_int_value(code) is None and \
            code not in syntax.INLINE_FLOATS:
        return _scalar_entry(code, width)
    if code >= syntax.SRC_VGPR_BASE and code - syntax.SRC_VGPR_BASE + width > 256:
        return _INVALID  # (a range past the last VGPR/AGPR)
    return _shared(decode_src(code, width, type_=type_, agpr=agpr))


def _table(key: tuple, make: Callable[[int], Operand],
           literal: tuple[int, str | None] | None) -> _Table:
    table = _TABLES.get(key)
    if table is None:
        table = _TABLES[key] = _Table(make, literal)
    return table


def _reader_slot(read: SlotReader) -> _Slot:
    return _Slot(0, 0, 0, 0, 0, None, read)


def _constant_slot(op: Operand) -> _Slot:
    """A slot whose operand does not depend on the word."""
    return _Slot(0, 0, 0, 0, 0, {0: op}, None)


def _field_slot(form: Form, spec: OperandSpec, lo: int, mask: int, kind: str,
                make: Callable[[int, bool], Operand],
                literal: tuple[int, str | None] | None = None) -> _Slot:
    """A table slot over field (lo, mask) and the slot's AGPR rule; entries are
    make(code, agpr). `kind` names the maker (with the slot's width and type it decides
    which slots share the table); `literal` as for _Table."""
    always_agpr, agpr_bit = _agpr_rule(form, spec)
    shift = mask.bit_length()

    def entry(index: int) -> Operand:
        return make(index & mask, always_agpr or bool(index >> shift))

    table = _table((kind, spec.width, spec.type, always_agpr, mask), entry, literal)
    table.checked = kind in ("src", "scalar", "saddr", "sbase", "srsrc", "soffset", "vector")
    if agpr_bit is None:
        return _Slot(lo, mask, 0, 0, shift, table, None)
    return _Slot(lo, mask, agpr_bit, 1, shift, table, None)


def _slot(form: Form, spec: OperandSpec, fmt: Format) -> _Slot:
    """How to read this slot's operand."""
    name, enc = spec.name, form.enc
    if spec.fixed:
        return _constant_slot(Special(spec.fixed))
    if name == "literal":
        return _reader_slot(lambda word, prefix: Literal(word.literal or 0))
    if name in ("scale_src0", "scale_src1"):
        field = "src0" if name == "scale_src0" else "src1"

        def read_scale(word: _Word, prefix: _Word | None) -> Operand:
            assert prefix is not None
            return decode_src(prefix[field], 1)
        return _reader_slot(read_scale)
    if name == "simm16" or spec.syntax:
        return _simm16_slot(form, spec, fmt)
    if enc in ("DPP", "SDWA") and name == "src0":
        return _reader_slot(_extra_src0_reader(form, spec))
    if enc == "SDWA" and name == "vsrc1":
        return _reader_slot(_sdwa_vsrc1_reader(form, spec, fmt))
    if enc == "SMEM":
        return _smem_slot(form, spec, fmt)
    if enc in ("MUBUF", "MTBUF") and name in ("vaddr", "srsrc", "soffset", "vdata"):
        return _buffer_slot(form, spec, fmt)
    if enc in ("FLAT", "GLOBAL", "SCRATCH"):
        if name == "saddr":
            fld = fmt.fields["saddr"]
            width = spec.width
            return _field_slot(form, spec, fld.lo, fld.mask, "saddr", lambda code, agpr: (
                OFF if code == 0x7F else _scalar_entry(code, width)))
        if name == "addr" and form.base_variant == "scratch_saddr":
            return _constant_slot(OFF)
    return _field_slot_of(form, spec, fmt)


def _field_slot_of(form: Form, spec: OperandSpec, fmt: Format) -> _Slot:
    """The slot of an operand that is one field of the word."""
    name = spec.name
    fld = fmt.fields.get(name)
    if fld is None:
        # KeyError when read, as a missing field always did
        return _reader_slot(lambda word, prefix: word.fmt.fields[name])
    if _width_rule(form, spec) is not None:
        return _reader_slot(_dynamic_width_reader(form, spec, fld.lo, fld.mask))
    lo, mask, width = fld.lo, fld.mask, spec.width
    if name in ("src0", "src1", "src2", "ssrc0", "ssrc1"):
        if fld.width == 8 and form.enc not in _SOP_ENCS:
            return _vector_slot(form, spec, lo, mask)
        return _src_slot(form, spec, lo, mask)
    if name in ("sdst", "sdata") or ("s" in spec.kinds and not (
            "v" in spec.kinds or "a" in spec.kinds)):
        return _field_slot(form, spec, lo, mask, "scalar",
                           lambda code, agpr: _scalar_entry(code, width))
    if "v" in spec.kinds or "a" in spec.kinds:
        return _vector_slot(form, spec, lo, mask)
    return _field_slot(form, spec, lo, mask, "imm", lambda code, agpr: Imm(code))


def _vector_slot(form: Form, spec: OperandSpec, lo: int, mask: int) -> _Slot:
    """A VGPR or AGPR index field."""
    width = spec.width
    return _field_slot(form, spec, lo, mask, "vector", lambda code, agpr: (
        _reg("a" if agpr else "v", code, width) if code + width <= 256 else _INVALID))


def _src_slot(form: Form, spec: OperandSpec, lo: int, mask: int) -> _Slot:
    """A 9-bit (or SOP) source: register, inline constant or (_LITERAL) the literal."""
    width, type_ = spec.width, spec.type
    return _field_slot(form, spec, lo, mask, "src",
                       lambda code, agpr: _src_entry(code, width, type_, agpr), (width, type_))


def _width_rule(form: Form, spec: OperandSpec) -> Callable[[_Word], int] | None:
    """How the slot's register count follows from other fields (None: it is spec.width)."""
    if form.enc in ("MAI", "MAI_SCALE") and "f8f6f4" in form.mnemonic:
        if spec.name == "src0":
            return lambda word: F8F6F4_REGS.get(word["cbsz"], 8)
        if spec.name == "src1":
            return lambda word: F8F6F4_REGS.get(word["blgp"], 8)
    return None


def _agpr_rule(form: Form, spec: OperandSpec) -> tuple[bool, int | None]:
    """(AGPR for sure, else the word bit that selects AGPRs or None if no bit does)."""
    if "a" not in spec.kinds:
        return False, None
    if "v" not in spec.kinds:
        return True, None
    fields = FORMATS[form.format].fields
    enc = form.enc
    if enc in ("MAI", "MAI_SCALE"):
        if spec.name in ("vdst", "src2"):
            assert fields["acc_cd"].width == 1  # (so "acc_cd == 1" is "the bit is set")
            return False, fields["acc_cd"].lo
        if spec.name == "src0":
            return False, fields["acc"].lo
        if spec.name == "src1":
            return False, fields["acc"].lo + 1
    if enc in _MEMORY_ENCS:
        assert fields["acc"].width == 1
        return False, fields["acc"].lo
    return False, None


def _dynamic_width_reader(form: Form, spec: OperandSpec, lo: int, mask: int) -> SlotReader:
    """A field operand whose register count depends on other fields (f8f6f4 A/B)."""
    name = spec.name
    width_of = _width_rule(form, spec)
    always_agpr, agpr_bit = _agpr_rule(form, spec)
    is_src = name in ("src0", "src1", "src2", "ssrc0", "ssrc1")
    vector = is_src and FORMATS[form.format].fields[name].width == 8 \
        and form.enc not in _SOP_ENCS
    scalar = not is_src and (name in ("sdst", "sdata") or (
        "s" in spec.kinds and not ("v" in spec.kinds or "a" in spec.kinds)))

    def read(word: _Word, prefix: _Word | None) -> Operand:
        value = word.value
        code = (value >> lo) & mask
        width = width_of(word)
        agpr = always_agpr or (agpr_bit is not None and bool((value >> agpr_bit) & 1))
        if is_src and not vector:
            return decode_src(code, width, type_=spec.type, literal=word.literal, agpr=agpr)
        if scalar:
            return decode_scalar_reg(code, width) or Imm(code)
        if vector or "v" in spec.kinds or "a" in spec.kinds:
            return Reg("a" if agpr else "v", code, width)
        return Imm(code)

    return read


def _simm16_slot(form: Form, spec: OperandSpec, fmt: Format) -> _Slot:
    name = spec.name
    fld = fmt.fields.get(name)
    if fld is None:
        # KeyError when read, as a missing field always did
        return _reader_slot(lambda word, prefix: word.fmt.fields[name])
    # (the text of special immediates depends on the form: one table per slot)
    return _Slot(fld.lo, fld.mask, 0, 0, 0, _Table(lambda v: _simm16(form, spec, v)), None)


def _extra_src0_reader(form: Form, spec: OperandSpec) -> SlotReader:
    """DPP/SDWA src0 lives in the extra dword."""
    src0 = (DPP if form.enc == "DPP" else SDWA)["src0"]
    sdwa = form.enc == "SDWA"
    width = spec.width  # (no DPP/SDWA width depends on other fields)

    def read(word: _Word, prefix: _Word | None) -> object:
        code = src0.get(word.extra)
        if sdwa and SDWA["s0"].get(word.extra):
            return _sdwa_src_entry(code, width, spec.type)
        return _reg("v", code, width) if code + width <= 256 else _INVALID

    return read


def _sdwa_vsrc1_reader(form: Form, spec: OperandSpec, fmt: Format) -> SlotReader:
    """SDWA vsrc1: an SGPR/constant code when the S1 bit is set, else the VGPR field."""
    in_field = _field_slot_of(form, spec, fmt)
    width = spec.width

    def read(word: _Word, prefix: _Word | None) -> object:
        if SDWA["s1"].get(word.extra):
            return _sdwa_src_entry(word["vsrc1"], width, spec.type)
        return _read_slot(in_field, word, prefix)

    return read


def _sdwa_src_entry(code: int, width: int, type_: str | None) -> object:
    """An SDWA source given as a scalar/constant code (S0/S1 set): as _src_entry, but no
    literal follows an SDWA word (_INVALID)."""
    entry = _src_entry(code, width, type_, False)
    return _INVALID if entry is _LITERAL else entry


def _read_slot(slot: _Slot, word: _Word, prefix: _Word | None) -> Operand:
    """Read one operand through its slot (the decoder inlines this for speed)."""
    if slot.table is None:
        return slot.read(word, prefix)
    value = word.value
    return slot.table[((value >> slot.lo) & slot.mask)
                      | (((value >> slot.agpr_lo) & slot.agpr_mask) << slot.shift)]


def _smem_slot(form: Form, spec: OperandSpec, fmt: Format) -> _Slot:
    """SMEM sbase (its field holds the register number / 2) and sdata registers: checked
    tables; the rest: readers."""
    name, width = spec.name, spec.width  # (no SMEM width depends on other fields)
    if name == "sbase":
        fld = fmt.fields["sbase"]
        return _field_slot(form, spec, fld.lo, fld.mask, "sbase",
                           lambda code, agpr: _scalar_entry(code * 2, width))
    if name == "sdata" and "k" not in spec.kinds:
        fld = fmt.fields["sdata"]
        return _field_slot(form, spec, fld.lo, fld.mask, "scalar",
                           lambda code, agpr: _scalar_entry(code, width))
    return _reader_slot(_smem_reader(form, spec))


def _smem_reader(form: Form, spec: OperandSpec) -> SlotReader:
    name = spec.name
    if name == "sdata":  # s_atc_probe*: the field holds an immediate
        return lambda word, prefix: Imm(word["sdata"], fmt="auto")
    if name == "offset":
        return lambda word, prefix: Imm(_signed(word["offset"], 21), fmt="hex")
    if name == "soffset":
        def read_soffset(word: _Word, prefix: _Word | None) -> Operand:
            code = word["soffset"] if word["soe"] else word["offset"] & 0x7F
            return decode_scalar_reg(code, 1) or Imm(code)
        return read_soffset

    def unexpected(word: _Word, prefix: _Word | None) -> Operand:
        raise DecodeError(f"unexpected SMEM operand {name}")

    return unexpected


def _buffer_slot(form: Form, spec: OperandSpec, fmt: Format) -> _Slot:
    """MUBUF/MTBUF vaddr, srsrc, soffset and vdata."""
    name = spec.name
    width = spec.width
    if name == "vaddr":
        # A VGPR with offen or idxen, a pair with both, `off` with neither: the two bits
        # select the entry as an AGPR bit does in other slots.
        vaddr, offen, idxen = fmt.fields["vaddr"], fmt.fields["offen"], fmt.fields["idxen"]
        assert offen.width == idxen.width == 1 and idxen.lo == offen.lo + 1

        def address(index: int) -> Operand:
            code, select = index & vaddr.mask, index >> vaddr.width
            return _reg("v", code, 2 if select == 3 else 1) if select else OFF

        return _Slot(vaddr.lo, vaddr.mask, offen.lo, 3, vaddr.width,
                     _table(("buffer_vaddr", vaddr.mask), address, None), None)
    fld = fmt.fields[name]
    if name == "srsrc":
        return _field_slot(form, spec, fld.lo, fld.mask, "srsrc",
                           lambda code, agpr: _scalar_entry(code * 4, width))
    if name == "soffset":
        return _field_slot(form, spec, fld.lo, fld.mask, "soffset",
                           lambda code, agpr: _src_entry(code, 1, "i32", False), (1, "i32"))
    return _vector_slot(form, spec, fld.lo, fld.mask)


def _simm16(form: Form, spec: OperandSpec, value: int) -> Operand:
    if spec.syntax == "waitcnt":
        return Syntax(value, syntax.format_waitcnt(value))
    if spec.syntax == "hwreg":
        return Syntax(value, syntax.format_hwreg(value))
    if spec.syntax == "sendmsg":
        return Syntax(value, syntax.format_sendmsg(value))
    if spec.syntax == "gpr_idx":
        return Syntax(value, syntax.format_gpr_idx(value))
    if spec.syntax == "label":
        return Imm(value)  # LLVM prints branch offsets as unsigned 16-bit words
    if form.enc == "SOPK":
        if form.mnemonic in ("s_cbranch_i_fork", "s_call_b64"):
            return Imm(value)
        return Imm(value, fmt="hex")
    # SOPP immediates print in hex unless small, except s_endpgm's (decimal).
    return Imm(value, fmt="dec" if form.mnemonic == "s_endpgm" else "auto")


# ---------------------------------------------------------------------- modifiers
#
# One reader per encoding family: (plan, word, prefix, operands, modifiers); it fills the
# modifiers and wraps operands in their source modifiers.

ModifierReader = Callable[[_Plan, _Word, "_Word | None", list, dict], None]


def _modifier_reader(form: Form) -> ModifierReader | None:
    """The reader of this form's modifiers (None: it has none)."""
    enc = form.enc
    if enc == "VOP3" and form.mnemonic.startswith("v_bitop3"):
        return _mods_bitop3
    return {"VOP3": _mods_vop3, "VOP3P": _mods_vop3p, "MAI": _mods_mfma,
            "MAI_SCALE": _mods_mfma, "DS": _mods_ds, "FLAT": _mods_flat,
            "GLOBAL": _mods_flat, "SCRATCH": _mods_flat, "MUBUF": _mods_buffer,
            "MTBUF": _mods_buffer, "SMEM": _mods_smem, "DPP": _mods_dpp,
            "SDWA": _mods_sdwa}.get(enc)


def _touches_operands(reader: ModifierReader) -> ModifierReader:
    """Marks a reader that wraps operands in source modifiers or replaces them (the others
    only add modifiers)."""
    _OPERAND_TOUCHING_READERS.add(reader)
    return reader


_OPERAND_TOUCHING_READERS: set[ModifierReader] = set()


def _mods_bitop3(plan: _Plan, word: _Word, prefix: _Word | None, operands: list[Operand],
                 mods: dict[str, object]) -> None:
    # gfx950 v_bitop3: the 8-bit truth table is spread over NEG, ABS and OMOD.
    table = word["neg"] | (word["abs"] << 3) | (word["omod"] << 6)
    if table:
        mods["bitop3"] = table
    if "op_sel" in plan.form.modifiers and word["op_sel"]:
        mods["op_sel"] = tuple((word["op_sel"] >> k) & 1 for k in plan.op_sel_positions)


@_touches_operands
def _mods_vop3(plan: _Plan, word: _Word, prefix: _Word | None, operands: list[Operand],
               mods: dict[str, object]) -> None:
    form = plan.form
    has_sdst = plan.has_sdst
    neg = word["neg"]
    absm = 0 if has_sdst else word["abs"]
    for i in plan.srcs:
        k = int(form.operands[i].name[-1])
        if form.operands[i].mods and ((neg >> k) & 1 or (absm >> k) & 1):
            operands[i] = Mod(operands[i], neg=bool((neg >> k) & 1),
                              abs=bool((absm >> k) & 1))
    if word["clamp"]:
        mods["clamp"] = True
    if word["omod"]:
        mods["omod"] = word["omod"]
    if "op_sel" in form.modifiers and not has_sdst:
        bits = word["op_sel"]
        if bits:
            mods["op_sel"] = tuple((bits >> k) & 1 for k in plan.op_sel_positions)


def _quiet_bits(form: Form, reader: ModifierReader | None, has_sdst: bool) -> int | None:
    """The word bits the form's modifier reader reads, for the readers that add nothing
    (no modifier, no source modifier) while those bits are all zero: build skips the reader
    then. None: the reader always runs (it prints defaults or reads other words)."""
    fields = FORMATS[form.format].fields
    if reader is _mods_vop3:
        return _vop3_modifier_bits(form, has_sdst)
    names = {_mods_ds: ("offset0", "offset1", "gds"),
             _mods_flat: ("offset", "sc0", "nt", "sc1")}.get(reader)
    if reader is _mods_mfma and form.enc == "MAI":
        names = ("cbsz", "abid", "blgp")  # (neg is the blgp field)
    if names is None:
        return None
    bits = 0
    for name in names:
        bits |= fields[name].mask << fields[name].lo
    return bits


def _vop3_modifier_bits(form: Form, has_sdst: bool) -> int:
    """The VOP3 word bits _mods_vop3 reads (neg, clamp, omod, and abs/op_sel when they are
    not the scalar destination)."""
    fields = FORMATS["VOP3"].fields
    names = ["neg", "clamp", "omod"]
    if not has_sdst:
        names.append("abs")
        if "op_sel" in form.modifiers:
            names.append("op_sel")
    bits = 0
    for name in names:
        bits |= fields[name].mask << fields[name].lo
    return bits


@_touches_operands
def _mods_vop3p(plan: _Plan, word: _Word, prefix: _Word | None, operands: list[Operand],
                mods: dict[str, object]) -> None:
    form = plan.form
    srcs = plan.srcs
    n = len(srcs)
    if "_mix" in form.mnemonic:
        # v_fma_mix*: NEG_HI holds abs, NEG the negation of each source.
        for i in srcs:
            k = int(form.operands[i].name[-1])
            ng, ab = (word["neg"] >> k) & 1, (word["neg_hi"] >> k) & 1
            if ng or ab:
                operands[i] = Mod(operands[i], neg=bool(ng), abs=bool(ab))
    op_sel = word["op_sel"]
    op_sel_hi = word["op_sel_hi"] | (word["op_sel_hi2"] << 2)
    if "op_sel" in form.modifiers:
        mods["op_sel"] = tuple((op_sel >> k) & 1 for k in range(n))
    if "op_sel_hi" in form.modifiers:
        mods["op_sel_hi"] = tuple((op_sel_hi >> k) & 1 for k in range(n))
    if "neg_lo" in form.modifiers:
        mods["neg_lo"] = tuple((word["neg"] >> k) & 1 for k in range(n))
    if "neg_hi" in form.modifiers:
        mods["neg_hi"] = tuple((word["neg_hi"] >> k) & 1 for k in range(n))
    if word["clamp"] and "clamp" in form.modifiers:
        mods["clamp"] = True


def _mods_mfma(plan: _Plan, word: _Word, prefix: _Word | None, operands: list[Operand],
               mods: dict[str, object]) -> None:
    form = plan.form
    enc = form.enc
    if "neg" in form.modifiers and word["blgp"]:
        mods["neg"] = tuple((word["blgp"] >> k) & 1 for k in range(3))
    for name in ("cbsz", "abid", "blgp"):
        if name in form.modifiers:
            value = word[name]
            if enc == "MAI_SCALE" and name == "abid":
                continue
            if value:
                mods[name] = value
    if enc == "MAI_SCALE" and prefix is not None:
        mods["op_sel"] = (prefix["op_sel"] & 1, (prefix["op_sel"] >> 1) & 1, 0)
        mods["op_sel_hi"] = (prefix["op_sel_hi"] & 1, (prefix["op_sel_hi"] >> 1) & 1, 0)
        mods["op_sel_hi_default"] = (1, 1, 1)


def _mods_ds(plan: _Plan, word: _Word, prefix: _Word | None, operands: list[Operand],
             mods: dict[str, object]) -> None:
    form = plan.form
    if form.mnemonic == "ds_swizzle_b32":
        off = word["offset0"] | (word["offset1"] << 8)
        if off:
            mods["offset"] = Syntax(off, format_swizzle(off))
    elif "offset0" in form.modifiers or "offset1" in form.modifiers:
        mods["offset0"] = word["offset0"]
        mods["offset1"] = word["offset1"]
    else:
        mods["offset"] = word["offset0"] | (word["offset1"] << 8)
    if word["gds"] and "gds" in form.modifiers:  # gfx940+ has no GDS otherwise
        mods["gds"] = True


def _mods_flat(plan: _Plan, word: _Word, prefix: _Word | None, operands: list[Operand],
               mods: dict[str, object]) -> None:
    off = word["offset"]
    mods["offset"] = off if plan.form.enc == "FLAT" else _signed(off, 13)
    for name in ("sc0", "nt", "sc1"):
        if word[name]:
            mods[name] = True


def _mods_buffer(plan: _Plan, word: _Word, prefix: _Word | None, operands: list[Operand],
                 mods: dict[str, object]) -> None:
    form = plan.form
    if form.enc == "MTBUF":
        mods["format"] = word["dfmt"] | (word["nfmt"] << 4)
    if word["idxen"]:
        mods["idxen"] = True
    if word["offen"]:
        mods["offen"] = True
    if "offset" in form.modifiers:  # (buffer_wbl2 and buffer_inv ignore offset and nt)
        mods["offset"] = word["offset"]
    for name in ("sc0", "nt", "sc1"):
        if name in word.fmt.fields and word[name] and name in form.modifiers and not (
                name == "sc0" and form.fixed.get("sc0")):
            mods[name] = True
    if form.fixed.get("sc0"):
        mods["sc0"] = True  # the returning atomic
    if form.base_variant == "lds":
        mods["lds"] = True


def _mods_smem(plan: _Plan, word: _Word, prefix: _Word | None, operands: list[Operand],
               mods: dict[str, object]) -> None:
    form = plan.form
    if form.base_variant == "soff" and word["imm"]:
        mods["offset"] = _signed(word["offset"], 21)
    for name in ("glc", "nv"):
        if word[name] and (name in form.modifiers or form.fixed.get(name)):
            mods[name] = True


@_touches_operands
def _mods_dpp(plan: _Plan, word: _Word, prefix: _Word | None, operands: list[Operand],
              mods: dict[str, object]) -> None:
    form = plan.form
    x = word.extra
    for i in plan.srcs + [i for i, s in enumerate(form.operands) if s.name == "vsrc1"]:
        k = 0 if form.operands[i].name == "src0" else 1
        neg = DPP[f"src{k}_neg"].get(x)
        ab = DPP[f"src{k}_abs"].get(x)
        if form.operands[i].mods and (neg or ab):
            operands[i] = Mod(operands[i], neg=bool(neg), abs=bool(ab))
    mods["dpp_ctrl"] = DPP["dpp_ctrl"].get(x)
    mods["row_mask"] = DPP["row_mask"].get(x)
    mods["bank_mask"] = DPP["bank_mask"].get(x)
    if DPP["bound_ctrl"].get(x):
        mods["bound_ctrl"] = True


@_touches_operands
def _mods_sdwa(plan: _Plan, word: _Word, prefix: _Word | None, operands: list[Operand],
               mods: dict[str, object]) -> None:
    form = plan.form
    x = word.extra
    for i, s in enumerate(form.operands):
        if s.name in ("src0", "vsrc1") and s.mods:
            k = 0 if s.name == "src0" else 1
            neg, ab, sext = (SDWA[f"src{k}_neg"].get(x), SDWA[f"src{k}_abs"].get(x),
                             SDWA[f"src{k}_sext"].get(x))
            if neg or ab or sext:
                operands[i] = Mod(operands[i], neg=bool(neg), abs=bool(ab),
                                  sext=bool(sext))
    if form.format != "VOPC":
        if SDWA["clamp"].get(x):
            mods["clamp"] = True
        if SDWA["omod"].get(x):
            mods["omod"] = SDWA["omod"].get(x)
        if "dst_sel:" in form.example:  # (fp8 conversions write a whole dword: no select)
            mods["dst_sel"] = SDWA_SEL[min(SDWA["dst_sel"].get(x), 6)]
            unused = SDWA["dst_unused"].get(x)
            mods["dst_unused"] = SDWA_UNUSED[unused] if unused < 3 else "UNUSED_PAD"
    else:
        if SDWA["clamp"].get(x) and "clamp" in form.modifiers:
            mods["clamp"] = True
        if SDWA["sd"].get(x):
            operands[0] = decode_scalar_reg(SDWA["sdst"].get(x), 2) or operands[0]
    mods["src0_sel"] = SDWA_SEL[min(SDWA["src0_sel"].get(x), 6)]
    if any(s.name == "vsrc1" for s in form.operands):
        mods["src1_sel"] = SDWA_SEL[min(SDWA["src1_sel"].get(x), 6)]


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value & (1 << (bits - 1)) else value


_DECODERS: dict[str, Decoder] = {}


def get_decoder(target: str) -> Decoder:
    """A cached decoder for `target`."""
    dec = _DECODERS.get(target)
    if dec is None:
        dec = _DECODERS[target] = Decoder(target)
    return dec


def decode_code(code: bytes, target: str, base: int = 0, *,
                skip_undecodable: bool = False) -> list:
    """Decode a whole code sequence; raises DecodeError at the first undecodable word, or
    with `skip_undecodable` lists it as (address, dword) and goes on with the next dword
    (as a disassembly listing shows data and padding)."""
    decode = get_decoder(target).decode
    out: list = []
    append = out.append
    pos, end = 0, len(code)
    paused = pause_cyclic_gc()
    try:
        while pos < end:
            try:
                d = decode(code, pos, base + pos)
            except AsterismError:
                if not skip_undecodable:
                    raise
                word = int.from_bytes(code[pos:pos + 4].ljust(4, b"\0"), "little")
                append((base + pos, word))
                pos += 4
                continue
            append(d)
            pos += d.size
    finally:
        resume_cyclic_gc(paused)
    return out


__all__ = ["DecodedInst", "Decoder", "decode_code", "get_decoder", "FORMATS"]

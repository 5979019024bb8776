"""Encoder: `mc.Inst` (with its database form) -> machine code bytes.

Table-driven, the inverse of mc/decoder.py: the form gives the format, opcode, fixed
variant bits and which field each operand slot lives in; this module turns operand values and
modifiers into field values.

What does not depend on the operands is worked out once per form (`_Plan`): the word with
the format, opcode and variant bits set, the handler of each operand slot and the handler of
the modifiers. Encoding an instruction runs those handlers.
"""

from __future__ import annotations

from collections.abc import Callable

from asterism.cache import compile_cached
from asterism.errors import EncodeError
from asterism.isa import Form, OperandSpec
from asterism.isa.formats import DPP, FORMATS, SDWA, SRC_DPP, SRC_SDWA, Format
from asterism.isa.syntax import SDWA_SEL, SDWA_UNUSED, SRC_VGPR_BASE, TTMP_BASE
from asterism.mc.inst import DATA, HIDDEN_BITS, Inst, data_bytes
from asterism.mc.operand_codes import op_sel_positions, scalar_code, src_code
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
    float_bits,
)
from asterism.mc.per_form import PerForm

VOP_SRCS = ("src0", "src1", "src2")
SCALE_MFMA_MARK = 1 << 11  # bit 11 of the MFMA word of a scaled MFMA pair (as LLVM encodes)


def _bits_of(value, n: int, what: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    bits = 0
    for k, b in enumerate(value):
        if b not in (0, 1):
            raise EncodeError(f"{what}: expected a list of 0/1, got {list(value)}")
        bits |= int(b) << k
    return bits


def _check_range(value: int, lo: int, hi: int, what: str) -> int:
    if not lo <= value <= hi:
        raise EncodeError(f"{what} {value} is out of range [{lo}, {hi}]")
    return value


class _Fields:
    """Mutable instruction integer with named field setters."""

    __slots__ = ("fmt", "value", "_table")

    def __init__(self, fmt: Format, value: int | None = None):
        self.fmt = fmt
        self.value = fmt.base() if value is None else value
        self._table = _field_table(fmt)

    def set(self, name: str, value: int) -> None:
        lo, mask, width, keep = self._table[name]
        if value < 0 or value > mask:
            raise EncodeError(f"field {name} value {value} does not fit {width} bits")
        self.value = (self.value & keep) | ((value & mask) << lo)


_FIELD_TABLES: dict[str, dict[str, tuple[int, int, int, int]]] = {}


def _field_table(fmt: Format) -> dict[str, tuple[int, int, int, int]]:
    """name -> (lo, mask, width, bits outside the field) of a format's fields (Field.mask is
    computed on each use)."""
    table = _FIELD_TABLES.get(fmt.name)
    if table is None:
        table = _FIELD_TABLES[fmt.name] = {
            name: (f.lo, f.mask, f.width, ~(f.mask << f.lo)) for name, f in fmt.fields.items()}
    return table


class _State(_Fields):
    """Encoding in progress: the main word (its fields), the instruction and where it goes,
    the DPP/SDWA dword, the literal and the scaled-MFMA prefix."""

    __slots__ = ("inst", "address", "labels", "extra", "literal", "prefix")

    def __init__(self, plan: _Plan, inst: Inst, address: int, labels: dict[str, int]):
        self.fmt = plan.fmt
        self.value = plan.word
        self._table = plan.field_table
        self.inst = inst
        self.address = address
        self.labels = labels
        self.extra = plan.extra
        self.literal: int | None = None
        self.prefix = None if plan.prefix_word is None else _Fields(FORMATS["VOP3P"],
                                                                    plan.prefix_word)

    def set_literal(self, bits: int) -> None:
        if self.literal is not None and self.literal != bits:
            raise EncodeError("only one literal constant per instruction")
        self.literal = bits


class Encoder:
    """Encodes instructions whose form has been selected (mc/matcher.py)."""

    def encode(self, inst: Inst, address: int = 0,
               labels: dict[str, int] | None = None) -> bytes:
        """Machine code of `inst` placed at `address` (labels map names to addresses)."""
        form = inst.form
        if form is None:
            if inst.mnemonic == DATA:
                return data_bytes(inst)  # (`.long` words in .text)
            raise EncodeError(f"{inst.mnemonic}: no encoding form selected")
        try:
            data = self._encode(inst, form, address, labels if labels is not None else {})
        except EncodeError as err:
            if err.location is None and inst.loc is not None:
                raise EncodeError(f"{inst.mnemonic}: {err.message}", inst.loc) from None
            raise
        hidden = inst.modifiers.get(HIDDEN_BITS)
        if hidden:  # (bits of words read from `.long` that the operands do not give)
            data = (int.from_bytes(data, "little") ^ hidden).to_bytes(len(data), "little")
        return data

    def _encode(self, inst: Inst, form: Form, address: int, labels: dict[str, int]) -> bytes:
        plan = _PLANS(form)
        fast = plan.fast
        if fast is not None:
            if fast is _first_fast:
                fast = plan.fast = _compile_fast(plan)
            if fast is not None:
                data = fast(inst.operands) if plan.modifiers is None else \
                    _fast_with_modifiers(plan, fast, inst)
                if data is not None:
                    return data
        st = _State(plan, inst, address, labels)
        for (spec, handler), op in zip(plan.slots, inst.operands):
            if handler is not None:
                handler(plan, spec, op.operand if isinstance(op, Mod) else op, op, st)
        if plan.modifiers is not None:
            plan.modifiers(plan, inst, st)
        data = st.value.to_bytes(plan.size, "little")
        if st.prefix is not None:
            data = st.prefix.value.to_bytes(8, "little") + data
        if st.extra is not None:
            data += st.extra.to_bytes(4, "little")
        if st.literal is not None:
            data += (st.literal & 0xFFFFFFFF).to_bytes(4, "little")
        return data


class _Plan:
    """How to encode one form: its word before operands, slot and modifier handlers."""

    def __init__(self, form: Form):
        self.form = form
        self.fmt = fmt = FORMATS[form.format]
        self.size = fmt.size
        w = _Fields(fmt)
        w.set("op", form.opcode)
        for name, value in form.fixed.items():
            w.set(name, value)
        self.extra: int | None = None
        if form.enc == "DPP":
            w.set("src0", SRC_DPP)
            self.extra = 0
        elif form.enc == "SDWA":
            w.set("src0", SRC_SDWA)
            self.extra = 0
        self.prefix_word: int | None = None
        if form.enc == "MAI_SCALE":
            prefix = _Fields(FORMATS["VOP3P"])
            prefix.set("op", _scale_prefix_opcode(form))
            self.prefix_word = prefix.value
            w.value |= SCALE_MFMA_MARK
        self.word = w.value
        self.field_table = _field_table(fmt)
        self.slots = tuple((spec, _slot_handler(form, spec, fmt)) for spec in form.operands)
        # Facts of the form the modifier handlers use.
        self.srcs = [(i, s) for i, s in enumerate(form.operands) if s.name in VOP_SRCS]
        self.src_bits = [(i, int(s.name[-1])) for i, s in self.srcs]  # (position, neg bit)
        self.has_sdst = any(s.name == "sdst" for s in form.operands)
        self.op_sel_positions = op_sel_positions(form)
        self.mix = "_mix" in form.mnemonic
        self.modifiers = _modifier_handler(form)
        # (made on the first encoding: most plans of a process are never encoded)
        self.fast: Callable[..., bytes | None] | None = _first_fast
        # (what the modifier handler does to a word without modifiers: _fast_with_modifiers)
        self.bare_effect: Callable[[int], int] | None | object = _UNKNOWN_EFFECT


_PLANS = PerForm(_Plan)


def _first_fast(operands: list[Operand]) -> bytes | None:
    """The placeholder of a plan's operand encoder before it is made (_compile_fast)."""
    raise AssertionError("made on first use")  # pragma: no cover


# ---------------------------------------------------------------------- the quick path
#
# Most instructions of a file are a plain form (no modifier handler, no DPP/SDWA dword or
# prefix) whose operands each fill one field: registers, and constants or a literal in the
# source fields. For those forms, a function generated per plan encodes such operands with
# the field positions as constants (about half the time of the slot handlers); anything else
# (a source modifier, an AGPR, a special register in a register field, a value that does
# not fit, two different literals) makes it return None, and the slot handlers, the one
# authority on errors, encode the instruction. tests/test_mc_speedups.py holds the two equal.


def _src_known(op: Operand, type_: str | None) -> tuple[int, int | None] | None:
    """src_code(op, type_), remembered as _op_src remembers it; None for an operand with
    source modifiers or one src_code refuses (the slot handlers then say why)."""
    if type(op) is Mod:
        return None
    try:
        known = src_code(op, type_)
    except EncodeError:
        return None
    if _cacheable(op):
        if len(_SRC_CODES) >= _SRC_CODES_LIMIT:
            _SRC_CODES.clear()
        _SRC_CODES[(op, type_)] = known
    return known


def _cacheable(op: Operand) -> bool:
    """Whether src_code's answer for `op` may be remembered under `op`: FloatImm(0.0) and
    FloatImm(-0.0) are equal keys but encode apart (the inline 0 / a literal 0x80000000)."""
    return type(op) is not FloatImm or op.value != 0.0


def _fast_with_modifiers(plan: _Plan, fast: Callable[..., bytes | None], inst: Inst
                         ) -> bytes | None:
    """The bytes of `inst` by the generated operand encoder of a plan with a modifier
    handler, the handler applied to the word the operands make; None where the slot and
    modifier handlers must encode it (the generated encoder refuses source modifiers, the
    only operands a modifier handler reads).

    Without modifiers written, the handler sets fields or bits that the operands do not
    decide: its effect is `word & keep | bits` for every such instruction, found once per
    plan by running it on words of all zeros and all ones (and checked on a third)."""
    if inst.modifiers:
        def finish(value: int) -> int:
            st = _State(plan, inst, 0, {})  # (modifier handlers read no address or label)
            st.value = value
            plan.modifiers(plan, inst, st)  # type: ignore[misc]
            return st.value

        return fast(inst.operands, finish)
    effect = plan.bare_effect
    if effect is _UNKNOWN_EFFECT:
        effect = plan.bare_effect = _modifier_effect(plan, inst)
    if effect is None:
        return None
    return fast(inst.operands, effect)


_UNKNOWN_EFFECT = object()


def _modifier_effect(plan: _Plan, inst: Inst) -> Callable[[int], int] | None:
    """The modifier handler's effect on a word for instructions without modifiers or
    source modifiers, as `word & keep | bits`; None if it refuses them, touches anything
    but the word, or its effect is not of that shape."""
    probe = Inst(inst.mnemonic, [], {}, plan.form, inst.loc)
    ones = (1 << (8 * plan.size)) - 1
    mixed = 0x5A5A5A5A5A5A5A5A & ones
    results = []
    for start in (0, ones, mixed):
        st = _State(plan, probe, 0, {})
        st.value = start
        try:
            plan.modifiers(plan, probe, st)  # type: ignore[misc]
        except (EncodeError, TypeError, ValueError, KeyError):
            return None  # (the handlers say why, with the operands' errors first)
        if st.literal is not None or st.extra is not None or st.prefix is not None:
            return None
        results.append(st.value)
    bits, all_ones, mixed_out = results
    keep = bits ^ all_ones  # (the bits passed through; set bits are equal in both)
    if mixed & keep | bits != mixed_out:
        return None
    return lambda value: value & keep | bits


def _agpr_bits(plan: _Plan, spec: OperandSpec, inner: SlotHandler) -> int | None:
    """The bits a slot's handler sets beside the field for an AGPR (_acc's AGPR-select
    bit, or 0), found by running _acc on an empty word; None where the generated encoder
    leaves AGPRs to the handler."""
    if inner is _op_register and "s" in spec.kinds:
        return 0  # (_op_register sets no select bit there)
    if inner not in (_op_register, _op_src, _op_vgpr_src):
        return None
    st = _State(plan, Inst(plan.form.mnemonic), 0, {})
    st.value = 0
    try:
        _acc(plan.form, spec, Reg("a", 0), st)
    except (EncodeError, KeyError):
        return None
    if st.literal is not None or st.extra is not None or st.prefix is not None:
        return None
    return st.value


def _buffer_slot_lines(plan: _Plan, k: int, handler: SlotHandler) -> list[str] | None:
    """The generated lines of a buffer instruction's vaddr, srsrc or soffset slot (operand
    `k`), as its handler encodes the common operands (anything else: return None, the
    handler decides); None for other handlers."""
    if handler not in (_op_buffer_vaddr, _op_buffer_srsrc, _op_buffer_soffset):
        return None
    name = {_op_buffer_vaddr: "vaddr", _op_buffer_srsrc: "srsrc",
            _op_buffer_soffset: "soffset"}[handler]
    lo, mask, _width, keep = plan.field_table[name]
    put = [f"    if code > {mask}:", "        return None",
           f"    value = value & {keep} | code << {lo}"]
    lines = [f"    op = ops[{k}]"]
    if handler is _op_buffer_vaddr:  # (any register's index; nothing for `off`)
        return lines + ["    if type(op) is Reg:", "        code = op.index",
                        *("    " + line for line in put),
                        "    elif type(op) is not Off:", "        return None"]
    if handler is _op_buffer_srsrc:  # (an SGPR / TTMP quad starting at a multiple of 4)
        lines += ["    if type(op) is not Reg or op.index % 4:", "        return None",
                  "    if op.kind == 's':", "        code = op.index // 4",
                  "    elif op.kind == 'ttmp':", f"        code = (op.index + {TTMP_BASE}) // 4",
                  "    else:", "        return None"]
    else:  # (src_code's answer as an i32 operand, no literal)
        lines += ["    known = SRC_CODES.get((op, 'i32'))", "    if known is None:",
                  "        known = src_known(op, 'i32')", "        if known is None:",
                  "            return None", "    code, lit = known", "    if lit is not None:",
                  "        return None"]
    return lines + put


def _compile_fast(plan: _Plan) -> Callable[..., bytes | None] | None:
    """fast(operands) -> the instruction's bytes, or None where the slot handlers must
    encode it; None for plans it does not cover. A plan with a modifier handler gets
    fast(operands, finish), finish(word) the handler's work (see _fast_with_modifiers)."""
    if plan.extra is not None or plan.prefix_word is not None:
        return None
    env: dict[str, object] = {"Reg": Reg, "Special": Special, "Off": Off,
                              "SRC_CODES": _SRC_CODES, "src_known": _src_known,
                              "scalar_code": scalar_code}
    head = "def fast(ops):" if plan.modifiers is None else "def fast(ops, finish):"
    lines = [head, f"    if len(ops) != {len(plan.slots)}:", "        return None",
             f"    value = {plan.word:#x}"]
    literal = False
    for k, (spec, handler) in enumerate(plan.slots):
        if handler is None:
            continue  # (a fixed register: nothing to encode)
        buffer_lines = _buffer_slot_lines(plan, k, handler)
        if buffer_lines is not None:
            lines += buffer_lines
            continue
        shortcut = getattr(handler, "shortcut", None)
        if shortcut is None:
            return None
        inner, lo, mask, vgpr_base, sgpr = shortcut
        lines += [f"    op = ops[{k}]", "    if type(op) is Reg:", "        kind = op.kind",
                  "        if kind == 'v':", f"            code = op.index + {vgpr_base}"]
        acc = _agpr_bits(plan, spec, inner)
        if acc is not None:  # (an AGPR: the VGPR's code and its family's AGPR-select bit)
            lines += ["        elif kind == 'a':", f"            code = op.index + {vgpr_base}"]
            if acc:
                lines += [f"            value |= {acc:#x}"]
        if sgpr:  # (scalar_code's codes)
            lines += ["        elif kind == 's':", "            code = op.index",
                      "        elif kind == 'ttmp':", f"            code = op.index + {TTMP_BASE}"]
        lines += ["        else:", "            return None"]
        if inner is _op_src:
            # (a constant or a named register: src_code's answer, as _op_src remembers it)
            env[f"type{k}"] = spec.type
            lines += ["    else:", f"        known = SRC_CODES.get((op, type{k}))",
                      "        if known is None:", f"            known = src_known(op, type{k})",
                      "            if known is None:", "                return None",
                      "        code, lit = known", "        if lit is not None:"]
            if literal:
                lines += ["            if literal is not None and literal != lit:",
                          "                return None", "            literal = lit"]
            else:
                lines += ["            literal = lit"]
            literal = True
        elif inner is _op_register and sgpr:
            # (a named register: its scalar code, as _op_register sets it)
            lines += ["    elif type(op) is Special:", "        code = scalar_code(op)",
                      "        if code is None:", "            return None",
                      "    else:", "        return None"]
        else:
            lines += ["    else:", "        return None"]
        lines += [f"    if code > {mask}:", "        return None",
                  f"    value = value & {~(mask << lo)} | code << {lo}"]
    if plan.modifiers is not None:
        lines.append("    value = finish(value)")
    if literal:
        lines.insert(4, "    literal = None")  # (after `value = ...`, before the slots)
        lines += [f"    data = value.to_bytes({plan.size}, 'little')",
                  "    if literal is not None:",
                  "        data += (literal & 0xFFFFFFFF).to_bytes(4, 'little')",
                  "    return data"]
    else:
        lines.append(f"    return value.to_bytes({plan.size}, 'little')")
    source = "\n".join(lines) + "\n"
    exec(compile_cached(source, f"<encoder of {plan.form.mc_name or plan.form.mnemonic}>"),
         env)
    return env["fast"]  # type: ignore[return-value]

# ---------------------------------------------------------------------- operand slots
#
# A slot handler gets (plan, spec, operand without source modifiers, operand as written,
# state) and sets the operand's fields.

SlotHandler = Callable[[_Plan, OperandSpec, Operand, Operand, _State], None]


def _slot_handler(form: Form, spec: OperandSpec, fmt: Format) -> SlotHandler | None:
    """The handler that encodes the operands of this slot (None: nothing to encode)."""
    name, enc = spec.name, form.enc
    if spec.fixed:
        return None
    if name == "literal":
        return _op_literal
    if name in ("scale_src0", "scale_src1"):
        return _op_scale_src
    if name == "simm16" or spec.syntax:
        return _op_simm16
    if enc in ("DPP", "SDWA") and name == "src0":
        return _op_extra_src0
    if enc == "SDWA" and name == "vsrc1":
        return _sdwa_vsrc1_handler(_field_handler(form, spec, fmt))
    if enc == "SMEM":
        return _op_smem
    if enc in ("MUBUF", "MTBUF") and name in ("vaddr", "srsrc", "soffset"):
        return {"vaddr": _op_buffer_vaddr, "srsrc": _op_buffer_srsrc,
                "soffset": _op_buffer_soffset}[name]
    if enc in ("FLAT", "GLOBAL", "SCRATCH"):
        if name == "saddr":
            return _op_flat_saddr
        if name == "addr":
            return _flat_addr_handler(_field_handler(form, spec, fmt))
    return _field_handler(form, spec, fmt)


def _field_handler(form: Form, spec: OperandSpec, fmt: Format) -> SlotHandler:
    """The handler of an operand that is one field of the word."""
    name = spec.name
    fld = fmt.fields.get(name)
    if fld is None:
        return _op_no_field
    if name in VOP_SRCS or name in ("ssrc0", "ssrc1"):
        if fld.width == 8 and form.enc not in ("SOP1", "SOP2", "SOPC", "SOPK"):
            return _with_register_shortcut(_op_vgpr_src, fld.lo, fld.mask, 0, False)
        return _with_register_shortcut(_op_src, fld.lo, fld.mask, SRC_VGPR_BASE, True)
    return _with_register_shortcut(_op_register, fld.lo, fld.mask, 0, True)


def _with_register_shortcut(handler: SlotHandler, lo: int, mask: int, vgpr_base: int,
                            sgpr: bool) -> SlotHandler:
    """`handler` with its result for VGPRs (code vgpr_base + index) and, if `sgpr`, SGPRs
    (code index) written straight into the field (the common operands; no AGPR bit, literal
    or error is involved for them when the code fits)."""
    keep = ~(mask << lo)

    def encode_register_field(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
                              st: _State) -> None:
        if type(base) is Reg:
            kind = base.kind
            code = base.index + vgpr_base if kind == "v" else (
                base.index if kind == "s" and sgpr else -1)
            if 0 <= code <= mask:
                st.value = (st.value & keep) | (code << lo)
                return
        handler(plan, spec, base, op, st)

    encode_register_field.shortcut = (handler, lo, mask, vgpr_base, sgpr)  # type: ignore
    return encode_register_field


def _op_literal(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
                st: _State) -> None:
    st.set_literal(_literal_bits(base, spec.type))


def _op_scale_src(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
                  st: _State) -> None:
    code, lit = src_code(base, spec.type)
    if lit is not None:
        raise EncodeError(f"{spec.name}: literals are not allowed")
    st.prefix.set("src0" if spec.name == "scale_src0" else "src1", code)


def _op_simm16(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
               st: _State) -> None:
    st.set(spec.name, _simm16(plan.form, spec, base, st.address, st.labels))


def _op_extra_src0(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
                   st: _State) -> None:
    """DPP/SDWA src0 lives in the extra dword."""
    enc = plan.form.enc
    layout = DPP if enc == "DPP" else SDWA
    if isinstance(base, Reg) and base.kind == "v":
        st.extra = layout["src0"].put(st.extra, base.index)
        return
    if enc == "SDWA":
        code, lit = src_code(base, spec.type)
        if lit is None and code < 256:
            st.extra = SDWA["src0"].put(st.extra, code)
            st.extra = SDWA["s0"].put(st.extra, 1)
            return
    raise EncodeError(f"src0: {enc} needs a VGPR, got {base}")


def _sdwa_vsrc1_handler(in_field: SlotHandler) -> SlotHandler:
    """SDWA vsrc1: a VGPR in the field, or (with the S1 bit) an SGPR/inline constant."""

    def encode_sdwa_vsrc1(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
                          st: _State) -> None:
        if isinstance(base, Reg) and base.kind == "v":
            in_field(plan, spec, base, op, st)
            return
        code, lit = src_code(base, spec.type)
        if lit is not None or code > 255:
            raise EncodeError("vsrc1: SDWA accepts a VGPR, SGPR or inline constant")
        st.extra = SDWA["s1"].put(st.extra, 1)
        st.set("vsrc1", code)

    return encode_sdwa_vsrc1


def _op_smem(plan: _Plan, spec: OperandSpec, op: Operand, written: Operand,
             st: _State) -> None:
    name, w = spec.name, st
    if name == "sbase":
        code = _scalar(op, "sbase")
        if code % 2:
            raise EncodeError(f"sbase: {op} must start at an even SGPR")
        w.set("sbase", code // 2)
    elif name == "sdata":
        if isinstance(op, Imm):
            w.set("sdata", op.value)
        else:
            w.set("sdata", _scalar(op, "sdata"))
    elif name == "offset":
        value = _int_value(op, "offset")
        _check_range(value, -(1 << 20), (1 << 20) - 1, "SMEM offset")
        w.set("offset", value & 0x1FFFFF)
    elif name == "soffset":
        code = _scalar(op, "soffset")
        modifiers = st.inst.modifiers
        if "offset" in modifiers:
            w.set("imm", 1)
            w.set("soe", 1)
            w.set("soffset", code)
            value = int(modifiers["offset"])
            _check_range(value, -(1 << 20), (1 << 20) - 1, "SMEM offset")
            w.set("offset", value & 0x1FFFFF)
        else:
            w.set("offset", code)


def _op_buffer_vaddr(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
                     st: _State) -> None:
    if isinstance(base, Reg):
        st.set("vaddr", base.index)


def _op_buffer_srsrc(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
                     st: _State) -> None:
    st.set("srsrc", _aligned(base, 4, "srsrc") // 4)


def _op_buffer_soffset(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
                       st: _State) -> None:
    code, lit = src_code(base, "i32")
    if lit is not None:
        raise EncodeError("soffset: expected an SGPR or an inline constant")
    st.set("soffset", code)


def _op_flat_saddr(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
                   st: _State) -> None:
    if isinstance(base, Off):
        st.set("saddr", 0x7F)
    else:
        st.set("saddr", _scalar(base, "saddr"))


def _flat_addr_handler(in_field: SlotHandler) -> SlotHandler:
    """FLAT-family addr: nothing for `off`, else the field."""

    def encode_flat_addr(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
                         st: _State) -> None:
        if not isinstance(base, Off):
            in_field(plan, spec, base, op, st)

    return encode_flat_addr


def _op_no_field(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
                 st: _State) -> None:
    raise EncodeError(f"{plan.form.mnemonic}: no field for operand {spec.name}")


def _op_vgpr_src(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
                 st: _State) -> None:
    """An 8-bit source field (VOP2 vsrc1-like): VGPRs/AGPRs only."""
    st.set(spec.name, _vreg(base, spec.name))
    if base.kind == "a":
        _acc(plan.form, spec, base, st)


def _op_src(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand, st: _State) -> None:
    """A 9-bit (or SOP) source: a register, an inline constant or a literal."""
    if type(base) is Reg and base.kind == "v":  # (the common case, as src_code has it)
        st.set(spec.name, SRC_VGPR_BASE + base.index)
        return
    key = (base, spec.type)
    known = _SRC_CODES.get(key)
    if known is None:
        known = src_code(base, spec.type)  # (raises for an operand it cannot encode)
        if _cacheable(base):
            if len(_SRC_CODES) >= _SRC_CODES_LIMIT:
                _SRC_CODES.clear()
            _SRC_CODES[key] = known
    code, lit = known
    if isinstance(base, Reg) and base.kind == "a":
        _acc(plan.form, spec, base, st)
    if lit is not None:
        st.set_literal(lit)
    st.set(spec.name, code)


# (operand, operand type) -> src_code's answer: the operands (frozen, hashable) repeat, and
# src_code is a pure function of the two; emptied past _SRC_CODES_LIMIT entries.
_SRC_CODES: dict[tuple[Operand, str | None], tuple[int, int | None]] = {}
_SRC_CODES_LIMIT = 1 << 16


def _op_register(plan: _Plan, spec: OperandSpec, base: Operand, op: Operand,
                 st: _State) -> None:
    """Any other field: a VGPR/AGPR index, a scalar register code or a plain immediate."""
    name, w = spec.name, st
    if isinstance(base, Reg) and base.kind in ("v", "a") and "s" not in spec.kinds:
        w.set(name, base.index)
        if base.kind == "a":
            _acc(plan.form, spec, base, st)
        return
    if isinstance(base, Reg) and base.kind in ("v", "a"):
        w.set(name, base.index)
        return
    code = scalar_code(base)
    if code is None:
        if isinstance(base, Imm) and "k" in spec.kinds:
            w.set(name, base.value)
            return
        raise EncodeError(f"operand {name}: cannot encode {op}")
    w.set(name, code)


def _acc(form: Form, spec: OperandSpec, reg: Operand, st: _State) -> None:
    """Set the AGPR-select bit of the operand's family when it names an AGPR."""
    if not (isinstance(reg, Reg) and reg.kind == "a") or "v" not in spec.kinds:
        return
    enc, w = form.enc, st
    if enc in ("MAI", "MAI_SCALE"):
        if spec.name in ("vdst", "src2"):
            w.set("acc_cd", 1)
        elif spec.name == "src0":
            w.set("acc", w.fmt.fields["acc"].get(w.value) | 1)
        elif spec.name == "src1":
            w.set("acc", w.fmt.fields["acc"].get(w.value) | 2)
    elif enc in ("DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF", "MTBUF"):
        w.set("acc", 1)


def _simm16(form: Form, spec: OperandSpec, op: Operand, address: int,
            labels: dict[str, int]) -> int:
    if isinstance(op, Label):
        if op.name not in labels:
            raise EncodeError(f"undefined label '{op.name}'")
        delta = labels[op.name] - (address + 4)
        if delta % 4:
            raise EncodeError(f"branch target '{op.name}' is not 4-byte aligned")
        delta //= 4
        _check_range(delta, -(1 << 15), (1 << 15) - 1, f"branch to '{op.name}': offset (words)")
        return delta & 0xFFFF
    if isinstance(op, Syntax):
        return op.value & 0xFFFF
    value = _int_value(op, spec.name)
    if spec.syntax == "label":
        _check_range(value, -(1 << 15), (1 << 16) - 1, "branch offset")
        return value & 0xFFFF
    width = FORMATS[form.format].fields[spec.name].width
    lo = -(1 << (width - 1)) if spec.syntax == "label" or value < 0 else 0
    hi = (1 << width) - 1 if value >= 0 else (1 << (width - 1)) - 1
    _check_range(value, lo, hi, f"{spec.name}")
    return value & ((1 << width) - 1)


# ---------------------------------------------------------------------- modifiers
#
# One handler per encoding family: (plan, inst, state).

ModifierHandler = Callable[[_Plan, Inst, _State], None]


def _modifier_handler(form: Form) -> ModifierHandler | None:
    """The handler that encodes the modifiers of this form (None: it has none)."""
    enc = form.enc
    if enc == "VOP3" and form.mnemonic.startswith("v_bitop3"):
        return _mods_bitop3
    if enc == "MAI" and not {"cbsz", "abid", "blgp"} & set(form.modifiers):
        return _mods_accvgpr
    return {"VOP3": _mods_vop3, "VOP3P": _mods_vop3p, "MAI": _mods_mfma,
            "MAI_SCALE": _mods_mfma, "DS": _mods_ds, "FLAT": _mods_flat,
            "GLOBAL": _mods_flat, "SCRATCH": _mods_flat, "MUBUF": _mods_buffer,
            "MTBUF": _mods_buffer, "SMEM": _mods_smem, "DPP": _mods_dpp,
            "SDWA": _mods_sdwa}.get(enc)


def _mods_bitop3(plan: _Plan, inst: Inst, st: _State) -> None:
    m, w = inst.modifiers, st
    table = _check_range(int(m.get("bitop3", 0)), 0, 255, "bitop3")
    w.set("neg", table & 7)
    w.set("abs", (table >> 3) & 7)
    w.set("omod", table >> 6)
    if m.get("op_sel"):
        positions = plan.op_sel_positions
        w.set("op_sel", sum(int(b) << pos for b, pos in zip(m["op_sel"], positions)))


def _mods_vop3(plan: _Plan, inst: Inst, st: _State) -> None:
    m, w = inst.modifiers, st
    ops = inst.operands
    neg = absm = 0
    for i, k in plan.src_bits:
        op = ops[i] if i < len(ops) else None
        if isinstance(op, Mod):
            neg |= int(op.neg) << k
            absm |= int(op.abs) << k
    w.set("neg", neg)
    has_sdst = plan.has_sdst
    if absm:
        if has_sdst:
            raise EncodeError("abs is not available with a scalar carry-out")
        w.set("abs", absm)
    w.set("clamp", int(bool(m.get("clamp"))))
    w.set("omod", _check_range(int(m.get("omod", 0)), 0, 3, "omod"))
    if m.get("op_sel") and not has_sdst:
        bits = list(m["op_sel"])
        positions = plan.op_sel_positions
        if len(bits) > len(positions):
            raise EncodeError(f"op_sel has {len(bits)} elements, {plan.form.mnemonic} takes "
                              f"{len(positions)}")
        w.set("op_sel", sum(int(b) << pos for b, pos in zip(bits, positions)))


def _mods_vop3p(plan: _Plan, inst: Inst, st: _State) -> None:
    m, w = inst.modifiers, st
    n = len(plan.srcs)
    mix = plan.mix
    default_hi = (0,) * n if mix else (1,) * n
    op_sel = _bits_of(m.get("op_sel"), n, "op_sel")
    op_sel_hi = _bits_of(m.get("op_sel_hi", default_hi), n, "op_sel_hi")
    if n < 3 and not mix:
        op_sel_hi |= 1 << 2  # LLVM sets the unused src2 bit to its default too
    w.set("op_sel", op_sel)
    w.set("op_sel_hi", op_sel_hi & 3)
    w.set("op_sel_hi2", (op_sel_hi >> 2) & 1)
    neg = _bits_of(m.get("neg_lo"), n, "neg_lo")
    neg_hi = _bits_of(m.get("neg_hi"), n, "neg_hi")
    if mix:
        # v_fma_mix*: source modifiers -x / |x| live in NEG / NEG_HI.
        ops = inst.operands
        for i, k in plan.src_bits:
            op = ops[i] if i < len(ops) else None
            if isinstance(op, Mod):
                neg |= int(op.neg) << k
                neg_hi |= int(op.abs) << k
    w.set("neg", neg)
    w.set("neg_hi", neg_hi)
    w.set("clamp", int(bool(m.get("clamp"))))


def _mods_accvgpr(plan: _Plan, inst: Inst, st: _State) -> None:
    # v_accvgpr_read/write: encoded like VOP3P with op_sel_hi at its default (1s).
    st.set("op_sel_hi", 3)
    st.set("op_sel_hi2", 1)


def _mods_mfma(plan: _Plan, inst: Inst, st: _State) -> None:
    m, w = inst.modifiers, st
    for name in ("cbsz", "abid", "blgp"):
        if name in m:
            w.set(name, int(m[name]))
    if m.get("neg"):  # f64 MFMA: neg:[a,b,c] lives in the BLGP field
        w.set("blgp", _bits_of(m["neg"], 3, "neg"))
    if plan.form.enc == "MAI_SCALE":
        w.value |= SCALE_MFMA_MARK
        p = st.prefix
        p.set("op_sel", _bits_of(m.get("op_sel"), 3, "op_sel") & 3)
        p.set("op_sel_hi", _bits_of(m.get("op_sel_hi"), 3, "op_sel_hi") & 3)


def _mods_ds(plan: _Plan, inst: Inst, st: _State) -> None:
    m, w = inst.modifiers, st
    if "offset0" in m or "offset1" in m:
        w.set("offset0", _check_range(int(m.get("offset0", 0)), 0, 255, "offset0"))
        w.set("offset1", _check_range(int(m.get("offset1", 0)), 0, 255, "offset1"))
    else:
        off = _check_range(_int_value(m.get("offset", Imm(0)), "offset")
                           if not isinstance(m.get("offset", 0), int)
                           else m.get("offset", 0), 0, 65535, "DS offset")
        w.set("offset0", off & 0xFF)
        w.set("offset1", off >> 8)
    w.set("gds", int(bool(m.get("gds"))))


def _mods_flat(plan: _Plan, inst: Inst, st: _State) -> None:
    m, w, enc = inst.modifiers, st, plan.form.enc
    off = int(m.get("offset", 0))
    if enc == "FLAT":
        w.set("offset", _check_range(off, 0, 4095, "FLAT offset"))
    else:
        w.set("offset", _check_range(off, -4096, 4095, f"{enc} offset") & 0x1FFF)
    for name in ("sc0", "sc1", "nt"):
        w.set(name, int(bool(m.get(name))))


def _mods_buffer(plan: _Plan, inst: Inst, st: _State) -> None:
    m, w, enc = inst.modifiers, st, plan.form.enc
    w.set("offset", _check_range(int(m.get("offset", 0)), 0, 4095, "buffer offset"))
    w.set("offen", int(bool(m.get("offen"))))
    w.set("idxen", int(bool(m.get("idxen"))))
    for name in ("sc0", "sc1", "nt"):
        if name in w.fmt.fields:
            w.set(name, int(bool(m.get(name))))
        elif m.get(name):
            raise EncodeError(f"{name} is not available for {enc}")
    if enc == "MTBUF":
        fmt = int(m.get("format", 1))
        w.set("dfmt", fmt & 0xF)
        w.set("nfmt", (fmt >> 4) & 0x7)


def _mods_smem(plan: _Plan, inst: Inst, st: _State) -> None:
    m, w = inst.modifiers, st
    w.set("glc", int(bool(m.get("glc")) or bool(plan.form.fixed.get("glc"))))
    w.set("nv", int(bool(m.get("nv"))))


def _mods_dpp(plan: _Plan, inst: Inst, st: _State) -> None:
    m = inst.modifiers
    x = st.extra
    x = DPP["dpp_ctrl"].put(x, int(m.get("dpp_ctrl", 0xE4)))
    x = DPP["row_mask"].put(x, _check_range(int(m.get("row_mask", 0xF)), 0, 15, "row_mask"))
    x = DPP["bank_mask"].put(x, _check_range(int(m.get("bank_mask", 0xF)), 0, 15,
                                             "bank_mask"))
    x = DPP["bound_ctrl"].put(x, int(bool(m.get("bound_ctrl"))))
    ops = inst.operands
    for i, s in enumerate(plan.form.operands):
        op = ops[i] if i < len(ops) else None
        if isinstance(op, Mod) and s.name in ("src0", "vsrc1"):
            k = 0 if s.name == "src0" else 1
            x = DPP[f"src{k}_neg"].put(x, int(op.neg))
            x = DPP[f"src{k}_abs"].put(x, int(op.abs))
    st.extra = x


def _mods_sdwa(plan: _Plan, inst: Inst, st: _State) -> None:
    m = inst.modifiers
    ops = inst.operands
    x = st.extra
    if plan.form.format != "VOPC":
        # Forms without a destination select (fp8 conversions) keep DWORD / UNUSED_PAD.
        unused_default = "UNUSED_PRESERVE" if "dst_sel:" in plan.form.example else "UNUSED_PAD"
        x = SDWA["dst_sel"].put(x, _sel(m.get("dst_sel", "DWORD"), SDWA_SEL, "dst_sel"))
        x = SDWA["dst_unused"].put(x, _sel(m.get("dst_unused", unused_default),
                                           SDWA_UNUSED, "dst_unused"))
        x = SDWA["omod"].put(x, int(m.get("omod", 0)))
    else:
        dst = ops[0] if ops else None
        if not (isinstance(dst, Special) and dst.name == "vcc"):
            x = SDWA["sd"].put(x, 1)
            x = SDWA["sdst"].put(x, _scalar(dst, "sdst"))
    if plan.form.format != "VOPC":  # (a compare has no clamp: bit 13 is part of its sdst)
        x = SDWA["clamp"].put(x, int(bool(m.get("clamp"))))
    x = SDWA["src0_sel"].put(x, _sel(m.get("src0_sel", "DWORD"), SDWA_SEL, "src0_sel"))
    if plan.form.format != "VOP1":  # VOP1 has no second source: its select stays 0
        x = SDWA["src1_sel"].put(x, _sel(m.get("src1_sel", "DWORD"), SDWA_SEL, "src1_sel"))
    for i, s in enumerate(plan.form.operands):
        op = ops[i] if i < len(ops) else None
        if isinstance(op, Mod) and s.name in ("src0", "vsrc1"):
            k = 0 if s.name == "src0" else 1
            x = SDWA[f"src{k}_neg"].put(x, int(op.neg))
            x = SDWA[f"src{k}_abs"].put(x, int(op.abs))
            x = SDWA[f"src{k}_sext"].put(x, int(op.sext))
    st.extra = x


# ---------------------------------------------------------------------- values


def _sel(value, names: list[str], what: str) -> int:
    if isinstance(value, int):
        return value
    if value not in names:
        raise EncodeError(f"{what}: expected one of {', '.join(names)}, got {value}")
    return names.index(value)


def _int_value(op: Operand, what: str) -> int:
    if isinstance(op, Imm):
        return op.value
    if isinstance(op, Literal):
        return op.bits
    if isinstance(op, Syntax):
        return op.value
    raise EncodeError(f"{what}: expected an integer, got {op}")


def _literal_bits(op: Operand, type_: str | None) -> int:
    if isinstance(op, FloatImm):
        return float_bits(op.value, type_)
    value = _int_value(op, "literal")
    if not -(1 << 31) <= value < (1 << 32):
        raise EncodeError(f"literal {value} does not fit 32 bits")
    return value & 0xFFFFFFFF


def _vreg(op: Operand, what: str) -> int:
    if isinstance(op, Reg) and op.kind in ("v", "a"):
        return op.index
    raise EncodeError(f"{what}: expected a VGPR, got {op}")


def _scalar(op: Operand, what: str) -> int:
    code = scalar_code(op) if op is not None else None
    if code is None:
        raise EncodeError(f"{what}: expected an SGPR, got {op}")
    return code


def _aligned(op: Operand, align: int, what: str) -> int:
    """The scalar code of an SGPR or TTMP range that starts at a multiple of `align`."""
    if not (isinstance(op, Reg) and op.kind in ("s", "ttmp")):
        raise EncodeError(f"{what}: expected an SGPR range, got {op}")
    if op.index % align:
        raise EncodeError(f"{what}: {op} must start at a multiple of {align}")
    return scalar_code(op)


def _scale_prefix_opcode(form: Form) -> int:
    from asterism.isa import get_isa

    for target in ("gfx950",):
        inst = get_isa(target).instructions.get("v_mfma_ld_scale_b32")
        if inst is not None:
            return inst.forms[0].opcode
    raise EncodeError("scaled MFMA needs v_mfma_ld_scale_b32 (gfx950)")


ENCODER = Encoder()


def encode_inst(inst: Inst, address: int = 0, labels: dict[str, int] | None = None) -> bytes:
    """Machine code of one instruction (its form must be selected)."""
    return ENCODER.encode(inst, address, labels)


def inst_size(inst: Inst) -> int:
    """Encoded size in bytes (labels do not change sizes, so this is exact before layout)."""
    return len(ENCODER.encode(inst, 0, _AnyLabel()))


class _AnyLabel(dict):
    """A label map that resolves every name to just after the instruction being sized, so
    the provisional branch offset is 0 and always in range: sizing must not range-check an
    offset that the real label address has not given yet. `at` is that address (4 for an
    instruction at 0)."""

    def __init__(self, at: int = 4):
        super().__init__()
        self.at = at

    def __contains__(self, key) -> bool:
        return True

    def __getitem__(self, key) -> int:
        return self.at

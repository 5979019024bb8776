"""Encoder: `mc.Inst` (with its database form) -> machine code bytes.

Table-driven, the inverse of mc/decoder.py: the form gives the format, opcode, fixed
variant bits and which field each operand slot lives in; this module turns operand values and
modifiers into field values.
"""

from __future__ import annotations

from asterism.errors import EncodeError
from asterism.isa import Form, OperandSpec
from asterism.isa.formats import DPP, FORMATS, SDWA, SRC_DPP, SRC_SDWA, Format
from asterism.isa.syntax import SDWA_SEL, SDWA_UNUSED
from asterism.mc.decoder import op_sel_positions
from asterism.mc.inst import Inst
from asterism.mc.operand_codes import scalar_code, src_code
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

    def __init__(self, fmt: Format):
        self.fmt = fmt
        self.value = fmt.base()

    def set(self, name: str, value: int) -> None:
        f = self.fmt.fields[name]
        if value < 0 or value > f.mask:
            raise EncodeError(f"field {name} value {value} does not fit {f.width} bits")
        self.value = f.put(self.value, value)


class Encoder:
    """Encodes instructions whose form has been selected (mc/matcher.py)."""

    def encode(self, inst: Inst, address: int = 0,
               labels: dict[str, int] | None = None) -> bytes:
        """Machine code of `inst` placed at `address` (labels map names to addresses)."""
        form = inst.form
        if form is None:
            raise EncodeError(f"{inst.mnemonic}: no encoding form selected")
        try:
            return self._encode(inst, form, address, labels if labels is not None else {})
        except EncodeError as err:
            if err.location is None and inst.loc is not None:
                raise EncodeError(f"{inst.mnemonic}: {err.message}", inst.loc) from None
            raise

    def _encode(self, inst: Inst, form: Form, address: int, labels: dict[str, int]) -> bytes:
        fmt = FORMATS[form.format]
        w = _Fields(fmt)
        w.set("op", form.opcode)
        for name, value in form.fixed.items():
            w.set(name, value)
        extra: int | None = None
        if form.enc == "DPP":
            w.set("src0", SRC_DPP)
            extra = 0
        elif form.enc == "SDWA":
            w.set("src0", SRC_SDWA)
            extra = 0
        state = _State(w, extra)
        prefix: _Fields | None = None
        if form.enc == "MAI_SCALE":
            prefix = _Fields(FORMATS["VOP3P"])
            prefix.set("op", _scale_prefix_opcode(form))
            w.value |= SCALE_MFMA_MARK
        state.prefix = prefix
        for spec, op in zip(form.operands, inst.operands):
            self._operand(form, spec, op, state, address, labels, inst)
        self._modifiers(form, inst, state)
        data = b""
        if prefix is not None:
            data += prefix.value.to_bytes(8, "little")
        data += w.value.to_bytes(fmt.size, "little")
        if state.extra is not None:
            data += state.extra.to_bytes(4, "little")
        if state.literal is not None:
            data += (state.literal & 0xFFFFFFFF).to_bytes(4, "little")
        return data

    # ------------------------------------------------------------------ operands

    def _operand(self, form: Form, spec: OperandSpec, op: Operand, st: _State, address: int,
                 labels: dict[str, int], inst: Inst) -> None:
        name, enc = spec.name, form.enc
        w = st.w
        base = op.operand if isinstance(op, Mod) else op
        if spec.fixed:
            return
        if name == "literal":
            st.set_literal(_literal_bits(base, spec.type))
            return
        if name in ("scale_src0", "scale_src1"):
            code, lit = src_code(base, spec.type)
            if lit is not None:
                raise EncodeError(f"{name}: literals are not allowed")
            st.prefix.set("src0" if name == "scale_src0" else "src1", code)
            return
        if name == "simm16" or spec.syntax:
            w.set(name, self._simm16(form, spec, base, address, labels))
            return
        if enc in ("DPP", "SDWA") and name == "src0":
            self._extra_src0(form, spec, base, st)
            return
        if enc == "SDWA" and name == "vsrc1" and not (isinstance(base, Reg) and base.kind == "v"):
            code, lit = src_code(base, spec.type)
            if lit is not None or code > 255:
                raise EncodeError("vsrc1: SDWA accepts a VGPR, SGPR or inline constant")
            st.extra = SDWA["s1"].put(st.extra, 1)
            w.set("vsrc1", code)
            return
        if enc == "SMEM":
            self._smem_operand(spec, base, w, inst)
            return
        if enc in ("MUBUF", "MTBUF") and name in ("vaddr", "srsrc", "soffset"):
            if name == "vaddr":
                if isinstance(base, Reg):
                    w.set("vaddr", base.index)
                return
            if name == "srsrc":
                w.set("srsrc", _aligned(base, 4, "srsrc") // 4)
                return
            code, lit = src_code(base, "i32")
            if lit is not None:
                raise EncodeError("soffset: expected an SGPR or an inline constant")
            w.set("soffset", code)
            return
        if enc in ("FLAT", "GLOBAL", "SCRATCH"):
            if name == "saddr":
                if isinstance(base, Off):
                    w.set("saddr", 0x7F)
                else:
                    w.set("saddr", _scalar(base, "saddr"))
                return
            if name == "addr" and isinstance(base, Off):
                return
        fld = w.fmt.fields.get(name)
        if fld is None:
            raise EncodeError(f"{form.mnemonic}: no field for operand {name}")
        if name in VOP_SRCS or name in ("ssrc0", "ssrc1"):
            if fld.width == 8 and enc not in ("SOP1", "SOP2", "SOPC", "SOPK"):
                w.set(name, _vreg(base, name))
                self._acc(form, spec, base, st)
                return
            code, lit = src_code(base, spec.type)
            if isinstance(base, Reg) and base.kind == "a":
                self._acc(form, spec, base, st)
            if lit is not None:
                st.set_literal(lit)
            w.set(name, code)
            return
        if isinstance(base, Reg) and base.kind in ("v", "a") and "s" not in spec.kinds:
            w.set(name, base.index)
            self._acc(form, spec, base, st)
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

    @staticmethod
    def _acc(form: Form, spec: OperandSpec, reg: Operand, st: _State) -> None:
        """Set the AGPR-select bit of the operand's family when it names an AGPR."""
        if not (isinstance(reg, Reg) and reg.kind == "a") or "v" not in spec.kinds:
            return
        enc, w = form.enc, st.w
        if enc in ("MAI", "MAI_SCALE"):
            if spec.name in ("vdst", "src2"):
                w.set("acc_cd", 1)
            elif spec.name == "src0":
                w.set("acc", w.fmt.fields["acc"].get(w.value) | 1)
            elif spec.name == "src1":
                w.set("acc", w.fmt.fields["acc"].get(w.value) | 2)
        elif enc in ("DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF", "MTBUF"):
            w.set("acc", 1)

    def _extra_src0(self, form: Form, spec: OperandSpec, op: Operand, st: _State) -> None:
        layout = DPP if form.enc == "DPP" else SDWA
        if isinstance(op, Reg) and op.kind == "v":
            st.extra = layout["src0"].put(st.extra, op.index)
            return
        if form.enc == "SDWA":
            code, lit = src_code(op, spec.type)
            if lit is None and code < 256:
                st.extra = SDWA["src0"].put(st.extra, code)
                st.extra = SDWA["s0"].put(st.extra, 1)
                return
        raise EncodeError(f"src0: {form.enc} needs a VGPR, got {op}")

    @staticmethod
    def _smem_operand(spec: OperandSpec, op: Operand, w: _Fields, inst: Inst) -> None:
        name = spec.name
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
            if "offset" in inst.modifiers:
                w.set("imm", 1)
                w.set("soe", 1)
                w.set("soffset", code)
                value = int(inst.modifiers["offset"])
                _check_range(value, -(1 << 20), (1 << 20) - 1, "SMEM offset")
                w.set("offset", value & 0x1FFFFF)
            else:
                w.set("offset", code)

    @staticmethod
    def _simm16(form: Form, spec: OperandSpec, op: Operand, address: int,
                labels: dict[str, int]) -> int:
        if isinstance(op, Label):
            if op.name not in labels:
                raise EncodeError(f"undefined label '{op.name}'")
            delta = labels[op.name] - (address + 4)
            if delta % 4:
                raise EncodeError(f"branch target '{op.name}' is not 4-byte aligned")
            delta //= 4
            _check_range(delta, -(1 << 15), (1 << 15) - 1, "branch offset (words)")
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

    # ------------------------------------------------------------------ modifiers

    def _modifiers(self, form: Form, inst: Inst, st: _State) -> None:
        enc, m, w = form.enc, inst.modifiers, st.w
        srcs = [(i, s) for i, s in enumerate(form.operands) if s.name in VOP_SRCS]
        if enc == "VOP3" and form.mnemonic.startswith("v_bitop3"):
            table = _check_range(int(m.get("bitop3", 0)), 0, 255, "bitop3")
            w.set("neg", table & 7)
            w.set("abs", (table >> 3) & 7)
            w.set("omod", table >> 6)
            if m.get("op_sel"):
                positions = op_sel_positions(form)
                w.set("op_sel", sum(int(b) << pos for b, pos in zip(m["op_sel"], positions)))
        elif enc == "VOP3":
            neg = absm = 0
            for i, s in srcs:
                op = inst.operands[i] if i < len(inst.operands) else None
                if isinstance(op, Mod):
                    k = int(s.name[-1])
                    neg |= int(op.neg) << k
                    absm |= int(op.abs) << k
            w.set("neg", neg)
            has_sdst = any(s.name == "sdst" for s in form.operands)
            if absm:
                if has_sdst:
                    raise EncodeError("abs is not available with a scalar carry-out")
                w.set("abs", absm)
            w.set("clamp", int(bool(m.get("clamp"))))
            w.set("omod", _check_range(int(m.get("omod", 0)), 0, 3, "omod"))
            if m.get("op_sel") and not has_sdst:
                bits = list(m["op_sel"])
                positions = op_sel_positions(form)
                if len(bits) > len(positions):
                    raise EncodeError(f"op_sel has {len(bits)} elements, {form.mnemonic} takes "
                                      f"{len(positions)}")
                w.set("op_sel", sum(int(b) << pos for b, pos in zip(bits, positions)))
        elif enc == "VOP3P":
            n = len(srcs)
            default_hi = (0,) * n if "_mix" in form.mnemonic else (1,) * n
            op_sel = _bits_of(m.get("op_sel"), n, "op_sel")
            op_sel_hi = _bits_of(m.get("op_sel_hi", default_hi), n, "op_sel_hi")
            if n < 3 and "_mix" not in form.mnemonic:
                op_sel_hi |= 1 << 2  # LLVM sets the unused src2 bit to its default too
            w.set("op_sel", op_sel)
            w.set("op_sel_hi", op_sel_hi & 3)
            w.set("op_sel_hi2", (op_sel_hi >> 2) & 1)
            neg = _bits_of(m.get("neg_lo"), n, "neg_lo")
            neg_hi = _bits_of(m.get("neg_hi"), n, "neg_hi")
            if "_mix" in form.mnemonic:
                # v_fma_mix*: source modifiers -x / |x| live in NEG / NEG_HI.
                for i, s in srcs:
                    op = inst.operands[i] if i < len(inst.operands) else None
                    if isinstance(op, Mod):
                        k = int(s.name[-1])
                        neg |= int(op.neg) << k
                        neg_hi |= int(op.abs) << k
            w.set("neg", neg)
            w.set("neg_hi", neg_hi)
            w.set("clamp", int(bool(m.get("clamp"))))
        elif enc == "MAI" and not {"cbsz", "abid", "blgp"} & set(form.modifiers):
            # v_accvgpr_read/write: encoded like VOP3P with op_sel_hi at its default (1s).
            w.set("op_sel_hi", 3)
            w.set("op_sel_hi2", 1)
        elif enc in ("MAI", "MAI_SCALE"):
            for name in ("cbsz", "abid", "blgp"):
                if name in m:
                    w.set(name, int(m[name]))
            if m.get("neg"):  # f64 MFMA: neg:[a,b,c] lives in the BLGP field
                w.set("blgp", _bits_of(m["neg"], 3, "neg"))
            if enc == "MAI_SCALE":
                w.value |= SCALE_MFMA_MARK
                p = st.prefix
                p.set("op_sel", _bits_of(m.get("op_sel"), 3, "op_sel") & 3)
                p.set("op_sel_hi", _bits_of(m.get("op_sel_hi"), 3, "op_sel_hi") & 3)
        elif enc == "DS":
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
        elif enc in ("FLAT", "GLOBAL", "SCRATCH"):
            off = int(m.get("offset", 0))
            if enc == "FLAT":
                w.set("offset", _check_range(off, 0, 4095, "FLAT offset"))
            else:
                w.set("offset", _check_range(off, -4096, 4095, f"{enc} offset") & 0x1FFF)
            for name in ("sc0", "sc1", "nt"):
                w.set(name, int(bool(m.get(name))))
        elif enc in ("MUBUF", "MTBUF"):
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
        elif enc == "SMEM":
            w.set("glc", int(bool(m.get("glc")) or bool(form.fixed.get("glc"))))
            w.set("nv", int(bool(m.get("nv"))))
        elif enc == "DPP":
            x = st.extra
            x = DPP["dpp_ctrl"].put(x, int(m.get("dpp_ctrl", 0xE4)))
            x = DPP["row_mask"].put(x, _check_range(int(m.get("row_mask", 0xF)), 0, 15,
                                                    "row_mask"))
            x = DPP["bank_mask"].put(x, _check_range(int(m.get("bank_mask", 0xF)), 0, 15,
                                                     "bank_mask"))
            x = DPP["bound_ctrl"].put(x, int(bool(m.get("bound_ctrl"))))
            for i, s in enumerate(form.operands):
                op = inst.operands[i] if i < len(inst.operands) else None
                if isinstance(op, Mod) and s.name in ("src0", "vsrc1"):
                    k = 0 if s.name == "src0" else 1
                    x = DPP[f"src{k}_neg"].put(x, int(op.neg))
                    x = DPP[f"src{k}_abs"].put(x, int(op.abs))
            st.extra = x
        elif enc == "SDWA":
            x = st.extra
            if form.format != "VOPC":
                x = SDWA["dst_sel"].put(x, _sel(m.get("dst_sel", "DWORD"), SDWA_SEL, "dst_sel"))
                x = SDWA["dst_unused"].put(x, _sel(m.get("dst_unused", "UNUSED_PRESERVE"),
                                                   SDWA_UNUSED, "dst_unused"))
                x = SDWA["omod"].put(x, int(m.get("omod", 0)))
            else:
                dst = inst.operands[0] if inst.operands else None
                if not (isinstance(dst, Special) and dst.name == "vcc"):
                    x = SDWA["sd"].put(x, 1)
                    x = SDWA["sdst"].put(x, _scalar(dst, "sdst"))
            x = SDWA["clamp"].put(x, int(bool(m.get("clamp"))))
            x = SDWA["src0_sel"].put(x, _sel(m.get("src0_sel", "DWORD"), SDWA_SEL, "src0_sel"))
            x = SDWA["src1_sel"].put(x, _sel(m.get("src1_sel", "DWORD"), SDWA_SEL, "src1_sel"))
            for i, s in enumerate(form.operands):
                op = inst.operands[i] if i < len(inst.operands) else None
                if isinstance(op, Mod) and s.name in ("src0", "vsrc1"):
                    k = 0 if s.name == "src0" else 1
                    x = SDWA[f"src{k}_neg"].put(x, int(op.neg))
                    x = SDWA[f"src{k}_abs"].put(x, int(op.abs))
                    x = SDWA[f"src{k}_sext"].put(x, int(op.sext))
            st.extra = x


class _State:
    """Encoding in progress: the main word, the DPP/SDWA dword, the literal, a prefix."""

    def __init__(self, w: _Fields, extra: int | None):
        self.w = w
        self.extra = extra
        self.literal: int | None = None
        self.prefix: _Fields | None = None

    def set_literal(self, bits: int) -> None:
        if self.literal is not None and self.literal != bits:
            raise EncodeError("only one literal constant per instruction")
        self.literal = bits


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
    if not (isinstance(op, Reg) and op.kind == "s"):
        raise EncodeError(f"{what}: expected an SGPR range, got {op}")
    if op.index % align:
        raise EncodeError(f"{what}: {op} must start at a multiple of {align}")
    return op.index


_PREFIX_CACHE: dict[str, int] = {}


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
    """A label map that resolves every name to the current instruction (for sizing)."""

    def __contains__(self, key) -> bool:
        return True

    def __getitem__(self, key) -> int:
        return 4

"""Decoder: machine code bytes -> `mc.Inst` (with its ISA database form).

Table-driven: the format comes from the identifying bits (isa/formats.py), the opcode and
addressing variant select a database form, and each operand slot of the form is read from
its field. Printing the result (mc/printer.py) gives llvm-objdump's text.
"""

from __future__ import annotations

from dataclasses import dataclass

from asterism.errors import DecodeError
from asterism.isa import Form, OperandSpec, get_isa
from asterism.isa.formats import DPP, FORMATS, SDWA, SRC_DPP, SRC_LITERAL, SRC_SDWA, format_of
from asterism.isa.syntax import SDWA_SEL, SDWA_UNUSED, format_swizzle
from asterism.mc.inst import Inst
from asterism.mc.operand_codes import decode_scalar_reg, decode_src
from asterism.mc.operands import OFF, Imm, Literal, Mod, Operand, Reg, Special, Syntax


@dataclass
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


# Register widths of gfx950 f8f6f4 MFMA A/B operands by format code (cbsz / blgp).
F8F6F4_REGS = {0: 8, 1: 8, 2: 6, 3: 6, 4: 4}

VOP_SRC_FIELDS = ("src0", "src1", "src2")


class _Word:
    """Field access to an instruction word (and its DPP/SDWA/literal extras)."""

    __slots__ = ("fmt", "value", "extra", "literal")

    def __init__(self, fmt, value: int, extra: int | None = None):
        self.fmt = fmt
        self.value = value
        self.extra = extra
        self.literal: int | None = None

    def __getitem__(self, name: str) -> int:
        return self.fmt.fields[name].get(self.value)


class Decoder:
    """Decodes machine code of one target."""

    def __init__(self, target: str):
        self.isa = get_isa(target)
        self.target = self.isa.target
        self._scale_prefix = self._find_scale_prefix()

    def _find_scale_prefix(self) -> int | None:
        inst = self.isa.instructions.get("v_mfma_ld_scale_b32")
        return inst.forms[0].opcode if inst else None

    # -------------------------------------------------------------- entry points

    def decode(self, data: bytes, offset: int = 0, address: int = 0) -> DecodedInst:
        """Decode the instruction at `data[offset:]` (located at `address`)."""
        if len(data) - offset < 4:
            raise DecodeError(f"truncated instruction at 0x{address:x}")
        w0 = int.from_bytes(data[offset:offset + 4], "little")
        fmt = format_of(w0)
        if fmt is None:
            raise DecodeError(f"0x{address:x}: no encoding format matches word 0x{w0:08x}")
        size = fmt.size
        if len(data) - offset < size:
            raise DecodeError(f"0x{address:x}: truncated {fmt.name} instruction")
        value = int.from_bytes(data[offset:offset + size], "little")
        word = _Word(fmt, value)
        op = word["op"]
        prefix: _Word | None = None
        encs: tuple[str, ...]
        if fmt.name in ("VOP1", "VOP2", "VOPC"):
            src0 = word["src0"]
            if src0 in (SRC_DPP, SRC_SDWA):
                if len(data) - offset < size + 4:
                    raise DecodeError(f"0x{address:x}: truncated DPP/SDWA instruction")
                word.extra = int.from_bytes(data[offset + size:offset + size + 4], "little")
                size += 4
                encs = ("DPP",) if src0 == SRC_DPP else ("SDWA",)
            else:
                encs = (fmt.name,)
        elif fmt.name == "VOP3P":
            encs = ("VOP3P", "MAI")
            if op == self._scale_prefix and len(data) - offset >= 16:
                nxt = int.from_bytes(data[offset + 8:offset + 16], "little")
                nfmt = format_of(nxt & 0xFFFFFFFF)
                if nfmt is not None and nfmt.name == "VOP3P":
                    nword = _Word(nfmt, nxt)
                    if self.isa.by_opcode.get(("VOP3P", "MAI_SCALE", nword["op"])):
                        prefix, word = word, nword
                        op = nword["op"]
                        encs = ("MAI_SCALE",)
                        size = 16
        elif fmt.name == "FLAT":
            encs = ({0: "FLAT", 1: "SCRATCH", 2: "GLOBAL"}.get(word["seg"], "FLAT"),)
        else:
            encs = (fmt.name,)
        forms = [f for enc in encs for f in self.isa.by_opcode.get((fmt.name, enc, op), [])]
        form = self._select_form(forms, word)
        if form is None:
            raise DecodeError(f"0x{address:x}: no {'/'.join(encs)} instruction with opcode {op}"
                              f" on {self.target} (word 0x{w0:08x})")
        if self._needs_literal(form, word):
            if len(data) - offset < size + 4:
                raise DecodeError(f"0x{address:x}: truncated literal")
            word.literal = int.from_bytes(data[offset + size:offset + size + 4], "little")
            size += 4
        inst = self._build(form, word, prefix)
        return DecodedInst(address, size, inst, bytes(data[offset:offset + size]))

    # -------------------------------------------------------------- form selection

    @staticmethod
    def _select_form(forms: list[Form], word: _Word) -> Form | None:
        best, best_score = None, -1
        for form in forms:
            score = 0
            ok = True
            for name, value in form.fixed.items():
                if form.enc == "SMEM" and name == "imm":
                    continue  # decided with soe below
                if word.fmt.fields[name].get(word.value) != value:
                    ok = False
                    break
                score += 1
            if form.enc == "SMEM" and form.base_variant in ("imm", "soff"):
                # imm=1, soe=0: immediate offset; otherwise an SGPR offset (in SOFFSET when
                # soe=1, else in OFFSET[6:0]), plus the immediate as offset: when imm=1.
                ok = (form.base_variant == "imm") == (word["imm"] == 1 and word["soe"] == 0)
            if ok and score > best_score:
                best, best_score = form, score
        return best

    @staticmethod
    def _needs_literal(form: Form, word: _Word) -> bool:
        if form.enc in ("MUBUF", "MTBUF") and word["soffset"] == SRC_LITERAL:
            return True
        for spec in form.operands:
            if spec.name == "literal":
                return True
            if spec.name in ("src0", "src1", "src2", "ssrc0", "ssrc1") and (
                    spec.is_register or spec.kinds):
                if form.enc in ("DPP", "SDWA") and spec.name == "src0":
                    continue
                if word.fmt.fields[spec.name].width != 9 and form.enc not in (
                        "SOP1", "SOP2", "SOPC", "SOPK"):
                    continue
                if word.fmt.fields[spec.name].get(word.value) == SRC_LITERAL:
                    return True
        return False

    # -------------------------------------------------------------- operands

    def _build(self, form: Form, word: _Word, prefix: _Word | None) -> Inst:
        mods: dict[str, object] = {}
        operands: list[Operand] = []
        enc = form.enc
        for idx, spec in enumerate(form.operands):
            operands.append(self._operand(form, spec, word, prefix, idx))
        self._modifiers(form, word, prefix, operands, mods)
        return Inst(form.printed_mnemonic, operands, mods, form=form) if enc else None

    def _agpr(self, form: Form, spec: OperandSpec, word: _Word) -> bool:
        if "a" not in spec.kinds:
            return False
        if "v" not in spec.kinds:
            return True
        enc = form.enc
        if enc in ("MAI", "MAI_SCALE"):
            if spec.name in ("vdst", "src2"):
                return word["acc_cd"] == 1
            if spec.name == "src0":
                return bool(word["acc"] & 1)
            if spec.name == "src1":
                return bool(word["acc"] & 2)
        if enc in ("DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF", "MTBUF"):
            return word["acc"] == 1
        return False

    def _width(self, form: Form, spec: OperandSpec, word: _Word) -> int:
        if form.enc in ("MAI", "MAI_SCALE") and "f8f6f4" in form.mnemonic:
            if spec.name == "src0":
                return F8F6F4_REGS.get(word["cbsz"], 8)
            if spec.name == "src1":
                return F8F6F4_REGS.get(word["blgp"], 8)
        if form.enc in ("MUBUF", "MTBUF") and spec.name == "vaddr":
            return 2 if (word["offen"] and word["idxen"]) else 1
        return spec.width

    def _operand(self, form: Form, spec: OperandSpec, word: _Word, prefix: _Word | None,
                 idx: int) -> Operand:
        if spec.fixed:
            return Special(spec.fixed)
        name, enc = spec.name, form.enc
        width = self._width(form, spec, word)
        if name == "literal":
            return Literal(word.literal or 0)
        if name in ("scale_src0", "scale_src1"):
            assert prefix is not None
            code = prefix["src0" if name == "scale_src0" else "src1"]
            return decode_src(code, 1)
        if name == "simm16" or spec.syntax:
            return self._simm16(form, spec, word.fmt.fields[name].get(word.value))
        if enc in ("DPP", "SDWA") and name == "src0":
            return self._extra_src0(form, spec, word, width)
        if enc == "SDWA" and name == "vsrc1" and SDWA["s1"].get(word.extra):
            return decode_src(word["vsrc1"], width, type_=spec.type)
        if enc == "SMEM":
            return self._smem_operand(spec, word, width)
        if enc in ("MUBUF", "MTBUF"):
            if name == "vaddr":
                return Reg("v", word["vaddr"], width) if (word["offen"] or word["idxen"]) else OFF
            if name == "srsrc":
                code = word["srsrc"] * 4
                return decode_scalar_reg(code, width) or Reg("s", code, width)
            if name == "soffset":
                return decode_src(word["soffset"], 1, type_="i32", literal=word.literal)
            if name == "vdata":
                return Reg("a" if self._agpr(form, spec, word) else "v", word["vdata"], width)
        if enc in ("FLAT", "GLOBAL", "SCRATCH"):
            if name == "saddr":
                code = word["saddr"]
                return OFF if code == 0x7F else (decode_scalar_reg(code, width) or Imm(code))
            if name == "addr" and form.base_variant == "scratch_saddr":
                return OFF
        code = word.fmt.fields[name].get(word.value)
        if name in ("src0", "src1", "src2", "ssrc0", "ssrc1"):
            field_bits = word.fmt.fields[name].width
            if field_bits == 8 and enc not in ("SOP1", "SOP2", "SOPC", "SOPK"):
                return Reg("a" if self._agpr(form, spec, word) else "v", code, width)
            return decode_src(code, width, type_=spec.type, literal=word.literal,
                              agpr=self._agpr(form, spec, word))
        if name in ("sdst", "sdata"):
            return decode_scalar_reg(code, width) or Imm(code)
        if "v" in spec.kinds or "a" in spec.kinds:
            return Reg("a" if self._agpr(form, spec, word) else "v", code, width)
        if "s" in spec.kinds:
            return decode_scalar_reg(code, width) or Imm(code)
        return Imm(code)

    def _extra_src0(self, form: Form, spec: OperandSpec, word: _Word, width: int) -> Operand:
        code = (DPP if form.enc == "DPP" else SDWA)["src0"].get(word.extra)
        if form.enc == "SDWA" and SDWA["s0"].get(word.extra):
            return decode_src(code, width, type_=spec.type)
        return Reg("v", code, width)

    def _smem_operand(self, spec: OperandSpec, word: _Word, width: int) -> Operand:
        name = spec.name
        if name == "sbase":
            code = word["sbase"] * 2
            return decode_scalar_reg(code, width) or Reg("s", code, width)
        if name == "sdata":
            if "k" in spec.kinds:  # s_atc_probe*: the field holds an immediate
                return Imm(word["sdata"], fmt="auto")
            return decode_scalar_reg(word["sdata"], width) or Imm(word["sdata"])
        if name == "offset":
            return Imm(_signed(word["offset"], 21), fmt="hex")
        if name == "soffset":
            code = word["soffset"] if word["soe"] else word["offset"] & 0x7F
            return decode_scalar_reg(code, 1) or Imm(code)
        raise DecodeError(f"unexpected SMEM operand {name}")

    def _simm16(self, form: Form, spec: OperandSpec, value: int) -> Operand:
        from asterism.isa import syntax

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

    # -------------------------------------------------------------- modifiers

    def _modifiers(self, form: Form, word: _Word, prefix: _Word | None,
                   operands: list[Operand], mods: dict[str, object]) -> None:
        enc = form.enc
        srcs = [i for i, s in enumerate(form.operands) if s.name in VOP_SRC_FIELDS]
        if enc == "VOP3" and form.mnemonic.startswith("v_bitop3"):
            # gfx950 v_bitop3: the 8-bit truth table is spread over NEG, ABS and OMOD.
            table = word["neg"] | (word["abs"] << 3) | (word["omod"] << 6)
            if table:
                mods["bitop3"] = table
            if "op_sel" in form.modifiers and word["op_sel"]:
                mods["op_sel"] = tuple((word["op_sel"] >> k) & 1 for k in op_sel_positions(form))
            return
        if enc == "VOP3":
            has_sdst = any(s.name == "sdst" for s in form.operands)
            neg = word["neg"]
            absm = 0 if has_sdst else word["abs"]
            for i in srcs:
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
                    mods["op_sel"] = tuple((bits >> k) & 1 for k in op_sel_positions(form))
        elif enc == "VOP3P":
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
        elif enc in ("MAI", "MAI_SCALE"):
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
        elif enc == "DS":
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
        elif enc in ("FLAT", "GLOBAL", "SCRATCH"):
            off = word["offset"]
            mods["offset"] = off if enc == "FLAT" else _signed(off, 13)
            for name in ("sc0", "nt", "sc1"):
                if word[name]:
                    mods[name] = True
        elif enc in ("MUBUF", "MTBUF"):
            if enc == "MTBUF":
                mods["format"] = word["dfmt"] | (word["nfmt"] << 4)
            if word["idxen"]:
                mods["idxen"] = True
            if word["offen"]:
                mods["offen"] = True
            mods["offset"] = word["offset"]
            for name in ("sc0", "nt", "sc1"):
                if name in word.fmt.fields and word[name] and not (
                        name == "sc0" and form.fixed.get("sc0")):
                    mods[name] = True
            if form.fixed.get("sc0"):
                mods["sc0"] = True  # the returning atomic
            if form.base_variant == "lds":
                mods["lds"] = True
        elif enc == "SMEM":
            if form.base_variant == "soff" and word["imm"]:
                mods["offset"] = _signed(word["offset"], 21)
            for name in ("glc", "nv"):
                if word[name] and (name in form.modifiers or form.fixed.get(name)):
                    mods[name] = True
        elif enc == "DPP":
            x = word.extra
            for i in srcs + [i for i, s in enumerate(form.operands) if s.name == "vsrc1"]:
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
        elif enc == "SDWA":
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


def op_sel_positions(form: Form) -> list[int]:
    """The op_sel field bit of each printed op_sel element of a VOP3 form: the sources, then
    the destination (bit 3); 4-element forms map one to one."""
    n = sum(1 for s in form.operands if s.name in VOP_SRC_FIELDS)
    length = form.op_sel_len or n + 1
    if length == n + 1:
        return list(range(n)) + [3]
    return list(range(length))


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value & (1 << (bits - 1)) else value


_DECODERS: dict[str, Decoder] = {}


def get_decoder(target: str) -> Decoder:
    """A cached decoder for `target`."""
    dec = _DECODERS.get(target)
    if dec is None:
        dec = _DECODERS[target] = Decoder(target)
    return dec


def decode_code(code: bytes, target: str, base: int = 0) -> list[DecodedInst]:
    """Decode a whole code sequence; raises DecodeError at the first undecodable word."""
    dec = get_decoder(target)
    out = []
    pos = 0
    while pos < len(code):
        d = dec.decode(code, pos, base + pos)
        out.append(d)
        pos += d.size
    return out


__all__ = ["DecodedInst", "Decoder", "decode_code", "get_decoder", "FORMATS"]

"""Operand <-> field-code conversions shared by the matcher, the encoder and the decoder.

Scalar (SSRC/SDST) and vector-source (9-bit SRC) codes: SGPRs, TTMPs, named registers,
inline constants, the literal marker and VGPR/AGPR indices (see isa/syntax.py); which
op_sel bit belongs to which operand; the register widths of f8f6f4 MFMA formats.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asterism.errors import EncodeError
from asterism.isa import syntax
from asterism.mc.operands import (
    FloatImm,
    Imm,
    Literal,
    Mod,
    Operand,
    Reg,
    Special,
    float_bits,
)

if TYPE_CHECKING:
    from asterism.isa import Form

# Register widths of gfx950 f8f6f4 MFMA A/B operands by format code (cbsz / blgp).
F8F6F4_REGS = {0: 8, 1: 8, 2: 6, 3: 6, 4: 4}

VOP_SRC_FIELDS = ("src0", "src1", "src2")

_CODE_TO_NAME = {code: name for name, code in syntax.NAMED_SCALAR_CODES.items()}
_PAIR_CODE_TO_NAME = {code: name for name, code in syntax.NAMED_PAIR_CODES.items()}


def decode_scalar_reg(code: int, width: int) -> Operand | None:
    """An SGPR/TTMP/named register from a scalar code (None if the code is not a register)."""
    if 0 <= code <= syntax.SGPR_MAX:
        return Reg("s", code, width)
    if syntax.TTMP_BASE <= code <= syntax.TTMP_BASE + 15:
        return Reg("ttmp", code - syntax.TTMP_BASE, width)
    if width == 2 and code in _PAIR_CODE_TO_NAME:
        return Special(_PAIR_CODE_TO_NAME[code])
    if code in _CODE_TO_NAME:
        name = _CODE_TO_NAME[code]
        if width >= 2 and name in syntax.NAMED_PAIR_CODES:
            return Special(name)
        return Special(name)
    return None


def decode_src(code: int, width: int, *, type_: str | None = None,
               literal: int | None = None, agpr: bool = False) -> Operand:
    """Decode a 9-bit source code (registers, inline constants, literal)."""
    if code >= syntax.SRC_VGPR_BASE:
        return Reg("a" if agpr else "v", code - syntax.SRC_VGPR_BASE, width)
    reg = decode_scalar_reg(code, width)
    if reg is not None:
        return reg
    value = syntax.inline_int_value(code)
    if value is not None:
        return Imm(value)
    if code in syntax.INLINE_FLOATS:
        return FloatImm(syntax.INLINE_FLOATS[code], type_)
    if code == syntax.SRC_LITERAL:
        return Literal(literal if literal is not None else 0, type_)
    return Imm(code)  # reserved code: keep the raw value


def scalar_code(op: Operand) -> int | None:
    """The scalar code of an SGPR/TTMP/named register operand, or None."""
    if isinstance(op, Reg):
        if op.kind == "s":
            return op.index
        if op.kind == "ttmp":
            return syntax.TTMP_BASE + op.index
        return None
    if isinstance(op, Special):
        name = syntax.SCALAR_ALIASES.get(op.name, op.name)
        if name in syntax.NAMED_PAIR_CODES:
            return syntax.NAMED_PAIR_CODES[name]
        return syntax.NAMED_SCALAR_CODES.get(name)
    return None


def _as_signed(value: int, type_: str | None) -> int:
    """The value as the operand sees it: LLVM reads 0xffffffff as -1 for 32-bit operands
    (and 0xffff as -1 for f16/bf16 ones), so it becomes an inline constant."""
    if (type_ is None or type_.endswith("32")) and 0x80000000 <= value <= 0xFFFFFFFF:
        return value - (1 << 32)
    if type_ in ("f16", "bf16") and 0x8000 <= value <= 0xFFFF:
        return value - (1 << 16)
    return value


def constant_code(op: Operand, type_: str | None) -> tuple[int, int | None]:
    """(source code, literal or None) for a constant operand given the operand's type."""
    if isinstance(op, Literal):
        return syntax.SRC_LITERAL, op.bits & 0xFFFFFFFF
    if isinstance(op, Imm):
        code = syntax.inline_int_code(_as_signed(op.value, type_))
        if code is not None:
            return code, None
        if type_ in ("f64",) and -(1 << 31) <= op.value < (1 << 32):
            return syntax.SRC_LITERAL, op.value & 0xFFFFFFFF
        if type_ in ("f16", "bf16", "i16", "v2f16", "v2i16", "v2bf16"):
            if -(1 << 15) <= op.value < (1 << 16):
                return syntax.SRC_LITERAL, op.value & 0xFFFF
            if 0 <= op.value < (1 << 32):
                return syntax.SRC_LITERAL, op.value
            raise EncodeError(f"value {op.value} does not fit a 16-bit literal")
        if not -(1 << 31) <= op.value < (1 << 32):
            raise EncodeError(f"value {op.value} does not fit a 32-bit literal")
        return syntax.SRC_LITERAL, op.value & 0xFFFFFFFF
    if isinstance(op, FloatImm):
        code = syntax.inline_float_code(op.value) if not op.lit else None
        is_int_type = type_ is not None and type_.lstrip("v2").startswith("i")
        if code is not None and not (is_int_type and type_ in ("i16", "v2i16")):
            return code, None
        if code is not None:
            return code, None
        return syntax.SRC_LITERAL, float_bits(op.value, type_ if not is_int_type else "f32")
    raise EncodeError(f"not a constant: {op}")


def src_code(op: Operand, type_: str | None) -> tuple[int, int | None]:
    """(9-bit source code, literal or None) for any source operand (modifiers stripped)."""
    if isinstance(op, Mod):
        op = op.operand
    if isinstance(op, Reg) and op.kind in ("v", "a"):
        return syntax.SRC_VGPR_BASE + op.index, None
    code = scalar_code(op)
    if code is not None:
        return code, None
    return constant_code(op, type_)


def op_sel_positions(form: Form) -> list[int]:
    """The op_sel field bit of each printed op_sel element of a VOP3 form: the sources, then
    the destination (bit 3); 4-element forms map one to one."""
    n = sum(1 for s in form.operands if s.name in VOP_SRC_FIELDS)
    length = form.op_sel_len or n + 1
    if length == n + 1:
        return list(range(n)) + [3]
    return list(range(length))

"""Typed machine operands: registers, constants, labels and source modifiers.

These are the operands of `mc.Inst`; the printer, parser, encoder, decoder and emulator all
speak them. Printing follows LLVM's AMDGPU assembly syntax.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field

from asterism.errors import EncodeError
from asterism.isa.syntax import SIXTEEN_BIT_PRINTED_TYPES, is_inline_bits

REGISTER_KINDS = ("v", "s", "a", "ttmp")


@dataclass(frozen=True, slots=True)
class Reg:
    """A register or an aligned range of registers: v5, s[4:7], a[0:15], ttmp[2:3]."""

    kind: str  # "v", "s", "a" or "ttmp"
    index: int
    count: int = 1
    # The text, made on first use: the decoder shares one object per register among all
    # the instructions that name it, so a listing prints each once.
    _text: str | None = field(default=None, init=False, repr=False, compare=False)

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = f"{self.kind}{self.index}" if self.count == 1 else \
                f"{self.kind}[{self.index}:{self.index + self.count - 1}]"
            object.__setattr__(self, "_text", text)  # (frozen: a cache, not a change)
        return text

    @property
    def last(self) -> int:
        """Index of the last register of the range."""
        return self.index + self.count - 1

    def overlaps(self, other: Reg) -> bool:
        """True if both ranges share a register of the same file."""
        return (self.kind == other.kind and self.index <= other.last
                and other.index <= self.last)


# Scalar special registers LLVM names, with the register count they cover.
SPECIAL_REGISTERS: dict[str, int] = {
    "vcc": 2, "vcc_lo": 1, "vcc_hi": 1, "exec": 2, "exec_lo": 1, "exec_hi": 1, "m0": 1,
    "scc": 1, "flat_scratch": 2, "flat_scratch_lo": 1, "flat_scratch_hi": 1, "xnack_mask": 2,
    "xnack_mask_lo": 1, "xnack_mask_hi": 1, "src_vccz": 1, "src_execz": 1, "src_scc": 1,
    "vccz": 1, "execz": 1, "src_shared_base": 2, "src_shared_limit": 2,
    "src_private_base": 2, "src_private_limit": 2, "src_pops_exiting_wave_id": 1,
    "src_lds_direct": 1, "lds_direct": 1, "tba": 2, "tma": 2, "tba_lo": 1, "tba_hi": 1,
    "tma_lo": 1, "tma_hi": 1, "shared_base": 2, "shared_limit": 2, "private_base": 2,
    "private_limit": 2, "pops_exiting_wave_id": 1, "src_flat_scratch_base_lo": 1,
    "src_flat_scratch_base_hi": 1, "null": 1,
}


@dataclass(frozen=True, slots=True)
class Special:
    """A named scalar register: vcc, exec, m0, scc, flat_scratch, src_shared_base..."""

    name: str

    def __str__(self) -> str:
        return self.name

    @property
    def count(self) -> int:
        """Number of 32-bit registers covered."""
        return SPECIAL_REGISTERS[self.name]


@dataclass(frozen=True, slots=True)
class Imm:
    """An integer constant as written (inline constant, literal or immediate field)."""

    value: int
    # How LLVM prints it (not part of the value): "dec", "hex" (SOPK immediates, SMEM
    # offsets) or "auto" (hex unless it is inline-constant sized, as SOPP immediates).
    fmt: str = field(default="dec", compare=False)
    _text: str | None = field(default=None, init=False, repr=False, compare=False)

    def __str__(self) -> str:
        text = self._text
        if text is None:
            if self.fmt == "hex" or (self.fmt == "auto" and not -16 <= self.value <= 64):
                text = f"-0x{-self.value:x}" if self.value < 0 else f"0x{self.value:x}"
            else:
                text = str(self.value)
            object.__setattr__(self, "_text", text)  # (as Reg: shared decoded constants)
        return text


@dataclass(frozen=True, slots=True)
class FloatImm:
    """A floating-point constant as written (1.0, -0.5, 0.15915494...)."""

    value: float
    # The operand type it was decoded for (printing only): LLVM shows 1/(2pi) with double
    # precision for 64-bit operands and 16-bit integer operands' float constants as f16 bits.
    type: str | None = field(default=None, compare=False)
    # "lit" or "lit64" if written so: a literal even where the value is an inline constant
    lit: str = ""

    def __str__(self) -> str:
        if self.lit:
            return f"{self.lit}({format_float(self.value)})"
        if self.type == "i16":
            return f"0x{float_bits(self.value, 'f16'):x}" if self.value != 0.15915494309189535 \
                else "0x3118"
        if self.type in ("f64", "i64") and abs(self.value - 0.15915494309189535) < 1e-9:
            return "0.15915494309189532"
        return format_float(self.value)


@dataclass(frozen=True, slots=True)
class Literal:
    """A 32-bit literal given by its bits (what a decoded literal is); printed as hex."""

    bits: int
    type: str | None = field(default=None, compare=False)  # operand type (printing only)
    spelling: str = field(default="lit", compare=False)  # lit or lit64, as written

    def __str__(self) -> str:
        return literal_text(self.bits, self.type)


def literal_text(bits: int, type_: str | None) -> str:
    """The text of a 32-bit literal of an operand of type `type_` (Literal's, as LLVM's)."""
    # As LLVM: a literal that would read back as an inline constant is marked lit(...);
    # 16-bit operands show their 16 bits; 64-bit ones are read as 64-bit values.
    if type_ in ("i64", "f64"):
        return _literal64_text(bits, type_)
    if is_inline_bits(bits, type_):
        return f"lit(0x{bits:x})"
    if type_ in SIXTEEN_BIT_PRINTED_TYPES:
        return f"0x{bits & 0xFFFF:x}"
    return f"0x{bits:x}"


# The high words of the f64 inline constants 0.5, -0.5, 1, -1, 2, -2, 4, -4 (1/(2pi) has low
# bits, so no 32-bit literal equals it).
F64_INLINE_HIGH = {0x3FE00000: 0.5, 0xBFE00000: -0.5, 0x3FF00000: 1.0, 0xBFF00000: -1.0,
                   0x40000000: 2.0, 0xC0000000: -2.0, 0x40100000: 4.0, 0xC0100000: -4.0}


def _literal64_text(bits: int, type_: str) -> str:
    """LLVM's text of a 32-bit literal of a 64-bit operand: an i64 one is the zero-extended
    value (lit() only for 0..64), an f64 one the high word (a value equal to an inline
    constant prints as that constant)."""
    if type_ == "i64":
        return f"lit(0x{bits:x})" if bits <= 64 else f"0x{bits:x}"
    if bits == 0:
        return "0"
    if bits in F64_INLINE_HIGH:
        return format_float(F64_INLINE_HIGH[bits])
    return f"0x{bits:x}"


@dataclass(frozen=True, slots=True)
class Label:
    """A branch target by name, resolved to a word offset when encoding."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Off:
    """The `off` placeholder (no SGPR base / no VGPR address)."""

    def __str__(self) -> str:
        return "off"


OFF = Off()


@dataclass(frozen=True, slots=True)
class Syntax:
    """An immediate written in a special syntax (waitcnt, hwreg, sendmsg, gpr_idx): the
    encoded value plus the text it was written as."""

    value: int
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class Mod:
    """A source operand with input modifiers: -x, |x|, -|x|, sext(x)."""

    operand: Operand
    neg: bool = False
    abs: bool = False
    sext: bool = False

    def __str__(self) -> str:
        text = str(self.operand)
        if self.sext:
            text = f"sext({text})"
        if self.abs:
            text = f"|{text}|"
        if self.neg:
            # "-1" would read back as the constant -1: constants are negated as neg(...).
            constant = isinstance(self.operand, (Imm, FloatImm, Literal))
            text = f"neg({text})" if constant and not self.abs else f"-{text}"
        return text


Operand = Reg | Special | Imm | FloatImm | Literal | Label | Off | Syntax | Mod


def strip_mods(op: Operand) -> Operand:
    """The operand without its source modifiers."""
    return op.operand if isinstance(op, Mod) else op


def format_float(value: float) -> str:
    """Format a float the way LLVM prints inline constants (1.0, -0.5, 0.15915494)."""
    if value == 0.15915494309189535 or value == 0.15915494:
        return "0.15915494"
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return f"{value:.1f}"
    return repr(value)


# (at most 9 digits: no register file is that large, and int() of thousands of digits fails)
_REG_RE = re.compile(r"^(v|s|a|ttmp)(\d{1,9})$|^(v|s|a|ttmp)\[(\d{1,9})(?::(\d{1,9}))?\]$",
                     re.I | re.ASCII)


def parse_register(text: str) -> Reg | Special | None:
    """Parse 'v5', 'v[4:7]', 's[2]', 'vcc', 'exec_lo'... or return None."""
    t = text.strip().lower()
    if t in SPECIAL_REGISTERS:
        return Special(t)
    m = _REG_RE.match(t)
    if not m:
        return None
    if m.group(1):
        return Reg(m.group(1), int(m.group(2)))
    lo = int(m.group(4))
    hi = int(m.group(5)) if m.group(5) is not None else lo
    if hi < lo:
        return None
    return Reg(m.group(3), lo, hi - lo + 1)


def float_bits(value: float, type_: str | None) -> int:
    """The bits of `value` as the operand's float type (f16/bf16/f32, f64 high word); an
    EncodeError for a finite value past the type's range (llvm-mc: an invalid operand)."""
    try:
        return _float_bits(value, type_)
    except OverflowError:
        raise EncodeError(f"float constant {value:g} is out of range for "
                          f"{(type_ or 'f32').lstrip('v2')}") from None


def _float_bits(value: float, type_: str | None) -> int:
    t = (type_ or "f32").lstrip("v2")
    if t in ("f16",):
        return struct.unpack("<H", struct.pack("<e", value))[0]
    if t == "bf16":
        return struct.unpack("<I", struct.pack("<f", value))[0] >> 16
    if t == "f64":
        return struct.unpack("<Q", struct.pack("<d", value))[0] >> 32
    return struct.unpack("<I", struct.pack("<f", value))[0]

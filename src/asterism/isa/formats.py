"""Bit layouts of the GFX9-family instruction encodings used by gfx942 and gfx950.

These are ISA facts (AMD CDNA3/CDNA4 ISA reference, "Microcode formats"); they are data,
shared by the encoder, the decoder and the ISA generator. Bit positions count from bit 0 of
the first little-endian dword; bits 32..63 are the second dword.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    """One bit field of an encoding: `width` bits starting at bit `lo`."""

    lo: int
    width: int

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    def get(self, word: int) -> int:
        """Extract this field from an instruction integer."""
        return (word >> self.lo) & self.mask

    def put(self, word: int, value: int) -> int:
        """Return `word` with this field set to `value` (truncated to the field width)."""
        return (word & ~(self.mask << self.lo)) | ((value & self.mask) << self.lo)


@dataclass(frozen=True)
class Format:
    """An encoding format: its size, the fixed bits that identify it, and its fields."""

    name: str
    size: int  # bytes, without a trailing literal
    ident: tuple[int, int, int]  # (lo, width, value) of the format's identifying bits
    fields: dict[str, Field]

    def matches(self, word: int) -> bool:
        """True if the identifying bits of `word` select this format."""
        lo, width, value = self.ident
        return (word >> lo) & ((1 << width) - 1) == value

    def base(self) -> int:
        """The instruction integer with only the identifying bits set."""
        lo, _width, value = self.ident
        return value << lo


def _f(**fields: tuple[int, int]) -> dict[str, Field]:
    return {name: Field(lo, width) for name, (lo, width) in fields.items()}


FORMATS: dict[str, Format] = {
    f.name: f
    for f in [
        Format("SOP2", 4, (30, 2, 0b10), _f(op=(23, 7), sdst=(16, 7), ssrc1=(8, 8), ssrc0=(0, 8))),
        Format("SOPK", 4, (28, 4, 0b1011), _f(op=(23, 5), sdst=(16, 7), simm16=(0, 16))),
        Format("SOP1", 4, (23, 9, 0b101111101), _f(sdst=(16, 7), op=(8, 8), ssrc0=(0, 8))),
        Format("SOPC", 4, (23, 9, 0b101111110), _f(op=(16, 7), ssrc1=(8, 8), ssrc0=(0, 8))),
        Format("SOPP", 4, (23, 9, 0b101111111), _f(op=(16, 7), simm16=(0, 16))),
        Format(
            "SMEM", 8, (26, 6, 0b110000),
            _f(op=(18, 8), imm=(17, 1), glc=(16, 1), nv=(15, 1), soe=(14, 1), sdata=(6, 7),
               sbase=(0, 6), offset=(32, 21), soffset=(57, 7)),
        ),
        Format("VOP2", 4, (31, 1, 0), _f(op=(25, 6), vdst=(17, 8), vsrc1=(9, 8), src0=(0, 9))),
        Format("VOP1", 4, (25, 7, 0b0111111), _f(vdst=(17, 8), op=(9, 8), src0=(0, 9))),
        Format("VOPC", 4, (25, 7, 0b0111110), _f(op=(17, 8), vsrc1=(9, 8), src0=(0, 9))),
        Format(
            "VOP3", 8, (26, 6, 0b110100),
            _f(op=(16, 10), clamp=(15, 1), op_sel=(11, 4), abs=(8, 3), sdst=(8, 7), vdst=(0, 8),
               src0=(32, 9), src1=(41, 9), src2=(50, 9), omod=(59, 2), neg=(61, 3)),
        ),
        Format(
            "VOP3P", 8, (23, 9, 0b110100111),
            _f(op=(16, 7), clamp=(15, 1), op_sel_hi2=(14, 1), op_sel=(11, 3), neg_hi=(8, 3),
               vdst=(0, 8), src0=(32, 9), src1=(41, 9), src2=(50, 9), op_sel_hi=(59, 2),
               neg=(61, 3),
               # MFMA (MAI) reuses the VOP3P format with these fields:
               acc_cd=(15, 1), abid=(11, 4), cbsz=(8, 3), acc=(59, 2), blgp=(61, 3)),
        ),
        Format(
            "DS", 8, (26, 6, 0b110110),
            _f(acc=(25, 1), op=(17, 8), gds=(16, 1), offset1=(8, 8), offset0=(0, 8),
               addr=(32, 8), data0=(40, 8), data1=(48, 8), vdst=(56, 8)),
        ),
        Format(
            "FLAT", 8, (26, 6, 0b110111),
            _f(sc1=(25, 1), op=(18, 7), nt=(17, 1), sc0=(16, 1), seg=(14, 2), sve=(13, 1),
               offset=(0, 13), addr=(32, 8), data=(40, 8), saddr=(48, 7), acc=(55, 1),
               vdst=(56, 8)),
        ),
        Format(
            "MUBUF", 8, (26, 6, 0b111000),
            _f(op=(18, 7), nt=(17, 1), lds=(16, 1), sc1=(15, 1), sc0=(14, 1), idxen=(13, 1),
               offen=(12, 1), offset=(0, 12), vaddr=(32, 8), vdata=(40, 8), srsrc=(48, 5),
               acc=(55, 1), soffset=(56, 8)),
        ),
        Format(
            "MTBUF", 8, (26, 6, 0b111010),
            _f(nfmt=(23, 3), dfmt=(19, 4), op=(15, 4), sc0=(14, 1), idxen=(13, 1),
               offen=(12, 1), offset=(0, 12), vaddr=(32, 8), vdata=(40, 8), srsrc=(48, 5),
               sc1=(53, 1), nt=(54, 1), acc=(55, 1), soffset=(56, 8)),
        ),
    ]
}

# The second dword of a VOP1/VOP2/VOPC instruction whose src0 field selects DPP (0xFA)
# or SDWA (0xF9); bit positions are relative to that dword.
DPP = _f(src0=(0, 8), dpp_ctrl=(8, 9), bound_ctrl=(19, 1), src0_neg=(20, 1), src0_abs=(21, 1),
         src1_neg=(22, 1), src1_abs=(23, 1), bank_mask=(24, 4), row_mask=(28, 4))
SDWA = _f(src0=(0, 8), dst_sel=(8, 3), dst_unused=(11, 2), clamp=(13, 1), omod=(14, 2),
          sdst=(8, 7), sd=(15, 1), src0_sel=(16, 3), src0_sext=(19, 1), src0_neg=(20, 1),
          src0_abs=(21, 1), s0=(23, 1), src1_sel=(24, 3), src1_sext=(27, 1),
          src1_neg=(28, 1), src1_abs=(29, 1), s1=(31, 1))
SRC_DPP = 0xFA
SRC_SDWA = 0xF9
SRC_LITERAL = 0xFF

# Order in which the decoder tries formats: the longest identifying prefix first, because
# shorter prefixes (VOP2's single 0 bit, SOP2's 0b10) also match the longer ones' words.
DECODE_ORDER: list[str] = sorted(FORMATS, key=lambda name: -FORMATS[name].ident[1])


def _first_match(word: int) -> Format | None:
    for name in DECODE_ORDER:
        fmt = FORMATS[name]
        if fmt.matches(word):
            return fmt
    return None


# Every format is identified by bits 23..31 of the first dword, so the answer of format_of
# is a table indexed by those nine bits.
_IDENT_LO = 23
assert all(f.ident[0] >= _IDENT_LO and f.ident[0] + f.ident[1] <= 32 for f in FORMATS.values())


def _format_table() -> list[Format | None]:
    """_first_match of each value of the nine bits: as every format's identifying bits end
    at bit 31, the values a format matches are one range; the formats are laid down in
    reverse DECODE_ORDER, so that the first match in that order is the one left (a loop of
    _first_match over the 512 values costs ~2 ms of every start-up)."""
    table: list[Format | None] = [None] * (1 << (32 - _IDENT_LO))
    for name in reversed(DECODE_ORDER):
        fmt = FORMATS[name]
        lo, width, value = fmt.ident
        assert lo + width == 32
        free = lo - _IDENT_LO  # (the low bits of the nine that the format does not fix)
        start = value << free
        table[start:start + (1 << free)] = [fmt] * (1 << free)
    return table


_FORMAT_BY_TOP_BITS = _format_table()


def format_of(word: int) -> Format | None:
    """The format whose identifying bits select the first dword of `word`, or None."""
    return _FORMAT_BY_TOP_BITS[(word >> _IDENT_LO) & 0x1FF]

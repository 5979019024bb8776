"""Bit-exact number formats of gfx942 (CDNA3) and gfx950 (CDNA4), vectorized with NumPy.

Every function takes and returns NumPy arrays (any shape; scalars work too) so the emulator
can convert a whole (waves x 64 lanes) register slice at once.

Formats and where they are used
-------------------------------
=============  ====  =====================================================================
format         bias  used by
=============  ====  =====================================================================
f16 (E5M10)      15  VALU f16, packed math, MFMA f16 inputs (both targets)
bf16 (E8M7)     127  MFMA bf16 inputs, v_cvt_*bf16* (both targets)
E4M3FNUZ          8  gfx942 "fp8": MFMA *_fp8_*, v_cvt_pk_fp8_f32, v_cvt_f32_fp8, ...
E5M2FNUZ         16  gfx942 "bf8": MFMA *_bf8_*, v_cvt_pk_bf8_f32, ...
E4M3FN (OCP)      7  gfx950 "fp8": the same mnemonics, f8f6f4 MFMA format 0
E5M2 (OCP)       15  gfx950 "bf8": the same mnemonics, f8f6f4 MFMA format 1
E2M3 (fp6)        1  gfx950 f8f6f4 MFMA format 2, v_cvt_scalef32_*fp6*
E3M2 (bf6)        3  gfx950 f8f6f4 MFMA format 3, v_cvt_scalef32_*bf6*
E2M1 (fp4)        1  gfx950 f8f6f4 MFMA format 4, v_cvt_scalef32_*fp4*
E8M0            127  gfx950 block scales of v_mfma_scale_*; v_cvt_scalef32_* read the
                     exponent field of an f32 scale (the same value set)
=============  ====  =====================================================================

FNUZ formats have no infinities and no negative zero; their only NaN is 0x80. OCP E4M3FN
has no infinities and NaN = S.1111.111; OCP E5M2 is IEEE-like (inf and NaNs). fp6/fp4 have
neither infinities nor NaNs.

Conversion rules (hardware facts and, where no public document states them, our stated
assumptions; every one is a parameter so the emulator core can pick per instruction):

* Rounding is round-to-nearest-even by default; ``rounding`` also accepts ``"rtz"``,
  ``"up"`` (toward +inf), ``"down"`` (toward -inf) for MODE.round, and ``"sr"``
  (stochastic, v_cvt_sr_*): the low D bits of the random dword are added to the D
  mantissa bits the conversion discards and the sum is truncated (AMD's software
  reference for fp8 stochastic rounding does the same). D counts bits of the f32 source.
* Denormals are kept on input and produced on output (no flushing; the MODE denormal
  flush is the caller's business).
* Overflow (a finite value whose rounded magnitude exceeds the largest finite number) and
  infinite inputs: with ``saturate=True`` (the VOP3 clamp bit) they become +-max; without
  it they become inf where the format has one, else NaN (E4M3FN: S.1111.111, FNUZ: 0x80).
  IEEE directed roundings toward zero give +-max instead of inf. fp6/fp4 always saturate.
* NaN inputs give a quiet NaN of the same sign (f16/bf16 from f32 also keep the top payload
  bits), 0x80 for FNUZ, and +-max for fp6/fp4 (assumption: those formats cannot say NaN).
* FNUZ has no -0: negative values that round to zero give 0x00.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

__all__ = [
    "BF16",
    "E2M1",
    "E2M3",
    "E3M2",
    "E4M3FN",
    "E4M3FNUZ",
    "E5M2",
    "E5M2FNUZ",
    "F8F6F4_FORMATS",
    "F16",
    "F32",
    "FORMATS",
    "FloatFormat",
    "bf16_to_f32",
    "bits_to_f32",
    "cvt_f32_f8",
    "cvt_pk_f8_f32",
    "cvt_pk_f32_f8",
    "cvt_scalef32_decode",
    "cvt_scalef32_encode",
    "cvt_sr_f8_f32",
    "decode",
    "e8m0_to_float",
    "encode",
    "extract_field",
    "f8f6f4_format",
    "f16_to_f32",
    "f32_to_bf16",
    "f32_to_bits",
    "f32_to_f16",
    "fp8_formats",
    "insert_field",
    "pack_codes",
    "scale_from_f32",
    "unpack_codes",
]

ROUNDINGS = ("rne", "rtz", "up", "down", "sr")


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: sign bit, exponent field, mantissa field."""

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    kind: str  # "ieee" (max exponent = inf/NaN), "fn" (no inf; all-ones is NaN),
    #            "fnuz" (no inf, no -0, NaN = 0x80), "finite" (no inf, no NaN)

    @property
    def bits(self) -> int:
        """Total width in bits."""
        return 1 + self.exp_bits + self.man_bits

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number (subnormals share it)."""
        return 1 - self.bias

    @property
    def max_exp_field(self) -> int:
        """Largest exponent field of a finite number."""
        top = (1 << self.exp_bits) - 1
        return top - 1 if self.kind == "ieee" else top

    @property
    def max_finite(self) -> float:
        """Largest finite magnitude."""
        man = (1 << self.man_bits) - (2 if self.kind == "fn" else 1)
        return float(np.ldexp(1.0 + man / (1 << self.man_bits), self.max_exp_field - self.bias))

    @property
    def min_subnormal(self) -> float:
        """Smallest positive magnitude."""
        return float(np.ldexp(1.0, self.emin - self.man_bits))

    @property
    def dtype(self) -> type[np.unsignedinteger]:
        """Smallest unsigned NumPy type that holds a code."""
        return np.uint8 if self.bits <= 8 else np.uint16 if self.bits <= 16 else np.uint32

    @property
    def sign_bit(self) -> int:
        """The sign bit of a code."""
        return 1 << (self.bits - 1)

    @property
    def max_code(self) -> int:
        """Code (positive) of the largest finite magnitude."""
        man = (1 << self.man_bits) - (2 if self.kind == "fn" else 1)
        return (self.max_exp_field << self.man_bits) | man

    @property
    def inf_code(self) -> int | None:
        """Code of +inf, or None."""
        return ((1 << self.exp_bits) - 1) << self.man_bits if self.kind == "ieee" else None

    @property
    def nan_code(self) -> int | None:
        """Code of the canonical (positive, quiet) NaN, or None."""
        if self.kind == "ieee":
            return (((1 << self.exp_bits) - 1) << self.man_bits) | (1 << (self.man_bits - 1))
        if self.kind == "fn":
            return (1 << (self.bits - 1)) - 1
        if self.kind == "fnuz":
            return 1 << (self.bits - 1)
        return None


F32 = FloatFormat("f32", 8, 23, 127, "ieee")
F16 = FloatFormat("f16", 5, 10, 15, "ieee")
BF16 = FloatFormat("bf16", 8, 7, 127, "ieee")
E4M3FNUZ = FloatFormat("e4m3fnuz", 4, 3, 8, "fnuz")
E5M2FNUZ = FloatFormat("e5m2fnuz", 5, 2, 16, "fnuz")
E4M3FN = FloatFormat("e4m3fn", 4, 3, 7, "fn")
E5M2 = FloatFormat("e5m2", 5, 2, 15, "ieee")
E2M3 = FloatFormat("e2m3", 2, 3, 1, "finite")
E3M2 = FloatFormat("e3m2", 3, 2, 3, "finite")
E2M1 = FloatFormat("e2m1", 2, 1, 1, "finite")

FORMATS: dict[str, FloatFormat] = {f.name: f for f in (
    F32, F16, BF16, E4M3FNUZ, E5M2FNUZ, E4M3FN, E5M2, E2M3, E3M2, E2M1)}

# The CBSZ (A) / BLGP (B) codes of gfx950 v_mfma_*_f8f6f4: 0 fp8, 1 bf8, 2 fp6, 3 bf6, 4 fp4.
F8F6F4_FORMATS: tuple[FloatFormat, ...] = (E4M3FN, E5M2, E2M3, E3M2, E2M1)


def fp8_formats(target: str) -> dict[str, FloatFormat]:
    """The "fp8" and "bf8" formats of a target: FNUZ on gfx942, OCP on gfx950."""
    name = target.split(":")[0].split("--")[-1]
    if name in ("gfx940", "gfx941", "gfx942"):
        return {"fp8": E4M3FNUZ, "bf8": E5M2FNUZ}
    if name == "gfx950":
        return {"fp8": E4M3FN, "bf8": E5M2}
    raise ValueError(f"no fp8 formats known for target '{target}' (gfx942 or gfx950)")


def f8f6f4_format(code: int) -> FloatFormat:
    """The operand format selected by a CBSZ/BLGP code of gfx950 f8f6f4 MFMA."""
    if not 0 <= code < len(F8F6F4_FORMATS):
        raise ValueError(f"f8f6f4 format code {code} is invalid: 0 fp8, 1 bf8, 2 fp6, "
                         f"3 bf6, 4 fp4")
    return F8F6F4_FORMATS[code]


# --------------------------------------------------------------------------- bit views


def bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """Reinterpret uint32 register contents as float32."""
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def f32_to_bits(x: np.ndarray) -> np.ndarray:
    """Reinterpret float32 values as uint32 register contents."""
    return np.asarray(x, dtype=np.float32).view(np.uint32)


# --------------------------------------------------------------------------- decode


@cache
def _decode_table(fmt: FloatFormat) -> np.ndarray:
    """Value of every code of a format (<= 16 bits), as float64."""
    codes = np.arange(1 << fmt.bits, dtype=np.int64)
    sign = np.where(codes >> (fmt.bits - 1), -1.0, 1.0)
    exp = (codes >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1)
    man = codes & ((1 << fmt.man_bits) - 1)
    # Subnormals (exp field 0) share the exponent of the smallest normal, without the
    # implicit leading one.
    frac = np.where(exp == 0, man, man + (1 << fmt.man_bits)).astype(np.float64)
    value = sign * np.ldexp(frac, np.maximum(exp, 1) - fmt.bias - fmt.man_bits)
    top = (1 << fmt.exp_bits) - 1
    if fmt.kind == "ieee":
        value = np.where((exp == top) & (man == 0), sign * np.inf, value)
        value = np.where((exp == top) & (man != 0), np.nan, value)
    elif fmt.kind == "fn":
        value = np.where((exp == top) & (man == (1 << fmt.man_bits) - 1), np.nan, value)
    elif fmt.kind == "fnuz":
        value[1 << (fmt.bits - 1)] = np.nan
    value.flags.writeable = False
    return value


def decode(codes: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Values (float64, exact) of format codes (the low fmt.bits bits of each integer)."""
    codes = np.asarray(codes)
    if fmt.bits == 32:
        return codes.astype(np.uint32).view(np.float32).astype(np.float64)
    mask = (1 << fmt.bits) - 1
    return _decode_table(fmt)[codes.astype(np.int64) & mask]


def e8m0_to_float(codes: np.ndarray) -> np.ndarray:
    """Values (float64) of E8M0 scale codes: 2**(code-127); 255 is NaN."""
    codes = np.asarray(codes).astype(np.int64) & 0xFF
    return np.where(codes == 255, np.nan, np.ldexp(1.0, codes - 127))


def scale_from_f32(scale: np.ndarray) -> np.ndarray:
    """The power of two a v_cvt_scalef32_* scale operand means: only its f32 exponent field
    counts (2**(exp-127); exponent 255 gives NaN)."""
    bits = np.asarray(scale, dtype=np.float32).view(np.uint32)
    return e8m0_to_float((bits >> 23) & 0xFF)


def f16_to_f32(bits: np.ndarray) -> np.ndarray:
    """f16 codes (low 16 bits) to float32 (exact, NaN payload kept)."""
    half = (np.asarray(bits).astype(np.uint32) & 0xFFFF).astype(np.uint16).view(np.float16)
    with np.errstate(invalid="ignore"):  # signaling NaNs warn when widened; they stay NaN
        return half.astype(np.float32)


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    """bf16 codes (low 16 bits) to float32 (exact, NaN payload kept)."""
    return ((np.asarray(bits).astype(np.uint32) & 0xFFFF) << 16).view(np.float32)


# --------------------------------------------------------------------------- encode


def _check_rounding(rounding: str, rand: np.ndarray | None) -> None:
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {', '.join(ROUNDINGS)}, not '{rounding}'")
    if rounding == "sr" and rand is None:
        raise ValueError("stochastic rounding (rounding='sr') needs the random dword 'rand'")


def _stochastic(a: np.ndarray, t: np.ndarray, q: np.ndarray, rand: np.ndarray,
                src_bits: int, src_min_exp: int) -> np.ndarray:
    """Integer multiple of the target quantum for stochastic rounding of magnitudes a."""
    # a = S * 2**E exactly, S an integer with at most src_bits bits (E >= the source's
    # smallest quantum, so denormal sources count only their real mantissa bits).
    _, e2 = np.frexp(a)
    big_e = np.maximum(e2 - src_bits, src_min_exp)
    sig = np.ldexp(a, -big_e).astype(np.int64)
    dropped = q - big_e  # bits of the source the target cannot hold
    # rem + R's low bits < 2**33, so beyond 40 dropped bits nothing can carry.
    d = np.clip(dropped, 0, 40).astype(np.int64)
    rem = sig & ((np.int64(1) << d) - 1)
    r = np.asarray(rand).astype(np.int64) & 0xFFFFFFFF
    r = r & ((np.int64(1) << np.minimum(d, 32)) - 1)
    carry = (dropped > 0) & (rem + r >= (np.int64(1) << d))
    return np.floor(t) + carry


def encode(x: np.ndarray, fmt: FloatFormat, *, rounding: str = "rne", saturate: bool = False,
           rand: np.ndarray | None = None, src_bits: int = 24,
           src_min_exp: int = -149) -> np.ndarray:
    """Codes of values x (float32/float64) in a format, rounded and specials handled as the
    module docstring states. rand: the random dword(s) of stochastic rounding; src_bits /
    src_min_exp: significand width and smallest quantum exponent of the source (f32)."""
    _check_rounding(rounding, rand)
    with np.errstate(invalid="ignore"):  # signaling NaNs warn when widened; they stay NaN
        x = np.asarray(x, dtype=np.float64)
    neg = np.signbit(x)
    nan = np.isnan(x)
    inf = np.isinf(x)
    finite = ~(nan | inf)
    a = np.where(finite, np.abs(x), 0.0)
    _, e2 = np.frexp(a)
    e = np.maximum(e2 - 1, fmt.emin)  # binade of a; subnormals share the smallest normal's
    q = e - fmt.man_bits
    t = np.ldexp(a, -q)  # a in units of the target quantum (exact: power-of-two scaling)
    if rounding == "rne":
        n = np.rint(t)  # ties to even
    elif rounding == "rtz":
        n = np.floor(t)
    elif rounding == "up":
        n = np.where(neg, np.floor(t), np.ceil(t))
    elif rounding == "down":
        n = np.where(neg, np.ceil(t), np.floor(t))
    else:
        n = _stochastic(a, t, q, np.broadcast_to(rand, x.shape), src_bits, src_min_exp)
    mag = np.ldexp(n, q)

    over = finite & (mag > fmt.max_finite)
    # IEEE: a directed rounding toward zero never overflows to infinity.
    toward_zero = (rounding == "rtz") | ((rounding == "up") & neg) | ((rounding == "down")
                                                                      & ~neg)
    clamp = saturate or fmt.kind == "finite"
    to_max = (over & (clamp | toward_zero)) | (inf & clamp) | (nan & (fmt.kind == "finite"))
    mag = np.where(over | ~finite, 0.0, mag)

    code = _magnitude_code(mag, fmt)
    code = np.where(to_max, fmt.max_code, code)
    special = (over | inf | nan) & ~to_max
    if fmt.kind == "ieee":
        code = np.where(special & ~nan, fmt.inf_code, code)
        code = np.where(nan, fmt.nan_code, code)
    elif special.any():
        code = np.where(special, fmt.nan_code, code)
    if fmt.kind == "fnuz":
        # No -0 and the sign bit alone is NaN: signs go only on nonzero finite codes.
        signed = neg & (code != 0) & ~special
    else:
        signed = neg
    code = code | np.where(signed, fmt.sign_bit, 0)
    return code.astype(fmt.dtype)


def _magnitude_code(mag: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Code of exactly representable magnitudes (finite, <= max)."""
    _, me = np.frexp(mag)
    eb = me - 1
    normal = (mag > 0) & (eb >= fmt.emin)
    man_sub = np.ldexp(mag, fmt.man_bits - fmt.emin)
    man_norm = np.ldexp(mag, fmt.man_bits - eb) - (1 << fmt.man_bits)
    exp_field = np.where(normal, eb + fmt.bias, 0)
    man = np.where(normal, man_norm, man_sub)
    return (exp_field.astype(np.int64) << fmt.man_bits) | man.astype(np.int64)


def _quiet_nan_payload(x: np.ndarray, fmt: FloatFormat, code: np.ndarray) -> np.ndarray:
    """Keep the sign and the top payload bits of f32 NaNs (quiet bit forced)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
    drop = 23 - fmt.man_bits
    payload = ((bits & 0x7FFFFF) >> drop) | (1 << (fmt.man_bits - 1))
    nan_code = (((1 << fmt.exp_bits) - 1) << fmt.man_bits) | payload
    nan_code |= (bits >> 31) << (fmt.bits - 1)
    isnan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(isnan, nan_code, code).astype(fmt.dtype)


def f32_to_f16(x: np.ndarray, *, rounding: str = "rne", saturate: bool = False,
               rand: np.ndarray | None = None) -> np.ndarray:
    """float32 values to f16 codes (uint16), as v_cvt_f16_f32 / v_cvt_sr_f16_f32."""
    x = np.asarray(x, dtype=np.float32)
    return _quiet_nan_payload(x, F16, encode(x, F16, rounding=rounding, saturate=saturate,
                                             rand=rand))


def f32_to_bf16(x: np.ndarray, *, rounding: str = "rne", saturate: bool = False,
                rand: np.ndarray | None = None) -> np.ndarray:
    """float32 values to bf16 codes (uint16); rounding="rtz" is plain truncation of finite
    values, "rne" what v_cvt_pk_bf16_f32 does, "sr" v_cvt_sr_bf16_f32."""
    x = np.asarray(x, dtype=np.float32)
    return _quiet_nan_payload(x, BF16, encode(x, BF16, rounding=rounding, saturate=saturate,
                                              rand=rand))


# --------------------------------------------------------------------------- packing


def pack_codes(codes: np.ndarray, width: int) -> np.ndarray:
    """Pack n codes of `width` bits (last axis) little-endian into ceil(n*width/32) dwords:
    code i occupies bits [i*width, (i+1)*width) of the concatenated dwords (fp6 codes may
    straddle two dwords, as v_cvt_scalef32_pk32_*fp6* and f8f6f4 MFMA operands lay them)."""
    codes = np.asarray(codes).astype(np.uint64) & np.uint64((1 << width) - 1)
    n = codes.shape[-1]
    nwords = (n * width + 31) // 32
    words = np.zeros((*codes.shape[:-1], nwords), dtype=np.uint64)
    for i in range(n):
        bit = i * width
        w, sh = divmod(bit, 32)
        words[..., w] |= (codes[..., i] << np.uint64(sh)) & np.uint64(0xFFFFFFFF)
        if sh + width > 32:
            words[..., w + 1] |= codes[..., i] >> np.uint64(32 - sh)
    return words.astype(np.uint32)


def unpack_codes(words: np.ndarray, width: int, n: int) -> np.ndarray:
    """Inverse of pack_codes: n codes of `width` bits from dwords (last axis)."""
    words = np.asarray(words).astype(np.uint64)
    out = np.zeros((*words.shape[:-1], n), dtype=np.uint64)
    mask = np.uint64((1 << width) - 1)
    for i in range(n):
        w, sh = divmod(i * width, 32)
        v = words[..., w] >> np.uint64(sh)
        if sh + width > 32:
            v |= words[..., w + 1] << np.uint64(32 - sh)
        out[..., i] = v & mask
    return out.astype(np.uint32 if width > 16 else np.uint16 if width > 8 else np.uint8)


def extract_field(word: np.ndarray, offset: int, width: int) -> np.ndarray:
    """Bits [offset, offset+width) of uint32 words."""
    return (np.asarray(word).astype(np.uint32) >> np.uint32(offset)) & np.uint32(
        (1 << width) - 1)


def insert_field(old: np.ndarray, value: np.ndarray, offset: int, width: int) -> np.ndarray:
    """Words `old` with bits [offset, offset+width) replaced by `value` (the rest kept, as
    the byte/word-select forms of the conversion instructions do)."""
    mask = np.uint32(((1 << width) - 1) << offset)
    old = np.asarray(old).astype(np.uint32)
    value = (np.asarray(value).astype(np.uint32) << np.uint32(offset)) & mask
    return (old & ~mask) | value


# --------------------------------------------------------------------------- instructions


def _fp8(target: str, kind: str) -> FloatFormat:
    try:
        return fp8_formats(target)[kind]
    except KeyError:
        raise ValueError(f"fp8 kind must be 'fp8' or 'bf8', not '{kind}'") from None


def cvt_pk_f8_f32(target: str, kind: str, src0: np.ndarray, src1: np.ndarray,
                  old: np.ndarray, *, word_sel: int = 0, saturate: bool = False,
                  rounding: str = "rne") -> np.ndarray:
    """v_cvt_pk_{fp8,bf8}_f32: two f32 to two 8-bit codes written to word `word_sel` (0 low,
    1 high; op_sel[3]) of the destination, keeping the other word of `old`."""
    fmt = _fp8(target, kind)
    lo = encode(np.asarray(src0, dtype=np.float32), fmt, rounding=rounding, saturate=saturate)
    hi = encode(np.asarray(src1, dtype=np.float32), fmt, rounding=rounding, saturate=saturate)
    pair = lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(8))
    return insert_field(old, pair, 16 * word_sel, 16)


def cvt_sr_f8_f32(target: str, kind: str, src: np.ndarray, rand: np.ndarray,
                  old: np.ndarray, *, byte_sel: int = 0, saturate: bool = False) -> np.ndarray:
    """v_cvt_sr_{fp8,bf8}_f32: one f32 stochastically rounded with the dword `rand`, the code
    written to byte `byte_sel` of the destination (the other bytes of `old` kept)."""
    fmt = _fp8(target, kind)
    code = encode(np.asarray(src, dtype=np.float32), fmt, rounding="sr", rand=rand,
                  saturate=saturate)
    return insert_field(old, code, 8 * byte_sel, 8)


def cvt_f32_f8(target: str, kind: str, word: np.ndarray, *, byte_sel: int = 0) -> np.ndarray:
    """v_cvt_f32_{fp8,bf8}: byte `byte_sel` of a dword to float32 (exact)."""
    return decode(extract_field(word, 8 * byte_sel, 8), _fp8(target, kind)).astype(np.float32)


def cvt_pk_f32_f8(target: str, kind: str, word: np.ndarray, *,
                  word_sel: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """v_cvt_pk_f32_{fp8,bf8}: the two bytes of word `word_sel` to two float32 (exact)."""
    fmt = _fp8(target, kind)
    lo = decode(extract_field(word, 16 * word_sel, 8), fmt).astype(np.float32)
    hi = decode(extract_field(word, 16 * word_sel + 8, 8), fmt).astype(np.float32)
    return lo, hi


def cvt_scalef32_encode(x: np.ndarray, fmt: FloatFormat, scale: np.ndarray, *,
                        rounding: str = "rne", rand: np.ndarray | None = None,
                        saturate: bool = False) -> np.ndarray:
    """gfx950 v_cvt_scalef32_[sr_]*: codes of x / 2**(exp(scale)-127) in fmt (x float32/f16/
    bf16 values, scale an f32 operand of which only the exponent field counts)."""
    s = scale_from_f32(scale)
    x = np.asarray(x, dtype=np.float64)
    scaled = x / s  # exact: division by a power of two stays within float64
    # The source significand moves with the scale, so stochastic rounding sees the bits of x.
    src_min_exp = -149 - np.frexp(np.where(np.isnan(s), 1.0, s))[1] + 1
    return encode(scaled, fmt, rounding=rounding, rand=rand, saturate=saturate,
                  src_min_exp=src_min_exp)


def cvt_scalef32_decode(codes: np.ndarray, fmt: FloatFormat, scale: np.ndarray, *,
                        out: str = "f32") -> np.ndarray:
    """gfx950 v_cvt_scalef32_*_{fp8,bf8,fp6,bf6,fp4}: values of codes times the scale,
    rounded (RNE) to out = "f32" (float32), "f16" or "bf16" (codes, uint16)."""
    v = decode(codes, fmt) * scale_from_f32(scale)
    if out == "f32":
        return v.astype(np.float32)
    if out == "f16":
        return encode(v, F16)
    if out == "bf16":
        return encode(v, BF16)
    raise ValueError(f"out must be 'f32', 'f16' or 'bf16', not '{out}'")

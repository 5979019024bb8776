"""Floating-point helpers with the hardware's rounding, vectorized over NumPy arrays.

Assumptions (summarized with the rest of the execution model in emu/__init__.py):
* Basic operations (+, -, *, /, sqrt) round to nearest even, as IEEE 754 and the hardware do;
  NumPy's float16/float32/float64 arithmetic is exact-then-rounded for these.
* Fused multiply-add is computed in float64 and rounded once: for f16 and f32 the float64 sum
  is made "round to odd" (using the exact TwoSum error) before the final conversion, which is
  the classic proof that the double rounding is exact. f64 FMA uses Dekker's exact product
  and TwoSum: correctly rounded except in rare ties (and when intermediate terms overflow).
* bf16 conversion rounds to nearest even; NaNs stay NaN (quieted).
* Denormals follow the MODE register: 0 flushes inputs and outputs, 3 keeps them.
* Transcendentals (exp, log, rcp, rsq, sqrt, sin, cos) are computed exactly in float64 and
  rounded: the hardware is within 1 ULP of that, not bit-identical.
"""

from __future__ import annotations

import numpy as np

F16 = np.float16
F32 = np.float32
F64 = np.float64
U16 = np.uint16
U32 = np.uint32
U64 = np.uint64

F32_MIN_NORMAL = np.float32(np.finfo(np.float32).tiny)
F64_MIN_NORMAL = np.finfo(np.float64).tiny
F16_MIN_NORMAL = np.float16(np.finfo(np.float16).tiny)

_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp split constant for float64


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (any unsigned int array) as float32 values."""
    return (np.asarray(bits).astype(U32) << U32(16)).view(F32)


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bit patterns (uint32 holding 16 bits), round to nearest even."""
    b = np.asarray(x, F32).view(U32)
    rounded = (b + U32(0x7FFF) + ((b >> U32(16)) & U32(1))) >> U32(16)
    nan = (b & U32(0x7FFFFFFF)) > U32(0x7F800000)
    if nan.any():
        rounded = np.where(nan, (b >> U32(16)) | U32(0x40), rounded)
    return rounded.astype(U32)


def f32_to_bf16_truncate(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bits by truncation (round toward zero); NaNs stay NaN."""
    b = np.asarray(x, F32).view(U32)
    out = b >> U32(16)
    nan = (b & U32(0x7FFFFFFF)) > U32(0x7F800000)
    return np.where(nan, out | U32(0x40), out).astype(U32)


def round_to_odd_f32(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounding to odd (so a later rounding to fewer bits is exact)."""
    y = x.astype(F32)
    back = y.astype(F64)
    inexact = (back != x) & np.isfinite(x)
    if inexact.any():
        yb = y.view(U32)
        even = (yb & U32(1)) == 0
        fix = inexact & even & np.isfinite(y)
        if fix.any():
            toward = np.where(back < x, np.float32(np.inf), np.float32(-np.inf))
            y = np.where(fix, np.nextafter(y, toward), y)
    return y


def f64_to_bf16(x: np.ndarray) -> np.ndarray:
    """float64 -> bf16 bits with a single rounding (round to nearest even)."""
    return f32_to_bf16(round_to_odd_f32(np.asarray(x, F64)))


def _round_to_odd_sum(p: np.ndarray, c: np.ndarray) -> np.ndarray:
    """p + c in float64, rounded to odd using the exact TwoSum error."""
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)
    fix = (err != 0) & np.isfinite(s) & ((s.view(np.int64) & 1) == 0)
    if fix.any():
        s = np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
    return s


def fma_f32(a, b, c) -> np.ndarray:
    """a * b + c with one rounding to float32."""
    a64 = np.asarray(a, F32).astype(F64)
    b64 = np.asarray(b, F32).astype(F64)
    c64 = np.asarray(c, F32).astype(F64)
    with np.errstate(all="ignore"):
        return _round_to_odd_sum(a64 * b64, c64).astype(F32)


def fma_f16(a, b, c) -> np.ndarray:
    """a * b + c with one rounding to float16."""
    a64 = np.asarray(a, F16).astype(F64)
    b64 = np.asarray(b, F16).astype(F64)
    c64 = np.asarray(c, F16).astype(F64)
    with np.errstate(all="ignore"):
        return _round_to_odd_sum(a64 * b64, c64).astype(F16)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = _SPLIT * a
    hi = t - (t - a)
    return hi, a - hi


def fma_f64(a, b, c) -> np.ndarray:
    """a * b + c in float64 with (almost always) a single rounding."""
    a = np.asarray(a, F64)
    b = np.asarray(b, F64)
    c = np.asarray(c, F64)
    with np.errstate(all="ignore"):
        p = a * b
        ah, al = _split(a)
        bh, bl = _split(b)
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        s = p + c
        bb = s - p
        t = (p - (s - bb)) + (c - bb)
        r = s + (t + e)
        plain = ~np.isfinite(p) | ~np.isfinite(e) | ~np.isfinite(r) | (p == 0)
        if np.any(plain):
            r = np.where(plain, p + c, r)
    return r


def ftz(x: np.ndarray) -> np.ndarray:
    """Flush denormals to (signed) zero."""
    x = np.asarray(x)
    tiny = np.finfo(x.dtype).tiny
    den = (np.abs(x) < tiny) & (x != 0)
    if den.any():
        return np.where(den, np.copysign(np.zeros((), x.dtype), x), x)
    return x


def clamp01(x: np.ndarray, dx10: bool = True) -> np.ndarray:
    """Clamp to [0, 1]; with DX10 clamp NaN becomes 0 (the hardware default)."""
    x = np.asarray(x)
    one = x.dtype.type(1)
    zero = x.dtype.type(0)
    with np.errstate(invalid="ignore"):
        y = np.minimum(np.maximum(x, zero), one)
    if dx10:
        y = np.where(np.isnan(x), zero, y)
    return y


def apply_omod(x: np.ndarray, omod: int) -> np.ndarray:
    """Output modifier: 1 = *2, 2 = *4, 3 = /2."""
    if omod == 1:
        return x * x.dtype.type(2)
    if omod == 2:
        return x * x.dtype.type(4)
    if omod == 3:
        return x * x.dtype.type(0.5)
    return x


def fp_class_mask(x: np.ndarray) -> np.ndarray:
    """The v_cmp_class bit of each value (one bit set per element, as uint32).

    Bits: 0 signaling NaN, 1 quiet NaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0,
    7 +denormal, 8 +normal, 9 +inf."""
    x = np.asarray(x)
    dt = x.dtype
    if dt == F16:
        bits = x.view(U16).astype(U32)
        quiet_bit = U32(0x200)
    elif dt == F32:
        bits = x.view(U32)
        quiet_bit = U32(0x400000)
    else:
        bits = (x.view(U64) >> U64(32)).astype(U32)
        quiet_bit = U32(0x80000)
    tiny = np.finfo(dt).tiny
    neg = np.signbit(x)
    nan = np.isnan(x)
    inf = np.isinf(x)
    zero = x == 0
    den = (np.abs(x) < tiny) & ~zero & ~nan
    quiet = (bits & quiet_bit) != 0
    out = np.where(neg, U32(1 << 3), U32(1 << 8))  # normal
    out = np.where(den, np.where(neg, U32(1 << 4), U32(1 << 7)), out)
    out = np.where(zero, np.where(neg, U32(1 << 5), U32(1 << 6)), out)
    out = np.where(inf, np.where(neg, U32(1 << 2), U32(1 << 9)), out)
    out = np.where(nan, np.where(quiet, U32(1 << 1), U32(1 << 0)), out)
    return out.astype(U32)


def fmax_ieee(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """max that returns the other operand when one is NaN (IEEE 754-2008 maxNum)."""
    return np.fmax(a, b)


def fmin_ieee(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min that returns the other operand when one is NaN (IEEE 754-2008 minNum)."""
    return np.fmin(a, b)


def maximum_nan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 maximum: NaN if either is NaN, -0 < +0."""
    with np.errstate(invalid="ignore"):
        return np.maximum(a, b)


def minimum_nan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 minimum: NaN if either is NaN, -0 < +0."""
    with np.errstate(invalid="ignore"):
        return np.minimum(a, b)


def frexp_mant(x: np.ndarray) -> np.ndarray:
    """Mantissa in [0.5, 1) with the sign of x; NaN/inf give NaN/inf (v_frexp_mant)."""
    m, _ = np.frexp(x)
    return np.where(np.isfinite(x), m, x).astype(x.dtype)


def frexp_exp(x: np.ndarray) -> np.ndarray:
    """Exponent such that x = mant * 2**exp; 0 for NaN/inf/zero (v_frexp_exp)."""
    _, e = np.frexp(x)
    return np.where(np.isfinite(x), e, 0).astype(np.int32)


def to_int_sat(x: np.ndarray, dtype) -> np.ndarray:
    """Truncate float to integer with saturation; NaN -> 0 (v_cvt_i32_f32 and friends)."""
    info = np.iinfo(dtype)
    x = np.asarray(x, F64)
    with np.errstate(invalid="ignore"):
        t = np.trunc(x)
        t = np.where(np.isnan(t), 0, t)
        t = np.clip(t, info.min, info.max)
    return t.astype(dtype)


def rne_f64(x: np.ndarray) -> np.ndarray:
    """Round to nearest even integer (v_rndne)."""
    return np.rint(x)

"""Bit scans and signed views shared by the scalar and vector ALU semantics (`salu.py`,
`valu.py`): find first/last bit, bit reverse, on (n,) or (n, 64) arrays."""

from __future__ import annotations

import numpy as np

U32, U64 = np.uint32, np.uint64
I32, I64 = np.int32, np.int64


def as_i32(x: np.ndarray) -> np.ndarray:
    """The bits of `x` as signed 32-bit integers."""
    return x.astype(U32).view(I32)


def as_i64(x: np.ndarray) -> np.ndarray:
    """The bits of `x` as signed 64-bit integers."""
    return x.astype(U64).view(I64)


def ff1(x: np.ndarray, bits: int) -> np.ndarray:
    """Index of the lowest set bit, or -1."""
    x = x.astype(U64)
    low = x & (~x + U64(1))
    out = np.where(x == 0, -1, np.log2(np.maximum(low, U64(1)).astype(np.float64))).astype(I64)
    return out.astype(I32).view(U32)


def flbit(x: np.ndarray, bits: int) -> np.ndarray:
    """Count of leading zeros from the MSB, or -1 when zero."""
    x = x.astype(U64)
    out = np.full(x.shape, -1, I64)
    nz = x != 0
    if nz.any():
        # floor(log2) via frexp is exact for integers up to 2**64 once rounded correctly
        hi = np.zeros(x.shape, I64)
        y = x.copy()
        for sh in (32, 16, 8, 4, 2, 1):
            m = y >= (U64(1) << U64(sh))
            hi = np.where(m, hi + sh, hi)
            y = np.where(m, y >> U64(sh), y)
        out = np.where(nz, bits - 1 - hi, -1)
    return out.astype(I32).view(U32)


def flbit_signed(x: np.ndarray, bits: int) -> np.ndarray:
    """Count of leading sign bits before the first bit that differs; -1 for 0 and -1."""
    if bits == 32:
        s = as_i32(x)
        inv = np.where(s < 0, ~s, s).view(U32)
        allsame = (s == 0) | (s == -1)
    else:
        s = as_i64(x)
        inv = np.where(s < 0, ~s, s).view(U64)
        allsame = (s == 0) | (s == -1)
    r = flbit(inv, bits).view(I32)
    return np.where(allsame, -1, r).astype(I32).view(U32)


def brev(x: np.ndarray, bits: int) -> np.ndarray:
    """The `bits`-bit values of `x` with their bit order reversed."""
    b = np.ascontiguousarray(x.astype(U64 if bits == 64 else U32))
    by = b.view(np.uint8).reshape(b.size, bits // 8)
    rev = np.unpackbits(by, axis=1, bitorder="little")[:, ::-1]
    out = np.packbits(rev, axis=1, bitorder="little")
    return np.ascontiguousarray(out).view(U64 if bits == 64 else U32).reshape(b.shape)

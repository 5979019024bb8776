"""Atomic read-modify-write functions shared by FLAT/GLOBAL, MUBUF, DS and SMEM atomics.

Each entry maps an operation name to `fn(old, data, data2)` on uint32 (32-bit) or uint64
(64-bit) arrays, following the ISA pseudo-code (inc wraps to 0 at the limit, dec wraps to
the limit at 0 or above it; float min/max pick the other operand for a NaN).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from asterism.emu.fp import bf16_to_f32, f32_to_bf16

U16, U32, U64 = np.uint16, np.uint32, np.uint64
I32, I64 = np.int32, np.int64
F16, F32, F64 = np.float16, np.float32, np.float64

_SIGNED = {U32: I32, U64: I64}
_FLOAT = {U32: F32, U64: F64}


def _s(x):
    return x.view(_SIGNED[x.dtype.type])


def _f(x):
    return x.view(_FLOAT[x.dtype.type])


def _pk_add_f16(old, d, _d2=None):
    a = old.astype(U32)
    b = d.astype(U32)
    lo = ((a & U32(0xFFFF)).astype(U16).view(F16) + (b & U32(0xFFFF)).astype(U16).view(F16))
    hi = ((a >> U32(16)).astype(U16).view(F16) + (b >> U32(16)).astype(U16).view(F16))
    return lo.view(U16).astype(U32) | (hi.view(U16).astype(U32) << U32(16))


def _pk_add_bf16(old, d, _d2=None):
    a = old.astype(U32)
    b = d.astype(U32)
    lo = bf16_to_f32(a & U32(0xFFFF)) + bf16_to_f32(b & U32(0xFFFF))
    hi = bf16_to_f32(a >> U32(16)) + bf16_to_f32(b >> U32(16))
    return f32_to_bf16(lo) | (f32_to_bf16(hi) << U32(16))


def _fmin(old, d, _d2=None):
    a, b = _f(old), _f(d)
    r = np.where(np.isnan(b), a, np.where(np.isnan(a), b, np.where(b < a, b, a)))
    return np.asarray(r, a.dtype).view(old.dtype)


def _fmax(old, d, _d2=None):
    a, b = _f(old), _f(d)
    r = np.where(np.isnan(b), a, np.where(np.isnan(a), b, np.where(b > a, b, a)))
    return np.asarray(r, a.dtype).view(old.dtype)


ATOMIC_FNS = {
    "swap": lambda o, d, d2=None: d,
    "wrxchg": lambda o, d, d2=None: d,
    "add": lambda o, d, d2=None: o + d,
    "sub": lambda o, d, d2=None: o - d,
    "rsub": lambda o, d, d2=None: d - o,
    "smin": lambda o, d, d2=None: np.where(_s(d) < _s(o), d, o),
    "smax": lambda o, d, d2=None: np.where(_s(d) >= _s(o), d, o),
    "umin": lambda o, d, d2=None: np.where(d < o, d, o),
    "umax": lambda o, d, d2=None: np.where(d >= o, d, o),
    "and": lambda o, d, d2=None: o & d,
    "or": lambda o, d, d2=None: o | d,
    "xor": lambda o, d, d2=None: o ^ d,
    "inc": lambda o, d, d2=None: np.where(o >= d, o.dtype.type(0), o + o.dtype.type(1)),
    "dec": lambda o, d, d2=None: np.where((o == 0) | (o > d), d, o - o.dtype.type(1)),
    "add_f32": lambda o, d, d2=None: (_f(o) + _f(d)).view(o.dtype),
    "add_f64": lambda o, d, d2=None: (_f(o) + _f(d)).view(o.dtype),
    "min_f32": _fmin, "max_f32": _fmax, "min_f64": _fmin, "max_f64": _fmax,
    "pk_add_f16": _pk_add_f16, "pk_add_bf16": _pk_add_bf16,
    # cmpswap (FLAT/MUBUF/SMEM): data = src, data2 = cmp
    "cmpswap": lambda o, d, d2: np.where(o == d2, d, o),
    # cmpst (DS): data = cmp, data2 = src
    "cmpst": lambda o, d, d2: np.where(o == d, d2, o),
    "cmpst_f": lambda o, d, d2: np.where(_f(o) == _f(d), d2, o),
    "mskor": lambda o, d, d2: (o & ~d) | d2,
    "wrap": lambda o, d, d2: np.where(o >= d, o - d, o + d2),
}


def parse_atomic(mnemonic: str) -> tuple[str, int] | None:
    """(operation, bytes) of an atomic mnemonic such as global_atomic_umax_x2 or ds_add_rtn_u64."""
    m = mnemonic
    wide = m.endswith(("_x2", "_b64", "_u64", "_i64", "_f64"))
    for prefix in ("global_atomic_", "flat_atomic_", "buffer_atomic_", "s_buffer_atomic_",
                   "s_atomic_"):
        if m.startswith(prefix):
            op = m[len(prefix):].removesuffix("_x2")
            if op in ("add_f32", "add_f64", "min_f64", "max_f64", "pk_add_f16",
                      "pk_add_bf16"):
                return op, 8 if op.endswith("f64") else 4
            return op, 8 if wide else 4
    if m.startswith("ds_"):
        op = m[3:].replace("_rtn", "")
        base, _, ty = op.rpartition("_")
        if op in ("pk_add_f16", "pk_add_bf16"):
            return op, 4
        if base in ("cmpst",) and ty.startswith("f"):
            return "cmpst_f", 8 if ty == "f64" else 4
        if base in ("add", "min", "max") and ty.startswith("f"):
            return f"{base}_{ty}", 8 if ty == "f64" else 4
        names = {"min": "umin" if ty.startswith("u") else "smin",
                 "max": "umax" if ty.startswith("u") else "smax"}
        base = names.get(base, base)
        return base, 8 if ty.endswith("64") else 4
    return None


def atomic_of(mnemonic: str) -> tuple[str, Callable, int] | None:
    """(operation, its function in ATOMIC_FNS, bytes) of an atomic mnemonic the emulator
    implements; None otherwise."""
    parsed = parse_atomic(mnemonic)
    if parsed is None or parsed[0] not in ATOMIC_FNS:
        return None
    return parsed[0], ATOMIC_FNS[parsed[0]], parsed[1]

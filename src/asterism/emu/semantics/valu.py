"""VALU semantics: VOP1/VOP2/VOP3/VOPC/VOP3P/DPP/SDWA integer, float and lane operations.

Semantics follow the CDNA3/CDNA4 ISA pseudo-code. Table entries give the destination kind,
the source kinds and a NumPy function; the generic builder handles operand modifiers
(neg/abs, SDWA, op_sel, DPP), denormal flushing per the MODE register, clamp and omod, and
exec-masked writes. Instructions whose behaviour does not fit the table (compares, carries,
lane ops, div helpers, packed math, dot products, conversions with odd layouts) have their
own builders below.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from asterism.emu import fp
from asterism.emu.core import LANE_IDS, Group
from asterism.emu.errors import CompileError
from asterism.emu.info import OpInfo
from asterism.emu.semantics.bits import brev, ff1, flbit, flbit_signed
from asterism.emu.semantics.registry import Table, unsupported_op
from asterism.emu.sops import const_bits, is_const, sread, swrite
from asterism.emu.vops import (
    FLOAT_KINDS,
    KIND_BITS,
    clamp_omod,
    dpp_pattern,
    dpp_row_bank,
    from_kind,
    lane_mask_reader,
    lane_mask_writer,
    make_dst,
    make_src,
    op_sel_bits,
    raw_reader,
    source_slots,
    store,
    to_kind,
    vreg_row,
)
from asterism.mc.operands import Imm, Literal, Mod, Reg, Special

TABLE = Table("valu")
builder = TABLE.builder

U8, U16, U32, U64 = np.uint8, np.uint16, np.uint32, np.uint64
I8, I16, I32, I64 = np.int8, np.int16, np.int32, np.int64
F16, F32, F64 = np.float16, np.float32, np.float64
TWO_PI = 2.0 * np.pi



# ---------------------------------------------------------------------------- helpers

def _denorm_field(kind: str) -> int:
    """Bit shift of the MODE denormal field that applies to `kind`."""
    return 4 if kind == "f32" else 6


def _int_clamp(kind: str) -> Callable:
    info = np.iinfo({"u32": U32, "i32": I32, "u16": U16, "i16": I16, "u64": U64, "i64": I64}
                    .get(kind, U32))

    def sat(r):
        return np.clip(np.asarray(r, np.float64 if kind in ("u64", "i64") else I64),
                       info.min, info.max)
    return sat


def _dpp_parts(info: OpInfo):
    """(perm, write-mask function) of a DPP instruction, or (None, None)."""
    if info.enc != "DPP":
        return None, None
    ctrl = int(info.mods.get("dpp_ctrl", 0xE4))
    perm, valid = dpp_pattern(ctrl)
    rowbank = dpp_row_bank(int(info.mods.get("row_mask", 0xF)),
                           int(info.mods.get("bank_mask", 0xF)))
    bound_zero = bool(info.mods.get("bound_ctrl"))
    static_ok = rowbank & (valid | bound_zero)

    def mask(g: Group):
        src_active = g.exec[:, perm] & valid
        if bound_zero:
            return g.exec & rowbank
        return g.exec & static_ok & src_active
    return perm, mask


def _dpp_zero(info: OpInfo, perm):
    """For bound_ctrl DPP: function zeroing src0 lanes whose source is invalid or inactive."""
    if info.enc != "DPP" or not info.mods.get("bound_ctrl"):
        return None
    _, valid = dpp_pattern(int(info.mods.get("dpp_ctrl", 0xE4)))

    def zero(g: Group, x):
        ok = g.exec[:, perm] & valid
        return np.where(ok, x, x.dtype.type(0))
    return zero


def _sources(info: OpInfo, kinds: tuple[str, ...], perm=None) -> list:
    """Typed readers for the instruction's sources."""
    slots = source_slots(info)
    if len(slots) < len(kinds):
        raise CompileError(f"{info.mnemonic}: expected {len(kinds)} sources, form has {slots}")
    sel = op_sel_bits(info) if info.enc == "VOP3" else (0, 0, 0, 0)
    out = []
    signed = info.mnemonic.endswith("_i64")
    for k, (slot, kind) in enumerate(zip(slots, kinds, strict=False)):
        out.append(make_src(info, slot, kind, k, dpp_perm=perm if k == 0 else None,
                            op_sel_hi=bool(sel[k]) and KIND_BITS[kind] == 16,
                            signed_literal=signed))
    return out


def valu(dst: str, srcs: tuple[str, ...], fn: Callable, *, float_op: bool = True,
         sat: bool = False, ftz_kind: str | None = None):
    """Builder for a table-driven VALU op: D = fn(*srcs)."""
    def build(info: OpInfo):
        perm, dmask = _dpp_parts(info)
        readers = _sources(info, srcs, perm)
        zero = _dpp_zero(info, perm)
        write = make_dst(info, dst)
        post = clamp_omod(info, dst) if float_op else None
        clamp_int = _int_clamp(dst) if (sat and info.mods.get("clamp")) else None
        fk = ftz_kind or (srcs[0] if srcs and srcs[0] in ("f32", "f16", "f64") else None)
        check_ftz = float_op and fk is not None
        shift = _denorm_field(fk) if fk else 0
        dkind_shift = _denorm_field(dst) if dst in FLOAT_KINDS else None
        nxt = info.next_index
        n = len(readers)
        if zero is None and not check_ftz and clamp_int is None and post is None and \
                dkind_shift is None and dmask is None and n in (1, 2, 3):
            # No modifier, no MODE-dependent flushing: the value, written under EXEC.
            # (Float errors are ignored for the whole batch: Emulator._run_batch.)
            return _plain_run(fn, readers, write, nxt)

        def run(g: Group) -> int:
            vals = [r(g) for r in readers]
            if zero is not None:
                vals[0] = zero(g, np.asarray(vals[0]))
            if check_ftz:
                m = (g.mode >> shift) & 3
                if not m & 1:
                    vals = [fp.ftz(np.asarray(v)) if np.asarray(v).dtype.kind == "f" else v
                            for v in vals]
            with np.errstate(all="ignore"):
                r = fn(*vals) if n != 1 else fn(vals[0])
            if clamp_int is not None:
                r = clamp_int(r)
            if post is not None:
                r = post(r, g)
            if dkind_shift is not None and not ((g.mode >> dkind_shift) & 2):
                r = fp.ftz(np.asarray(r, {"f32": F32, "f16": F16, "f64": F64}.get(dst, F32)))
            write(g, r, dmask(g) if dmask is not None else None)
            return nxt
        return run
    return build


def _plain_run(fn: Callable, readers: list, write: Callable, nxt: int):
    """The op of a table-driven VALU instruction without modifiers: write(fn(sources))."""
    if len(readers) == 1:
        (r0,) = readers

        def run1(g: Group) -> int:
            write(g, fn(r0(g)), None)
            return nxt
        return run1
    if len(readers) == 2:
        r0, r1 = readers

        def run2(g: Group) -> int:
            write(g, fn(r0(g), r1(g)), None)
            return nxt
        return run2
    r0, r1, r2 = readers

    def run3(g: Group) -> int:
        write(g, fn(r0(g), r1(g), r2(g)), None)
        return nxt
    return run3


def table(entries: dict, **kw):
    """Register many table-driven ops."""
    for name, spec in entries.items():
        dst, srcs, fn = spec[:3]
        opts = dict(kw)
        if len(spec) > 3:
            opts.update(spec[3])
        builder(name)(valu(dst, srcs, fn, **opts))


# ---------------------------------------------------------------------------- float math

def _maxf(a, b, ieee=True):
    # NaN-avoiding max; +0 is greater than -0 (ISA pseudo-code).
    r = np.fmax(a, b)
    both_zero = (a == 0) & (b == 0)
    if np.any(both_zero):
        r = np.where(both_zero, np.where(np.signbit(a) & np.signbit(b), a, np.abs(a)), r)
    return _quiet(r)


def _minf(a, b):
    r = np.fmin(a, b)
    both_zero = (a == 0) & (b == 0)
    if np.any(both_zero):
        r = np.where(both_zero, np.where(np.signbit(a) | np.signbit(b), -np.abs(a), a), r)
    return _quiet(r)


def _quiet(r):
    return r


def _med3(a, b, c):
    a, b, c = np.broadcast_arrays(np.asarray(a), np.asarray(b), np.asarray(c))
    if a.dtype.kind == "f":
        nan = np.isnan(a) | np.isnan(b) | np.isnan(c)
        mx = _maxf(_maxf(a, b), c)
        r = np.where(mx == a, _maxf(b, c), np.where(mx == b, _maxf(a, c), _maxf(a, b)))
        return np.where(nan, _minf(_minf(a, b), c), r)
    mx = np.maximum(np.maximum(a, b), c)
    return np.where(mx == a, np.maximum(b, c), np.where(mx == b, np.maximum(a, c),
                                                          np.maximum(a, b)))


def _fract(x):
    f = x - np.floor(x)
    one_minus = np.nextafter(x.dtype.type(1), x.dtype.type(0))
    return np.where(np.isinf(x), x.dtype.type(np.nan), np.minimum(f, one_minus))


def _trans(fn, dt):
    def f(x):
        return fn(np.asarray(x).astype(F64)).astype(dt)
    return f


def _rsq(x):
    return 1.0 / np.sqrt(x)


def _sin(x):
    return np.sin(x * TWO_PI)


def _cos(x):
    return np.cos(x * TWO_PI)


def _ldexp(x, e):
    e = np.clip(np.asarray(e).astype(I64), -1100, 1100)
    dt = np.asarray(x).dtype
    return np.ldexp(np.asarray(x).astype(F64), e).astype(dt)


def _mul_legacy(a, b):
    return np.where((a == 0) | (b == 0), F32(0), a * b)


FLOAT_OPS = {
    # f32
    "v_add_f32": ("f32", ("f32", "f32"), lambda a, b: a + b),
    "v_sub_f32": ("f32", ("f32", "f32"), lambda a, b: a - b),
    "v_subrev_f32": ("f32", ("f32", "f32"), lambda a, b: b - a),
    "v_mul_f32": ("f32", ("f32", "f32"), lambda a, b: a * b),
    "v_mul_legacy_f32": ("f32", ("f32", "f32"), _mul_legacy),
    "v_min_f32": ("f32", ("f32", "f32"), _minf),
    "v_max_f32": ("f32", ("f32", "f32"), _maxf),
    "v_min3_f32": ("f32", ("f32", "f32", "f32"), lambda a, b, c: _minf(_minf(a, b), c)),
    "v_max3_f32": ("f32", ("f32", "f32", "f32"), lambda a, b, c: _maxf(_maxf(a, b), c)),
    "v_med3_f32": ("f32", ("f32", "f32", "f32"), _med3),
    "v_minimum3_f32": ("f32", ("f32", "f32", "f32"),
                       lambda a, b, c: fp.minimum_nan(fp.minimum_nan(a, b), c)),
    "v_maximum3_f32": ("f32", ("f32", "f32", "f32"),
                       lambda a, b, c: fp.maximum_nan(fp.maximum_nan(a, b), c)),
    "v_fma_f32": ("f32", ("f32", "f32", "f32"), fp.fma_f32),
    "v_ldexp_f32": ("f32", ("f32", "i32"), _ldexp),
    "v_fract_f32": ("f32", ("f32",), _fract),
    "v_trunc_f32": ("f32", ("f32",), np.trunc),
    "v_ceil_f32": ("f32", ("f32",), np.ceil),
    "v_floor_f32": ("f32", ("f32",), np.floor),
    "v_rndne_f32": ("f32", ("f32",), np.rint),
    "v_exp_f32": ("f32", ("f32",), _trans(np.exp2, F32)),
    "v_exp_legacy_f32": ("f32", ("f32",), _trans(np.exp2, F32)),
    "v_log_f32": ("f32", ("f32",), _trans(np.log2, F32)),
    "v_log_legacy_f32": ("f32", ("f32",), _trans(np.log2, F32)),
    "v_rcp_f32": ("f32", ("f32",), _trans(lambda x: 1.0 / x, F32)),
    "v_rcp_iflag_f32": ("f32", ("f32",), _trans(lambda x: 1.0 / x, F32)),
    "v_rsq_f32": ("f32", ("f32",), _trans(_rsq, F32)),
    "v_sqrt_f32": ("f32", ("f32",), lambda x: np.sqrt(x)),
    "v_sin_f32": ("f32", ("f32",), _trans(_sin, F32)),
    "v_cos_f32": ("f32", ("f32",), _trans(_cos, F32)),
    "v_frexp_mant_f32": ("f32", ("f32",), fp.frexp_mant),
    "v_frexp_exp_i32_f32": ("i32", ("f32",), fp.frexp_exp),
    # f64
    "v_add_f64": ("f64", ("f64", "f64"), lambda a, b: a + b),
    "v_mul_f64": ("f64", ("f64", "f64"), lambda a, b: a * b),
    "v_min_f64": ("f64", ("f64", "f64"), _minf),
    "v_max_f64": ("f64", ("f64", "f64"), _maxf),
    "v_fma_f64": ("f64", ("f64", "f64", "f64"), fp.fma_f64),
    "v_ldexp_f64": ("f64", ("f64", "i32"), _ldexp),
    "v_fract_f64": ("f64", ("f64",), _fract),
    "v_trunc_f64": ("f64", ("f64",), np.trunc),
    "v_ceil_f64": ("f64", ("f64",), np.ceil),
    "v_floor_f64": ("f64", ("f64",), np.floor),
    "v_rndne_f64": ("f64", ("f64",), np.rint),
    "v_rcp_f64": ("f64", ("f64",), lambda x: 1.0 / x),
    "v_rsq_f64": ("f64", ("f64",), _rsq),
    "v_sqrt_f64": ("f64", ("f64",), np.sqrt),
    "v_frexp_mant_f64": ("f64", ("f64",), fp.frexp_mant),
    "v_frexp_exp_i32_f64": ("i32", ("f64",), fp.frexp_exp),
    # f16
    "v_add_f16": ("f16", ("f16", "f16"), lambda a, b: a + b),
    "v_sub_f16": ("f16", ("f16", "f16"), lambda a, b: a - b),
    "v_subrev_f16": ("f16", ("f16", "f16"), lambda a, b: b - a),
    "v_mul_f16": ("f16", ("f16", "f16"), lambda a, b: a * b),
    "v_min_f16": ("f16", ("f16", "f16"), _minf),
    "v_max_f16": ("f16", ("f16", "f16"), _maxf),
    "v_min3_f16": ("f16", ("f16", "f16", "f16"), lambda a, b, c: _minf(_minf(a, b), c)),
    "v_max3_f16": ("f16", ("f16", "f16", "f16"), lambda a, b, c: _maxf(_maxf(a, b), c)),
    "v_med3_f16": ("f16", ("f16", "f16", "f16"), _med3),
    "v_fma_f16": ("f16", ("f16", "f16", "f16"), fp.fma_f16),
    "v_fma_legacy_f16": ("f16", ("f16", "f16", "f16"), fp.fma_f16),
    # v_mad_f16 rounds the product and the sum separately (not fused).
    "v_mad_f16": ("f16", ("f16", "f16", "f16"), lambda a, b, c: (a * b) + c),
    "v_mad_legacy_f16": ("f16", ("f16", "f16", "f16"), lambda a, b, c: (a * b) + c),
    "v_ldexp_f16": ("f16", ("f16", "i16"), _ldexp),
    "v_fract_f16": ("f16", ("f16",), _fract),
    "v_trunc_f16": ("f16", ("f16",), np.trunc),
    "v_ceil_f16": ("f16", ("f16",), np.ceil),
    "v_floor_f16": ("f16", ("f16",), np.floor),
    "v_rndne_f16": ("f16", ("f16",), np.rint),
    "v_exp_f16": ("f16", ("f16",), _trans(np.exp2, F16)),
    "v_log_f16": ("f16", ("f16",), _trans(np.log2, F16)),
    "v_rcp_f16": ("f16", ("f16",), _trans(lambda x: 1.0 / x, F16)),
    "v_rsq_f16": ("f16", ("f16",), _trans(_rsq, F16)),
    "v_sqrt_f16": ("f16", ("f16",), _trans(np.sqrt, F16)),
    "v_sin_f16": ("f16", ("f16",), _trans(_sin, F16)),
    "v_cos_f16": ("f16", ("f16",), _trans(_cos, F16)),
    "v_frexp_mant_f16": ("f16", ("f16",), fp.frexp_mant),
    "v_frexp_exp_i16_f16": ("i16", ("f16",), lambda x: fp.frexp_exp(x).astype(I16)),
}
table(FLOAT_OPS)


# ---------------------------------------------------------------------------- conversions

def _f2i(dt):
    return lambda x: fp.to_int_sat(x, dt)


def _to_snorm(x, bits=16):
    m = (1 << (bits - 1)) - 1
    x = np.where(np.isnan(x), 0, np.clip(np.asarray(x, F64), -1.0, 1.0))
    return np.rint(x * m).astype(I64)


def _to_unorm(x, bits=16):
    m = (1 << bits) - 1
    x = np.where(np.isnan(x), 0, np.clip(np.asarray(x, F64), 0.0, 1.0))
    return np.rint(x * m).astype(I64)


def _cvt_off_i4(x):
    v = (np.asarray(x).astype(U32) & U32(0xF)).astype(I32)
    v = np.where(v >= 8, v - 16, v)
    return (v * 0.0625).astype(F32)


def _f32_to_f16_rtz(x):
    x = np.asarray(x, F32)
    r = x.astype(F16)
    back = r.astype(F32)
    # Round-to-nearest moved away from zero: step one ulp back toward zero.
    away = (np.abs(back) > np.abs(x)) & np.isfinite(x)
    if np.any(away):
        r = np.where(away, np.nextafter(r, F16(0)), r)
    big = np.isinf(r) & np.isfinite(x)
    if np.any(big):
        r = np.where(big, np.copysign(F16(65504.0), x).astype(F16), r)
    return r


CVT_OPS = {
    "v_cvt_f32_i32": ("f32", ("i32",), lambda x: x.astype(F32)),
    "v_cvt_f32_u32": ("f32", ("u32",), lambda x: x.astype(F32)),
    "v_cvt_i32_f32": ("i32", ("f32",), _f2i(I32)),
    "v_cvt_u32_f32": ("u32", ("f32",), _f2i(U32)),
    "v_cvt_i32_f64": ("i32", ("f64",), _f2i(I32)),
    "v_cvt_u32_f64": ("u32", ("f64",), _f2i(U32)),
    "v_cvt_f64_i32": ("f64", ("i32",), lambda x: x.astype(F64)),
    "v_cvt_f64_u32": ("f64", ("u32",), lambda x: x.astype(F64)),
    "v_cvt_f32_f64": ("f32", ("f64",), lambda x: x.astype(F32)),
    "v_cvt_f64_f32": ("f64", ("f32",), lambda x: x.astype(F64)),
    "v_cvt_f16_f32": ("f16", ("f32",), lambda x: x.astype(F16)),
    "v_cvt_f32_f16": ("f32", ("f16",), lambda x: x.astype(F32)),
    "v_cvt_f16_i16": ("f16", ("i16",), lambda x: x.astype(F16)),
    "v_cvt_f16_u16": ("f16", ("u16",), lambda x: x.astype(F16)),
    "v_cvt_i16_f16": ("i16", ("f16",), _f2i(I16)),
    "v_cvt_u16_f16": ("u16", ("f16",), _f2i(U16)),
    "v_cvt_rpi_i32_f32": ("i32", ("f32",), lambda x: fp.to_int_sat(np.floor(x + F32(0.5)),
                                                                   I32)),
    "v_cvt_flr_i32_f32": ("i32", ("f32",), lambda x: fp.to_int_sat(np.floor(x), I32)),
    "v_cvt_off_f32_i4": ("f32", ("u32",), _cvt_off_i4),
    "v_cvt_f32_ubyte0": ("f32", ("u32",), lambda x: (x & U32(0xFF)).astype(F32)),
    "v_cvt_f32_ubyte1": ("f32", ("u32",), lambda x: ((x >> U32(8)) & U32(0xFF)).astype(F32)),
    "v_cvt_f32_ubyte2": ("f32", ("u32",), lambda x: ((x >> U32(16)) & U32(0xFF)).astype(F32)),
    "v_cvt_f32_ubyte3": ("f32", ("u32",), lambda x: (x >> U32(24)).astype(F32)),
    "v_cvt_norm_i16_f16": ("i16", ("f16",), _to_snorm),
    "v_cvt_norm_u16_f16": ("u16", ("f16",), _to_unorm),
    "v_cvt_f32_bf16": ("f32", ("bf16",), lambda x: x),
}
table(CVT_OPS)


def _pack2(lo_kind: str, hi_kind: str, fn_lo, fn_hi=None):
    """D = {fn_hi(S1), fn_lo(S0)} packed 16|16 (fn_hi defaults to fn_lo)."""
    fh = fn_hi or fn_lo
    flo = from_kind(lo_kind)
    fhi = from_kind(hi_kind)
    return lambda a, b: flo(fn_lo(a)) | (fhi(fh(b)) << U32(16))


PACK_OPS = {
    "v_cvt_pkrtz_f16_f32": ("u32", ("f32", "f32"), _pack2("f16", "f16", _f32_to_f16_rtz)),
    "v_cvt_pk_f16_f32": ("u32", ("f32", "f32"), _pack2("f16", "f16", lambda x: x.astype(F16))),
    "v_cvt_pk_bf16_f32": ("u32", ("f32", "f32"), _pack2("bf16", "bf16", lambda x: x)),
    "v_cvt_pknorm_i16_f32": ("u32", ("f32", "f32"), _pack2("i16", "i16", _to_snorm)),
    "v_cvt_pknorm_u16_f32": ("u32", ("f32", "f32"), _pack2("u16", "u16", _to_unorm)),
    "v_cvt_pknorm_i16_f16": ("u32", ("f16", "f16"), _pack2("i16", "i16", _to_snorm)),
    "v_cvt_pknorm_u16_f16": ("u32", ("f16", "f16"), _pack2("u16", "u16", _to_unorm)),
    "v_cvt_pk_u16_u32": ("u32", ("u32", "u32"),
                         _pack2("u16", "u16", lambda x: np.minimum(x, U32(0xFFFF)))),
    "v_cvt_pk_i16_i32": ("u32", ("i32", "i32"),
                         _pack2("i16", "i16", lambda x: np.clip(x, -32768, 32767))),
    "v_pack_b32_f16": ("u32", ("f16", "f16"), _pack2("f16", "f16", lambda x: x)),
}
table(PACK_OPS, float_op=False)


def _sat_pk_u8(x):
    lo = np.clip(x.astype(U32).astype(U16).view(I16).astype(I32), 0, 255).astype(U32)
    hi = np.clip((x >> U32(16)).astype(U16).view(I16).astype(I32), 0, 255).astype(U32)
    return lo | (hi << U32(8))


def _cvt_pk_u8_f32(a, b, c):
    sh = (b & U32(3)) * U32(8)
    v = fp.to_int_sat(np.rint(np.asarray(a, F64)), U8).astype(U32)
    return (c & ~(U32(0xFF) << sh)) | (v << sh)


table({
    "v_sat_pk_u8_i16": ("u16", ("u32",), _sat_pk_u8),
    "v_cvt_pk_u8_f32": ("u32", ("f32", "u32", "u32"), _cvt_pk_u8_f32),
}, float_op=False)


# ---------------------------------------------------------------------------- integer ops

def _u24(x):
    return (x & U32(0xFFFFFF)).astype(U64)


def _i24(x):
    v = (x.astype(U32) & U32(0xFFFFFF)).astype(I64)
    return np.where(v >= (1 << 23), v - (1 << 24), v)


def _bfe_u(a, b, c):
    off = (b & U32(31)).astype(U64)
    w = (c & U32(31)).astype(U64)
    return ((a.astype(U64) >> off) & ((U64(1) << w) - U64(1))).astype(U32)


def _bfe_i(a, b, c):
    off = (b & U32(31)).astype(U64)
    w = (c & U32(31)).astype(U64)
    v = (a.astype(U64) >> off) & ((U64(1) << w) - U64(1))
    sh = (U64(64) - w)
    s = ((v << sh).view(I64) >> sh.astype(I64))
    return np.where(w == 0, 0, s).astype(I64).astype(U32)


def _alignbit(a, b, c):
    v = (a.astype(U64) << U64(32)) | b.astype(U64)
    return (v >> (c & U32(31)).astype(U64)).astype(U32)


def _alignbyte(a, b, c):
    v = (a.astype(U64) << U64(32)) | b.astype(U64)
    return (v >> ((c & U32(3)) * U32(8)).astype(U64)).astype(U32)


def _perm(a, b, c):
    data = (a.astype(U64) << U64(32)) | b.astype(U64)
    a_ = np.broadcast_arrays(np.asarray(data), np.asarray(c))[0]
    c = np.broadcast_to(np.asarray(c), a_.shape)
    out = np.zeros(a_.shape, U32)
    for k in range(4):
        sel = (c >> U32(8 * k)) & U32(0xFF)
        byte = ((a_ >> (np.minimum(sel, 7).astype(U64) * U64(8))) & U64(0xFF)).astype(U32)
        sign = lambda bi: ((a_ >> U64(8 * bi + 7)) & U64(1)).astype(U32) * U32(0xFF)
        r = np.where(sel >= 13, U32(0xFF), np.where(sel == 12, U32(0), byte))
        r = np.where(sel == 8, sign(1), r)
        r = np.where(sel == 9, sign(3), r)
        r = np.where(sel == 10, sign(5), r)
        r = np.where(sel == 11, sign(7), r)
        out |= (r.astype(U32) << U32(8 * k))
    return out


def _ffbh_u32(x):
    return flbit(np.asarray(x), 32).view(I32)


def _ffbl(x):
    return ff1(np.asarray(x), 32).view(I32)


def _ffbh_i32(x):
    return flbit_signed(np.asarray(x), 32).view(I32)


def _brev32(x):
    x = np.asarray(x, U32)
    return brev(x.reshape(-1), 32).reshape(x.shape)


def _sad_u8(a, b, c):
    t = c.astype(U32)
    for k in range(4):
        x = (a >> U32(8 * k)) & U32(0xFF)
        y = (b >> U32(8 * k)) & U32(0xFF)
        t = t + np.where(x > y, x - y, y - x)
    return t


def _msad_u8(a, b, c):
    t = c.astype(U32)
    for k in range(4):
        x = (a >> U32(8 * k)) & U32(0xFF)
        y = (b >> U32(8 * k)) & U32(0xFF)
        t = t + np.where(y == 0, U32(0), np.where(x > y, x - y, y - x))
    return t


def _sad_u16(a, b, c):
    t = c.astype(U32)
    for k in range(2):
        x = (a >> U32(16 * k)) & U32(0xFFFF)
        y = (b >> U32(16 * k)) & U32(0xFFFF)
        t = t + np.where(x > y, x - y, y - x)
    return t


def _lerp_u8(a, b, c):
    t = np.zeros(np.broadcast(a, b, c).shape, U32)
    for k in range(4):
        x = (a >> U32(8 * k)) & U32(0xFF)
        y = (b >> U32(8 * k)) & U32(0xFF)
        r = (c >> U32(8 * k)) & U32(1)
        t = t | (((x + y + r) >> U32(1)) << U32(8 * k))
    return t


def _popc(x):
    return np.bitwise_count(np.asarray(x, U32)).astype(U32)


def _mbcnt(hi: bool):
    def fn(a, b):
        lanes = LANE_IDS.astype(U64)
        tmask = (U64(1) << lanes) - U64(1)
        part = ((tmask >> U64(32)) if hi else (tmask & U64(0xFFFFFFFF))).astype(U32)
        return _popc(a & part) + b
    return fn


def _ashr_pk(lo: int, hi: int):
    def fn(a, b, c):
        sh = (c & U32(31)).astype(I32)
        x = np.clip(a.astype(I32) >> sh, lo, hi).astype(I64) & 0xFF
        y = np.clip(b.astype(I32) >> sh, lo, hi).astype(I64) & 0xFF
        return (x | (y << 8)).astype(U32)
    return fn


def _bitop3(ttbl: int):
    def fn(a, b, c):
        out = np.zeros(np.broadcast(a, b, c).shape, np.asarray(a).dtype)
        for k in range(8):
            if (ttbl >> k) & 1:
                x = a if k & 4 else ~a
                y = b if k & 2 else ~b
                z = c if k & 1 else ~c
                out = out | (x & y & z)
        return out
    return fn


INT_OPS = {
    "v_mov_b32": ("u32", ("u32",), lambda x: x),
    "v_not_b32": ("u32", ("u32",), lambda x: ~x),
    "v_bfrev_b32": ("u32", ("u32",), _brev32),
    "v_ffbh_u32": ("i32", ("u32",), _ffbh_u32),
    "v_ffbl_b32": ("i32", ("u32",), _ffbl),
    "v_ffbh_i32": ("i32", ("u32",), _ffbh_i32),
    "v_prng_b32": ("u32", ("u32",), lambda x: (x << U32(1)) ^ np.where(x >> U32(31),
                                                                       U32(197), U32(0))),
    "v_and_b32": ("u32", ("u32", "u32"), lambda a, b: a & b),
    "v_or_b32": ("u32", ("u32", "u32"), lambda a, b: a | b),
    "v_xor_b32": ("u32", ("u32", "u32"), lambda a, b: a ^ b),
    "v_xnor_b32": ("u32", ("u32", "u32"), lambda a, b: ~(a ^ b)),
    "v_lshlrev_b32": ("u32", ("u32", "u32"), lambda a, b: b << (a & U32(31))),
    "v_lshrrev_b32": ("u32", ("u32", "u32"), lambda a, b: b >> (a & U32(31))),
    "v_ashrrev_i32": ("i32", ("u32", "i32"), lambda a, b: b >> (a & U32(31)).astype(I32)),
    "v_lshlrev_b64": ("u64", ("u32", "u64"), lambda a, b: b << (a & U32(63)).astype(U64)),
    "v_lshrrev_b64": ("u64", ("u32", "u64"), lambda a, b: b >> (a & U32(63)).astype(U64)),
    "v_ashrrev_i64": ("i64", ("u32", "i64"), lambda a, b: b >> (a & U32(63)).astype(I64)),
    "v_lshlrev_b16": ("u16", ("u16", "u16"), lambda a, b: b << (a & U16(15))),
    "v_lshrrev_b16": ("u16", ("u16", "u16"), lambda a, b: b >> (a & U16(15))),
    "v_ashrrev_i16": ("i16", ("u16", "i16"), lambda a, b: b >> (a & U16(15)).astype(I16)),
    "v_mul_lo_u32": ("u32", ("u32", "u32"), lambda a, b: (a.astype(U64) * b).astype(U32)),
    "v_mul_hi_u32": ("u32", ("u32", "u32"),
                     lambda a, b: ((a.astype(U64) * b.astype(U64)) >> U64(32)).astype(U32)),
    "v_mul_hi_i32": ("i32", ("i32", "i32"),
                     lambda a, b: ((a.astype(I64) * b.astype(I64)) >> 32).astype(I32)),
    "v_mul_u32_u24": ("u32", ("u32", "u32"), lambda a, b: (_u24(a) * _u24(b)).astype(U32)),
    "v_mul_hi_u32_u24": ("u32", ("u32", "u32"),
                         lambda a, b: ((_u24(a) * _u24(b)) >> U64(32)).astype(U32)),
    "v_mul_i32_i24": ("u32", ("u32", "u32"), lambda a, b: (_i24(a) * _i24(b)).astype(U32)),
    "v_mul_hi_i32_i24": ("u32", ("u32", "u32"),
                         lambda a, b: ((_i24(a) * _i24(b)) >> 32).astype(U32)),
    "v_mad_u32_u24": ("u32", ("u32", "u32", "u32"),
                      lambda a, b, c: (_u24(a) * _u24(b) + c).astype(U32)),
    "v_mad_i32_i24": ("u32", ("u32", "u32", "u32"),
                      lambda a, b, c: (_i24(a) * _i24(b) + c.astype(I32)).astype(U32)),
    "v_mul_lo_u16": ("u16", ("u16", "u16"), lambda a, b: a * b),
    "v_bfe_u32": ("u32", ("u32", "u32", "u32"), _bfe_u),
    "v_bfe_i32": ("u32", ("u32", "u32", "u32"), _bfe_i),
    "v_bfi_b32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a & b) | (~a & c)),
    "v_bfm_b32": ("u32", ("u32", "u32"),
                  lambda a, b: ((((U64(1) << (a & U32(31)).astype(U64)) - U64(1))
                                 << (b & U32(31)).astype(U64)) & U64(0xFFFFFFFF)).astype(U32)),
    "v_bcnt_u32_b32": ("u32", ("u32", "u32"), lambda a, b: _popc(a) + b),
    "v_mbcnt_lo_u32_b32": ("u32", ("u32", "u32"), _mbcnt(False)),
    "v_mbcnt_hi_u32_b32": ("u32", ("u32", "u32"), _mbcnt(True)),
    "v_alignbit_b32": ("u32", ("u32", "u32", "u32"), _alignbit),
    "v_alignbyte_b32": ("u32", ("u32", "u32", "u32"), _alignbyte),
    "v_perm_b32": ("u32", ("u32", "u32", "u32"), _perm),
    "v_lshl_add_u32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a << (b & U32(31))) + c),
    "v_add_lshl_u32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a + b) << (c & U32(31))),
    "v_add3_u32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: a + b + c),
    "v_lshl_or_b32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a << (b & U32(31))) | c),
    "v_and_or_b32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a & b) | c),
    "v_or3_b32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: a | b | c),
    "v_xad_u32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a ^ b) + c),
    "v_lshl_add_u64": ("u64", ("u64", "u32", "u64"),
                       lambda a, b, c: (a << (b & U32(7)).astype(U64)) + c),
    "v_min_i32": ("i32", ("i32", "i32"), np.minimum),
    "v_max_i32": ("i32", ("i32", "i32"), np.maximum),
    "v_min_u32": ("u32", ("u32", "u32"), np.minimum),
    "v_max_u32": ("u32", ("u32", "u32"), np.maximum),
    "v_min_i16": ("i16", ("i16", "i16"), np.minimum),
    "v_max_i16": ("i16", ("i16", "i16"), np.maximum),
    "v_min_u16": ("u16", ("u16", "u16"), np.minimum),
    "v_max_u16": ("u16", ("u16", "u16"), np.maximum),
    "v_min3_i32": ("i32", ("i32", "i32", "i32"), lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "v_max3_i32": ("i32", ("i32", "i32", "i32"), lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "v_min3_u32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "v_max3_u32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "v_min3_i16": ("i16", ("i16", "i16", "i16"), lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "v_max3_i16": ("i16", ("i16", "i16", "i16"), lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "v_min3_u16": ("u16", ("u16", "u16", "u16"), lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "v_max3_u16": ("u16", ("u16", "u16", "u16"), lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "v_med3_i32": ("i32", ("i32", "i32", "i32"), _med3),
    "v_med3_u32": ("u32", ("u32", "u32", "u32"), _med3),
    "v_med3_i16": ("i16", ("i16", "i16", "i16"), _med3),
    "v_med3_u16": ("u16", ("u16", "u16", "u16"), _med3),
    "v_sad_u8": ("u32", ("u32", "u32", "u32"), _sad_u8),
    "v_sad_hi_u8": ("u32", ("u32", "u32", "u32"),
                    lambda a, b, c: (_sad_u8(a, b, U32(0)) << U32(16)) + c),
    "v_sad_u16": ("u32", ("u32", "u32", "u32"), _sad_u16),
    "v_sad_u32": ("u32", ("u32", "u32", "u32"),
                  lambda a, b, c: np.where(a > b, a - b, b - a) + c),
    "v_msad_u8": ("u32", ("u32", "u32", "u32"), _msad_u8),
    "v_lerp_u8": ("u32", ("u32", "u32", "u32"), _lerp_u8),
    "v_ashr_pk_i8_i32": ("u16", ("u32", "u32", "u32"), _ashr_pk(-128, 127)),
    "v_ashr_pk_u8_i32": ("u16", ("u32", "u32", "u32"), _ashr_pk(0, 255)),
    "v_mad_u32_u16": ("u32", ("u16", "u16", "u32"),
                      lambda a, b, c: a.astype(U32) * b.astype(U32) + c),
    "v_mad_i32_i16": ("i32", ("i16", "i16", "i32"),
                      lambda a, b, c: a.astype(I32) * b.astype(I32) + c),
    "v_mad_legacy_u16": ("u16", ("u16", "u16", "u16"), lambda a, b, c: a * b + c),
    "v_mad_legacy_i16": ("i16", ("i16", "i16", "i16"), lambda a, b, c: a * b + c),
}
table(INT_OPS, float_op=False)

SAT_OPS = {
    # wide results (int64) so a VOP3 clamp can saturate; otherwise they wrap.
    "v_add_u32": ("u32", ("u32", "u32"), lambda a, b: a.astype(I64) + b),
    "v_sub_u32": ("u32", ("u32", "u32"), lambda a, b: a.astype(I64) - b),
    "v_subrev_u32": ("u32", ("u32", "u32"), lambda a, b: b.astype(I64) - a),
    "v_add_i32": ("i32", ("i32", "i32"), lambda a, b: a.astype(I64) + b),
    "v_sub_i32": ("i32", ("i32", "i32"), lambda a, b: a.astype(I64) - b),
    "v_add_u16": ("u16", ("u16", "u16"), lambda a, b: a.astype(I64) + b),
    "v_sub_u16": ("u16", ("u16", "u16"), lambda a, b: a.astype(I64) - b),
    "v_subrev_u16": ("u16", ("u16", "u16"), lambda a, b: b.astype(I64) - a),
    "v_add_i16": ("i16", ("i16", "i16"), lambda a, b: a.astype(I64) + b),
    "v_sub_i16": ("i16", ("i16", "i16"), lambda a, b: a.astype(I64) - b),
    "v_mad_u16": ("u16", ("u16", "u16", "u16"), lambda a, b, c: a.astype(I64) * b + c),
    "v_mad_i16": ("i16", ("i16", "i16", "i16"), lambda a, b, c: a.astype(I64) * b + c),
}


# Without clamp the 32-bit ones wrap: the same bits computed in their own 32-bit type (one
# pass, no int64 temporaries). NumPy arrays wrap silently; scalars (two constant sources)
# wrap too, their overflow warning ignored like every float exception of a batch.
WRAP_32 = {
    "v_add_u32": lambda a, b: a + b,
    "v_sub_u32": lambda a, b: a - b,
    "v_subrev_u32": lambda a, b: b - a,
    "v_add_i32": lambda a, b: a + b,
    "v_sub_i32": lambda a, b: a - b,
}


for _name, (_dst, _srcs, _fn) in SAT_OPS.items():
    def _make(dst=_dst, srcs=_srcs, fn=_fn, name=_name):
        wrap = WRAP_32.get(name)
        sat_build = valu(dst, srcs, fn, float_op=False, sat=True)
        wrap_build = valu(dst, srcs, wrap, float_op=False) if wrap is not None else None

        def build(info: OpInfo):
            if wrap_build is not None and not info.mods.get("clamp"):
                return wrap_build(info)
            return sat_build(info)
        return build
    builder(_name)(_make())


@builder("v_bitop3_b32", "v_bitop3_b16")
def _bitop3_build(info: OpInfo):
    # The truth table is encoded in the VOP3 OMOD/ABS/NEG fields, which a decoder may show as
    # omod and operand modifiers; an explicit `bitop3` modifier wins.
    ttbl = info.mods.get("bitop3")
    if ttbl is None:
        neg = absm = 0
        for k, slot in enumerate(("src0", "src1", "src2")):
            op = info.op(slot)
            if isinstance(op, Mod):
                neg |= int(op.neg) << k
                absm |= int(op.abs) << k
        ttbl = (int(info.mods.get("omod", 0) or 0) << 6) | (absm << 3) | neg
    kind = "u32" if info.mnemonic.endswith("b32") else "u16"
    return valu(kind, (kind, kind, kind), _bitop3(int(ttbl)), float_op=False)(
        _strip_mods(info))


def _strip_mods(info: OpInfo) -> OpInfo:
    """A copy of `info` whose operands carry no neg/abs modifiers (bitop3 reuses the bits)."""
    import copy

    new = copy.copy(info)
    new.inst = copy.copy(info.inst)
    new.inst.operands = [o.operand if isinstance(o, Mod) else o for o in info.inst.operands]
    new.inst.modifiers = {k: v for k, v in info.inst.modifiers.items() if k != "omod"}
    return new


# ---------------------------------------------------------------------------- FMA/MAC forms

def _mac(kind: str, fn: Callable):
    """D = fn(S0, S1, D) with the destination as accumulator (v_fmac, v_mac)."""
    def build(info: OpInfo):
        perm, dmask = _dpp_parts(info)
        readers = _sources(info, (kind, kind), perm)
        dst = info.op("vdst")
        acc = make_src(info, "vdst", kind, 2) if info.enc != "SDWA" else None
        if acc is None:
            raise CompileError("SDWA accumulate forms are not supported")
        write = make_dst(info, kind)
        post = clamp_omod(info, kind)
        shift = _denorm_field(kind)
        nxt = info.next_index
        del dst

        def run(g: Group) -> int:
            a, b, c = readers[0](g), readers[1](g), acc(g)
            if not (g.mode >> shift) & 1:
                a, b, c = fp.ftz(np.asarray(a)), fp.ftz(np.asarray(b)), fp.ftz(np.asarray(c))
            with np.errstate(all="ignore"):
                r = fn(a, b, c)
            if post is not None:
                r = post(r, g)
            write(g, r, dmask(g) if dmask is not None else None)
            return nxt
        return run
    return build


builder("v_fmac_f32")(_mac("f32", fp.fma_f32))
builder("v_fmac_f64")(_mac("f64", fp.fma_f64))
builder("v_mac_f16")(_mac("f16", lambda a, b, c: (a * b) + c))


def _literal_fma(kind: str, fn: Callable, k_pos: int):
    """v_fmaak/v_fmamk/v_madak/v_madmk: the literal K is operand 2 (ak) or 1 (mk)."""
    def build(info: OpInfo):
        lit = info.op("literal")
        if not isinstance(lit, Literal | Imm):
            raise CompileError("missing literal")
        k = np.array([lit.bits if isinstance(lit, Literal) else lit.value],
                     U32 if kind == "f32" else U16).view(F32 if kind == "f32" else F16)[0]
        s0 = make_src(info, "src0", kind, 0)
        s1 = make_src(info, "vsrc1", kind, 1)
        write = make_dst(info, kind)
        nxt = info.next_index

        def run(g: Group) -> int:
            a, b = s0(g), s1(g)
            with np.errstate(all="ignore"):
                r = fn(a, k, b) if k_pos == 1 else fn(a, b, k)
            write(g, r, None)
            return nxt
        return run
    return build


builder("v_fmaak_f32")(_literal_fma("f32", fp.fma_f32, 2))
builder("v_fmamk_f32")(_literal_fma("f32", fp.fma_f32, 1))
builder("v_madak_f16")(_literal_fma("f16", lambda a, b, c: a * b + c, 2))
builder("v_madmk_f16")(_literal_fma("f16", lambda a, b, c: a * b + c, 1))


# ---------------------------------------------------------------------------- moves, lanes

@builder("v_nop", "v_clrexcp")
def _vnop(info: OpInfo):
    nxt = info.next_index
    return lambda g: nxt


@builder("v_mov_b64")
def _mov64(info: OpInfo):
    return valu("u64", ("u64",), lambda x: x, float_op=False)(info)


@builder("v_accvgpr_read_b32", "v_accvgpr_write_b32", "v_accvgpr_mov_b32")
def _accmov(info: OpInfo):
    return valu("u32", ("u32",), lambda x: x, float_op=False)(info)


@builder("v_swap_b32")
def _swap(info: OpInfo):
    a, b = info.op("vdst"), info.op("src0")
    ra, rb = vreg_row(info, a), vreg_row(info, b)
    nxt = info.next_index

    def run(g: Group) -> int:
        x = g.v[ra].copy()
        store(g, g.v[ra], g.v[rb].copy(), None)
        store(g, g.v[rb], x, None)
        return nxt
    return run


def _permlane_swap(width: int):
    def build(info: OpInfo):
        rd, rs = vreg_row(info, info.op("vdst")), vreg_row(info, info.op("src0"))
        # src0 lanes [base, base + width) swap with vdst lanes [base + width, base + 2 width)
        lo = np.array([b + k for b in range(0, 64, 2 * width) for k in range(width)])
        hi = lo + width
        nxt = info.next_index

        def run(g: Group) -> int:
            d, s = g.v[rd].copy(), g.v[rs].copy()
            new_s, new_d = s.copy(), d.copy()
            new_s[:, lo] = d[:, hi]
            new_d[:, hi] = s[:, lo]
            store(g, g.v[rd], new_d, None)
            store(g, g.v[rs], new_s, None)
            return nxt
        return run
    return build


builder("v_permlane16_swap_b32")(_permlane_swap(16))
builder("v_permlane32_swap_b32")(_permlane_swap(32))


@builder("v_readlane_b32")
def _readlane(info: OpInfo):
    src = info.op("src0")
    row = vreg_row(info, src)
    lane = sread(info, info.op("src1"))
    wr = swrite(info, info.op("vdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        ln = (lane(g) & U32(63)).astype(np.intp)
        wr(g, g.v[row][np.arange(g.n), ln])
        return nxt
    return run


@builder("v_readfirstlane_b32")
def _readfirstlane(info: OpInfo):
    row = vreg_row(info, info.op("src0"))
    wr = swrite(info, info.op("vdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        ln = np.where(g.exec.any(axis=1), np.argmax(g.exec, axis=1), 0)
        wr(g, g.v[row][np.arange(g.n), ln])
        return nxt
    return run


@builder("v_writelane_b32")
def _writelane(info: OpInfo):
    val = sread(info, info.op("src0"))
    lane = sread(info, info.op("src1"))
    row = vreg_row(info, info.op("vdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        ln = (lane(g) & U32(63)).astype(np.intp)
        g.v[row][np.arange(g.n), ln] = val(g)
        return nxt
    return run


@builder("v_cndmask_b32")
def _cndmask(info: OpInfo):
    perm, dmask = _dpp_parts(info)
    readers = _sources(info, ("u32", "u32"), perm)
    mask_op = info.op("vcc") if info.has("vcc") else info.op("src2")
    sel = lane_mask_reader(info, mask_op)
    write = make_dst(info, "u32")
    nxt = info.next_index

    def run(g: Group) -> int:
        a, b = readers[0](g), readers[1](g)
        write(g, np.where(sel(g), b, a), dmask(g) if dmask is not None else None)
        return nxt
    return run


# ---------------------------------------------------------------------------- carries

def _carry(kind: str):
    def build(info: OpInfo):
        perm, dmask = _dpp_parts(info)
        readers = _sources(info, ("u32", "u32"), perm)
        cout_op = info.op("sdst") if info.has("sdst") else Special("vcc")
        cout = lane_mask_writer(info, cout_op)
        cin = None
        if kind in ("addc", "subb", "subbrev"):
            cin_op = info.op("src2") if info.has("src2") else Special("vcc")
            cin = lane_mask_reader(info, cin_op)
        write = make_dst(info, "u32")
        clamp = bool(info.mods.get("clamp"))
        nxt = info.next_index

        def run(g: Group) -> int:
            a = np.asarray(readers[0](g)).astype(I64)
            b = np.asarray(readers[1](g)).astype(I64)
            c = cin(g).astype(I64) if cin is not None else 0
            if kind in ("add", "addc"):
                r = a + b + c
                co = r >= (1 << 32)
                sat = np.minimum(r, 0xFFFFFFFF)
            elif kind in ("sub", "subb"):
                r = a - b - c
                co = (b + c) > a
                sat = np.maximum(r, 0)
            else:  # subrev, subbrev
                r = b - a - c
                co = (a + c) > b
                sat = np.maximum(r, 0)
            res = (sat if clamp else r).astype(U32)
            m = dmask(g) if dmask is not None else None
            write(g, np.broadcast_to(res, (g.n, 64)), m)
            active = g.exec if m is None else m
            cout(g, np.broadcast_to(co, (g.n, 64)) & active)
            return nxt
        return run
    return build


for _k, _m in (("add", "v_add_co_u32"), ("sub", "v_sub_co_u32"), ("subrev", "v_subrev_co_u32"),
               ("addc", "v_addc_co_u32"), ("subb", "v_subb_co_u32"),
               ("subbrev", "v_subbrev_co_u32")):
    builder(_m)(_carry(_k))


def _mad64(signed: bool):
    def build(info: OpInfo):
        k = "i32" if signed else "u32"
        readers = _sources(info, (k, k, "i64" if signed else "u64"))
        write = make_dst(info, "u64")
        cout = lane_mask_writer(info, info.op("sdst"))
        nxt = info.next_index

        def run(g: Group) -> int:
            a, b, c = (np.asarray(r(g)) for r in readers)
            if signed:
                prod = a.astype(object) * b.astype(object) + c.astype(object)
                prod = np.asarray(prod)
                lo = np.vectorize(lambda v: v & 0xFFFFFFFFFFFFFFFF, otypes=[U64])(prod)
                co = np.vectorize(lambda v: not (-(1 << 63) <= v < (1 << 63)),
                                  otypes=[bool])(prod)
            else:
                p = a.astype(U64) * b.astype(U64)
                lo = p + c
                co = lo < p
            write(g, np.broadcast_to(lo, (g.n, 64)), None)
            cout(g, np.broadcast_to(co, (g.n, 64)) & g.exec)
            return nxt
        return run
    return build


builder("v_mad_u64_u32")(_mad64(False))
builder("v_mad_i64_i32")(_mad64(True))


# ---------------------------------------------------------------------------- compares

def _cmp_fn(op: str, is_float: bool):
    fns = {
        "f": lambda a, b: np.zeros(np.broadcast(a, b).shape, bool),
        "t": lambda a, b: np.ones(np.broadcast(a, b).shape, bool),
        "tru": lambda a, b: np.ones(np.broadcast(a, b).shape, bool),
        "lt": np.less, "eq": np.equal, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal, "ne": np.not_equal,
        "lg": lambda a, b: np.less(a, b) | np.greater(a, b),
        "o": lambda a, b: ~np.isnan(a) & ~np.isnan(b),
        "u": lambda a, b: np.isnan(a) | np.isnan(b),
        "nge": lambda a, b: ~np.greater_equal(a, b),
        "nlg": lambda a, b: ~(np.less(a, b) | np.greater(a, b)),
        "ngt": lambda a, b: ~np.greater(a, b),
        "nle": lambda a, b: ~np.less_equal(a, b),
        "neq": lambda a, b: ~np.equal(a, b),
        "nlt": lambda a, b: ~np.less(a, b),
    }
    return fns[op]


def _class_fn(a, b):
    return (fp.fp_class_mask(np.asarray(a)) & np.asarray(b, U32)) != 0


def _cmp_builder(op: str, kind: str, x: bool):
    def build(info: OpInfo):
        perm, dmask = _dpp_parts(info)
        kinds = (kind, "u32") if op == "class" else (kind, kind)
        readers = _sources(info, kinds, perm)
        fn = _class_fn if op == "class" else _cmp_fn(op, kind in FLOAT_KINDS)
        dest_op = info.inst.operands[0]
        wr = lane_mask_writer(info, dest_op)
        shift = _denorm_field(kind) if kind in FLOAT_KINDS else None
        nxt = info.next_index

        def run(g: Group) -> int:
            a, b = readers[0](g), readers[1](g)
            if shift is not None and not (g.mode >> shift) & 1:
                a = fp.ftz(np.asarray(a))
                if op != "class":
                    b = fp.ftz(np.asarray(b))
            with np.errstate(all="ignore"):
                r = np.broadcast_to(fn(a, b), (g.n, 64))
            active = g.exec if dmask is None else dmask(g)
            res = r & active
            if x:
                wr(g, res)
                g.set_exec_mask(res)
            else:
                wr(g, res)
            return nxt
        return run
    return build


_FLOAT_CMPS = ("f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle",
               "neq", "nlt", "tru")
_INT_CMPS = ("f", "lt", "eq", "le", "gt", "ne", "ge", "t")
for _x, _pre in ((False, "v_cmp_"), (True, "v_cmpx_")):
    for _t in ("f16", "f32", "f64"):
        for _c in _FLOAT_CMPS:
            builder(f"{_pre}{_c}_{_t}")(_cmp_builder(_c, _t, _x))
        builder(f"{_pre}class_{_t}")(_cmp_builder("class", _t, _x))
    for _t in ("i16", "u16", "i32", "u32", "i64", "u64"):
        for _c in _INT_CMPS:
            builder(f"{_pre}{_c}_{_t}")(_cmp_builder(_c, _t, _x))


# ---------------------------------------------------------------------------- division helpers

def _exponent(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype == F32:
        return ((x.view(U32) >> U32(23)) & U32(0xFF)).astype(I64)
    return ((x.view(U64) >> U64(52)) & U64(0x7FF)).astype(I64)


def _div_scale(kind: str):
    dt = F32 if kind == "f32" else F64
    lim, tiny, scale = (96, 23, 64) if kind == "f32" else (768, 53, 128)

    def build(info: OpInfo):
        readers = _sources(info, (kind, kind, kind))
        write = make_dst(info, kind)
        vcc = lane_mask_writer(info, info.op("sdst"))
        nxt = info.next_index

        def run(g: Group) -> int:
            s0, s1, s2 = (np.broadcast_to(np.asarray(r(g), dt), (g.n, 64)) for r in readers)
            tiny_n = np.finfo(dt).tiny
            with np.errstate(all="ignore"):
                d = s0.copy()
                v = np.zeros(s0.shape, bool)
                e1, e2 = _exponent(s1), _exponent(s2)
                q = (s2.astype(F64) / s1.astype(F64)) if dt == F32 else s2 / s1
                rcp = 1.0 / s1.astype(F64)
                den1 = (np.abs(s1) < tiny_n) & (s1 != 0)
                rcp_den = (np.abs(rcp) < np.finfo(F64).tiny) & (rcp != 0) if dt == F64 else \
                    (np.abs(rcp) < tiny_n) & (rcp != 0)
                q_den = (np.abs(q) < tiny_n) & (q != 0)
                zero = (s2 == 0) | (s1 == 0)
                c1 = ~zero & (e2 - e1 >= lim)
                c2 = ~zero & ~c1 & den1
                c3 = ~zero & ~c1 & ~c2 & rcp_den & q_den
                c4 = ~zero & ~c1 & ~c2 & ~c3 & rcp_den
                c5 = ~zero & ~c1 & ~c2 & ~c3 & ~c4 & q_den
                c6 = ~zero & ~c1 & ~c2 & ~c3 & ~c4 & ~c5 & (e2 <= tiny)
                up = np.ldexp(s0, scale).astype(dt)
                down = np.ldexp(s0, -scale).astype(dt)
                d = np.where(zero, dt(np.nan), d)
                d = np.where((c1 | c3) & (s0 == s1), up, d)
                d = np.where(c2 | c6, up, d)
                d = np.where(c4, down, d)
                d = np.where(c5 & (s0 == s2), up, d)
                v = c1 | c3 | c5
            write(g, d, None)
            vcc(g, v & g.exec)
            return nxt
        return run
    return build


builder("v_div_scale_f32")(_div_scale("f32"))
builder("v_div_scale_f64")(_div_scale("f64"))


def _div_fmas(kind: str):
    dt = F32 if kind == "f32" else F64
    big, bias = (64, 127) if kind == "f32" else (128, 1023)
    fma = fp.fma_f32 if kind == "f32" else fp.fma_f64

    def build(info: OpInfo):
        readers = _sources(info, (kind, kind, kind))
        write = make_dst(info, kind)
        vcc = lane_mask_reader(info, Special("vcc"))
        post = clamp_omod(info, kind)
        nxt = info.next_index

        def run(g: Group) -> int:
            a, b, c = (r(g) for r in readers)
            with np.errstate(all="ignore"):
                r = np.asarray(fma(a, b, c), dt)
                c_arr = np.broadcast_to(np.asarray(c, dt), r.shape)
                scale = np.where(_exponent(c_arr) > bias, big, -big)
                scaled = np.ldexp(r.astype(F64), scale).astype(dt)
                r = np.where(vcc(g), scaled, r)
            if post is not None:
                r = post(r, g)
            write(g, r, None)
            return nxt
        return run
    return build


builder("v_div_fmas_f32")(_div_fmas("f32"))
builder("v_div_fmas_f64")(_div_fmas("f64"))


def _div_fixup(kind: str):
    dt = {"f32": F32, "f64": F64, "f16": F16}[kind]

    def fn(s0, s1, s2):
        s0, s1, s2 = np.broadcast_arrays(np.asarray(s0, dt), np.asarray(s1, dt),
                                         np.asarray(s2, dt))
        sign = np.signbit(s1) ^ np.signbit(s2)
        inf = np.where(sign, dt(-np.inf), dt(np.inf))
        zero = np.where(sign, dt(-0.0), dt(0.0))
        r = np.where(sign, -np.abs(s0), np.abs(s0))
        r = np.where(np.isnan(s0), inf, r)  # hardware overflow path for a NaN quotient
        r = np.where((np.abs(s1) == np.inf) | (s2 == 0), zero, r)
        r = np.where((s1 == 0) | (np.abs(s2) == np.inf), inf, r)
        r = np.where((np.abs(s1) == np.inf) & (np.abs(s2) == np.inf), dt(np.nan), r)
        r = np.where((s1 == 0) & (s2 == 0), dt(np.nan), r)
        r = np.where(np.isnan(s1), s1, r)
        r = np.where(np.isnan(s2), s2, r)
        return r
    return fn


table({
    "v_div_fixup_f32": ("f32", ("f32", "f32", "f32"), _div_fixup("f32")),
    "v_div_fixup_f64": ("f64", ("f64", "f64", "f64"), _div_fixup("f64")),
    "v_div_fixup_f16": ("f16", ("f16", "f16", "f16"), _div_fixup("f16")),
    "v_div_fixup_legacy_f16": ("f16", ("f16", "f16", "f16"), _div_fixup("f16")),
})


def _trig_preop(x, sel):
    """2/pi bits (v_trig_preop_f64): 53-bit chunk `sel` of 2/pi, scaled (ISA pseudo-code)."""
    import math
    from fractions import Fraction

    x = np.asarray(x, F64)
    sel = np.asarray(sel).astype(I64) & 31
    x, sel = np.broadcast_arrays(x, sel)
    out = np.empty(x.shape, F64)
    two_over_pi = _two_over_pi_bits()
    for idx in np.ndindex(x.shape):
        e = int((np.array([x[idx]]).view(U64)[0] >> U64(52)) & U64(0x7FF))
        shift = int(sel[idx]) * 53 + (e - 1077 if e > 1077 else 0)
        chunk = (two_over_pi << shift >> 1201) & ((1 << 53) - 1) if shift >= 0 else 0
        scale = -53 - shift + (128 if e >= 1968 else 0)
        out[idx] = math.ldexp(float(Fraction(chunk)), scale)
    return out


_TWO_OVER_PI: int | None = None


def _two_over_pi_bits() -> int:
    """The first 1201 fractional bits of 2/pi, computed exactly with integer arithmetic."""
    global _TWO_OVER_PI
    if _TWO_OVER_PI is None:
        # pi by Machin's formula to 1300 bits, then floor(2^1201 * 2/pi).
        prec = 1400
        one = 1 << prec

        def arctan_inv(k: int) -> int:
            total, term, n, sign = 0, one // k, 1, 1
            k2 = k * k
            while term:
                total += sign * (term // n)
                term //= k2
                n += 2
                sign = -sign
            return total
        pi = 4 * (4 * arctan_inv(5) - arctan_inv(239))
        _TWO_OVER_PI = (2 * (one << 1201)) // pi
    return _TWO_OVER_PI


table({"v_trig_preop_f64": ("f64", ("f64", "u32"), _trig_preop)}, float_op=True)


# ---------------------------------------------------------------------------- VOP3P packed

def _pk_halves(info: OpInfo, k: int, kind: str):
    """(lo, hi) readers of packed source k with op_sel/op_sel_hi/neg_lo/neg_hi applied."""
    slot = ("src0", "src1", "src2")[k]
    op = info.op(slot)
    op_sel = tuple(info.mods.get("op_sel", (0, 0, 0)))
    op_sel_hi = tuple(info.mods.get("op_sel_hi", (1, 1, 1)))
    neg_lo = tuple(info.mods.get("neg_lo", (0, 0, 0)))
    neg_hi = tuple(info.mods.get("neg_hi", (0, 0, 0)))

    def bit(t, i, default):
        return t[i] if i < len(t) else default
    sel_lo, sel_hi = bit(op_sel, k, 0), bit(op_sel_hi, k, 1)
    nl, nh = bit(neg_lo, k, 0), bit(neg_hi, k, 0)
    bits = KIND_BITS[kind]
    conv = to_kind(kind)
    if bits == 32:  # packed f32: the operand is a 64-bit register pair
        if isinstance(op, Reg) and op.kind in ("v", "a"):
            row = vreg_row(info, op)
            lo_fn = (lambda g: g.v[row + 1]) if sel_lo else (lambda g: g.v[row])
            hi_fn = (lambda g: g.v[row + 1]) if sel_hi else (lambda g: g.v[row])
        else:
            r64 = raw_reader(info, op, 64) if not is_const(op) else None
            if r64 is None:
                c = np.uint32(_const32(op, kind))
                lo_fn = hi_fn = (lambda g: c)
            else:
                def lo_fn(g, r=r64, s=sel_lo):
                    v = np.asarray(r(g))
                    return (v >> U64(32)).astype(U32) if s else v.astype(U32)

                def hi_fn(g, r=r64, s=sel_hi):
                    v = np.asarray(r(g))
                    return (v >> U64(32)).astype(U32) if s else v.astype(U32)
    else:
        if is_const(op):
            c = np.uint32(_const32(op, kind))
            raw = lambda g: c
        else:
            raw = raw_reader(info, op, 32)
        lo_fn = (lambda g: raw(g) >> U32(16)) if sel_lo else (lambda g: raw(g) & U32(0xFFFF))
        hi_fn = (lambda g: raw(g) >> U32(16)) if sel_hi else (lambda g: raw(g) & U32(0xFFFF))
    is_float = kind in FLOAT_KINDS

    def wrap(f, neg):
        if is_float and neg:
            return lambda g: -conv(np.asarray(f(g)))
        return lambda g: conv(np.asarray(f(g)))
    return wrap(lo_fn, nl), wrap(hi_fn, nh)


def _const32(op, kind: str) -> int:
    if isinstance(op, Mod):
        op = op.operand
    ck = {"f16": "f16", "bf16": "bf16", "f32": "f32"}.get(kind, "int")
    bits = 16 if KIND_BITS[kind] == 16 else 32
    return const_bits(op, ck, bits) if not isinstance(op, Literal) else op.bits & 0xFFFFFFFF


def pk_op(kind: str, nsrc: int, fn: Callable, float_op: bool = True, sat: bool = False):
    """Builder for a VOP3P packed op: D.lo = fn(lo...), D.hi = fn(hi...)."""
    def build(info: OpInfo):
        halves = [_pk_halves(info, k, kind) for k in range(nsrc)]
        dst = info.op("vdst")
        row = vreg_row(info, dst)
        clamp = bool(info.mods.get("clamp"))
        fk = from_kind(kind)
        bits = KIND_BITS[kind]
        dt = {"f16": F16, "f32": F32}.get(kind)
        info_ = np.iinfo({"u16": U16, "i16": I16}.get(kind, U16)) if sat else None
        nxt = info.next_index

        def finish(r, g):
            if float_op and clamp:
                r = fp.clamp01(np.asarray(r, dt), dx10=bool((g.mode >> 8) & 1))
            elif sat and clamp:
                r = np.clip(r, info_.min, info_.max)
            return fk(r)

        def run(g: Group) -> int:
            with np.errstate(all="ignore"):
                lo = fn(*[h[0](g) for h in halves])
                hi = fn(*[h[1](g) for h in halves])
            lo_b, hi_b = finish(lo, g), finish(hi, g)
            if bits == 32:
                store(g, g.v[row], np.broadcast_to(lo_b, (g.n, 64)), None)
                store(g, g.v[row + 1], np.broadcast_to(hi_b, (g.n, 64)), None)
            else:
                store(g, g.v[row], (lo_b & U32(0xFFFF)) | (hi_b << U32(16)), None)
            return nxt
        return run
    return build


PK_OPS = {
    "v_pk_add_f16": ("f16", 2, lambda a, b: a + b, True, False),
    "v_pk_mul_f16": ("f16", 2, lambda a, b: a * b, True, False),
    "v_pk_fma_f16": ("f16", 3, fp.fma_f16, True, False),
    "v_pk_min_f16": ("f16", 2, _minf, True, False),
    "v_pk_max_f16": ("f16", 2, _maxf, True, False),
    "v_pk_minimum3_f16": ("f16", 3, lambda a, b, c: fp.minimum_nan(fp.minimum_nan(a, b), c),
                          True, False),
    "v_pk_maximum3_f16": ("f16", 3, lambda a, b, c: fp.maximum_nan(fp.maximum_nan(a, b), c),
                          True, False),
    "v_pk_add_f32": ("f32", 2, lambda a, b: a + b, True, False),
    "v_pk_mul_f32": ("f32", 2, lambda a, b: a * b, True, False),
    "v_pk_fma_f32": ("f32", 3, fp.fma_f32, True, False),
    "v_pk_add_u16": ("u16", 2, lambda a, b: a.astype(I64) + b, False, True),
    "v_pk_sub_u16": ("u16", 2, lambda a, b: a.astype(I64) - b, False, True),
    "v_pk_add_i16": ("i16", 2, lambda a, b: a.astype(I64) + b, False, True),
    "v_pk_sub_i16": ("i16", 2, lambda a, b: a.astype(I64) - b, False, True),
    "v_pk_mad_u16": ("u16", 3, lambda a, b, c: a.astype(I64) * b + c, False, True),
    "v_pk_mad_i16": ("i16", 3, lambda a, b, c: a.astype(I64) * b + c, False, True),
    "v_pk_mul_lo_u16": ("u16", 2, lambda a, b: a * b, False, False),
    "v_pk_min_u16": ("u16", 2, np.minimum, False, False),
    "v_pk_max_u16": ("u16", 2, np.maximum, False, False),
    "v_pk_min_i16": ("i16", 2, np.minimum, False, False),
    "v_pk_max_i16": ("i16", 2, np.maximum, False, False),
    "v_pk_lshlrev_b16": ("u16", 2, lambda a, b: b << (a & U16(15)), False, False),
    "v_pk_lshrrev_b16": ("u16", 2, lambda a, b: b >> (a & U16(15)), False, False),
    "v_pk_ashrrev_i16": ("i16", 2, lambda a, b: b >> (a.view(U16) & U16(15)).astype(I16),
                         False, False),
}
for _name, (_kind, _n, _fn, _f, _s) in PK_OPS.items():
    builder(_name)(pk_op(_kind, _n, _fn, _f, _s))


@builder("v_pk_mov_b32")
def _pk_mov(info: OpInfo):
    op_sel = tuple(info.mods.get("op_sel", (0, 0)))
    s0 = raw_reader(info, info.op("src0"), 64) if not is_const(info.op("src0")) else None
    s1 = raw_reader(info, info.op("src1"), 64) if not is_const(info.op("src1")) else None
    c0 = np.uint64(_const32(info.op("src0"), "u32")) if s0 is None else None
    c1 = np.uint64(_const32(info.op("src1"), "u32")) if s1 is None else None
    row = vreg_row(info, info.op("vdst"))
    sel0 = op_sel[0] if op_sel else 0
    sel1 = op_sel[1] if len(op_sel) > 1 else 0
    nxt = info.next_index

    def pick(v, s):
        v = np.asarray(v, U64)
        return (v >> U64(32)).astype(U32) if s else v.astype(U32)

    def run(g: Group) -> int:
        a = pick(s0(g) if s0 is not None else c0, sel0)
        b = pick(s1(g) if s1 is not None else c1, sel1)
        lo, hi = np.broadcast_to(a, (g.n, 64)).copy(), np.broadcast_to(b, (g.n, 64)).copy()
        store(g, g.v[row], lo, None)
        store(g, g.v[row + 1], hi, None)
        return nxt
    return run


@builder("v_pk_fmac_f16")
def _pk_fmac(info: OpInfo):
    a = make_src(info, "src0", "u32", 0)
    b = make_src(info, "src1" if info.has("src1") else "vsrc1", "u32", 1)
    row = vreg_row(info, info.op("vdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        x, y, d = np.asarray(a(g), U32), np.asarray(b(g), U32), g.v[row]
        h = lambda v, s: ((v >> U32(s)) & U32(0xFFFF)).astype(U16).view(F16)
        lo = fp.fma_f16(h(x, 0), h(y, 0), h(d, 0))
        hi = fp.fma_f16(h(x, 16), h(y, 16), h(d, 16))
        out = lo.view(U16).astype(U32) | (hi.view(U16).astype(U32) << U32(16))
        store(g, g.v[row], out, None)
        return nxt
    return run


def _mix(hi_dst: bool | None):
    """v_fma_mix_f32 (None), v_fma_mixlo_f16 (False), v_fma_mixhi_f16 (True)."""
    def build(info: OpInfo):
        op_sel = tuple(info.mods.get("op_sel", (0, 0, 0)))
        op_sel_hi = tuple(info.mods.get("op_sel_hi", (0, 0, 0)))
        neg = tuple(info.mods.get("neg_lo", (0, 0, 0)))
        absm = tuple(info.mods.get("neg_hi", (0, 0, 0)))  # neg_hi is |x| for the mix ops
        readers = []
        for k, slot in enumerate(("src0", "src1", "src2")):
            op = info.op(slot)
            if is_const(op):
                if k < len(op_sel_hi) and op_sel_hi[k]:
                    c = np.uint32(_const32(op, "f16"))
                else:
                    c = np.uint32(_const32(op, "f32"))
                raw = (lambda g, c=c: c)
            else:
                raw = raw_reader(info, op, 32)
            is16 = k < len(op_sel_hi) and op_sel_hi[k]
            hi = k < len(op_sel) and op_sel[k]
            n_ = k < len(neg) and neg[k]
            a_ = k < len(absm) and absm[k]

            def rd(g, raw=raw, is16=is16, hi=hi, n_=n_, a_=a_):
                x = np.asarray(raw(g), U32)
                if is16:
                    v = ((x >> U32(16)) if hi else (x & U32(0xFFFF))).astype(U16).view(F16)
                    v = v.astype(F32)
                else:
                    v = x.view(F32)
                if a_:
                    v = np.abs(v)
                if n_:
                    v = -v
                return v
            readers.append(rd)
        row = vreg_row(info, info.op("vdst"))
        clamp = bool(info.mods.get("clamp"))
        nxt = info.next_index

        def run(g: Group) -> int:
            a, b, c = (r(g) for r in readers)
            with np.errstate(all="ignore"):
                if hi_dst is None:
                    r = fp.fma_f32(a, b, c)
                    if clamp:
                        r = fp.clamp01(r)
                    store(g, g.v[row], np.broadcast_to(r.view(U32), (g.n, 64)), None)
                else:
                    r64 = _fma64_exact(a, b, c)
                    r16 = r64.astype(F16)
                    if clamp:
                        r16 = fp.clamp01(r16)
                    bits = r16.view(U16).astype(U32)
                    old = g.v[row]
                    out = (old & U32(0xFFFF)) | (bits << U32(16)) if hi_dst else \
                        (old & U32(0xFFFF0000)) | bits
                    store(g, g.v[row], out, None)
            return nxt
        return run
    return build


def _fma64_exact(a, b, c):
    # f32 operands: the product is exact in float64, the sum rounded to odd, so the final
    # conversion to f16 rounds once.
    from asterism.emu.fp import _round_to_odd_sum

    a64 = np.asarray(a, F32).astype(F64)
    b64 = np.asarray(b, F32).astype(F64)
    c64 = np.asarray(c, F32).astype(F64)
    return _round_to_odd_sum(a64 * b64, c64)


builder("v_fma_mix_f32")(_mix(None))
builder("v_fma_mixlo_f16")(_mix(False))
builder("v_fma_mixhi_f16")(_mix(True))


# ---------------------------------------------------------------------------- dot products

def _split_bits(x, width: int, n: int, signed: bool):
    x = np.asarray(x, U32)
    out = []
    for k in range(n):
        v = ((x >> U32(width * k)) & U32((1 << width) - 1)).astype(I64)
        if signed:
            v = np.where(v >= (1 << (width - 1)), v - (1 << width), v)
        out.append(v)
    return out


def _idot(width: int, n: int, signed: bool):
    def fn(a, b, c):
        acc = np.asarray(c).astype(I64)
        for x, y in zip(_split_bits(a, width, n, signed), _split_bits(b, width, n, signed),
                        strict=True):
            acc = acc + x * y
        return acc
    return fn


def _fdot2(conv):
    def fn(a, b, c):
        a, b = np.asarray(a, U32), np.asarray(b, U32)
        x0, x1 = conv(a & U32(0xFFFF)), conv(a >> U32(16))
        y0, y1 = conv(b & U32(0xFFFF)), conv(b >> U32(16))
        s = x0 * y0 + x1 * y1  # products of 16-bit floats are exact in float64
        from asterism.emu.fp import _round_to_odd_sum

        return _round_to_odd_sum(s, np.asarray(c, F32).astype(F64)).astype(F32)
    return fn


def _h2f(x):
    return np.asarray(x).astype(U16).view(F16).astype(F64)


def _bf2f(x):
    return fp.bf16_to_f32(np.asarray(x, U32)).astype(F64)


def _dot(dst_kind: str, fn: Callable, acc_from_dst: bool):
    def build(info: OpInfo):
        a = make_src(info, "src0", "u32", 0)
        bslot = "src1" if info.has("src1") else "vsrc1"
        b = make_src(info, bslot, "u32", 1)
        c = make_src(info, "vdst" if acc_from_dst else "src2", dst_kind, 2)
        write = make_dst(info, dst_kind)
        clamp = bool(info.mods.get("clamp"))
        sat = _int_clamp(dst_kind) if dst_kind != "f32" else None
        nxt = info.next_index

        def run(g: Group) -> int:
            with np.errstate(all="ignore"):
                r = fn(a(g), b(g), c(g))
            if clamp and sat is not None:
                r = sat(r)
            elif clamp:
                r = fp.clamp01(np.asarray(r, F32))
            write(g, r, None)
            return nxt
        return run
    return build


for _name, _kind, _fn, _acc in (
    ("v_dot2_f32_f16", "f32", _fdot2(_h2f), False),
    ("v_dot2_f32_bf16", "f32", _fdot2(_bf2f), False),
    ("v_dot2c_f32_f16", "f32", _fdot2(_h2f), True),
    ("v_dot2c_f32_bf16", "f32", _fdot2(_bf2f), True),
    ("v_dot2_i32_i16", "i32", _idot(16, 2, True), False),
    ("v_dot2_u32_u16", "u32", _idot(16, 2, False), False),
    ("v_dot2c_i32_i16", "i32", _idot(16, 2, True), True),
    ("v_dot4_i32_i8", "i32", _idot(8, 4, True), False),
    ("v_dot4_u32_u8", "u32", _idot(8, 4, False), False),
    ("v_dot4c_i32_i8", "i32", _idot(8, 4, True), True),
    ("v_dot8_i32_i4", "i32", _idot(4, 8, True), False),
    ("v_dot8_u32_u4", "u32", _idot(4, 8, False), False),
    ("v_dot8c_i32_i4", "i32", _idot(4, 8, True), True),
):
    builder(_name)(_dot(_kind, _fn, _acc))


# ---------------------------------------------------------------------------- legacy graphics

def _cube(which: str):
    """v_cube{id,sc,tc,ma}_f32 on the (x, y, z) direction (CDNA pseudo-code)."""
    def fn(x, y, z):
        ax, ay, az = np.abs(x), np.abs(y), np.abs(z)
        zmaj = (az >= ax) & (az >= ay)
        ymaj = ~zmaj & (ay >= ax)
        if which == "id":
            r = np.where(zmaj, np.where(z < 0, 5.0, 4.0),
                         np.where(ymaj, np.where(y < 0, 3.0, 2.0), np.where(x < 0, 1.0, 0.0)))
        elif which == "sc":
            r = np.where(zmaj, np.where(z < 0, -x, x), np.where(ymaj, x, np.where(x < 0, z, -z)))
        elif which == "tc":
            r = np.where(zmaj, -y, np.where(ymaj, np.where(y < 0, -z, z), -y))
        else:
            r = np.where(zmaj, z * 2, np.where(ymaj, y * 2, x * 2))
        return np.asarray(r, F32)
    return fn


for _w in ("id", "sc", "tc", "ma"):
    builder(f"v_cube{_w}_f32")(valu("f32", ("f32", "f32", "f32"), _cube(_w)))


@builder("v_cvt_pkaccum_u8_f32")
def _pkaccum(info: OpInfo):
    """D.u8[S1[1:0]] = f32_to_u8(S0); the other bytes of D are kept."""
    a, sel = _sources(info, ("f32", "u32"))
    row = vreg_row(info, info.op("vdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        with np.errstate(all="ignore"):
            x = np.asarray(a(g), F32)
            u8 = np.where(np.isnan(x), 0, np.clip(np.rint(x), 0, 255)).astype(U32)
        shift = (np.asarray(sel(g), U32) & U32(3)) * U32(8)
        old = g.v[row]
        new = (old & ~(U32(0xFF) << shift)) | (u8 << shift)
        store(g, g.v[row], np.asarray(new, U32), None)
        return nxt
    return run


def _qsad(masked: bool, wide: bool):
    """v_qsad_pk_u16_u8 / v_mqsad_pk_u16_u8 (four 16-bit SADs of S0 byte windows against
    S1, accumulated onto S2's fields) and v_mqsad_u32_u8 (four 32-bit masked SADs)."""
    sad = _msad_u8 if masked else _sad_u8

    def build(info: OpInfo):
        s0 = make_src(info, "src0", "u64", 0)
        s1 = make_src(info, "src1", "u32", 1)
        nout = 4 if wide else 2
        src2 = info.op("src2")
        r2 = vreg_row(info, src2) if isinstance(src2, Reg) else None
        c2 = make_src(info, "src2", "u64", 2) if not wide else None
        row = vreg_row(info, info.op("vdst"))
        nxt = info.next_index

        def run(g: Group) -> int:
            a = np.broadcast_to(np.asarray(s0(g), U64), (g.n, 64))
            b = np.broadcast_to(np.asarray(s1(g), U32), (g.n, 64))
            outs = []
            for k in range(4):
                win = ((a >> U64(8 * k)) & U64(0xFFFFFFFF)).astype(U32)
                if wide:
                    acc = g.v[r2 + k] if r2 is not None else np.zeros((g.n, 64), U32)
                    outs.append(sad(win, b, acc))
                else:
                    c = np.broadcast_to(np.asarray(c2(g), U64), (g.n, 64))
                    acc = ((c >> U64(16 * k)) & U64(0xFFFF)).astype(U32)
                    outs.append(sad(win, b, acc) & U32(0xFFFF))
            if wide:
                words = outs
            else:
                words = [outs[0] | (outs[1] << U32(16)), outs[2] | (outs[3] << U32(16))]
            for k in range(nout):
                store(g, g.v[row + k], np.asarray(words[k], U32), None)
            return nxt
        return run
    return build


builder("v_qsad_pk_u16_u8")(_qsad(False, False))
builder("v_mqsad_pk_u16_u8")(_qsad(True, False))
builder("v_mqsad_u32_u8")(_qsad(True, True))

# ---------------------------------------------------------------------------- not modeled

builder("v_screen_partition_4se_b32")(
    lambda info: unsupported_op(info, "graphics screen partitioning is not modeled"))

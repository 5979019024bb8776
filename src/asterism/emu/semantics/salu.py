"""SALU semantics: SOP1, SOP2, SOPK, SOPC (32- and 64-bit, SCC, EXEC manipulation).

Each op works on (n,) arrays (one element per wave of the group). Results follow the CDNA3
ISA's pseudo-code: SCC is the carry/borrow of unsigned add/sub, the signed overflow of
signed add/sub, the comparison result, or "result != 0" for bitwise ops.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from asterism.emu.core import EXEC, M0, Group
from asterism.emu.errors import CompileError
from asterism.emu.info import OpInfo
from asterism.emu.semantics.bits import as_i32, as_i64, brev, ff1, flbit, flbit_signed
from asterism.emu.semantics.registry import Table, unsupported_op
from asterism.emu.sops import sread, swrite
from asterism.mc.operands import Imm, Reg, Special, Syntax

TABLE = Table("salu")
builder = TABLE.builder

U32 = np.uint32
U64 = np.uint64
I32 = np.int32
I64 = np.int64
M32 = U64(0xFFFFFFFF)


def _width(info: OpInfo, name: str) -> int:
    spec = info.spec(name)
    return max(1, spec.width) if spec is not None else 1


def _signed_lit(info: OpInfo) -> bool:
    return info.mnemonic.endswith("_i64")


# ---------------------------------------------------------------------------- SOP2

def _sop2(fn: Callable, writes_scc: bool = True):
    """Builder for D = fn(S0, S1, SCC) -> (D, SCC|None)."""
    def build(info: OpInfo):
        w0, w1, wd = _width(info, "ssrc0"), _width(info, "ssrc1"), _width(info, "sdst")
        r0 = sread(info, info.op("ssrc0"), w0, signed_literal=_signed_lit(info))
        r1 = sread(info, info.op("ssrc1"), w1, signed_literal=_signed_lit(info))
        wr = swrite(info, info.op("sdst"), wd)
        nxt = info.next_index

        def run(g: Group) -> int:
            d, scc = fn(r0(g), r1(g), g.scc)
            if scc is not None:
                g.scc = scc
            wr(g, d)
            return nxt
        return run
    return build


def _add_u32(a, b, c):
    r = a.astype(U64) + b
    return r.astype(U32), r > M32


def _addc_u32(a, b, c):
    r = a.astype(U64) + b + c.astype(U64)
    return r.astype(U32), r > M32


def _sub_u32(a, b, c):
    return (a - b).astype(U32), b > a


def _subb_u32(a, b, c):
    bb = b.astype(U64) + c.astype(U64)
    return (a.astype(U64) - bb).astype(U32), bb > a


def _add_i32(a, b, c):
    r = (a + b).astype(U32)
    sa, sb, sr = a >> U32(31), b >> U32(31), r >> U32(31)
    return r, (sa == sb) & (sr != sa)


def _sub_i32(a, b, c):
    r = (a - b).astype(U32)
    sa, sb, sr = a >> U32(31), b >> U32(31), r >> U32(31)
    return r, (sa != sb) & (sr != sa)


def _nz(x):
    return x != 0


def _shift_amount(b, bits):
    return (b & (bits - 1)).astype(b.dtype)


BITOPS: dict[str, Callable] = {
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
    "andn2": lambda a, b: a & ~b, "orn2": lambda a, b: a | ~b, "nand": lambda a, b: ~(a & b),
    "nor": lambda a, b: ~(a | b), "xnor": lambda a, b: ~(a ^ b),
}


def _bitop(f):
    def fn(a, b, c):
        d = f(a, b)
        return d, _nz(d)
    return fn


def _bfe(signed: bool, bits: int):
    dt_u = U32 if bits == 32 else U64

    def fn(a, b, c):
        off = (b & dt_u(bits - 1)).astype(U64)
        width = ((b >> dt_u(16)) & dt_u(0x7F)).astype(U64)
        width = np.minimum(width, U64(bits))
        a64 = a.astype(U64)
        if bits == 32:
            v = (a64 >> off) & ((U64(1) << width) - U64(1))
            if signed:
                sh = U64(64) - width
                v = ((v << sh).view(I64) >> sh.astype(I64)).view(U64)
                v = np.where(width == 0, U64(0), v)
            d = v.astype(U32)
        else:
            v = a64 >> off
            full = width >= 64
            m = np.where(full, U64(0xFFFFFFFFFFFFFFFF),
                         (U64(1) << np.minimum(width, U64(63))) - U64(1))
            v = v & m
            if signed:
                sh = np.where(full, U64(0), U64(64) - width)
                v = ((v << sh).view(I64) >> sh.astype(I64)).view(U64)
                v = np.where(width == 0, U64(0), v)
            d = v
        return d, _nz(d)
    return fn


def _lshl_add(n):
    def fn(a, b, c):
        r = (a.astype(U64) << U64(n)) + b
        return r.astype(U32), r > M32
    return fn


def _mul_hi(signed):
    def fn(a, b, c):
        if signed:
            r = (as_i32(a).astype(I64) * as_i32(b).astype(I64)) >> 32
            return r.astype(U32), None
        r = (a.astype(U64) * b.astype(U64)) >> U64(32)
        return r.astype(U32), None
    return fn


def _cselect(a, b, c):
    return np.where(c, a, b), None


SOP2 = {
    "s_add_u32": _add_u32, "s_addc_u32": _addc_u32, "s_sub_u32": _sub_u32,
    "s_subb_u32": _subb_u32, "s_add_i32": _add_i32, "s_sub_i32": _sub_i32,
    "s_min_i32": lambda a, b, c: (np.where(as_i32(a) < as_i32(b), a, b), as_i32(a) < as_i32(b)),
    "s_min_u32": lambda a, b, c: (np.minimum(a, b), a < b),
    "s_max_i32": lambda a, b, c: (np.where(as_i32(a) >= as_i32(b), a, b), as_i32(a) >= as_i32(b)),
    "s_max_u32": lambda a, b, c: (np.maximum(a, b), a >= b),
    "s_cselect_b32": _cselect, "s_cselect_b64": _cselect,
    "s_lshl_b32": lambda a, b, c: _bitop(lambda x, y: x << (y & U32(31)))(a, b, c),
    "s_lshl_b64": lambda a, b, c: _bitop(lambda x, y: x << (y.astype(U64) & U64(63)))(a, b, c),
    "s_lshr_b32": lambda a, b, c: _bitop(lambda x, y: x >> (y & U32(31)))(a, b, c),
    "s_lshr_b64": lambda a, b, c: _bitop(lambda x, y: x >> (y.astype(U64) & U64(63)))(a, b, c),
    "s_ashr_i32": lambda a, b, c: _bitop(
        lambda x, y: (as_i32(x) >> (y & U32(31)).astype(I32)).view(U32))(a, b, c),
    "s_ashr_i64": lambda a, b, c: _bitop(
        lambda x, y: (as_i64(x) >> (y.astype(U64) & U64(63)).astype(I64)).view(U64))(a, b, c),
    "s_bfm_b32": lambda a, b, c: (
        (((U64(1) << (a & U32(31)).astype(U64)) - U64(1)) << (b & U32(31)).astype(U64))
        .astype(U32), None),
    "s_bfm_b64": lambda a, b, c: (
        ((U64(1) << (a & U32(63)).astype(U64)) - U64(1)) << (b & U32(63)).astype(U64), None),
    "s_mul_i32": lambda a, b, c: ((a.astype(U64) * b).astype(U32), None),
    "s_mul_hi_u32": _mul_hi(False), "s_mul_hi_i32": _mul_hi(True),
    "s_bfe_u32": _bfe(False, 32), "s_bfe_i32": _bfe(True, 32),
    "s_bfe_u64": _bfe(False, 64), "s_bfe_i64": _bfe(True, 64),
    "s_absdiff_i32": lambda a, b, c: _bitop(
        lambda x, y: np.abs(as_i32(x).astype(I64) - as_i32(y).astype(I64)).astype(U32))(a, b, c),
    "s_lshl1_add_u32": _lshl_add(1), "s_lshl2_add_u32": _lshl_add(2),
    "s_lshl3_add_u32": _lshl_add(3), "s_lshl4_add_u32": _lshl_add(4),
    "s_pack_ll_b32_b16": lambda a, b, c: ((a & U32(0xFFFF)) | (b << U32(16)), None),
    "s_pack_lh_b32_b16": lambda a, b, c: ((a & U32(0xFFFF)) | (b & U32(0xFFFF0000)), None),
    "s_pack_hh_b32_b16": lambda a, b, c: ((a >> U32(16)) | (b & U32(0xFFFF0000)), None),
}
for _name, _f in BITOPS.items():
    SOP2[f"s_{_name}_b32"] = _bitop(_f)
    SOP2[f"s_{_name}_b64"] = _bitop(_f)

for _m, _f in SOP2.items():
    builder(_m)(_sop2(_f))


# ---------------------------------------------------------------------------- SOPC

def _sopc(fn: Callable):
    def build(info: OpInfo):
        wide = info.mnemonic.endswith(("_u64", "_b64"))
        w0 = 2 if wide else 1
        w1 = 1 if info.mnemonic.startswith("s_bitcmp") else w0
        r0 = sread(info, info.op("ssrc0"), w0)
        r1 = sread(info, info.op("ssrc1"), w1)
        nxt = info.next_index

        def run(g: Group) -> int:
            g.scc = fn(r0(g), r1(g))
            return nxt
        return run
    return build


_CMP = {
    "eq": np.equal, "lg": np.not_equal, "gt": np.greater, "ge": np.greater_equal,
    "lt": np.less, "le": np.less_equal,
}
for _c, _f in _CMP.items():
    builder(f"s_cmp_{_c}_u32")(_sopc(lambda a, b, f=_f: f(a, b)))
    builder(f"s_cmp_{_c}_i32")(_sopc(lambda a, b, f=_f: f(as_i32(a), as_i32(b))))
builder("s_cmp_eq_u64")(_sopc(lambda a, b: a == b))
builder("s_cmp_lg_u64")(_sopc(lambda a, b: a != b))
builder("s_bitcmp0_b32")(_sopc(lambda a, b: ((a >> (b & U32(31))) & U32(1)) == 0))
builder("s_bitcmp1_b32")(_sopc(lambda a, b: ((a >> (b & U32(31))) & U32(1)) == 1))
builder("s_bitcmp0_b64")(_sopc(lambda a, b: ((a >> (b.astype(U64) & U64(63))) & U64(1)) == 0))
builder("s_bitcmp1_b64")(_sopc(lambda a, b: ((a >> (b.astype(U64) & U64(63))) & U64(1)) == 1))


# ---------------------------------------------------------------------------- SOPK

def _simm16(info: OpInfo) -> int:
    op = info.op("simm16")
    value = op.value if isinstance(op, Imm | Syntax) else 0
    return value & 0xFFFF


def _sext16(v: int) -> int:
    return v - 0x10000 if v & 0x8000 else v


@builder("s_movk_i32")
def _movk(info: OpInfo):
    k = np.uint32(_sext16(_simm16(info)) & 0xFFFFFFFF)
    wr = swrite(info, info.op("sdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        wr(g, np.full(g.n, k, U32))
        return nxt
    return run


@builder("s_cmovk_i32")
def _cmovk(info: OpInfo):
    k = np.uint32(_sext16(_simm16(info)) & 0xFFFFFFFF)
    rd = sread(info, info.op("sdst"))
    wr = swrite(info, info.op("sdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        wr(g, np.where(g.scc, k, rd(g)).astype(U32))
        return nxt
    return run


def _cmpk(fn, signed: bool):
    def build(info: OpInfo):
        raw = _simm16(info)
        k = np.int64(_sext16(raw)) if signed else np.int64(raw)
        rd = sread(info, info.op("sdst"))
        nxt = info.next_index

        def run(g: Group) -> int:
            a = rd(g)
            g.scc = fn(as_i32(a).astype(I64) if signed else a.astype(I64), k)
            return nxt
        return run
    return build


for _c, _f in _CMP.items():
    builder(f"s_cmpk_{_c}_i32")(_cmpk(_f, True))
    builder(f"s_cmpk_{_c}_u32")(_cmpk(_f, False))


@builder("s_addk_i32")
def _addk(info: OpInfo):
    k = np.uint32(_sext16(_simm16(info)) & 0xFFFFFFFF)
    rd = sread(info, info.op("sdst"))
    wr = swrite(info, info.op("sdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        d, scc = _add_i32(rd(g), np.full(g.n, k, U32), None)
        g.scc = scc
        wr(g, d)
        return nxt
    return run


@builder("s_mulk_i32")
def _mulk(info: OpInfo):
    k = np.uint64(_sext16(_simm16(info)) & 0xFFFFFFFF)
    rd = sread(info, info.op("sdst"))
    wr = swrite(info, info.op("sdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        wr(g, (rd(g).astype(U64) * k).astype(U32))
        return nxt
    return run


# ---------------------------------------------------------------------------- SOP1

def _sop1(fn: Callable, reads_dst: bool = False):
    def build(info: OpInfo):
        w0, wd = _width(info, "ssrc0"), _width(info, "sdst")
        r0 = sread(info, info.op("ssrc0"), w0, signed_literal=_signed_lit(info))
        rdst = sread(info, info.op("sdst"), wd) if reads_dst else None
        wr = swrite(info, info.op("sdst"), wd)
        nxt = info.next_index

        def run(g: Group) -> int:
            d, scc = fn(r0(g), g.scc, rdst(g) if rdst is not None else None)
            if scc is not None:
                g.scc = scc
            if d is not None:
                wr(g, d)
            return nxt
        return run
    return build


def _popcount(x: np.ndarray) -> np.ndarray:
    x = x.astype(U64)
    return np.bitwise_count(x).astype(U32) if hasattr(np, "bitwise_count") else \
        np.array([int(v).bit_count() for v in x], U32)


def _wqm(x: np.ndarray, bits: int) -> np.ndarray:
    dt = U64 if bits == 64 else U32
    out = np.zeros_like(x, dt)
    for q in range(bits // 4):
        m = dt(0xF) << dt(4 * q)
        out = out | np.where((x & m) != 0, m, dt(0))
    return out


def _quadmask(x: np.ndarray, bits: int) -> np.ndarray:
    dt = U64 if bits == 64 else U32
    out = np.zeros_like(x, dt)
    for q in range(bits // 4):
        out = out | np.where((x >> dt(4 * q)) & dt(0xF) != 0, dt(1) << dt(q), dt(0))
    return out


def _bitreplicate(x: np.ndarray) -> np.ndarray:
    x = x.astype(U64)
    out = np.zeros_like(x, U64)
    for i in range(32):
        bit = (x >> U64(i)) & U64(1)
        out = out | (bit << U64(2 * i)) | (bit << U64(2 * i + 1))
    return out


SOP1 = {
    "s_mov_b32": lambda a, c, d: (a, None), "s_mov_b64": lambda a, c, d: (a, None),
    "s_cmov_b32": lambda a, c, d: (np.where(c, a, d), None),
    "s_cmov_b64": lambda a, c, d: (np.where(c, a, d), None),
    "s_not_b32": lambda a, c, d: (~a, _nz(~a)), "s_not_b64": lambda a, c, d: (~a, _nz(~a)),
    "s_wqm_b32": lambda a, c, d: (_wqm(a, 32), _nz(_wqm(a, 32))),
    "s_wqm_b64": lambda a, c, d: (_wqm(a, 64), _nz(_wqm(a, 64))),
    "s_brev_b32": lambda a, c, d: (brev(a, 32), None),
    "s_brev_b64": lambda a, c, d: (brev(a, 64), None),
    "s_bcnt0_i32_b32": lambda a, c, d: (U32(32) - _popcount(a), _nz(U32(32) - _popcount(a))),
    "s_bcnt0_i32_b64": lambda a, c, d: (U32(64) - _popcount(a), _nz(U32(64) - _popcount(a))),
    "s_bcnt1_i32_b32": lambda a, c, d: (_popcount(a), _nz(_popcount(a))),
    "s_bcnt1_i32_b64": lambda a, c, d: (_popcount(a), _nz(_popcount(a))),
    "s_ff0_i32_b32": lambda a, c, d: (ff1(~a & U32(0xFFFFFFFF), 32), None),
    "s_ff0_i32_b64": lambda a, c, d: (ff1(~a, 64), None),
    "s_ff1_i32_b32": lambda a, c, d: (ff1(a, 32), None),
    "s_ff1_i32_b64": lambda a, c, d: (ff1(a, 64), None),
    "s_flbit_i32_b32": lambda a, c, d: (flbit(a, 32), None),
    "s_flbit_i32_b64": lambda a, c, d: (flbit(a, 64), None),
    "s_flbit_i32": lambda a, c, d: (flbit_signed(a, 32), None),
    "s_flbit_i32_i64": lambda a, c, d: (flbit_signed(a, 64), None),
    "s_sext_i32_i8": lambda a, c, d: (a.astype(np.int8).astype(I32).view(U32), None),
    "s_sext_i32_i16": lambda a, c, d: (a.astype(np.int16).astype(I32).view(U32), None),
    "s_bitset0_b32": lambda a, c, d: (d & ~(U32(1) << (a & U32(31))), None),
    "s_bitset1_b32": lambda a, c, d: (d | (U32(1) << (a & U32(31))), None),
    "s_bitset0_b64": lambda a, c, d: (d & ~(U64(1) << (a.astype(U64) & U64(63))), None),
    "s_bitset1_b64": lambda a, c, d: (d | (U64(1) << (a.astype(U64) & U64(63))), None),
    "s_quadmask_b32": lambda a, c, d: (_quadmask(a, 32), _nz(_quadmask(a, 32))),
    "s_quadmask_b64": lambda a, c, d: (_quadmask(a, 64), _nz(_quadmask(a, 64))),
    "s_abs_i32": lambda a, c, d: (np.abs(as_i32(a)).view(U32), _nz(np.abs(as_i32(a)))),
    "s_bitreplicate_b64_b32": lambda a, c, d: (_bitreplicate(a), None),
}
_READS_DST = {"s_cmov_b32", "s_cmov_b64", "s_bitset0_b32", "s_bitset1_b32", "s_bitset0_b64",
              "s_bitset1_b64"}
for _m, _f in SOP1.items():
    builder(_m)(_sop1(_f, _m in _READS_DST))


_SAVEEXEC = {
    "s_and_saveexec_b64": lambda s, e: s & e, "s_or_saveexec_b64": lambda s, e: s | e,
    "s_xor_saveexec_b64": lambda s, e: s ^ e, "s_andn2_saveexec_b64": lambda s, e: s & ~e,
    "s_orn2_saveexec_b64": lambda s, e: s | ~e, "s_nand_saveexec_b64": lambda s, e: ~(s & e),
    "s_nor_saveexec_b64": lambda s, e: ~(s | e), "s_xnor_saveexec_b64": lambda s, e: ~(s ^ e),
    "s_andn1_saveexec_b64": lambda s, e: ~s & e, "s_orn1_saveexec_b64": lambda s, e: ~s | e,
}


def _saveexec(fn: Callable, wrexec: bool):
    def build(info: OpInfo):
        r0 = sread(info, info.op("ssrc0"), 2)
        wr = swrite(info, info.op("sdst"), 2)
        nxt = info.next_index
        q = EXEC // 2

        def run(g: Group) -> int:
            s0 = r0(g).copy()
            old = g.s64[:, q].copy()
            new = fn(s0, old).astype(U64)
            g.scc = new != 0
            if wrexec:
                g.set_exec_bits(new)
                wr(g, new)
            else:
                wr(g, old)  # D = old EXEC first (D may be EXEC itself)
                g.set_exec_bits(new)
            return nxt
        return run
    return build


for _m, _f in _SAVEEXEC.items():
    builder(_m)(_saveexec(_f, False))
builder("s_andn1_wrexec_b64")(_saveexec(lambda s, e: ~s & e, True))
builder("s_andn2_wrexec_b64")(_saveexec(lambda s, e: s & ~e, True))


@builder("s_getpc_b64")
def _getpc(info: OpInfo):
    wr = swrite(info, info.op("sdst"), 2)
    pc_next = np.uint64(info.address + info.size)
    nxt = info.next_index

    def run(g: Group) -> int:
        wr(g, np.full(g.n, pc_next, U64))
        return nxt
    return run


def _movrel(info: OpInfo, to_dst: bool, width: int):
    src, dst = info.op("ssrc0"), info.op("sdst")
    if not isinstance(src, Reg) or not isinstance(dst, Reg | Special):
        raise CompileError("s_movrel needs SGPR operands")
    s_base = src.index if src.kind == "s" else src.index + 108
    d_base = dst.index if isinstance(dst, Reg) else 0
    nxt = info.next_index

    def run(g: Group) -> int:
        m0 = g.s[:, M0].astype(np.int64)
        rows = np.arange(g.n)
        if to_dst:
            idx = d_base + m0
            val = g.s[:, s_base:s_base + width].copy()
            for k in range(width):
                g.s[rows, np.clip(idx + k, 0, 127)] = val[:, k]
        else:
            idx = s_base + m0
            for k in range(width):
                g.s[:, d_base + k] = g.s[rows, np.clip(idx + k, 0, 127)]
        return nxt
    return run


builder("s_movrels_b32")(lambda info: _movrel(info, False, 1))
builder("s_movrels_b64")(lambda info: _movrel(info, False, 2))
builder("s_movreld_b32")(lambda info: _movrel(info, True, 1))
builder("s_movreld_b64")(lambda info: _movrel(info, True, 2))


# ---------------------------------------------------------------------------- hardware regs

HW_REG_MODE, HW_REG_STATUS, HW_REG_TRAPSTS, HW_REG_HW_ID = 1, 2, 3, 4
HW_REG_GPR_ALLOC, HW_REG_LDS_ALLOC, HW_REG_XCC_ID = 5, 6, 20


def _hwreg_fields(value: int) -> tuple[int, int, int]:
    return value & 0x3F, (value >> 6) & 0x1F, ((value >> 11) & 0x1F) + 1


def read_hwreg(g: Group, reg: int) -> np.ndarray:
    """The 32-bit value of a hardware register for each wave of the group."""
    if reg == HW_REG_MODE:
        return np.full(g.n, g.mode, U32)
    if reg == HW_REG_STATUS:
        st = g.scc.astype(U32)
        st = st | ((g.s64[:, EXEC // 2] == 0).astype(U32) << U32(9))
        st = st | ((g.s64[:, 53] == 0).astype(U32) << U32(10))
        return st
    if reg == HW_REG_HW_ID:
        w = g.waves.astype(U32)
        # wave_id[3:0], simd_id[5:4], cu_id[11:8], se_id[14:13]: a plausible, stable layout
        return (w & U32(0xF)) | (((w >> U32(4)) & U32(3)) << U32(4)) | \
            (((w >> U32(6)) & U32(0xF)) << U32(8))
    if reg == HW_REG_XCC_ID:
        return np.zeros(g.n, U32)
    return np.zeros(g.n, U32)


@builder("s_getreg_b32")
def _getreg(info: OpInfo):
    simm = info.op("simm16")
    reg, off, size = _hwreg_fields(simm.value if isinstance(simm, Imm | Syntax) else 0)
    wr = swrite(info, info.op("sdst"))
    mask = U32((1 << size) - 1) if size < 32 else U32(0xFFFFFFFF)
    nxt = info.next_index

    def run(g: Group) -> int:
        wr(g, (read_hwreg(g, reg) >> U32(off)) & mask)
        return nxt
    return run


def _setreg(info: OpInfo, imm32: bool):
    simm = info.op("simm16")
    reg, off, size = _hwreg_fields(simm.value if isinstance(simm, Imm | Syntax) else 0)
    if imm32:
        lit = info.op("imm")
        if lit is None:
            lit = info.inst.operands[-1]
        rd = sread(info, lit)
    else:
        rd = sread(info, info.op("sdst"))
    field_mask = ((1 << size) - 1) << off if size < 32 else 0xFFFFFFFF
    nxt = info.next_index
    if reg not in (HW_REG_MODE, HW_REG_TRAPSTS):
        return unsupported_op(info, f"s_setreg of hardware register {reg} (only MODE and "
                                    "TRAPSTS are modeled)")

    def run(g: Group) -> int:
        value = (rd(g).astype(U64) << U64(off)) & U64(field_mask)
        if reg == HW_REG_MODE:
            vals = np.unique(value)
            if vals.size > 1:
                raise info.fault("s_setreg writes different MODE values in waves that run "
                                 "together; the emulator keeps MODE uniform per group")
            new = (g.mode & ~field_mask) | int(vals[0])
            if new & 0xF:
                raise info.fault("s_setreg selects a non-default float rounding mode; the "
                                 "emulator only models round-to-nearest-even")
            g.mode = new
        return nxt
    return run


builder("s_setreg_b32")(lambda info: _setreg(info, False))
builder("s_setreg_imm32_b32")(lambda info: _setreg(info, True))


# Instructions that do nothing architecturally visible in the emulator (performance hints,
# cache maintenance, priority): they are modeled as exactly that, not silently skipped.
def _nop(info: OpInfo):
    nxt = info.next_index
    return lambda g: nxt


for _m in ("s_setprio", "s_sleep", "s_nop", "s_incperflevel", "s_decperflevel",
           "s_ttracedata", "s_icache_inv", "s_wakeup", "s_sethalt"):
    builder(_m)(_nop)


@builder("s_setkill")
def _setkill(info: OpInfo):
    return _nop(info)

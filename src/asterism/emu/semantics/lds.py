"""DS instructions: LDS loads, stores, atomics, read2/write2, lane permutes, transposed reads.

Addresses are byte offsets into the workgroup's LDS; an access beyond the workgroup's LDS
allocation faults (the hardware would silently return 0 / drop the write, which is almost
always a bug). ds_swizzle/ds_permute/ds_bpermute follow the ISA pseudo-code; the gfx950
transposed reads (ds_read_b64_tr_b*) use the lane layout described in `_tr_read`.
"""

from __future__ import annotations

import numpy as np

from asterism.emu import spaces
from asterism.emu.atomic_ops import atomic_of, parse_atomic
from asterism.emu.core import M0, Group
from asterism.emu.errors import CompileError
from asterism.emu.info import OpInfo
from asterism.emu.semantics.registry import Table, unsupported_op
from asterism.emu.semantics.vmem import gather_store_data, write_loaded
from asterism.emu.vops import store as vstore
from asterism.emu.vops import vreg_row
from asterism.isa import get_isa

TABLE = Table("lds")
builder = TABLE.builder

U8, U16, U32, U64 = np.uint8, np.uint16, np.uint32, np.uint64


def _addr(info: OpInfo):
    row = vreg_row(info, info.op("addr"))
    return lambda g: g.v[row]


def _offset(info: OpInfo) -> int:
    if "offset" in info.mods:
        off = info.mods["offset"]
        return int(getattr(off, "value", off))   # ds_swizzle offsets may come as Syntax
    return int(info.mods.get("offset0", 0)) | (int(info.mods.get("offset1", 0)) << 8)


_DS_READ_SHAPES = {
    "ds_read_b32": (4, "dword"), "ds_read_b64": (8, "dword"), "ds_read_b96": (12, "dword"),
    "ds_read_b128": (16, "dword"), "ds_read_u8": (1, "u8"), "ds_read_i8": (1, "i8"),
    "ds_read_u16": (2, "u16"), "ds_read_i16": (2, "i16"), "ds_read_u8_d16": (1, "u8_d16"),
    "ds_read_u8_d16_hi": (1, "u8_d16_hi"), "ds_read_i8_d16": (1, "i8_d16"),
    "ds_read_i8_d16_hi": (1, "i8_d16_hi"), "ds_read_u16_d16": (2, "u16_d16"),
    "ds_read_u16_d16_hi": (2, "u16_d16_hi"),
}


def _ds_read(info: OpInfo):
    nbytes, kind = _DS_READ_SHAPES[info.mnemonic]
    addr = _addr(info)
    off = np.uint64(_offset(info))
    row = vreg_row(info, info.op("vdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        a = addr(g).astype(U64) + off
        data = spaces.load(info, g, spaces.LDS, g.exec, a, nbytes)
        write_loaded(g, row, data, kind, g.exec)
        return nxt
    return run


def _ds_write(info: OpInfo):
    m = info.mnemonic
    sizes = {"ds_write_b8": (1, 0), "ds_write_b16": (2, 0), "ds_write_b32": (4, 0),
             "ds_write_b64": (8, 0), "ds_write_b96": (12, 0), "ds_write_b128": (16, 0),
             "ds_write_b8_d16_hi": (1, 2), "ds_write_b16_d16_hi": (2, 2)}
    nbytes, boff = sizes[m]
    addr = _addr(info)
    off = np.uint64(_offset(info))
    row = vreg_row(info, info.op("data0"))
    nxt = info.next_index

    def run(g: Group) -> int:
        a = addr(g).astype(U64) + off
        spaces.store(info, g, spaces.LDS, g.exec, a,
                     gather_store_data(g, row, nbytes, boff, g.exec))
        return nxt
    return run


def _ds_read2(info: OpInfo):
    m = info.mnemonic
    size = 8 if m.endswith("b64") else 4
    scale = size * (64 if "st64" in m else 1)
    o0 = int(info.mods.get("offset0", 0)) * scale
    o1 = int(info.mods.get("offset1", 0)) * scale
    addr = _addr(info)
    row = vreg_row(info, info.op("vdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        a = addr(g).astype(U64)
        d0 = spaces.load(info, g, spaces.LDS, g.exec, a + U64(o0), size)
        d1 = spaces.load(info, g, spaces.LDS, g.exec, a + U64(o1), size)
        write_loaded(g, row, np.concatenate([d0, d1], axis=1), "dword", g.exec)
        return nxt
    return run


def _ds_write2(info: OpInfo):
    m = info.mnemonic
    size = 8 if m.endswith("b64") else 4
    scale = size * (64 if "st64" in m else 1)
    o0 = int(info.mods.get("offset0", 0)) * scale
    o1 = int(info.mods.get("offset1", 0)) * scale
    addr = _addr(info)
    r0 = vreg_row(info, info.op("data0"))
    r1 = vreg_row(info, info.op("data1"))
    nxt = info.next_index

    def run(g: Group) -> int:
        a = addr(g).astype(U64)
        spaces.store(info, g, spaces.LDS, g.exec, a + U64(o0),
                     gather_store_data(g, r0, size, 0, g.exec))
        spaces.store(info, g, spaces.LDS, g.exec, a + U64(o1),
                     gather_store_data(g, r1, size, 0, g.exec))
        return nxt
    return run


def _ds_atomic(info: OpInfo):
    found = atomic_of(info.mnemonic)
    if found is None:
        return unsupported_op(info, "LDS atomic operation")
    opname, fn, nbytes = found
    addr = _addr(info)
    off = np.uint64(_offset(info))
    width = nbytes // 4
    d0 = vreg_row(info, info.op("data0"))
    d1 = vreg_row(info, info.op("data1")) if info.has("data1") else None
    ret = vreg_row(info, info.op("vdst")) if info.has("vdst") else None
    nxt = info.next_index

    def val(g, r, m):
        if width == 1:
            return g.v[r][m]
        return g.v[r][m].astype(U64) | (g.v[r + 1][m].astype(U64) << U64(32))

    def run(g: Group) -> int:
        m = g.exec
        a = addr(g).astype(U64) + off
        args = [val(g, d0, m)] + ([val(g, d1, m)] if d1 is not None else [])
        old = spaces.atomic(info, g, spaces.LDS, m, a, nbytes, fn, args)
        if ret is not None:
            if width == 1:
                g.v[ret][m] = old
            else:
                g.v[ret][m] = (old & U64(0xFFFFFFFF)).astype(U32)
                g.v[ret + 1][m] = (old >> U64(32)).astype(U32)
        return nxt
    return run


def _ds_wrxchg2(info: OpInfo):
    m = info.mnemonic
    size = 8 if m.endswith("b64") else 4
    scale = size * (64 if "st64" in m else 1)
    o0 = int(info.mods.get("offset0", 0)) * scale
    o1 = int(info.mods.get("offset1", 0)) * scale
    addr = _addr(info)
    r0, r1 = vreg_row(info, info.op("data0")), vreg_row(info, info.op("data1"))
    ret = vreg_row(info, info.op("vdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        mk = g.exec
        a = addr(g).astype(U64)
        old0 = spaces.load(info, g, spaces.LDS, mk, a + U64(o0), size)
        old1 = spaces.load(info, g, spaces.LDS, mk, a + U64(o1), size)
        spaces.store(info, g, spaces.LDS, mk, a + U64(o0), gather_store_data(g, r0, size, 0, mk))
        spaces.store(info, g, spaces.LDS, mk, a + U64(o1), gather_store_data(g, r1, size, 0, mk))
        write_loaded(g, ret, np.concatenate([old0, old1], axis=1), "dword", mk)
        return nxt
    return run


def _swizzle_src(offset: int) -> np.ndarray:
    """Source lane per lane for ds_swizzle_b32 (ISA pseudo-code); -1 = none."""
    i = np.arange(64)
    if offset >= 0xE000:
        mask = offset & 0x1F
        rev = np.array([int(f"{x & 0x1F:05b}"[::-1], 2) for x in i])
        j = (rev >> (mask).bit_count()) | (i & mask) | (i & 0x20)
    elif offset >= 0xC000:
        rot = (offset >> 5) & 0x1F
        mask = offset & 0x1F
        if offset & (1 << 10):
            rot = -rot
        j = (i & mask) | ((i + rot) & ~mask & 0x1F) | (i & 0x20)
    elif offset & 0x8000:
        sel = [(offset >> (2 * k)) & 3 for k in range(4)]
        j = (i & ~3) + np.array(sel)[i & 3]
    else:
        and_m, or_m, xor_m = offset & 0x1F, (offset >> 5) & 0x1F, (offset >> 10) & 0x1F
        j = (((i & 0x1F) & and_m) | or_m) ^ xor_m
        j = j | (i & 0x20)
    return j.astype(np.intp)


@builder("ds_swizzle_b32")
def _swizzle(info: OpInfo):
    src = _swizzle_src(_offset(info))
    inrow = vreg_row(info, info.op("addr"))
    row = vreg_row(info, info.op("vdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        data = g.v[inrow][:, src]
        valid = g.exec[:, src]
        vstore(g, g.v[row], np.where(valid, data, U32(0)), None)
        return nxt
    return run


@builder("ds_bpermute_b32")
def _bpermute(info: OpInfo):
    arow = vreg_row(info, info.op("addr"))
    drow = vreg_row(info, info.op("data0"))
    row = vreg_row(info, info.op("vdst"))
    off = _offset(info)
    nxt = info.next_index

    def run(g: Group) -> int:
        src = (((g.v[arow].astype(np.int64) + off) // 4) % 64).astype(np.intp)
        w = np.arange(g.n)[:, None]
        data = g.v[drow][w, src]
        ok = g.exec[w, src]
        vstore(g, g.v[row], np.where(ok, data, U32(0)), None)
        return nxt
    return run


@builder("ds_permute_b32")
def _permute(info: OpInfo):
    arow = vreg_row(info, info.op("addr"))
    drow = vreg_row(info, info.op("data0"))
    row = vreg_row(info, info.op("vdst"))
    off = _offset(info)
    nxt = info.next_index

    def run(g: Group) -> int:
        dst = (((g.v[arow].astype(np.int64) + off) // 4) % 64).astype(np.intp)
        tmp = np.zeros((g.n, 64), U32)
        data = g.v[drow]
        # Highest-numbered source lane wins: assign in lane order, later lanes overwrite.
        for w in range(g.n):
            act = np.flatnonzero(g.exec[w])
            tmp[w, dst[w, act]] = data[w, act]
        vstore(g, g.v[row], tmp, None)
        return nxt
    return run


@builder("ds_read_addtid_b32")
def _read_addtid(info: OpInfo):
    off = _offset(info)
    row = vreg_row(info, info.op("vdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        base = (g.s[:, M0] & U32(0xFFFF)).astype(U64)[:, None] + U64(off)
        a = base + (np.arange(64, dtype=U64) * U64(4))[None, :]
        data = spaces.load(info, g, spaces.LDS, g.exec, a, 4)
        write_loaded(g, row, data, "dword", g.exec)
        return nxt
    return run


@builder("ds_write_addtid_b32")
def _write_addtid(info: OpInfo):
    off = _offset(info)
    row = vreg_row(info, info.op("data0"))
    nxt = info.next_index

    def run(g: Group) -> int:
        base = (g.s[:, M0] & U32(0xFFFF)).astype(U64)[:, None] + U64(off)
        a = base + (np.arange(64, dtype=U64) * U64(4))[None, :]
        spaces.store(info, g, spaces.LDS, g.exec, a, gather_store_data(g, row, 4, 0, g.exec))
        return nxt
    return run


@builder("ds_nop")
def _ds_nop(info: OpInfo):
    nxt = info.next_index
    return lambda g: nxt


def _tr_read(elem_bits: int, total_bits: int):
    """gfx950 transposed LDS read (ds_read_b64_tr_b16 / _b8 / _b4, ds_read_b96_tr_b6).

    Each group of 16 lanes loads a block: lane i reads `total_bits` at its address, holding
    E = total_bits / elem_bits elements. The block is a (E x 16) matrix whose rows are
    spread over 16 / E consecutive lanes (row r = lanes r*16/E .. r*16/E + 16/E - 1,
    columns in lane order). Lane j of the group receives column j: element k of lane j is
    element j mod E of lane k * 16/E + j // E, i.e. the blocks of E x E elements are
    transposed and interleaved across the 16 lanes.
    """
    nbytes = total_bits // 8
    per = total_bits // elem_bits
    lanes_per_row = max(1, 16 // per)

    def build(info: OpInfo):
        addr = _addr(info)
        off = np.uint64(_offset(info))
        row = vreg_row(info, info.op("vdst"))
        nregs = total_bits // 32
        nxt = info.next_index
        j = np.arange(16)
        src_lane = np.array([[k * lanes_per_row + jj // per for k in range(per)] for jj in j])
        src_elem = np.array([[jj % per for _ in range(per)] for jj in j])

        if elem_bits in (8, 16):
            # Whole-byte elements: the transpose is one index of the loaded words seen as
            # elements (the same permutation the general unpacking below computes).
            view = U8 if elem_bits == 8 else U16

            def run_bytes(g: Group) -> int:
                if not g.exec.all():
                    raise info.fault("transposed LDS reads with inactive lanes are not "
                                     "modeled")
                a = addr(g).astype(U64) + off
                raw = spaces.load(info, g, spaces.LDS, g.exec, a, nbytes)
                elems = np.ascontiguousarray(raw).view(view).reshape(g.n, 4, 16, per)
                out = np.ascontiguousarray(elems[:, :, src_lane, src_elem])
                words = out.view(U32).reshape(g.n, 64, nregs)
                for k in range(nregs):
                    vstore(g, g.v[row + k], words[:, :, k], None)
                return nxt
            return run_bytes

        def run(g: Group) -> int:
            if not g.exec.all():
                raise info.fault("transposed LDS reads with inactive lanes are not modeled")
            a = addr(g).astype(U64) + off
            raw = spaces.load(info, g, spaces.LDS, g.exec, a, nbytes)  # (n*64, nregs) u32
            bits = raw.reshape(g.n, 4, 16, nregs)
            # unpack elements: (n, 4 groups, 16 lanes, per)
            big = np.zeros(bits.shape[:3], object) if total_bits > 64 else None
            del big
            words = bits.astype(U64)
            if nregs == 3:
                val = [words[..., 0] | (words[..., 1] << U64(32)), words[..., 2]]
            else:
                val = [words[..., 0] | (words[..., 1] << U64(32))]
            emask = U64((1 << elem_bits) - 1)
            elems = np.zeros(bits.shape[:3] + (per,), U64)
            for e in range(per):
                bit = e * elem_bits
                if bit < 64 and bit + elem_bits <= 64:
                    elems[..., e] = (val[0] >> U64(bit)) & emask
                elif bit >= 64:
                    elems[..., e] = (val[1] >> U64(bit - 64)) & emask
                else:
                    lo = val[0] >> U64(bit)
                    hi = val[1] << U64(64 - bit)
                    elems[..., e] = (lo | hi) & emask
            out = elems[:, :, src_lane, src_elem]  # (n, 4, 16, per)
            res = np.zeros(out.shape[:3] + (2,), U64)
            for e in range(per):
                bit = e * elem_bits
                if bit + elem_bits <= 64:
                    res[..., 0] |= out[..., e] << U64(bit)
                elif bit >= 64:
                    res[..., 1] |= out[..., e] << U64(bit - 64)
                else:
                    res[..., 0] |= out[..., e] << U64(bit)
                    res[..., 1] |= out[..., e] >> U64(64 - bit)
            flat = res.reshape(g.n, 64, 2)
            regs = [(flat[..., 0] & U64(0xFFFFFFFF)).astype(U32),
                    (flat[..., 0] >> U64(32)).astype(U32), flat[..., 1].astype(U32)]
            for k in range(nregs):
                vstore(g, g.v[row + k], regs[k], None)
            return nxt
        return run
    return build


builder("ds_read_b64_tr_b16")(_tr_read(16, 64))
builder("ds_read_b64_tr_b8")(_tr_read(8, 64))
builder("ds_read_b64_tr_b4")(_tr_read(4, 64))
builder("ds_read_b96_tr_b6")(_tr_read(6, 96))


def _register_ds() -> None:
    special = {"ds_swizzle_b32", "ds_bpermute_b32", "ds_permute_b32", "ds_read_addtid_b32",
               "ds_write_addtid_b32", "ds_nop", "ds_read_b64_tr_b16", "ds_read_b64_tr_b8",
               "ds_read_b64_tr_b4", "ds_read_b96_tr_b6"}
    for target in ("gfx942", "gfx950"):
        for m in get_isa(target).instructions:
            if not m.startswith("ds_") or m in special:
                continue
            if m.startswith(("ds_read2", "ds_read2st64")):
                builder(m)(_ds_read2)
            elif m.startswith(("ds_write2", "ds_write2st64")):
                builder(m)(_ds_write2)
            elif m.startswith("ds_wrxchg2"):
                builder(m)(_ds_wrxchg2)
            elif m.startswith("ds_read_"):
                builder(m)(_ds_read)
            elif m.startswith("ds_write_"):
                builder(m)(_ds_write)
            elif m.startswith(("ds_gws", "ds_append", "ds_consume", "ds_condxchg")):
                builder(m)(lambda info: unsupported_op(info, "GDS/GWS and append/consume "
                                                             "counters are not modeled"))
            elif parse_atomic(m) is not None:
                builder(m)(_ds_atomic)


_register_ds()
_unused = (CompileError,)

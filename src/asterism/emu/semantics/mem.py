"""Memory instructions: SMEM, FLAT/GLOBAL/SCRATCH, MUBUF (buffer resources) and MTBUF.

Accesses happen at issue, in program order; the sanitizer models when the results may be
read. Buffer instructions follow the GFX9 V# rules: address = base + soffset + inst_offset +
voffset + stride * vindex; range checking (soffset excluded, as on GFX9): raw buffers
(stride 0) check the byte offset of each dword against num_records, structured buffers check
the index; out-of-range loads return 0 and out-of-range stores and atomics are dropped.
"""

from __future__ import annotations

import numpy as np

from asterism.emu import spaces
from asterism.emu.atomic_ops import atomic_of
from asterism.emu.core import M0, Group
from asterism.emu.errors import CompileError
from asterism.emu.info import OpInfo, special_index
from asterism.emu.memory import MemoryAccessError
from asterism.emu.semantics.registry import Table, unsupported_op
from asterism.emu.semantics.vmem import gather_store_data, write_loaded
from asterism.emu.sops import sread, swrite
from asterism.emu.vops import store as vstore
from asterism.emu.vops import vreg_row
from asterism.isa import get_isa
from asterism.mc.operands import Imm, Off, Reg, Special

TABLE = Table("mem")
builder = TABLE.builder

U8, U16, U32, U64 = np.uint8, np.uint16, np.uint32, np.uint64
I64 = np.int64


# ---------------------------------------------------------------------------- data shapes

def load_shape(m: str) -> tuple[int, str]:
    """(bytes, kind) of a load mnemonic: kind is dword, u8, i8, u16, i16, d16 variants."""
    for suffix, nb in (("_dwordx4", 16), ("_dwordx3", 12), ("_dwordx2", 8), ("_dword", 4)):
        if m.endswith(suffix):
            return nb, "dword"
    table = {"_ubyte": (1, "u8"), "_sbyte": (1, "i8"), "_ushort": (2, "u16"),
             "_sshort": (2, "i16"), "_ubyte_d16": (1, "u8_d16"), "_sbyte_d16": (1, "i8_d16"),
             "_ubyte_d16_hi": (1, "u8_d16_hi"), "_sbyte_d16_hi": (1, "i8_d16_hi"),
             "_short_d16": (2, "u16_d16"), "_short_d16_hi": (2, "u16_d16_hi")}
    for suffix, v in sorted(table.items(), key=lambda kv: -len(kv[0])):
        if m.endswith(suffix):
            return v
    raise CompileError(f"unknown load shape {m}")


def store_shape(m: str) -> tuple[int, int]:
    """(bytes, byte offset within the data register) of a store mnemonic."""
    for suffix, nb in (("_dwordx4", 16), ("_dwordx3", 12), ("_dwordx2", 8), ("_dword", 4)):
        if m.endswith(suffix):
            return nb, 0
    if m.endswith("_byte_d16_hi"):
        return 1, 2
    if m.endswith("_short_d16_hi"):
        return 2, 2
    if m.endswith("_byte"):
        return 1, 0
    if m.endswith("_short"):
        return 2, 0
    raise CompileError(f"unknown store shape {m}")


# ---------------------------------------------------------------------------- SMEM

def _smem_addr(info: OpInfo):
    base = sread(info, info.op("sbase"), 2)
    if info.has("offset"):
        off = info.op("offset")
        imm = np.uint64(off.value & 0xFFFFFFFFFFFFFFFF if isinstance(off, Imm) else 0)
        return lambda g: base(g) + imm
    so = sread(info, info.op("soffset"))
    extra = np.uint64(int(info.mods.get("offset", 0)) & 0xFFFFFFFFFFFFFFFF)
    return lambda g: base(g) + so(g).astype(U64) + extra


def _smem_fault(info: OpInfo, g: Group, err: MemoryAccessError) -> Exception:
    wave = int(g.waves[err.index])
    wg = tuple(int(x) for x in g.ctx.wg_ids[wave])
    return info.fault(f"invalid scalar memory access: {err}", workgroup=wg,
                      wave=int(g.ctx.wave_in_wg[wave]), address=err.address)


def _sdata(info: OpInfo) -> tuple[int, int]:
    op = info.op("sdata")
    if isinstance(op, Reg):
        return op.index + (108 if op.kind == "ttmp" else 0), op.count
    if isinstance(op, Special):
        idx = special_index(op.name)
        if idx is not None:
            return idx, op.count
    raise CompileError(f"unsupported SMEM data operand {op}")


def _smem_load(info: OpInfo):
    addr = _smem_addr(info)
    first, count = _sdata(info)
    buffer = "buffer" in info.mnemonic
    nxt = info.next_index
    touches_exec = first <= 127 and first + count > 126

    def run(g: Group) -> int:
        if buffer:
            rsrc = _scalar_rsrc(info, g)
            a = (rsrc[0] + _smem_off(info, g)) & ~U64(3)
        else:
            a = addr(g) & ~U64(3)
        try:
            data = g.ctx.memory.load_dwords(a, count)
        except MemoryAccessError as err:
            raise _smem_fault(info, g, err) from None
        if buffer:
            off = _smem_off(info, g)
            lim = rsrc[2]
            k = np.arange(count, dtype=U64)[None, :]
            data = np.where(off[:, None] + 4 * k < lim[:, None], data, U32(0))
        g.s[:, first:first + count] = data
        if touches_exec:
            g.refresh_exec()
        return nxt
    return run


def _smem_off(info: OpInfo, g: Group) -> np.ndarray:
    if info.has("offset"):
        off = info.op("offset")
        return np.full(g.n, np.uint64(off.value & 0xFFFFFFFF if isinstance(off, Imm) else 0))
    so = sread(info, info.op("soffset"))(g).astype(U64)
    return so + np.uint64(int(info.mods.get("offset", 0)) & 0xFFFFFFFF)


def _scalar_rsrc(info: OpInfo, g: Group):
    base_op = info.op("sbase")
    idx = base_op.index
    r = g.s[:, idx:idx + 4]
    base = r[:, 0].astype(U64) | ((r[:, 1] & U32(0xFFFF)).astype(U64) << U64(32))
    return base, None, r[:, 2].astype(U64)


def _smem_store(info: OpInfo):
    addr = _smem_addr(info)
    first, count = _sdata(info)
    buffer = "buffer" in info.mnemonic
    nxt = info.next_index

    def run(g: Group) -> int:
        if buffer:
            rsrc = _scalar_rsrc(info, g)
            a = (rsrc[0] + _smem_off(info, g)) & ~U64(3)
        else:
            a = addr(g) & ~U64(3)
        try:
            g.ctx.memory.store_dwords(a, g.s[:, first:first + count])
        except MemoryAccessError as err:
            raise _smem_fault(info, g, err) from None
        return nxt
    return run


def _smem_atomic(info: OpInfo):
    found = atomic_of(info.mnemonic)
    if found is None:
        return unsupported_op(info, "scalar atomic operation")
    opname, fn, nbytes = found
    addr = _smem_addr(info)
    first, _count = _sdata(info)
    glc = bool(info.mods.get("glc"))
    width = nbytes // 4
    nxt = info.next_index

    def run(g: Group) -> int:
        if "buffer" in info.mnemonic:
            rsrc = _scalar_rsrc(info, g)
            a = rsrc[0] + _smem_off(info, g)
        else:
            a = addr(g)
        dt = U32 if width == 1 else U64
        src = g.s[:, first:first + width].copy()
        d = src.view(dt)[:, 0] if width == 2 else src[:, 0]
        d2 = None
        if opname == "cmpswap":
            cmp = g.s[:, first + width:first + 2 * width].copy()
            d2 = cmp.view(dt)[:, 0] if width == 2 else cmp[:, 0]
        try:
            parts = g.ctx.memory.resolve(a, nbytes)
        except MemoryAccessError as err:
            raise _smem_fault(info, g, err) from None
        old = np.zeros(g.n, dt)
        from asterism.emu.spaces import _rmw

        for alloc, sel, off in parts:
            s = np.arange(g.n) if sel is None else sel
            args = [d[s]] + ([d2[s]] if d2 is not None else [])
            old[s] = _rmw(alloc.data, off, dt, lambda o, *x: fn(o, *x), args)
        if glc:
            g.s[:, first:first + width] = np.ascontiguousarray(old).view(U32).reshape(g.n,
                                                                                      width)
        return nxt
    return run


@builder("s_memtime", "s_memrealtime")
def _memtime(info: OpInfo):
    wr = swrite(info, info.op("sdata"), 2)
    nxt = info.next_index

    def run(g: Group) -> int:
        # A monotonic count of wave-instructions issued so far, scaled to ~cycles.
        g.ctx.cycle += 1
        wr(g, np.full(g.n, np.uint64(g.ctx.cycle * 4 + g.ctx.stats.get("wave_insts", 0) * 4),
                      U64))
        return nxt
    return run


def _smem_nop(info: OpInfo):
    nxt = info.next_index
    return lambda g: nxt


_SMEM_PREFIXES = ("s_load_", "s_buffer_load_", "s_store_", "s_buffer_store_", "s_dcache_",
                  "s_atc_probe", "s_scratch_")


def _register_smem() -> None:
    for target in ("gfx942", "gfx950"):
        db = get_isa(target).instructions
        for m in db:
            # (the names a branch below takes, before the database entry is made: making
            # every entry of both targets is most of the cost of importing the semantics)
            if not (m.startswith(_SMEM_PREFIXES) or "atomic" in m) or db[m].unit != "smem":
                continue
            if m in ("s_memtime", "s_memrealtime"):
                continue
            if m.startswith(("s_load_", "s_buffer_load_")):
                builder(m)(_smem_load)
            elif m.startswith(("s_store_", "s_buffer_store_")):
                builder(m)(_smem_store)
            elif "atomic" in m:
                builder(m)(_smem_atomic)
            elif m.startswith(("s_dcache_", "s_atc_probe")):
                builder(m)(_smem_nop)
            elif m.startswith("s_scratch_"):
                builder(m)(lambda info: unsupported_op(info, "scalar scratch access"))


_register_smem()


# ---------------------------------------------------------------------------- FLAT/GLOBAL

def _vaddr64(info: OpInfo, op: Reg):
    row = vreg_row(info, op)
    if op.count >= 2:
        return lambda g: g.v[row].astype(U64) | (g.v[row + 1].astype(U64) << U64(32))
    return lambda g: g.v[row].astype(U64)


def _flat_address(info: OpInfo):
    """(address function (n, 64) uint64, space classifier) for a FLAT/GLOBAL/SCRATCH form."""
    enc = info.enc
    off = int(info.mods.get("offset", 0))
    addr_op = info.op("addr")
    saddr_op = info.op("saddr")
    if enc == "SCRATCH":
        parts = []
        if isinstance(addr_op, Reg):
            row = vreg_row(info, addr_op)
            parts.append(lambda g: g.v[row].astype(np.int64))
        if isinstance(saddr_op, Reg | Special):
            s = sread(info, saddr_op)
            parts.append(lambda g: s(g).astype(np.int64)[:, None])

        def scratch(g: Group):
            total = np.int64(off)
            for p in parts:
                total = total + p(g)
            return np.broadcast_to(np.asarray(total, np.int64) & 0xFFFFFFFF,
                                   (g.n, 64)).astype(U64)
        return scratch, spaces.PRIVATE
    if isinstance(saddr_op, Reg | Special) and not isinstance(saddr_op, Off):
        base = sread(info, saddr_op, 2)
        row = vreg_row(info, addr_op)
        o = U64(off & (2**64 - 1))

        def gsaddr(g: Group):
            return (base(g)[:, None] + g.v[row].astype(U64)) + o
        return gsaddr, spaces.GLOBAL
    va = _vaddr64(info, addr_op)
    o = U64(off & (2**64 - 1))
    return (lambda g: va(g) + o), (spaces.GLOBAL if enc == "GLOBAL" else "flat")


def _split_flat(g: Group, mask: np.ndarray, addr: np.ndarray):
    """[(space, mask, per-lane address in that space)] for FLAT addresses (apertures)."""
    hi = addr >> U64(32)
    sh = np.uint64(g.ctx.shared_base >> 32)
    pr = np.uint64(g.ctx.private_base >> 32)
    lds = mask & (hi == sh)
    priv = mask & (hi == pr)
    glob = mask & ~lds & ~priv
    out = []
    if glob.any():
        out.append((spaces.GLOBAL, glob, addr))
    if lds.any():
        out.append((spaces.LDS, lds, addr & U64(0xFFFFFFFF)))
    if priv.any():
        out.append((spaces.PRIVATE, priv, addr & U64(0xFFFFFFFF)))
    return out


def _spaces_for(g: Group, space: str, mask: np.ndarray, addr: np.ndarray):
    if space == "flat":
        return _split_flat(g, mask, addr)
    return [(space, mask, addr)]


def _flat_load(info: OpInfo):
    nbytes, kind = load_shape(info.mnemonic)
    addr_fn, space = _flat_address(info)
    row = vreg_row(info, info.op("vdst"))
    nxt = info.next_index

    def run(g: Group) -> int:
        addr = addr_fn(g)
        for sp, m, a in _spaces_for(g, space, g.exec, addr):
            data = spaces.load(info, g, sp, m, a, nbytes)
            write_loaded(g, row, data, kind, m)
        return nxt
    return run


def _flat_store(info: OpInfo):
    nbytes, boff = store_shape(info.mnemonic)
    addr_fn, space = _flat_address(info)
    row = vreg_row(info, info.op("data"))
    nxt = info.next_index

    def run(g: Group) -> int:
        addr = addr_fn(g)
        for sp, m, a in _spaces_for(g, space, g.exec, addr):
            spaces.store(info, g, sp, m, a, gather_store_data(g, row, nbytes, boff, m))
        return nxt
    return run


def _atomic_common(info: OpInfo, data_slot: str):
    found = atomic_of(info.mnemonic)
    if found is None:
        raise CompileError("unknown atomic operation")
    opname, fn, nbytes = found
    drow = vreg_row(info, info.op(data_slot))
    width = nbytes // 4
    cmp = opname == "cmpswap"
    dt = U32 if width == 1 else U64

    def operands(g: Group, m: np.ndarray) -> list[np.ndarray]:
        def val(r):
            if width == 1:
                return g.v[r][m]
            return g.v[r][m].astype(U64) | (g.v[r + 1][m].astype(U64) << U64(32))
        args = [val(drow)]
        if cmp:
            args.append(val(drow + width))
        return args
    return fn, nbytes, width, dt, operands


def _write_returned(g: Group, row: int, old: np.ndarray, width: int, m: np.ndarray) -> None:
    if width == 1:
        g.v[row][m] = old
    else:
        g.v[row][m] = (old & U64(0xFFFFFFFF)).astype(U32)
        g.v[row + 1][m] = (old >> U64(32)).astype(U32)


def _flat_atomic(info: OpInfo):
    fn, nbytes, width, _dt, operands = _atomic_common(info, "data")
    addr_fn, space = _flat_address(info)
    ret_row = vreg_row(info, info.op("vdst")) if info.has("vdst") else None
    nxt = info.next_index

    def run(g: Group) -> int:
        addr = addr_fn(g)
        for sp, m, a in _spaces_for(g, space, g.exec, addr):
            old = spaces.atomic(info, g, sp, m, a, nbytes, fn, operands(g, m))
            if ret_row is not None:
                _write_returned(g, ret_row, old, width, m)
        return nxt
    return run


def _lds_dma_dest(info: OpInfo, g: Group, mask: np.ndarray, nbytes: int) -> np.ndarray:
    """LDS byte address of each lane's LDS DMA data: M0 + instruction offset + lane * size."""
    m0 = g.s[:, M0].astype(np.int64)[:, None]
    off = int(info.mods.get("offset", 0)) if info.enc in ("MUBUF",) else 0
    lanes = np.arange(64, dtype=np.int64)[None, :]
    return np.broadcast_to(m0 + off + lanes * nbytes, mask.shape).astype(U64)


def _flat_load_lds(info: OpInfo):
    m = info.mnemonic
    nbytes = {"dword": 4, "dwordx3": 12, "dwordx4": 16, "ubyte": 1, "sbyte": 1, "ushort": 2,
              "sshort": 2}[m.rsplit("_lds_", 1)[1]]
    addr_fn, space = _flat_address(info)
    nxt = info.next_index

    def run(g: Group) -> int:
        mask = g.exec
        data = spaces.load(info, g, space if space != "flat" else spaces.GLOBAL, mask,
                           addr_fn(g), nbytes)
        data = _extend_lds_dma(m, data, nbytes)
        dest = _lds_dma_dest(info, g, mask, data.shape[1] * (4 if data.dtype == U32 else 1))
        spaces.store(info, g, spaces.LDS, mask, dest, data)
        return nxt
    return run


def _extend_lds_dma(m: str, data: np.ndarray, nbytes: int) -> np.ndarray:
    """Sub-dword LDS DMA loads write a zero/sign-extended dword per lane."""
    if nbytes >= 4:
        return data
    raw = data.astype(U32)
    v = raw[:, 0] if nbytes == 1 else raw[:, 0] | (raw[:, 1] << U32(8))
    if m.endswith("sbyte"):
        v = v.astype(U8).view(np.int8).astype(np.int32).view(U32)
    elif m.endswith("sshort"):
        v = v.astype(U16).view(np.int16).astype(np.int32).view(U32)
    return v[:, None]


def _register_flat() -> None:
    for target in ("gfx942", "gfx950"):
        for m in get_isa(target).instructions:
            if not m.startswith(("flat_", "global_", "scratch_")):
                continue
            if "_lds_" in m:
                builder(m)(_flat_load_lds)
            elif "atomic" in m:
                builder(m)(_flat_atomic)
            elif "_load_" in m:
                builder(m)(_flat_load)
            elif "_store_" in m:
                builder(m)(_flat_store)


_register_flat()


# ---------------------------------------------------------------------------- MUBUF/MTBUF

class BufferAccess:
    """Per-lane addresses and range flags of a MUBUF/MTBUF access."""

    __slots__ = ("addr", "index", "num_records", "offset", "stride")


def _rsrc(info: OpInfo):
    op = info.op("srsrc")
    idx = op.index

    def read(g: Group):
        r = g.s[:, idx:idx + 4]
        base = r[:, 0].astype(U64) | ((r[:, 1] & U32(0xFFFF)).astype(U64) << U64(32))
        stride = ((r[:, 1] >> U32(16)) & U32(0x3FFF)).astype(np.int64)
        swizzle = (r[:, 1] >> U32(31)) & U32(1)
        num = r[:, 2].astype(np.int64)
        add_tid = (r[:, 3] >> U32(23)) & U32(1)
        return base, stride, swizzle, num, add_tid, r[:, 3]
    return read


def _buffer_address(info: OpInfo):
    rsrc = _rsrc(info)
    offen = bool(info.mods.get("offen"))
    idxen = bool(info.mods.get("idxen"))
    inst_off = int(info.mods.get("offset", 0))
    vaddr = info.op("vaddr")
    vrow = vreg_row(info, vaddr) if isinstance(vaddr, Reg) else None
    so = sread(info, info.op("soffset"))

    def compute(g: Group):
        base, stride, swizzle, num, add_tid, w3 = rsrc(g)
        if swizzle.any():
            raise info.fault("swizzled buffer resources (SWIZZLE_ENABLE) are not modeled")
        index = np.zeros((g.n, 64), np.int64)
        voff = np.zeros((g.n, 64), np.int64)
        if idxen and offen:
            index = g.v[vrow].astype(np.int64)
            voff = g.v[vrow + 1].astype(np.int64)
        elif idxen:
            index = g.v[vrow].astype(np.int64)
        elif offen:
            voff = g.v[vrow].astype(np.int64)
        if add_tid.any():
            index = index + np.where(add_tid[:, None] == 1, np.arange(64)[None, :], 0)
        offset = voff + inst_off
        soff = so(g).astype(np.int64)[:, None]
        addr = (base.astype(np.int64)[:, None] + soff + offset + stride[:, None] * index)
        return addr.astype(U64), offset, index, num[:, None], stride[:, None], w3
    return compute


def _in_range(offset, index, num, stride, nbytes_each: int, k: int):
    """(n, 64) bool: dword/element k of the access is inside the buffer."""
    raw = stride == 0
    by_off = offset + k * nbytes_each < num
    by_idx = index < num
    return np.where(raw, by_off, by_idx)


def _buffer_load(info: OpInfo):
    nbytes, kind = load_shape(info.mnemonic)
    address = _buffer_address(info)
    lds = bool(info.mods.get("lds"))
    row = None if lds else vreg_row(info, info.op("vdata"))
    ndw = max(1, nbytes // 4)
    nxt = info.next_index

    def run(g: Group) -> int:
        addr, off, idx, num, stride, _ = address(g)
        mask = g.exec
        if nbytes % 4 == 0:
            ok = [_in_range(off, idx, num, stride, 4, k) & mask for k in range(ndw)]
            any_ok = ok[0]
            for o in ok[1:]:
                any_ok = any_ok | o
            data = np.zeros((int(mask.sum()), ndw), U32)
            if any_ok.any():
                # Load each dword separately when only part of the access is in range.
                if all(np.array_equal(o, ok[0]) for o in ok):
                    sub = spaces.load(info, g, spaces.GLOBAL, ok[0], addr, nbytes)
                    data[ok[0][mask]] = sub
                else:
                    for k in range(ndw):
                        if ok[k].any():
                            sub = spaces.load(info, g, spaces.GLOBAL, ok[k], addr + U64(4 * k),
                                              4)
                            data[ok[k][mask], k] = sub[:, 0]
        else:
            okm = _in_range(off, idx, num, stride, nbytes, 0) & mask
            data = np.zeros((int(mask.sum()), nbytes), U8)
            if okm.any():
                data[okm[mask]] = spaces.load(info, g, spaces.GLOBAL, okm, addr, nbytes)
        if lds:
            data = _extend_lds_dma(info.mnemonic, data, nbytes)
            dest = _lds_dma_dest(info, g, mask, 4 * data.shape[1] if data.dtype == U32 else 4)
            spaces.store(info, g, spaces.LDS, mask, dest, data)
        else:
            write_loaded(g, row, data, kind, mask)
        return nxt
    return run


def _buffer_store(info: OpInfo):
    nbytes, boff = store_shape(info.mnemonic)
    address = _buffer_address(info)
    row = vreg_row(info, info.op("vdata"))
    ndw = max(1, nbytes // 4)
    nxt = info.next_index

    def run(g: Group) -> int:
        addr, off, idx, num, stride, _ = address(g)
        mask = g.exec
        if nbytes % 4 == 0:
            for k in range(ndw):
                okk = _in_range(off, idx, num, stride, 4, k) & mask
                if okk.any():
                    data = gather_store_data(g, row + k, 4, 0, okk)
                    spaces.store(info, g, spaces.GLOBAL, okk, addr + U64(4 * k), data)
        else:
            okm = _in_range(off, idx, num, stride, nbytes, 0) & mask
            if okm.any():
                spaces.store(info, g, spaces.GLOBAL, okm, addr,
                             gather_store_data(g, row, nbytes, boff, okm))
        return nxt
    return run


def _buffer_atomic(info: OpInfo):
    fn, nbytes, width, dt, operands = _atomic_common(info, "vdata")
    address = _buffer_address(info)
    ret = bool(info.mods.get("sc0")) or bool(info.mods.get("glc"))
    row = vreg_row(info, info.op("vdata"))
    nxt = info.next_index

    def run(g: Group) -> int:
        addr, off, idx, num, stride, _ = address(g)
        okm = _in_range(off, idx, num, stride, nbytes, 0) & g.exec
        old_all = np.zeros(int(g.exec.sum()), dt)
        if okm.any():
            old = spaces.atomic(info, g, spaces.GLOBAL, okm, addr, nbytes, fn, operands(g, okm))
            old_all[okm[g.exec]] = old
        if ret:
            _write_returned(g, row, old_all, width, g.exec)
        return nxt
    return run


# Typed buffer formats (GFX9 dfmt / nfmt): (bytes per component, components).
DFMT = {1: (1, 1), 2: (2, 1), 3: (1, 2), 4: (4, 1), 5: (2, 2), 10: (1, 4), 11: (4, 2),
        12: (2, 4), 13: (4, 3), 14: (4, 4)}
NFMT_UNORM, NFMT_SNORM, NFMT_UINT, NFMT_SINT, NFMT_FLOAT = 0, 1, 4, 5, 7


def _format_from_rsrc(w3: np.ndarray) -> tuple[int, int]:
    dfmt = int(((w3 >> U32(15)) & U32(0xF))[0])
    nfmt = int(((w3 >> U32(12)) & U32(0x7))[0])
    return dfmt, nfmt


def _decode_component(raw: np.ndarray, size: int, nfmt: int) -> np.ndarray:
    bits = 8 * size
    if nfmt == NFMT_FLOAT:
        if size == 4:
            return raw.astype(U32)
        if size == 2:
            return raw.astype(U16).view(np.float16).astype(np.float32).view(U32)
    if nfmt == NFMT_UINT:
        return raw.astype(U32)
    if nfmt == NFMT_SINT:
        v = raw.astype(np.int64)
        v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
        return v.astype(np.int32).view(U32)
    if nfmt == NFMT_UNORM:
        return (raw.astype(np.float64) / ((1 << bits) - 1)).astype(np.float32).view(U32)
    if nfmt == NFMT_SNORM:
        v = raw.astype(np.int64)
        v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
        return np.maximum(v / ((1 << (bits - 1)) - 1), -1.0).astype(np.float32).view(U32)
    raise ValueError(f"number format {nfmt} is not modeled")


def _encode_component(v: np.ndarray, size: int, nfmt: int) -> np.ndarray:
    bits = 8 * size
    mask = (1 << bits) - 1
    if nfmt == NFMT_FLOAT:
        if size == 4:
            return v.astype(U64)
        return v.view(np.float32).astype(np.float16).view(U16).astype(U64)
    if nfmt in (NFMT_UINT, NFMT_SINT):
        return (v.astype(np.int64) & mask).astype(U64)
    f = v.view(np.float32).astype(np.float64)
    if nfmt == NFMT_UNORM:
        return np.rint(np.clip(np.nan_to_num(f), 0, 1) * mask).astype(U64)
    if nfmt == NFMT_SNORM:
        m = (1 << (bits - 1)) - 1
        return (np.rint(np.clip(np.nan_to_num(f), -1, 1) * m).astype(np.int64) & mask).astype(U64)
    raise ValueError(f"number format {nfmt} is not modeled")


def _format_access(info: OpInfo, is_load: bool):
    m = info.mnemonic
    comps = {"x": 1, "xy": 2, "xyz": 3, "xyzw": 4}[m.rsplit("_", 1)[1]]
    d16 = "_d16" in m
    d16_hi = "_d16_hi" in m
    address = _buffer_address(info)
    row = vreg_row(info, info.op("vdata"))
    fixed = info.mods.get("format") if info.enc == "MTBUF" else None
    nxt = info.next_index

    def run(g: Group) -> int:
        addr, off, idx, num, stride, w3 = address(g)
        if fixed is not None:
            dfmt, nfmt = int(fixed) & 0xF, (int(fixed) >> 4) & 0x7
        else:
            dfmt, nfmt = _format_from_rsrc(w3)
        if dfmt not in DFMT:
            raise info.fault(f"buffer data format {dfmt} is not modeled")
        size, fcomps = DFMT[dfmt]
        mask = g.exec
        k = int(mask.sum())
        if is_load:
            vals = []
            for c in range(comps):
                okc = _in_range(off, idx, num, stride, size, c) & mask
                v = np.zeros(k, U32)
                if c < fcomps and okc.any():
                    raw = spaces.load(info, g, spaces.GLOBAL, okc, addr + U64(c * size), size)
                    if raw.dtype == U32:
                        raw = raw[:, 0]
                    else:
                        raw = sum(raw[:, b].astype(U32) << U32(8 * b) for b in range(size))
                    v[okc[mask]] = _decode_component(np.asarray(raw, U32), size, nfmt)
                elif c == 3 and c >= fcomps:
                    v[:] = U32(0x3F800000) if nfmt == NFMT_FLOAT else U32(1)
                vals.append(v)
            if d16:
                h = [np.asarray(x, U32).view(np.float32).astype(np.float16).view(U16)
                     .astype(U32) if nfmt in (NFMT_FLOAT, NFMT_UNORM, NFMT_SNORM)
                     else x & U32(0xFFFF) for x in vals]
                if d16_hi:
                    old = g.v[row][mask]
                    g.v[row][mask] = (old & U32(0xFFFF)) | (h[0] << U32(16))
                else:
                    for p in range(0, comps, 2):
                        lo = h[p]
                        hi = h[p + 1] if p + 1 < comps else (g.v[row + p // 2][mask] >>
                                                             U32(16))
                        g.v[row + p // 2][mask] = lo | (hi << U32(16))
            else:
                for c in range(comps):
                    g.v[row + c][mask] = vals[c]
        else:
            for c in range(min(comps, fcomps)):
                okc = _in_range(off, idx, num, stride, size, c) & mask
                if not okc.any():
                    continue
                if d16:
                    reg = g.v[row + c // 2][okc]
                    half = (reg >> U32(16 * (c % 2))) & U32(0xFFFF)
                    if d16_hi:
                        half = g.v[row][okc] >> U32(16)
                    v = half.astype(U16).view(np.float16).astype(np.float32).view(U32) \
                        if nfmt == NFMT_FLOAT else half
                else:
                    v = g.v[row + c][okc]
                enc = _encode_component(v, size, nfmt)
                data = np.stack([(enc >> U64(8 * b)).astype(U8) for b in range(size)], axis=1)
                spaces.store(info, g, spaces.GLOBAL, okc, addr + U64(c * size), data)
        return nxt
    return run


def _register_buffer() -> None:
    for target in ("gfx942", "gfx950"):
        for m in get_isa(target).instructions:
            if not m.startswith(("buffer_", "tbuffer_")):
                continue
            if m in ("buffer_wbl2", "buffer_inv"):
                builder(m)(_smem_nop)
            elif "_format_" in m:
                builder(m)(lambda info, m=m: _format_access(info, "_load_" in m))
            elif "atomic" in m:
                builder(m)(_buffer_atomic)
            elif "_load_" in m:
                builder(m)(_buffer_load)
            elif "_store_" in m:
                builder(m)(_buffer_store)


_register_buffer()

_unused = (vstore,)

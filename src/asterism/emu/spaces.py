"""Lane-parallel access to the three address spaces: global memory, LDS and scratch.

Every function takes the active-lane mask (n, 64) and per-lane addresses (n, 64) uint64 and
works on the active lanes in row-major (wave, lane) order. Out-of-range accesses raise an
`EmulatorFault` naming the wave, lane, workgroup and address.

* global: `DeviceMemory` addresses. Each store is told to `ctx.store_observer` when one is set
  (the timing model's write requests, counted per clock group of lanes).
* lds: byte offsets into the wave's workgroup LDS (bounds: the workgroup's LDS size). Each
  access is told to `ctx.lds_observer` when one is set (the timing model's bank model).
* private: byte offsets into the lane's own scratch (bounds: the kernel's private segment size;
  the hardware swizzles lanes in memory, which is invisible to the program).
"""

from __future__ import annotations

import numpy as np

from asterism.emu.core import Group
from asterism.emu.info import OpInfo
from asterism.emu.memory import MemoryAccessError, gather_bytes, gather_dwords, scatter_bytes
from asterism.emu.sanitizer import is_plain_ds

U8, U32, U64 = np.uint8, np.uint32, np.uint64

GLOBAL, LDS, PRIVATE = "global", "lds", "private"


def fault_at(info: OpInfo, g: Group, mask: np.ndarray, k: int, message: str,
             address: int | None) -> Exception:
    """An EmulatorFault for the k-th active lane of `mask`."""
    w, lane = np.nonzero(mask)
    wave_pos, ln = int(w[k]), int(lane[k])
    wave = int(g.waves[wave_pos])
    wg = tuple(int(x) for x in g.ctx.wg_ids[wave])
    return info.fault(message, workgroup=wg, wave=int(g.ctx.wave_in_wg[wave]), lane=ln,
                      address=address)


def _flat_index(g: Group, space: str, mask: np.ndarray, off: np.ndarray, nbytes: int,
                info: OpInfo) -> tuple[np.ndarray, np.ndarray]:
    """(buffer, flat byte index per active lane) for LDS / private space, bounds-checked."""
    o = off[mask].astype(np.int64)
    if space == LDS:
        size = g.ctx.lds_size
        buf = g.ctx.lds.reshape(-1)
        rows = np.broadcast_to(g.lds_rows[:, None], mask.shape)[mask].astype(np.int64)
        base = rows * g.ctx.lds.shape[1]
        what = f"LDS access beyond the workgroup's {size} bytes of LDS"
    else:
        size = g.ctx.private_size
        if g.ctx.private is None or size == 0:
            k = 0
            raise fault_at(info, g, mask, k, "scratch access but the kernel has no private "
                           "segment (private_segment_fixed_size is 0)", int(o[0]) if o.size
                           else None)
        buf = g.ctx.private.reshape(-1)
        lanes = np.broadcast_to(np.arange(64)[None, :], mask.shape)[mask]
        rows = np.broadcast_to(g.priv_rows[:, None], mask.shape)[mask].astype(np.int64)
        base = (rows * 64 + lanes) * g.ctx.private.shape[2]
        what = f"scratch access beyond the {size}-byte private segment"
    bad = (o < 0) | (o + nbytes > size)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise fault_at(info, g, mask, k, what, int(o[k]) & 0xFFFFFFFFFFFFFFFF)
    return buf, base + o


def load(info: OpInfo, g: Group, space: str, mask: np.ndarray, addr: np.ndarray,
         nbytes: int) -> np.ndarray:
    """Bytes at each active lane's address: (k, nbytes) uint8, or (k, nbytes/4) uint32 when
    nbytes is a multiple of 4."""
    dw = nbytes % 4 == 0
    if not mask.any():
        return np.zeros((0, nbytes // 4 if dw else nbytes), U32 if dw else U8)
    if space == GLOBAL:
        a = addr[mask]
        try:
            if dw:
                return g.ctx.memory.load_dwords(a, nbytes // 4)
            return g.ctx.memory.load_bytes(a, nbytes)
        except MemoryAccessError as err:
            raise fault_at(info, g, mask, err.index, f"invalid memory read: {err}",
                           err.address) from None
    buf, idx = _flat_index(g, space, mask, addr, nbytes, info)
    if space == LDS:
        watch = g.ctx.sanitizer["lds"] if g.ctx.sanitizer else None
        if watch is not None and is_plain_ds(info, "may_load"):
            watch.check_read(info, g, mask, idx, nbytes, g.ctx.kernel)
        if g.ctx.lds_observer is not None:
            g.ctx.lds_observer("load", mask, addr, nbytes)
    if dw:
        return gather_dwords(buf, idx, nbytes // 4)
    return gather_bytes(buf, idx, nbytes)


def store(info: OpInfo, g: Group, space: str, mask: np.ndarray, addr: np.ndarray,
          data: np.ndarray) -> None:
    """Write (k, nbytes) uint8 or (k, ndw) uint32 at each active lane's address."""
    if not mask.any():
        return
    raw = np.ascontiguousarray(data)
    if raw.dtype != U8:
        raw = raw.astype(U32).view(U8).reshape(raw.shape[0], -1)
    if space == GLOBAL:
        if g.ctx.store_observer is not None:
            g.ctx.store_observer(info, mask, addr, raw.shape[1])
        try:
            g.ctx.memory.store_bytes(addr[mask], raw)
        except MemoryAccessError as err:
            raise fault_at(info, g, mask, err.index, f"invalid memory write: {err}",
                           err.address) from None
        return
    buf, idx = _flat_index(g, space, mask, addr, raw.shape[1], info)
    if space == LDS:
        watch = g.ctx.sanitizer["lds"] if g.ctx.sanitizer else None
        if watch is not None and is_plain_ds(info, "may_store"):
            watch.record_store(g, mask, idx, raw.shape[1])
        if g.ctx.lds_observer is not None:
            g.ctx.lds_observer("store", mask, addr, raw.shape[1])
    scatter_bytes(buf, idx, raw)


def atomic(info: OpInfo, g: Group, space: str, mask: np.ndarray, addr: np.ndarray,
           nbytes: int, fn, data: list[np.ndarray]) -> np.ndarray:
    """Read-modify-write per active lane, in (wave, lane) order: new = fn(old, *data).

    Values are uint32 (nbytes 4) or uint64 (nbytes 8) arrays of the active lanes; returns the
    old values. Lanes that hit the same address see each other's updates in order."""
    dt = U32 if nbytes == 4 else U64
    k = int(mask.sum())
    if k == 0:
        return np.zeros(0, dt)
    if space == GLOBAL:
        a = addr[mask]
        try:
            parts = g.ctx.memory.resolve(a, nbytes)
        except MemoryAccessError as err:
            raise fault_at(info, g, mask, err.index, f"invalid atomic access: {err}",
                           err.address) from None
        old = np.zeros(k, dt)
        for alloc, sel, off in parts:
            sel_idx = np.arange(k) if sel is None else sel
            old[sel_idx] = _rmw(alloc.data, off, dt, fn, [d[sel_idx] for d in data])
        return old
    buf, idx = _flat_index(g, space, mask, addr, nbytes, info)
    if space == LDS and g.ctx.lds_observer is not None:
        g.ctx.lds_observer("atomic", mask, addr, nbytes)
    return _rmw(buf, idx, dt, fn, data)


def _rmw(buf: np.ndarray, off: np.ndarray, dt, fn, data: list[np.ndarray]) -> np.ndarray:
    nbytes = np.dtype(dt).itemsize
    uniq = np.unique(off).size == off.size
    if uniq:
        old = np.ascontiguousarray(gather_bytes(buf, off, nbytes)).view(dt)[:, 0]
        new = np.asarray(fn(old, *data), dt)
        scatter_bytes(buf, off, np.ascontiguousarray(new).view(U8).reshape(-1, nbytes))
        return old
    # Several lanes hit one address: apply them one after another, in lane order.
    old = np.zeros(off.size, dt)
    for i in range(off.size):
        o = off[i:i + 1]
        cur = np.ascontiguousarray(gather_bytes(buf, o, nbytes)).view(dt)[:, 0]
        old[i] = cur[0]
        new = np.asarray(fn(cur, *[d[i:i + 1] for d in data]), dt)
        scatter_bytes(buf, o, np.ascontiguousarray(new).view(U8).reshape(-1, nbytes))
    return old

"""The register side of vector memory instructions, shared by `mem.py` and `lds.py`: loaded
data into VGPRs (with the sub-dword and d16 layouts), store data out of them."""

from __future__ import annotations

import numpy as np

from asterism.emu.core import Group

U8, U16, U32 = np.uint8, np.uint16, np.uint32


def write_loaded(g: Group, row: int, data: np.ndarray, kind: str, mask: np.ndarray) -> None:
    """Write load results (active lanes, row-major) into registers starting at `row`."""
    if kind == "dword":
        for j in range(data.shape[1]):
            g.v[row + j][mask] = data[:, j]
        return
    raw = data.astype(U32)
    if raw.shape[1] == 2:
        v = raw[:, 0] | (raw[:, 1] << U32(8))
    else:
        v = raw[:, 0]
    if kind in ("u8", "u16"):
        g.v[row][mask] = v
    elif kind == "i8":
        g.v[row][mask] = v.astype(U8).view(np.int8).astype(np.int32).view(U32)
    elif kind == "i16":
        g.v[row][mask] = v.astype(U16).view(np.int16).astype(np.int32).view(U32)
    else:
        if kind.startswith("i8"):
            v = v.astype(U8).view(np.int8).astype(np.int16).view(U16).astype(U32)
        old = g.v[row][mask]
        if kind.endswith("_hi"):
            g.v[row][mask] = (old & U32(0xFFFF)) | ((v & U32(0xFFFF)) << U32(16))
        else:
            g.v[row][mask] = (old & U32(0xFFFF0000)) | (v & U32(0xFFFF))


def gather_store_data(g: Group, row: int, nbytes: int, byte_off: int,
                      mask: np.ndarray) -> np.ndarray:
    """Store data of the active lanes: (k, nbytes) uint8 or (k, ndw) uint32."""
    if nbytes % 4 == 0:
        return np.stack([g.v[row + j][mask] for j in range(nbytes // 4)], axis=1)
    v = g.v[row][mask] >> U32(8 * byte_off)
    out = np.empty((v.size, nbytes), U8)
    for b in range(nbytes):
        out[:, b] = (v >> U32(8 * b)).astype(U8)
    return out

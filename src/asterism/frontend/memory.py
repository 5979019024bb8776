"""Memory accesses of the upstream lowering: buffer resources of global memrefs, byte offsets
of indices, loads and stores through MUBUF (global) or DS (LDS) instructions, and the waits
barriers need. Used by the memref, vector and amdgpu lowerings and for kernel arguments."""

from __future__ import annotations

from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from asterism.frontend.emit import int_binary
from asterism.frontend.lowering import KernelLowering
from asterism.frontend.values import LV, const_lv, fail, signed32, type_bits

# dword3 of a raw buffer resource on gfx9: DST_SEL_XYZW = XYZW, DATA_FORMAT = 32 (as LLVM).
RSRC_WORD3 = 0x00027000


def buffer_resource(kb, ptr: SSAValue, nbytes: int) -> SSAValue:
    """A raw buffer resource for the 64-bit pointer `ptr`: stride 0, num_records =
    `nbytes`, so accesses past the end read 0 and write nothing (hardware clamping)."""
    lo, hi = kb.split(ptr)
    hi16 = kb.s_and_b32(None, hi, 0xFFFF)
    return kb.join(kb.s_mov_b32(None, lo), hi16, kb.s_mov_b32(None, signed32(nbytes)),
                   kb.s_mov_b32(None, signed32(RSRC_WORD3)), align=4)


def wait_all(low: KernelLowering, vm: bool) -> None:
    """Wait for every outstanding memory operation (`vm`) or for LDS and scalar ones."""
    if vm:
        low.kb.s_waitcnt(vmcnt=0, lgkmcnt=0)
    else:
        low.kb.s_waitcnt(lgkmcnt=0)


def byte_offset(low: KernelLowering, op, mem, indices: list[LV], extra: int = 0) -> LV:
    """sum(index * stride) * element bytes (+ extra elements) as a lowered i32."""
    info = mem.value
    if len(indices) != len(info.strides):
        raise fail(op, f"{len(indices)} indices for a rank-{len(info.strides)} memref")
    total = const_lv(extra * info.elem_bytes, i32)
    if info.offset is not None:  # a subview's start
        total = scaled(low, info.offset, info.elem_bytes)
        total = int_binary(low, "arith.addi", total, const_lv(extra * info.elem_bytes, i32), i32)
    for idx, stride in zip(indices, info.strides):
        total = int_binary(low, "arith.addi", total,
                           scaled(low, idx, stride * info.elem_bytes), i32)
    return total


def scaled(low: KernelLowering, idx: LV, scale: int) -> LV:
    """idx * scale (a shift for a power of two)."""
    if scale == 1:
        return idx
    if not scale & (scale - 1):
        return int_binary(low, "arith.shli", idx, const_lv(scale.bit_length() - 1, i32), i32)
    return int_binary(low, "arith.muli", idx, const_lv(scale, i32), i32)


_LOAD = {1: "buffer_load_ubyte", 2: "buffer_load_ushort", 4: "buffer_load_dword",
         8: "buffer_load_dwordx2", 12: "buffer_load_dwordx3", 16: "buffer_load_dwordx4"}


_STORE = {1: "buffer_store_byte", 2: "buffer_store_short", 4: "buffer_store_dword",
          8: "buffer_store_dwordx2", 12: "buffer_store_dwordx3", 16: "buffer_store_dwordx4"}


_DS_READ = {1: "ds_read_u8", 2: "ds_read_u16", 4: "ds_read_b32", 8: "ds_read_b64",
            16: "ds_read_b128"}


_DS_WRITE = {1: "ds_write_b8", 2: "ds_write_b16", 4: "ds_write_b32", 8: "ds_write_b64",
             16: "ds_write_b128"}


def _chunks(nbytes: int) -> list[int]:
    """Access sizes of a load/store of `nbytes`: one instruction up to 16 bytes, else
    16-byte pieces and the rest (24 bytes: 16 + 8)."""
    if nbytes <= 16 or nbytes % 4:
        return [nbytes]
    return [16] * (nbytes // 16) + ([nbytes % 16] if nbytes % 16 else [])


def address(low: KernelLowering, mem: LV, offset: LV):
    """The VGPR address of byte `offset` of a memref (LDS: plus the allocation's offset)."""
    info = mem.value
    if info.space == "workgroup":
        return low.vgpr(int_binary(low, "arith.addi", offset, const_lv(info.lds_offset, i32),
                                   i32))
    return low.vgpr(offset)


def load(low: KernelLowering, op, mem: LV, offset: LV, t, soffset=0, inst_offset: int = 0
         ) -> LV:
    """Load a value of type `t` at byte `offset` (+ the instruction's constant
    `inst_offset`) of a memref (LDS or a buffer)."""
    info = mem.value
    kb = low.kb
    table = _DS_READ if info.space == "workgroup" else _LOAD
    sizes = _chunks(type_bits(t) // 8)
    if any(n not in table for n in sizes):
        raise fail(op, f"loads of {type_bits(t) // 8} bytes are not supported (1, 2, 4, 8, "
                       "16 or a multiple of 16)")
    addr = address(low, mem, offset)
    parts = []
    for k, n in enumerate(sizes):
        mods = {"offset": 16 * k + inst_offset} if k or inst_offset else {}
        if info.space == "workgroup":
            parts.append(kb.emit(table[n], None, addr, **mods))
        else:
            parts.append(kb.emit(table[n], None, addr, info.rsrc, soffset, offen=True, **mods))
    if len(parts) == 1:
        return LV("v", t, parts[0])
    regs = [r for p in parts for r in kb.split(p)]
    return LV("v", t, kb.join(*regs, align=4))


def store(low: KernelLowering, op, mem: LV, offset: LV, value: LV, t, soffset=0,
          inst_offset: int = 0) -> None:
    """Store `value` (type `t`) at byte `offset` (+ the instruction's constant
    `inst_offset`) of a memref (LDS or a buffer)."""
    info = mem.value
    kb = low.kb
    table = _DS_WRITE if info.space == "workgroup" else _STORE
    sizes = _chunks(type_bits(t) // 8)
    if any(n not in table for n in sizes):
        raise fail(op, f"stores of {type_bits(t) // 8} bytes are not supported (1, 2, 4, 8, "
                       "16 or a multiple of 16)")
    data = low.vgpr(value)
    addr = address(low, mem, offset)
    for k, n in enumerate(sizes):
        piece = data if len(sizes) == 1 else kb.sub(data, 4 * k, 4 * k + n // 4)
        mods = {"offset": 16 * k + inst_offset} if k or inst_offset else {}
        if info.space == "workgroup":
            kb.emit(table[n], addr, piece, **mods)
        else:
            kb.emit(table[n], piece, addr, info.rsrc, soffset, offen=True, **mods)


def memref_operand(low: KernelLowering, op, value) -> LV:
    """The lowered memref `value` (an error naming `op` if it is not one)."""
    lv = low.get(value)
    if lv.kind != "m":
        raise fail(op, "expected a memref")
    return lv


__all__ = ["RSRC_WORD3", "address", "scaled", "buffer_resource", "byte_offset", "load",
           "memref_operand", "store", "wait_all"]

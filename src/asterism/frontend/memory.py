"""Memory accesses of the upstream lowering: buffer resources of global memrefs, byte offsets
of indices, loads and stores through MUBUF (global) or DS (LDS) instructions, and the waits
barriers need. Used by the memref, vector and amdgpu lowerings and for kernel arguments."""

from __future__ import annotations

from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from asterism.frontend.emit import copy_into, float_binary, int_binary, new_regs, words_of
from asterism.frontend.lowering import KernelLowering
from asterism.frontend.values import LV, const_lv, fail, reg_count, signed32, type_bits

# dword3 of a raw buffer resource on gfx9: DST_SEL_XYZW = XYZW, DATA_FORMAT = 32 (as LLVM).
RSRC_WORD3 = 0x00027000


def buffer_resource(kb, ptr: SSAValue, nbytes: int | SSAValue) -> SSAValue:
    """A raw buffer resource for the 64-bit pointer `ptr`: stride 0, num_records =
    `nbytes` (a constant or an SGPR), so accesses past the end read 0 and write nothing
    (hardware clamping)."""
    lo, hi = kb.split(ptr)
    hi16 = kb.s_and_b32(None, hi, 0xFFFF)
    num = signed32(nbytes) if isinstance(nbytes, int) else nbytes
    return kb.join(kb.s_mov_b32(None, lo), hi16, kb.s_mov_b32(None, num),
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
        if isinstance(stride, LV):  # a dynamic stride (elements), from the descriptor
            idx, stride = int_binary(low, "arith.muli", idx, stride, i32), 1
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


# the compare-and-swap instruction by bytes: global (MUBUF; data = {new, compare}) and LDS
# (DS; data0 = compare, data1 = new)
_BUFFER_CMPSWAP = {4: "buffer_atomic_cmpswap", 8: "buffer_atomic_cmpswap_x2"}
_DS_CMPST = {4: "ds_cmpst_rtn_b32", 8: "ds_cmpst_rtn_b64"}


def combine(low: KernelLowering, name: str, a: LV, b: LV, t) -> LV:
    """`a name b` for the arith op `name` (integer or float) on lowered values."""
    if name.endswith("f"):
        return float_binary(low, name, a, b, t)
    return int_binary(low, name, a, b, t)


def cas_loop(low: KernelLowering, op, mem: LV, off: LV, value: LV, t, name: str,
             soffset=0) -> LV:
    """An atomic `mem[off] = mem[off] name value` with no instruction of its own, as a
    compare-and-swap loop (as LLVM expands such an atomicrmw): each lane loads the old
    value, computes the new one and swaps it in if memory still holds the old one; the lanes
    whose swap failed (another lane or wave wrote first) retry with the value they got,
    under EXEC, until every lane has succeeded. Returns the old value each lane replaced.
    Lanes contending for one address succeed one per pass (the instruction's lanes go in
    order), so the result is the sequential reduction in some lane order."""
    kb = low.kb
    info = mem.value
    n = reg_count(t)
    nbytes = 4 * n
    lds = info.space == "workgroup"
    old = new_regs(low, t, "v")
    copy_into(low, old, load(low, op, mem, off, t, soffset), t)
    vaddr = address(low, mem, off)
    done = kb.sregs(2, 2)
    kb.s_mov_b64(done, 0)
    head = kb.label("cas_loop")
    new = combine(low, name, LV("v", t, old), value, t)
    # fresh registers: the returning atomic overwrites its data with the old value
    new_words = [kb.v_mov_b32(None, low.operand(w)) for w in words_of(low, new, n)]
    old_words = [kb.v_mov_b32(None, w) for w in (kb.split(old) if n > 1 else [old])]
    if lds:
        data0 = old_words[0] if n == 1 else kb.join(*old_words, align=2)
        data1 = new_words[0] if n == 1 else kb.join(*new_words, align=2)
        got = kb.emit(_DS_CMPST[nbytes], None, vaddr, data0, data1)
    else:
        data = kb.join(*new_words, *old_words, align=2 if n == 1 else 4)
        ret = kb.emit(_BUFFER_CMPSWAP[nbytes], data, vaddr, info.rsrc, soffset, offen=True,
                      sc0=True)
        got = kb.sub(ret, 0) if n == 1 else kb.sub(ret, 0, 2)
    kb.emit("v_cmp_eq_u32" if n == 1 else "v_cmp_eq_u64", kb.vcc, got, old)
    copy_into(low, old, LV("v", t, got), t)
    kb.s_or_b64(done, done, kb.vcc)
    kb.s_andn2_b64(kb.exec, kb.exec, kb.vcc)  # the lanes that swapped are done
    kb.s_cbranch_execnz(head)
    kb.s_or_b64(kb.exec, kb.exec, done)  # (EXEC is 0 here: back to the lanes that came in)
    return LV("v", t, old)


def memref_operand(low: KernelLowering, op, value) -> LV:
    """The lowered memref `value` (an error naming `op` if it is not one)."""
    lv = low.get(value)
    if lv.kind != "m":
        raise fail(op, "expected a memref")
    return lv


__all__ = ["RSRC_WORD3", "address", "scaled", "buffer_resource", "byte_offset", "cas_loop",
           "combine", "load",
           "memref_operand", "store", "wait_all"]

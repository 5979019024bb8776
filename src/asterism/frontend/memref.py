"""Lowering of the upstream `memref` ops: loads and stores of static identity-layout memrefs
(global: buffer instructions through the memref's resource; workgroup: LDS), workgroup
(LDS) allocations and `memref.subview` (the same resource; its start and strides fold into
the address computation of every access through it)."""

from __future__ import annotations

import dataclasses

from xdsl.dialects import memref
from xdsl.dialects.builtin import StridedLayoutAttr, i32

from asterism.frontend.emit import int_binary
from asterism.frontend.lowering import HandlerTable, KernelLowering
from asterism.frontend.memory import byte_offset, load, memref_operand, scaled, store
from asterism.frontend.values import LV, const_lv, fail, memref_info

DYNAMIC = -(1 << 63)  # MLIR's marker of a dynamic offset, size or stride


def _memref_load(low: KernelLowering, op: memref.LoadOp) -> None:
    mem = memref_operand(low, op, op.memref)
    off = byte_offset(low, op, mem, [low.get(i) for i in op.indices])
    low.set(op.res, load(low, op, mem, off, op.res.type))


def _memref_store(low: KernelLowering, op: memref.StoreOp) -> None:
    mem = memref_operand(low, op, op.memref)
    off = byte_offset(low, op, mem, [low.get(i) for i in op.indices])
    store(low, op, mem, off, low.get(op.value), op.value.type)


def _alloc(low: KernelLowering, op: memref.AllocOp | memref.AllocaOp) -> None:
    t = op.memref.type
    info = memref_info(t, op)
    if info.space != "workgroup":
        raise fail(op, "only workgroup (LDS) allocations are supported (memory space 3 or "
                       "#gpu.address_space<workgroup>)")
    alloc = low.kb.lds_alloc(f"lds{len(low.vals)}", info.nbytes, max(4, info.elem_bytes))
    info.lds_offset = alloc.offset
    low.set(op.memref, LV("m", t, info))


def _subview(low: KernelLowering, op: memref.SubviewOp) -> None:
    """A view of the same memory: element offset = the source's + sum(offset_d * stride_d),
    strides = the source's times the subview's (MLIR's memref.subview: "the offsets, sizes and
    strides ... define a strided view"); dropped unit dimensions (a rank-reducing subview) are
    found from the result type's strides."""
    src = memref_operand(low, op, op.source)
    info = src.value
    offsets = _values(low, op, op.static_offsets.get_values(), op.offsets)
    sizes = list(op.static_sizes.get_values())
    steps = list(op.static_strides.get_values())
    if any(v == DYNAMIC for v in sizes + steps):
        raise fail(op, "dynamic sizes or strides are not supported (static sizes and strides, "
                       "offsets static or dynamic)")
    start = info.offset if info.offset is not None else const_lv(0, i32)
    for off, stride in zip(offsets, info.strides):
        start = int_binary(low, "arith.addi", start, scaled(low, off, stride), i32)
    strides = [s * k for s, k in zip(info.strides, steps)]
    t = op.result.type
    rank = len(t.get_shape())
    if rank != len(strides):
        strides = _kept_strides(op, t, sizes, strides)
    view = dataclasses.replace(info, type=t, strides=strides, offset=start)
    low.set(op.result, LV("m", t, view))


def _values(low: KernelLowering, op, static, dynamic) -> list:
    """The offsets of a subview as lowered values (static ones as constants)."""
    dyn = iter(dynamic)
    return [low.get(next(dyn)) if v == DYNAMIC else const_lv(int(v), i32) for v in static]


def _kept_strides(op, t, sizes: list[int], strides: list[int]) -> list[int]:
    """The strides of the dimensions a rank-reducing subview keeps (its result type's)."""
    layout = getattr(t, "layout", None)
    want = list(layout.get_strides()) if isinstance(layout, StridedLayoutAttr) else None
    if want is None or any(s is None or s == DYNAMIC for s in want):
        raise fail(op, "a rank-reducing subview needs static strides in its result type")
    kept, k = [], 0
    for size, stride in zip(sizes, strides):
        if k < len(want) and stride == want[k] and (size != 1 or len(strides) - len(kept)
                                                     <= len(want) - k):
            kept.append(stride)
            k += 1
    if kept != want:
        raise fail(op, f"cannot match the result strides {want} to the source's {strides}")
    return kept


HANDLERS: HandlerTable = {
    memref.SubviewOp: _subview,
    memref.LoadOp: _memref_load,
    memref.StoreOp: _memref_store,
    memref.AllocOp: _alloc,
    memref.AllocaOp: _alloc,
}

"""Lowering of the upstream `memref` ops: loads and stores of static identity-layout memrefs
(global: buffer instructions through the memref's resource; workgroup: LDS) and workgroup
(LDS) allocations."""

from __future__ import annotations

from xdsl.dialects import memref

from asterism.frontend.lowering import HandlerTable, KernelLowering
from asterism.frontend.memory import byte_offset, load, memref_operand, store
from asterism.frontend.values import LV, fail, memref_info


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


HANDLERS: HandlerTable = {
    memref.LoadOp: _memref_load,
    memref.StoreOp: _memref_store,
    memref.AllocOp: _alloc,
    memref.AllocaOp: _alloc,
}

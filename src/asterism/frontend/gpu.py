"""Lowering of the upstream `gpu` ops inside a kernel: work-item and workgroup ids and
sizes (from VGPR0's packed ids, the workgroup id SGPRs and the dispatch packet), the workgroup
barrier and gpu.return. (gpu.module and gpu.func themselves: asterism.frontend.lower and
.kernel.)"""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType

from asterism.frontend.dialects.gpu import (
    BlockDimOp,
    BlockIdOp,
    GpuBarrierOp,
    GpuReturnOp,
    GridDimOp,
    LaneIdOp,
    ThreadIdOp,
)
from asterism.frontend.lowering import HandlerTable, KernelLowering
from asterism.frontend.memory import wait_all
from asterism.frontend.values import LV, const_lv, fail


def _thread_id(low: KernelLowering, op: ThreadIdOp) -> None:
    kb = low.kb
    dim = op.dimension.data.value
    axis = "xyz".index(dim)
    if low.block_known and low.block_size[axis] == 1:
        low.set(op.result, const_lv(0, op.result.type))
        return
    raw = kb.workitem_id(dim)
    packed = not low.block_known or any(low.block_size[a] > 1 for a in range(3) if a != axis)
    if axis == 0 and packed:
        raw = kb.v_and_b32(None, 0x3FF, raw)
    elif axis:
        raw = kb.v_bfe_u32(None, raw, 10 * axis, 10)
    low.set(op.result, LV("v", op.result.type, raw))


def _lane_id(low: KernelLowering, op: LaneIdOp) -> None:
    kb = low.kb
    tid = kb.v_mbcnt_hi_u32_b32(None, -1, kb.v_mbcnt_lo_u32_b32(None, -1, 0))
    low.set(op.result, LV("v", op.result.type, tid))


def _block_id(low: KernelLowering, op: BlockIdOp) -> None:
    low.set(op.result, LV("s", op.result.type, low.kb.workgroup_id(op.dimension.data.value)))


def _dispatch_u16(low: KernelLowering, byte_offset: int) -> LV:
    """A 16-bit field of the dispatch packet (workgroup sizes)."""
    kb = low.kb
    word = kb.s_load_dword(None, kb.dispatch_ptr(), byte_offset & ~3)
    if byte_offset & 2:
        return LV("s", IndexType(), kb.s_lshr_b32(None, word, 16))
    return LV("s", IndexType(), kb.s_and_b32(None, word, 0xFFFF))


def _block_dim(low: KernelLowering, op: BlockDimOp) -> None:
    axis = "xyz".index(op.dimension.data.value)
    if low.block_known:
        low.set(op.result, const_lv(low.block_size[axis], op.result.type))
        return
    low.set(op.result, _dispatch_u16(low, 4 + 2 * axis))


def _grid_dim(low: KernelLowering, op: GridDimOp) -> None:
    axis = "xyz".index(op.dimension.data.value)
    size = low.block_size[axis]
    if not low.block_known or size & (size - 1):
        raise fail(op, "needs a known_block_size that is a power of two in this dimension "
                       "(the grid size in work-items is divided by it)")
    kb = low.kb
    items = kb.s_load_dword(None, kb.dispatch_ptr(), 12 + 4 * axis)
    low.set(op.result, LV("s", op.result.type,
                          kb.s_lshr_b32(None, items, size.bit_length() - 1)))


def _barrier(low: KernelLowering, op: GpuBarrierOp) -> None:
    wait_all(low, vm=True)
    low.kb.s_barrier()


def _return(low: KernelLowering, op: GpuReturnOp) -> None:
    low.lower_return(op)


HANDLERS: HandlerTable = {
    ThreadIdOp: _thread_id,
    LaneIdOp: _lane_id,
    BlockIdOp: _block_id,
    BlockDimOp: _block_dim,
    GridDimOp: _grid_dim,
    GpuBarrierOp: _barrier,
    GpuReturnOp: _return,
}

"""Lowering of the upstream `gpu` ops inside a kernel: work-item and workgroup ids and
sizes (from VGPR0's packed ids, the workgroup id SGPRs and the dispatch packet), the workgroup
barrier, gpu.shuffle (DPP, ds_swizzle or ds_bpermute) and gpu.return. (gpu.module and
gpu.func themselves: asterism.frontend.lower and .kernel.)"""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType, IntegerType, VectorType, i32

from asterism.frontend.dialects.gpu import (
    BlockDimOp,
    BlockIdOp,
    GpuBarrierOp,
    GpuReturnOp,
    GridDimOp,
    LaneIdOp,
    ShuffleOp,
    SubgroupReduceOp,
    ThreadIdOp,
)
from asterism.frontend.emit import align, int_binary, words_of
from asterism.frontend.lowering import HandlerTable, KernelLowering
from asterism.frontend.memory import combine, wait_all
from asterism.frontend.values import LV, const_lv, fail, reg_count, type_name


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


def _lane(low: KernelLowering) -> LV:
    """This lane's index in the wave (v_mbcnt over all lanes)."""
    kb = low.kb
    return LV("v", i32, kb.v_mbcnt_hi_u32_b32(None, -1, kb.v_mbcnt_lo_u32_b32(None, -1, 0)))


# xor masks a DPP quad_perm does (within each group of 4 lanes): lane l reads lane l ^ m.
_QUAD_XOR = {m: sum((q ^ m) << (2 * q) for q in range(4)) for m in (1, 2, 3)}


def _each_register(low: KernelLowering, value: LV, t, move) -> LV:
    """`move(register)` on every 32-bit register of a value, joined again."""
    n = reg_count(t)
    out = [move(low.vgpr(w)) for w in words_of(low, value, n)]
    return LV("v", t, out[0] if n == 1 else low.kb.join(*out, align=align(n)))


def xor_lanes(low: KernelLowering, value: LV, t, m: int) -> LV:
    """`value` of lane l ^ m in every lane l (0 < m < 64): a DPP quad_perm below 4, a
    ds_swizzle (bit-mask mode, no address) below 32, else ds_bpermute_b32."""
    kb = low.kb
    if m in _QUAD_XOR:
        return _each_register(low, value, t, lambda r: kb.v_mov_b32(
            kb.v_mov_b32(None, r), r, dpp_ctrl=_QUAD_XOR[m], row_mask=0xF, bank_mask=0xF))
    if m < 32:  # bit-mask mode: and 0x1f, or 0, xor m
        return _each_register(low, value, t, lambda r: kb.ds_swizzle_b32(
            None, r, offset=0x1F | m << 10))
    addr = int_binary(low, "arith.shli", int_binary(low, "arith.xori", _lane(low),
                                                    const_lv(m, i32), i32),
                      const_lv(2, i32), i32)
    return _each_register(low, value, t, lambda r: kb.ds_bpermute_b32(None, addr.value, r))


def _shuffle(low: KernelLowering, op: ShuffleOp) -> None:
    """gpu.shuffle: lanes split in segments of `width`; lane l reads lane l ^ offset (xor),
    l + offset (down), l - offset (up) or offset (idx; the absolute lane, as MLIR's ROCDL
    lowering reads it); a source outside l's segment is not valid: l keeps its own value and
    `valid` is 0. A constant xor below 4 is a DPP quad_perm, below 32 a ds_swizzle (no
    address); the rest ds_bpermute_b32 from the source lane's address."""
    kb = low.kb
    mode = op.mode.data.value
    off, width = low.get(op.offset), low.get(op.width)
    t = op.value.type
    value = low.get(op.value)
    w = width.scalar if width.kind == "c" else None
    if w is None or w <= 0 or w & (w - 1) or w > 64:
        raise fail(op, "the width must be a constant power of two up to 64 (the wave size); "
                       "a variable width is not supported")
    if mode == "xor" and off.kind == "c" and 0 < off.scalar < w:
        low.set(op.shuffleResult, xor_lanes(low, value, t, off.scalar))
        low.set(op.valid, const_lv(1, IntegerType(1)))
        return
    lane = _lane(low)
    src = {"xor": lambda: int_binary(low, "arith.xori", lane, off, i32),
           "down": lambda: int_binary(low, "arith.addi", lane, off, i32),
           "up": lambda: int_binary(low, "arith.subi", lane, off, i32),
           "idx": lambda: off}[mode]()
    start = int_binary(low, "arith.andi", lane, const_lv(-w & 0xFFFFFFFF, i32), i32)
    # valid: start <= src < start + w, i.e. (src - start) < w unsigned (a negative src of `up`
    # wraps to a large number)
    rel = int_binary(low, "arith.subi", src, start, i32)
    kb.v_cmp_gt_u32(kb.vcc, w, low.vgpr(rel))
    valid = LV("v", IntegerType(1), kb.v_cndmask_b32(None, 0, 1, kb.vcc))
    chosen = kb.v_cndmask_b32(None, low.vgpr(lane), low.vgpr(src), kb.vcc)
    addr = kb.v_lshlrev_b32(None, 2, chosen)
    low.set(op.shuffleResult, _each_register(low, value, t,
                                             lambda r: kb.ds_bpermute_b32(None, addr, r)))
    low.set(op.valid, valid)


# gpu.subgroup_reduce kinds -> the arith op that combines two values, by integer / float
_REDUCE_INT = {"add": "arith.addi", "mul": "arith.muli", "minui": "arith.minui",
               "minsi": "arith.minsi", "maxui": "arith.maxui", "maxsi": "arith.maxsi",
               "and": "arith.andi", "or": "arith.ori", "xor": "arith.xori"}
_REDUCE_FLOAT = {"add": "arith.addf", "mul": "arith.mulf", "minnumf": "arith.minnumf",
                 "maxnumf": "arith.maxnumf", "minimumf": "arith.minimumf",
                 "maximumf": "arith.maximumf"}


def _subgroup_reduce(low: KernelLowering, op: SubgroupReduceOp) -> None:
    """gpu.subgroup_reduce: a butterfly over the cluster (lanes base + i * stride, i < size;
    the whole wave of 64 by default): log2(size) steps, each combining the value with lane
    l ^ (k * stride)'s (`xor_lanes`: DPP, ds_swizzle or ds_bpermute), so every lane of the
    cluster ends with the reduction, as MLIR defines it. Floats combine in butterfly order
    (a sum rounds as a pairwise tree does)."""
    t = op.value.type
    et = t.element_type if isinstance(t, VectorType) else t
    kind = op.op.data.value
    tn = type_name(et)
    if tn in ("f16", "f32"):
        name = _REDUCE_FLOAT.get(kind)
    elif tn in ("i32", "index") and not isinstance(t, VectorType):
        name = _REDUCE_INT.get(kind)
    else:
        name = None
    if name is None:
        raise fail(op, f"{kind} over {t} is not supported (add, mul, max/min kinds on f16, f32 "
                       "and their vectors; add, mul, max/min, and, or, xor on i32/index)")
    size = op.cluster_size.value.data if op.cluster_size is not None else WAVE
    stride = op.stride()
    for what, v in (("cluster size", size), ("cluster stride", stride)):
        if v <= 0 or v & (v - 1):
            raise fail(op, f"the {what} must be a power of two, got {v}")
    if size * stride > WAVE:
        raise fail(op, f"a cluster of {size} lanes {stride} apart does not fit the "
                       f"{WAVE}-lane wave")
    value = low.get(op.value)
    k = 1
    while k < size:
        value = combine(low, name, value, xor_lanes(low, value, t, k * stride), t)
        k *= 2
    low.set(op.result, LV("v", t, low.vgpr(value)) if value.kind != "v" else value)


WAVE = 64  # lanes of a wave (the subgroup) on CDNA


HANDLERS: HandlerTable = {
    SubgroupReduceOp: _subgroup_reduce,
    ThreadIdOp: _thread_id,
    LaneIdOp: _lane_id,
    BlockIdOp: _block_id,
    BlockDimOp: _block_dim,
    GridDimOp: _grid_dim,
    GpuBarrierOp: _barrier,
    ShuffleOp: _shuffle,
    GpuReturnOp: _return,
}

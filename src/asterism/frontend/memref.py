"""Lowering of the upstream `memref` ops: loads and stores of static identity-layout memrefs
(global: buffer instructions through the memref's resource; workgroup: LDS), workgroup
(LDS) allocations, `memref.subview` (the same resource; its start and strides fold into
the address computation of every access through it) and `memref.atomic_rmw` (one returning
buffer or DS atomic)."""

from __future__ import annotations

import dataclasses

from xdsl.dialects import memref
from xdsl.dialects.builtin import StridedLayoutAttr, i32

from asterism.frontend.dialects.memref import AtomicRMWOp
from asterism.frontend.emit import int_binary, words_of
from asterism.frontend.lowering import HandlerTable, KernelLowering
from asterism.frontend.memory import (
    address,
    byte_offset,
    cas_loop,
    load,
    memref_operand,
    scaled,
    store,
)
from asterism.frontend.values import LV, const_lv, fail, memref_info, reg_count, type_name

DYNAMIC = -(1 << 63)  # MLIR's marker of a dynamic offset, size or stride


def _memref_load(low: KernelLowering, op: memref.LoadOp) -> None:
    mem = memref_operand(low, op, op.memref)
    off = byte_offset(low, op, mem, [low.get(i) for i in op.indices])
    low.set(op.res, load(low, op, mem, off, op.res.type))


def _memref_store(low: KernelLowering, op: memref.StoreOp) -> None:
    mem = memref_operand(low, op, op.memref)
    off = byte_offset(low, op, mem, [low.get(i) for i in op.indices])
    store(low, op, mem, off, low.get(op.value), op.value.type)


def _dim(low: KernelLowering, op: memref.DimOp) -> None:
    """memref.dim: a static size is a constant, a dynamic one the SGPR read from the
    kernel argument's descriptor (asterism.frontend.kernel)."""
    mem = memref_operand(low, op, op.source)
    index = low.get(op.index)
    sizes = mem.value.sizes
    if index.kind != "c":
        raise fail(op, "the dimension must be a constant")
    d = int(index.scalar)
    if not 0 <= d < len(sizes):
        raise fail(op, f"dimension {d} of a rank-{len(sizes)} memref")
    size = sizes[d]
    low.set(op.result, const_lv(size, op.result.type) if isinstance(size, int) else
            LV(size.kind, op.result.type, size.value))


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
    if any(isinstance(s, LV) for s in info.strides):
        raise fail(op, "a subview of a memref with a dynamic stride is not supported yet "
                       "(a dynamic size is: the view keeps the memref's runtime range)")
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
    view = dataclasses.replace(info, type=t, strides=strides, offset=start,
                               sizes=list(t.get_shape()))
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


# memref.atomic_rmw kinds -> the returning atomic (sc0: "return the pre-op value") on a global
# memref (MUBUF) and on LDS (DS ..._rtn), by element type; other kinds and types have none
_BUFFER_ATOMICS = {
    "i32": {"addi": "buffer_atomic_add", "andi": "buffer_atomic_and", "ori": "buffer_atomic_or",
            "xori": "buffer_atomic_xor", "assign": "buffer_atomic_swap",
            "maxs": "buffer_atomic_smax", "maxu": "buffer_atomic_umax",
            "mins": "buffer_atomic_smin", "minu": "buffer_atomic_umin"},
    "f32": {"addf": "buffer_atomic_add_f32", "assign": "buffer_atomic_swap"},
    "f64": {"addf": "buffer_atomic_add_f64", "assign": "buffer_atomic_swap_x2"},
}
_BUFFER_ATOMICS["i64"] = {k: v + "_x2" for k, v in _BUFFER_ATOMICS["i32"].items()}
_DS_ATOMICS = {
    "i32": {"addi": "ds_add_rtn_u32", "andi": "ds_and_rtn_b32", "ori": "ds_or_rtn_b32",
            "xori": "ds_xor_rtn_b32", "assign": "ds_wrxchg_rtn_b32",
            "maxs": "ds_max_rtn_i32", "maxu": "ds_max_rtn_u32",
            "mins": "ds_min_rtn_i32", "minu": "ds_min_rtn_u32"},
    "f32": {"addf": "ds_add_rtn_f32", "assign": "ds_wrxchg_rtn_b32"},
    "f64": {"addf": "ds_add_rtn_f64", "assign": "ds_wrxchg_rtn_b64"},
}
_DS_ATOMICS["i64"] = {k: v.replace("32", "64") for k, v in _DS_ATOMICS["i32"].items()}


# kinds with no atomic instruction, done by a compare-and-swap loop: kind -> the arith op
# that combines the old value with the operand, by element type
_CAS_KINDS = {
    "i32": {"muli": "arith.muli"},
    "f32": {"mulf": "arith.mulf", "maximumf": "arith.maximumf", "minimumf": "arith.minimumf",
            "maxnumf": "arith.maxnumf", "minnumf": "arith.minnumf"},
}
_CAS_KINDS["f64"] = dict(_CAS_KINDS["f32"])
def _atomic_rmw(low: KernelLowering, op: AtomicRMWOp) -> None:
    """memref.atomic_rmw: one returning atomic instruction (the old value is the result), or
    a compare-and-swap loop for the kinds with no instruction (`cas_loop`)."""
    from asterism.isa import get_isa

    mem = memref_operand(low, op, op.memref)
    info = mem.value
    kind, tn = op.kind_name(), type_name(op.value.type)
    table = _DS_ATOMICS if info.space == "workgroup" else _BUFFER_ATOMICS
    name = table.get(tn, {}).get(kind, "")
    isa = get_isa(low.target).instructions
    if not name or name not in isa:
        cas = _CAS_KINDS.get(tn, {}).get(kind)
        if cas is not None:
            off = byte_offset(low, op, mem, [low.get(i) for i in op.indices])
            low.set(op.result, cas_loop(low, op, mem, off, low.get(op.value), op.value.type,
                                              cas))
            return
        have = sorted({k for k, n in table.get(tn, {}).items() if n in isa} |
                      set(_CAS_KINDS.get(tn, {})))
        where = "LDS" if info.space == "workgroup" else "global memory"
        raise fail(op, f"kind '{kind}' on {tn} has no atomic instruction in {where} on "
                       f"{low.target} (kinds on {tn}: {', '.join(have) or 'none'})")
    off = byte_offset(low, op, mem, [low.get(i) for i in op.indices])
    kb = low.kb
    if info.space == "workgroup":
        old = kb.emit(name, None, address(low, mem, off), low.vgpr(low.get(op.value)))
    else:
        # the returning MUBUF atomic overwrites its data registers with the old value: copy
        # the value into fresh ones (it may be used again)
        n = reg_count(op.value.type)
        words = [kb.v_mov_b32(None, low.operand(w))
                 for w in words_of(low, low.get(op.value), n)]
        data = words[0] if n == 1 else kb.join(*words, align=2)
        old = kb.emit(name, data, low.vgpr(off), info.rsrc, 0, offen=True, sc0=True)
    low.set(op.result, LV("v", op.result.type, old))


HANDLERS: HandlerTable = {
    AtomicRMWOp: _atomic_rmw,
    memref.SubviewOp: _subview,
    memref.DimOp: _dim,
    memref.LoadOp: _memref_load,
    memref.StoreOp: _memref_store,
    memref.AllocOp: _alloc,
    memref.AllocaOp: _alloc,
}

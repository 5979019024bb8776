"""Lowering of the upstream `vector` ops: loads and stores (split in 16-byte accesses),
static extract/insert, broadcast, from_elements, bitcast, unit-stride extract_strided_slice,
f32 fma and in-lane reductions, on vectors packed little-endian in consecutive registers."""

from __future__ import annotations

from xdsl.dialects import vector
from xdsl.dialects.builtin import VectorType

from asterism.frontend.dialects.vector import ExtractStridedSliceOp, FromElementsOp, SplatOp
from asterism.frontend.emit import (
    align,
    elements,
    extract_bits,
    float_sources,
    int_binary,
    pack,
    words_of,
)
from asterism.frontend.lowering import HandlerTable, KernelLowering
from asterism.frontend.memory import byte_offset, load, memref_operand, store
from asterism.frontend.values import LV, elem_bits, fail, reg_count, type_bits, type_name


def _contiguous(op, mem: LV, t) -> None:
    """vector.load/store read consecutive elements: the memref's last stride must be 1."""
    if mem.value.strides and mem.value.strides[-1] != 1 and type_bits(t) > elem_bits(
            mem.type.element_type):
        raise fail(op, f"the memref's last dimension has stride {mem.value.strides[-1]}: "
                       "vector.load/store need unit stride (vector.transfer_read/write take "
                       "other strides)")


def _vector_load(low: KernelLowering, op: vector.LoadOp) -> None:
    mem = memref_operand(low, op, op.base)
    _contiguous(op, mem, op.result.type)
    off = byte_offset(low, op, mem, [low.get(i) for i in op.indices])
    low.set(op.result, load(low, op, mem, off, op.result.type))


def _vector_store(low: KernelLowering, op: vector.StoreOp) -> None:
    mem = memref_operand(low, op, op.base)
    _contiguous(op, mem, op.vector.type)
    off = byte_offset(low, op, mem, [low.get(i) for i in op.indices])
    store(low, op, mem, off, low.get(op.vector), op.vector.type)


def _static_pos(op, positions) -> list[int]:
    out = []
    for p in positions:
        if not isinstance(p, int) or p < 0:
            raise fail(op, "only static positions are supported")
        out.append(p)
    return out


def _flat(t: VectorType, pos: list[int]) -> int:
    shape = t.get_shape()
    flat = 0
    for d, p in zip(shape, pos):
        flat = flat * d + p
    return flat


def _extract(low: KernelLowering, op: vector.ExtractOp) -> None:
    if op.dynamic_position:
        raise fail(op, "only static positions are supported")
    vt = op.vector.type
    pos = _static_pos(op, list(op.static_position.get_values()))
    rt = op.result.type
    width = type_bits(rt)
    flat = _flat(vt, pos + [0] * (len(vt.get_shape()) - len(pos)))
    ebits = elem_bits(vt.element_type)
    low.set(op.result, extract_bits(low, low.get(op.vector), flat * ebits, width, rt))


def _insert(low: KernelLowering, op: vector.InsertOp) -> None:
    if op.dynamic_position:
        raise fail(op, "only static positions are supported")
    vt = op.dest.type
    pos = _static_pos(op, list(op.static_position.get_values()))
    ebits = elem_bits(vt.element_type)
    elems = elements(low, low.get(op.dest), vt)
    value = low.get(op.source)
    vbits = type_bits(op.source.type)
    first = _flat(vt, pos + [0] * (len(vt.get_shape()) - len(pos)))
    new = elements(low, value, op.source.type) if isinstance(op.source.type, VectorType) \
        else [value]
    del vbits
    elems[first:first + len(new)] = new
    low.set(op.result, pack(low, elems, ebits, vt))


def _broadcast(low: KernelLowering, op: vector.BroadcastOp | SplatOp) -> None:
    vt = op.vector.type if isinstance(op, vector.BroadcastOp) else op.result.type
    src_v = op.source if isinstance(op, vector.BroadcastOp) else op.input
    if isinstance(src_v.type, VectorType):
        raise fail(op, "only scalar sources are supported")
    ebits = elem_bits(vt.element_type)
    count = type_bits(vt) // ebits
    res = op.vector if isinstance(op, vector.BroadcastOp) else op.result
    low.set(res, pack(low, [low.get(src_v)] * count, ebits, vt))


def _from_elements(low: KernelLowering, op: FromElementsOp) -> None:
    vt = op.result.type
    low.set(op.result, pack(low, [low.get(v) for v in op.elements],
                            elem_bits(vt.element_type), vt))


def _vbitcast(low: KernelLowering, op: vector.BitcastOp) -> None:
    src = low.get(op.source)
    t = op.result.type
    if type_bits(t) != type_bits(op.source.type):
        raise fail(op, "the source and result sizes differ")
    low.set(op.result, LV(src.kind, t, src.value, scalar=None))


def _strided_slice(low: KernelLowering, op: ExtractStridedSliceOp) -> None:
    vt = op.source.type
    if len(vt.get_shape()) != 1:
        raise fail(op, "only 1-D vectors are supported")
    if any(s.value.data != 1 for s in op.strides.data):
        raise fail(op, "only unit strides are supported")
    off = op.offsets.data[0].value.data
    size = op.sizes.data[0].value.data
    ebits = elem_bits(vt.element_type)
    elems = elements(low, low.get(op.source), vt)[off:off + size]
    t = op.result.type
    src = low.get(op.source)
    if src.kind != "c" and (off * ebits) % 32 == 0 and (size * ebits) % 32 == 0:
        first, count = off * ebits // 32, size * ebits // 32
        value = src.value if count == src.regs else low.kb.sub(src.value, first,
                                                               first + count)
        low.set(op.result, LV(src.kind, t, value))
        return
    low.set(op.result, pack(low, elems, ebits, t))


def _vfma(low: KernelLowering, op: vector.FMAOp) -> None:
    t = op.res.type
    et = t.element_type if isinstance(t, VectorType) else t
    if type_name(et) != "f32":
        raise fail(op, "only f32 elements are supported")
    n = reg_count(t)
    parts = []
    for a, b, c in zip(*(words_of(low, low.get(v), n) for v in (op.lhs, op.rhs, op.acc))):
        srcs = float_sources(low, [a, b, c], et)
        parts.append(low.kb.v_fma_f32(None, *srcs))
    low.set(op.res, LV("v", t, parts[0] if n == 1 else low.kb.join(*parts, align=align(n))))


# vector.reduction kinds -> (float mnemonic stem, integer arith op name)
_REDUCE = {"add": ("v_add", "arith.addi"), "mul": ("v_mul", "arith.muli"),
           "maximumf": ("v_max", None), "minimumf": ("v_min", None),
           "maxnumf": ("v_max", None), "minnumf": ("v_min", None),
           "maxsi": (None, "arith.maxsi"), "minsi": (None, "arith.minsi"),
           "maxui": (None, "arith.maxui"), "minui": (None, "arith.minui"),
           "and": (None, "arith.andi"), "or": (None, "arith.ori"), "xor": (None, "arith.xori")}


def _reduction(low: KernelLowering, op: vector.ReductionOp) -> None:
    """vector.reduction: the elements of one work-item's vector combined in a tree of VALU
    ops (within the lane, as MLIR defines it; across lanes is gpu.shuffle's work), then the
    accumulator."""
    vt = op.vector.type
    et = vt.element_type
    kind = op.kind.data.value
    fstem, iname = _REDUCE.get(kind, (None, None))
    tn = type_name(et)
    if tn in ("f32", "f16") and fstem is not None:
        def combine(a: LV, b: LV) -> LV:
            x, y = float_sources(low, [a, b], et)
            if not hasattr(y, "type") or y.type.KIND != "v":
                x, y = y, x
                if not hasattr(y, "type") or y.type.KIND != "v":
                    y = low.vgpr(a)
            return LV("v", et, low.kb.emit(f"{fstem}_{tn}", None, x, y))
    elif tn in ("i32", "index") and iname is not None:
        def combine(a: LV, b: LV) -> LV:
            return int_binary(low, iname, a, b, et)
    else:
        raise fail(op, f"<{kind}> over {vt} is not supported (add, mul, max/min on f16/f32; "
                       "add, mul, max/min, and, or, xor on i32/index)")
    items = elements(low, low.get(op.vector), vt)
    while len(items) > 1:  # pairwise: log2(n) dependent steps
        items = [combine(items[k], items[k + 1]) if k + 1 < len(items) else items[k]
                 for k in range(0, len(items), 2)]
    result = items[0]
    if op.acc is not None:
        result = combine(result, low.get(op.acc))
    low.set(op.dest, result)


HANDLERS: HandlerTable = {
    vector.LoadOp: _vector_load,
    vector.StoreOp: _vector_store,
    vector.ExtractOp: _extract,
    vector.InsertOp: _insert,
    vector.BroadcastOp: _broadcast,
    SplatOp: _broadcast,
    FromElementsOp: _from_elements,
    vector.BitcastOp: _vbitcast,
    ExtractStridedSliceOp: _strided_slice,
    vector.FMAOp: _vfma,
    vector.ReductionOp: _reduction,
}

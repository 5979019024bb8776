"""Lowering of the vector ops that may touch memory partly: `vector.transfer_read/write`
(masks, `in_bounds`, permutation maps), `vector.maskedload/maskedstore` and the masks
`vector.create_mask` makes.

MLIR's semantics (VectorOps.td, vector.transfer_read): "An optional SSA value `mask` may be
specified to mask out elements read from the MemRef/Tensor. ... Elements whose corresponding
mask element is `0` are masked out and replaced with `padding`"; `in_bounds` says for every
vector dimension whether the transfer is guaranteed to stay within the source's bounds; where
it is false (the default) "accesses (including the starting point) may run out-of-bounds along
the respective vector dimension as the index increases" and those elements read `padding`.
transfer_write writes neither masked-out nor out-of-bounds elements. The permutation map names
the memref dimension each vector dimension runs along (a constant 0 broadcasts).

How it lowers, as by hand:

* Every transferred row (the vector's last dimension along the memref's last) that needs no
  check (`in_bounds = true`, or a constant start that fits; no mask) is one buffer load or
  store, as `vector.load/store` (16-byte pieces), at the instruction's offset field.
* Otherwise each element is one `buffer_load/store` whose VGPR offset is replaced by the
  buffer's size (`v_cndmask_b32`) where the element is out of bounds or masked out: the buffer
  resource's range check (num_records = the memref's size in bytes) then makes the load read 0
  and drops the store, in hardware; a non-zero padding is selected in after the load
  (`v_cndmask_b32`). The bounds check of an element k of dimension d is `i_d < size_d - k`
  (unsigned, so a start past the end is out of bounds too); a dynamic size (memref<?x...>)
  is the descriptor's, checked as `i_d + k < size_d` and the range is the runtime size.
* A mask is one bit per element (i1 vectors are held so); `vector.create_mask` builds it with
  integer ops (sizes clamped to [0, dim] as MLIR says of negative and large operands).

LDS (workgroup) memrefs have no range check: a transfer on them that needs one is an error.
"""

from __future__ import annotations

import itertools

from xdsl.dialects import vector
from xdsl.dialects.builtin import AffineMapAttr, IntegerType, MemRefType, VectorType, i32
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr

from asterism.frontend.emit import compare_int, extract_bits, int_binary, pack, select_value
from asterism.frontend.lowering import HandlerTable, KernelLowering
from asterism.frontend.memory import byte_offset, load, memref_operand, store
from asterism.frontend.values import LV, const_lv, elem_bits, fail, is_float, type_bits

MAX_INST_OFFSET = 4095  # the MUBUF offset field (12 bits)
MAX_MASK_BITS = 31  # a mask is one register of bits


def _dims(op, perm: AffineMapAttr | None, rank: int, vrank: int) -> list[int | None]:
    """The memref dimension each vector dimension runs along (None: broadcast)."""
    if perm is None:
        return list(range(rank - vrank, rank))
    out: list[int | None] = []
    for expr in perm.data.results:
        if isinstance(expr, AffineDimExpr):
            out.append(expr.position)
        elif isinstance(expr, AffineConstantExpr) and expr.value == 0:
            out.append(None)
        else:
            raise fail(op, f"permutation map {perm.data}: only dimensions and 0 "
                           "(broadcast) are supported")
    return out


def _in_bounds(op, vrank: int) -> list[bool]:
    attr = op.properties.get("in_bounds") or op.attributes.get("in_bounds")
    if attr is None:
        return [False] * vrank
    return [bool(b.value.data) for b in attr.data]


def _mask_bits(t: VectorType) -> int:
    count = 1
    for d in t.get_shape():
        count *= d
    return count


def _and(low: KernelLowering, a: LV | None, b: LV | None) -> LV | None:
    """a && b on i1 (0/1) values; None stands for true."""
    if a is None:
        return b
    if b is None:
        return a
    return int_binary(low, "arith.andi", a, b, IntegerType(1))


def _is_true(valid: LV | None) -> bool:
    return valid is None or valid.kind == "c" and bool(valid.scalar)


def _is_false(valid: LV | None) -> bool:
    return valid is not None and valid.kind == "c" and not valid.scalar


def _padding(pad, k: int, et) -> LV:
    """Element k's padding (0 when `pad` is None)."""
    return pad(k) if pad is not None else const_lv(0.0 if is_float(et) else 0, et)


def _element_checks(low: KernelLowering, op, mem: LV, indices: list[LV],
                    dims: list[int | None], in_bounds: list[bool], pos: tuple[int, ...],
                    skip_last: bool = False) -> LV | None:
    """Whether the element at vector position `pos` is within the memref (None: always),
    for the dimensions not declared in bounds (the last one left out when `skip_last`). A
    dynamic size (an SGPR from the memref descriptor) is checked as `i_d + k < size_d`."""
    sizes = mem.value.sizes
    valid = None
    for j, (d, k) in enumerate(zip(dims, pos)):
        if d is None or in_bounds[j] or (skip_last and j == len(dims) - 1):
            continue
        if not isinstance(sizes[d], int):
            at = int_binary(low, "arith.addi", indices[d], const_lv(k, i32), i32)
            valid = _and(low, valid, compare_int(low, "ult", at, sizes[d]))
            continue
        limit = sizes[d] - k
        if limit <= 0:
            return const_lv(0, IntegerType(1))
        valid = _and(low, valid, compare_int(low, "ult", indices[d], const_lv(limit, i32)))
    return valid


def _row_needs_no_check(indices: list[LV], dims, in_bounds: list[bool], mem: LV,
                        length: int, masked: bool) -> bool:
    """A row along the memref's last dimension that can be one access: declared in bounds
    (or a constant start that fits a static size) and not masked."""
    sizes = mem.value.sizes
    last = len(sizes) - 1
    if masked or dims[-1] != last:
        return False
    start = indices[last]
    fits = start.kind == "c" and isinstance(sizes[last], int) and 0 <= int(start.scalar) and \
        int(start.scalar) + length <= sizes[last]
    return in_bounds[-1] or fits


def _guarded_offset(low: KernelLowering, op, mem: LV, off: LV, valid: LV | None) -> LV:
    """The byte offset of an access, replaced by the buffer's size (out of range: loads
    read 0, stores are dropped) where `valid` is 0."""
    if _is_true(valid):
        return off
    if mem.value.space == "workgroup":
        raise fail(op, "an access to workgroup (LDS) memory that may be out of bounds or "
                       "masked: LDS has no range check (declare in_bounds = [true] without "
                       "a mask, or use a global memref)")
    nbytes = mem.value.nbytes  # (an LV when a size is dynamic)
    return select_value(low, valid, off, nbytes if isinstance(nbytes, LV) else
                        const_lv(nbytes, i32), i32)


def _split_offset(low: KernelLowering, base: LV, delta: int) -> tuple[LV, int]:
    """(VGPR offset, instruction offset) for byte `base + delta`: the constant part in the
    instruction's offset field when it fits."""
    if 0 <= delta <= MAX_INST_OFFSET:
        return base, delta
    return int_binary(low, "arith.addi", base, const_lv(delta, i32), i32), 0


def _positions(shape) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(d) for d in shape)))


def _transfer(low: KernelLowering, op, mem_value, index_values, vt: VectorType, perm,
              in_bounds: list[bool], mask: LV | None, value: LV | None, pad):
    """A transfer_read (`value` None: returns the read vector) or write of `value`; `pad`
    gives the padding of element k of a read (an LV) or is None (0: what the range check
    reads)."""
    mem = memref_operand(low, op, mem_value)
    mem_t = mem.type
    if not isinstance(mem_t, MemRefType):
        raise fail(op, "only memrefs are supported (tensors are not)")
    shape = list(vt.get_shape())
    dims = _dims(op, perm, len(mem_t.get_shape()), len(shape))
    if any(d is not None and not isinstance(mem.value.strides[d], int) for d in dims):
        raise fail(op, "a vector dimension runs along a memref dimension whose stride is "
                       "dynamic; only dimensions of static stride are supported (e.g. the "
                       "last one)")
    indices = [low.get(i) for i in index_values]
    et = vt.element_type
    ebits = elem_bits(et)
    if ebits not in (8, 16, 32, 64):
        raise fail(op, f"elements of {ebits} bits are not supported (8, 16, 32, 64)")
    ebytes = ebits // 8
    base = byte_offset(low, op, mem, indices)
    strides = mem.value.strides
    if mask is not None and (_mask_bits(vt) > MAX_MASK_BITS):
        raise fail(op, f"a mask of more than {MAX_MASK_BITS} elements is not supported")
    elems = [None] * _mask_bits(vt) if value is None else _elements(low, value, vt)
    rows = _positions(shape[:-1])
    n = shape[-1]
    row_t = VectorType(et, [n])
    for row in rows:
        row_pos = row + (0,)
        if strides[-1] == 1 and \
                _row_needs_no_check(indices, dims, in_bounds, mem, n, mask is not None) and \
                type_bits(row_t) // 8 in (1, 2, 4, 8, 12) + tuple(range(16, 1 << 16, 16)):
            delta = sum(k * strides[d] for d, k in zip(dims, row_pos) if d is not None) * ebytes
            valid = _element_checks(low, op, mem, indices, dims, in_bounds, row_pos,
                                    skip_last=True)
            off, inst = _split_offset(low, _guarded_offset(low, op, mem, base, valid), delta)
            first = _linear(row_pos, shape)
            if _is_false(valid):  # known out of bounds: nothing to access
                if value is None:
                    elems[first:first + n] = [_padding(pad, first + k, et) for k in range(n)]
                continue
            if value is None:
                got = load(low, op, mem, off, row_t, inst_offset=inst)
                if len(rows) == 1 and (_is_true(valid) or pad is None):
                    return LV(got.kind, vt, got.value)  # one load is the whole vector
                parts = _elements(low, got, row_t)
                if not _is_true(valid) and pad is not None:
                    parts = [select_value(low, valid, p, pad(first + k), et)
                             for k, p in enumerate(parts)]
                elems[first:first + n] = parts
            else:
                store(low, op, mem, off, pack(low, elems[first:first + n], ebits, row_t), row_t,
                      inst_offset=inst)
            continue
        for k in range(n):
            pos = row + (k,)
            lin = _linear(pos, shape)
            delta = sum(p * strides[d] for d, p in zip(dims, pos) if d is not None) * ebytes
            valid = _element_checks(low, op, mem, indices, dims, in_bounds, pos)
            if mask is not None:
                valid = _and(low, valid, extract_bits(low, mask, lin, 1, IntegerType(1)))
            if _is_false(valid):  # known out of bounds or masked out: nothing to access
                if value is None:
                    elems[lin] = _padding(pad, lin, et)
                continue
            off, inst = _split_offset(low, _guarded_offset(low, op, mem, base, valid), delta)
            if value is None:
                got = load(low, op, mem, off, et, inst_offset=inst)
                if not _is_true(valid) and pad is not None:
                    got = select_value(low, valid, got, pad(lin), et)
                elems[lin] = got
            else:
                store(low, op, mem, off, elems[lin], et, inst_offset=inst)
    if value is None:
        return pack(low, elems, ebits, vt)
    return None


def _linear(pos: tuple[int, ...], shape: list[int]) -> int:
    lin = 0
    for p, d in zip(pos, shape):
        lin = lin * d + p
    return lin


def _elements(low: KernelLowering, lv: LV, vt: VectorType) -> list[LV]:
    ebits = elem_bits(vt.element_type)
    return [extract_bits(low, lv, k * ebits, ebits, vt.element_type)
            for k in range(_mask_bits(vt))]


def _scalar_pad(low: KernelLowering, op, padding) -> object:
    """The padding of every element (None when it is 0: what the range check reads)."""
    pad = low.get(padding)
    if pad.kind == "c" and all(w == 0 for w in pad.value):
        return None
    if isinstance(padding.type, VectorType):
        raise fail(op, "a vector padding is not supported (a scalar of the element type)")
    return lambda _k: pad


def _transfer_read(low: KernelLowering, op: vector.TransferReadOp) -> None:
    vt = op.result.type
    mask = low.get(op.mask) if op.mask is not None else None
    _check_mask(op, op.permutation_map, mask)
    low.set(op.result, _transfer(low, op, op.source, op.indices, vt, op.permutation_map,
                                 _in_bounds(op, len(vt.get_shape())), mask, None,
                                 _scalar_pad(low, op, op.padding)))


def _transfer_write(low: KernelLowering, op: vector.TransferWriteOp) -> None:
    vt = op.vector.type
    mask = low.get(op.mask) if op.mask is not None else None
    _check_mask(op, op.permutation_map, mask)
    _transfer(low, op, op.source, op.indices, vt, op.permutation_map,
              _in_bounds(op, len(vt.get_shape())), mask, low.get(op.vector), None)


def _check_mask(op, perm, mask) -> None:
    if mask is None or perm is None:
        return
    results = perm.data.results
    rank = perm.data.num_dims
    minor = all(isinstance(e, AffineDimExpr) and e.position == rank - len(results) + k
                for k, e in enumerate(results))
    if not minor:
        raise fail(op, "a mask with a permutation map other than the minor identity is not "
                       "supported")


def _masked_load(low: KernelLowering, op: vector.MaskedLoadOp) -> None:
    vt = op.result.type
    passthru = low.get(op.pass_thru)
    parts = _elements(low, passthru, vt)
    pad = None if passthru.kind == "c" and all(w == 0 for w in passthru.value) else \
        (lambda k: parts[k])
    # (MLIR: "If the index is out-of-bounds, the behavior is undefined" for unmasked lanes:
    # the dimension is in bounds, only the mask decides)
    low.set(op.result, _transfer(low, op, op.base, op.indices, vt, None, [True],
                                 low.get(op.mask), None, pad))


def _masked_store(low: KernelLowering, op: vector.MaskedStoreOp) -> None:
    vt = op.value_to_store.type
    _transfer(low, op, op.base, op.indices, vt, None, [True], low.get(op.mask),
              low.get(op.value_to_store), None)


def _create_mask(low: KernelLowering, op: vector.CreateMaskOp) -> None:
    """Bit k of the mask (row-major) is set when every position is below its size."""
    t = op.mask_vector.type
    shape = list(t.get_shape())
    if _mask_bits(t) > MAX_MASK_BITS:
        raise fail(op, f"a mask of more than {MAX_MASK_BITS} elements is not supported")
    sizes = [low.get(v) for v in op.mask_dim_sizes]
    n = shape[-1]
    # MLIR: sizes below 0 count as 0 and above the dimension as the dimension
    last = int_binary(low, "arith.minsi", int_binary(low, "arith.maxsi", sizes[-1],
                                                     const_lv(0, i32), i32),
                      const_lv(n, i32), i32)
    row = int_binary(low, "arith.subi", int_binary(low, "arith.shli", const_lv(1, i32), last,
                                                   i32), const_lv(1, i32), i32)
    bits = const_lv(0, i32)
    for outer in _positions(shape[:-1]):
        piece = row
        for d, k in enumerate(outer):
            keep = compare_int(low, "slt", const_lv(k, i32), sizes[d])
            piece = select_value(low, keep, piece, const_lv(0, i32), i32)
        shift = _linear(outer + (0,), shape)
        if shift:
            piece = int_binary(low, "arith.shli", piece, const_lv(shift, i32), i32)
        bits = int_binary(low, "arith.ori", bits, piece, i32)
    if bits.kind == "c":  # (element k's bit as the scalar of element k, as constants hold)
        word = bits.value[0]
        bits = LV("c", t, [word], scalar=[(word >> k) & 1 for k in range(_mask_bits(t))])
    low.set(op.mask_vector, LV(bits.kind, t, bits.value, scalar=bits.scalar))


HANDLERS: HandlerTable = {
    vector.TransferReadOp: _transfer_read,
    vector.TransferWriteOp: _transfer_write,
    vector.MaskedLoadOp: _masked_load,
    vector.MaskedStoreOp: _masked_store,
    vector.CreateMaskOp: _create_mask,
}

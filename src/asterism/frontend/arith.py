"""Lowering of the upstream `arith` ops: constants (folded into their uses), 32-bit integer
arithmetic (SALU when uniform, constant division by powers of two only), comparisons and
selects, casts, and f16/f32/f64 arithmetic (vectors of f32 elementwise)."""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    VectorType,
    i32,
)
from xdsl.irdl import IRDLOperation

from asterism.frontend.dialects.arith import CmpfOp, CmpiOp, SelectOp
from asterism.frontend.emit import (
    INT_FOLD,
    INT_OPS,
    MASK32,
    align,
    compare_int,
    elements,
    float_binary,
    float_sources,
    int_binary,
    pack,
    pow2,
    select_value,
    words_of,
)
from asterism.frontend.lowering import HandlerTable, KernelLowering
from asterism.frontend.values import (
    LV,
    LoweringError,
    const_lv,
    const_words,
    elem_bits,
    fail,
    is_float,
    reg_count,
    signed32,
    type_bits,
    type_name,
)


def _const_values(attr, t) -> list:
    if isinstance(attr, IntegerAttr):
        return [attr.value.data]
    if isinstance(attr, FloatAttr):
        return [attr.value.data]
    if isinstance(attr, DenseIntOrFPElementsAttr):
        vals = list(attr.get_values())
        count = 1
        for d in t.get_shape():
            count *= d
        return vals * count if len(vals) == 1 else vals
    raise LoweringError(f"constant {attr} is not supported")


def _constant(low: KernelLowering, op: arith.ConstantOp) -> None:
    t = op.result.type
    vals = _const_values(op.value, t)
    if isinstance(t, VectorType):
        low.set(op.result, LV("c", t, const_words(vals, t.element_type), scalar=vals))
    else:
        low.set(op.result, const_lv(vals[0], t))


def _div_rem(low: KernelLowering, op, a: LV, b: LV) -> LV:
    t = op.result.type
    name = op.name
    shift = pow2(b)
    if shift is None:
        raise fail(op, "divides by a value that is not a constant power of two (only those "
                       "are supported)")
    sh = const_lv(shift, t)
    if name in ("arith.divui",):
        return int_binary(low, "arith.shrui", a, sh, t)
    if name == "arith.remui":
        return int_binary(low, "arith.andi", a, const_lv((1 << shift) - 1, t), t)
    if name == "arith.floordivsi":
        return int_binary(low, "arith.shrsi", a, sh, t)
    if name == "arith.ceildivui":
        bias = int_binary(low, "arith.addi", a, const_lv((1 << shift) - 1, t), t)
        return int_binary(low, "arith.shrui", bias, sh, t)
    # signed division rounds toward zero: add (2^s - 1) to negative dividends first
    sign = int_binary(low, "arith.shrsi", a, const_lv(31, t), t)
    bias = int_binary(low, "arith.shrui", sign, const_lv(32 - shift, t), t) if shift else \
        const_lv(0, t)
    if name == "arith.ceildivsi":
        raise fail(op, "ceildivsi is supported only with constant operands")
    q = int_binary(low, "arith.shrsi", int_binary(low, "arith.addi", a, bias, t), sh, t)
    if name == "arith.divsi":
        return q
    return int_binary(low, "arith.subi", a, int_binary(low, "arith.shli", q, sh, t), t)


def _int_op(low: KernelLowering, op: IRDLOperation) -> None:
    t = op.result.type
    if isinstance(t, VectorType) or type_bits(t) > 32:
        raise fail(op, f"type {t} is not supported (32-bit integers and index)")
    a, b = low.get(op.lhs), low.get(op.rhs)
    if op.name in INT_OPS:
        res = int_binary(low, op.name, a, b, t, low.dest(op.result, "v" if not (
            a.uniform and b.uniform) else "s"))
    elif a.kind == "c" and b.kind == "c":
        if b.scalar == 0:
            raise fail(op, "division by zero")
        res = const_lv(INT_FOLD[op.name](a.scalar, b.scalar) & MASK32, t)
    else:
        res = _div_rem(low, op, a, b)
    if isinstance(t, IntegerType) and t.width.data < 32 and res.kind != "c":
        res = int_binary(low, "arith.andi", res, const_lv((1 << t.width.data) - 1, i32), t)
    low.set(op.result, res)


_CMPI = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


def _elementwise_compare(low: KernelLowering, op, compare) -> None:
    """A comparison of scalars, or of vectors element by element: the i1 vector result
    packed one bit per element (bit k = element k), as vectors of i1 are held."""
    t = op.lhs.type
    if not isinstance(t, VectorType):
        low.set(op.result, compare(low.get(op.lhs), low.get(op.rhs), t))
        return
    et = t.element_type
    bits = [compare(x, y, et) for x, y in zip(elements(low, low.get(op.lhs), t),
                                              elements(low, low.get(op.rhs), t))]
    low.set(op.result, pack(low, bits, 1, op.result.type))


def _cmpi(low: KernelLowering, op: CmpiOp) -> None:
    base = op.lhs.type.element_type if isinstance(op.lhs.type, VectorType) else op.lhs.type
    if type_bits(base) > 32:
        raise fail(op, f"comparing {op.lhs.type} is not supported (32-bit integers, index "
                       "and vectors of them)")
    pred = _CMPI[op.predicate.value.data]
    _elementwise_compare(low, op, lambda a, b, t: compare_int(low, pred, a, b))


_CMPF = ["f", "eq", "gt", "ge", "lt", "le", "lg", "o", "nlg", "nle", "nlt", "nge", "ngt", "neq",
         "u", "tru"]
# The predicate with its operands swapped (a < b is b > a).
_CMPF_SWAPPED = {"gt": "lt", "lt": "gt", "ge": "le", "le": "ge", "ngt": "nlt", "nlt": "ngt",
                 "nge": "nle", "nle": "nge"}


def compare_float(low: KernelLowering, pred: str, a: LV, b: LV, t) -> LV:
    """An i1 (0/1 in a VGPR) from comparing two floats with the v_cmp suffix `pred`."""
    tn = type_name(t)
    if tn not in ("f32", "f16", "f64"):
        raise LoweringError(f"comparing {t} is not supported (f16, f32, f64 and vectors of "
                            "them)")
    kb = low.kb
    x, y = float_sources(low, [a, b], t)
    if b.kind != "v":
        # VOPC takes a VGPR second: a constant or SGPR on the right goes first, the
        # comparison turned round (x > 0.0 is 0.0 < x)
        if a.kind == "v":
            x, y, pred = y, x, _CMPF_SWAPPED.get(pred, pred)
        else:
            y = low.vgpr(b)
    kb.emit(f"v_cmp_{pred}_{tn}", kb.vcc, x, y)
    return LV("v", IntegerType(1), kb.v_cndmask_b32(None, 0, 1, kb.vcc))


def _cmpf(low: KernelLowering, op: CmpfOp) -> None:
    pred = _CMPF[op.predicate.value.data]
    _elementwise_compare(low, op, lambda a, b, t: compare_float(low, pred, a, b, t))


def _vector_select(low: KernelLowering, op: SelectOp) -> None:
    """select with an i1 vector condition: element k of the result is element k of the true
    or the false value as bit k of the condition says."""
    t = op.result.type
    c = low.get(op.cond)
    kb = low.kb
    parts = []
    for k, (x, y) in enumerate(zip(elements(low, low.get(op.lhs), t),
                                   elements(low, low.get(op.rhs), t))):
        if c.kind == "c":
            parts.append(x if (c.value[0] >> k) & 1 else y)
            continue
        if c.kind == "v":
            kb.v_cmp_ne_u32(kb.vcc, 0, kb.v_and_b32(None, low.operand(const_lv(1 << k, i32)),
                                                   c.value))
        else:
            kb.s_bitcmp1_b32(c.value, k)
            kb.s_cselect_b64(kb.vcc, -1, 0)
        parts.append(LV("v", t.element_type, kb.v_cndmask_b32(None, low.vgpr(y), low.vgpr(x),
                                                              kb.vcc)))
    low.set(op.result, pack(low, parts, elem_bits(t.element_type), t))


def _select(low: KernelLowering, op: SelectOp) -> None:
    if isinstance(op.cond.type, VectorType):
        _vector_select(low, op)
        return
    low.set(op.result, select_value(low, low.get(op.cond), low.get(op.lhs), low.get(op.rhs),
                                    op.result.type))


def _identity_cast(low: KernelLowering, op: arith.IndexCastOp | arith.BitcastOp) -> None:
    src = low.get(op.input)
    t = op.result.type
    if type_bits(op.input.type) == 64 and type_bits(t) <= 32 and src.kind != "c":
        low.set(op.result, LV(src.kind, t, low.kb.sub(src.value, 0)))
        return
    if type_bits(t) > 32 and type_bits(op.input.type) <= 32 and not isinstance(op, arith.BitcastOp):
        raise fail(op, f"casting to {t} is not supported (64-bit index arithmetic)")
    if src.kind == "c":
        vals = src.scalar
        if isinstance(op, arith.BitcastOp):
            low.set(op.result, LV("c", t, src.value, scalar=None))
        else:
            low.set(op.result, const_lv(vals, t))
        return
    low.set(op.result, LV(src.kind, t, src.value))


def _int_cast(low: KernelLowering, op: arith.ExtUIOp | arith.ExtSIOp | arith.TruncIOp) -> None:
    src = low.get(op.input)
    t = op.result.type
    src_bits, dst_bits = type_bits(op.input.type), type_bits(t)
    from_bits = elem_bits(op.input.type)
    if dst_bits > 32:
        raise fail(op, f"{t} results are not supported (at most 32 bits)")
    if isinstance(op, arith.TruncIOp):
        width = elem_bits(t)
        res = int_binary(low, "arith.andi", src, const_lv((1 << width) - 1, i32), t)
    elif isinstance(op, arith.ExtUIOp) or from_bits >= 32:
        res = LV(src.kind, t, src.value, scalar=src.scalar) if src.kind != "c" else \
            const_lv(src.scalar, t)
    else:
        shift = const_lv(32 - from_bits, i32)
        res = int_binary(low, "arith.shrsi", int_binary(low, "arith.shli", src, shift, t),
                         shift, t)
    del src_bits
    low.set(op.result, res)


def _float_op(low: KernelLowering, op: IRDLOperation) -> None:
    a, b = low.get(op.lhs), low.get(op.rhs)
    low.set(op.result, float_binary(low, op.name, a, b, op.result.type,
                                    low.dest(op.result)))


def _negf(low: KernelLowering, op: arith.NegfOp) -> None:
    t = op.result.type
    et = t.element_type if isinstance(t, VectorType) else t
    sign = {"f32": 0x80000000, "f16": 0x8000, "bf16": 0x8000}.get(type_name(et))
    if sign is None:
        raise fail(op, f"{t} is not supported (f16, bf16, f32 and vectors of them)")
    if isinstance(t, VectorType) and sign == 0x8000:
        sign |= sign << 16  # both halves of a register of two 16-bit elements
    n = reg_count(t)
    out = []
    for src in words_of(low, low.get(op.operand), n):
        x, y = low.valu_operands([const_lv(signed32(sign), i32), src])
        if not hasattr(y, "type") or y.type.KIND != "v":
            y = low.vgpr(src)
        out.append(low.kb.v_xor_b32(None, x, y))
    low.set(op.result, LV("v", t, out[0] if n == 1 else low.kb.join(*out, align=align(n))))


_CVT = {
    ("arith.sitofp", "i32", "f32"): "v_cvt_f32_i32", ("arith.uitofp", "i32", "f32"):
    "v_cvt_f32_u32", ("arith.fptosi", "f32", "i32"): "v_cvt_i32_f32",
    ("arith.fptoui", "f32", "i32"): "v_cvt_u32_f32", ("arith.extf", "f16", "f32"):
    "v_cvt_f32_f16", ("arith.truncf", "f32", "f16"): "v_cvt_f16_f32",
    ("arith.extf", "f32", "f64"): "v_cvt_f64_f32", ("arith.truncf", "f64", "f32"):
    "v_cvt_f32_f64", ("arith.sitofp", "index", "f32"): "v_cvt_f32_i32",
    ("arith.uitofp", "index", "f32"): "v_cvt_f32_u32",
}


def _float_cast(low: KernelLowering, op: IRDLOperation) -> None:
    src_t, dst_t = op.input.type, op.result.type
    if isinstance(dst_t, VectorType):  # elementwise, packed again
        parts = [_cast_scalar(low, op, e, src_t.element_type, dst_t.element_type)
                 for e in elements(low, low.get(op.input), src_t)]
        low.set(op.result, pack(low, parts, elem_bits(dst_t.element_type), dst_t))
        return
    low.set(op.result, _cast_scalar(low, op, low.get(op.input), src_t, dst_t))


def _cast_scalar(low: KernelLowering, op, src: LV, src_t, dst_t) -> LV:
    key = (op.name, type_name(src_t), type_name(dst_t))
    kb = low.kb
    if key == ("arith.extf", "bf16", "f32"):
        return int_binary(low, "arith.shli", src, const_lv(16, i32), dst_t)
    mnemonic = _CVT.get(key)
    if mnemonic is None:
        raise fail(op, f"{src_t} to {dst_t} is not supported (i32/index <-> f32, f16 <-> f32, "
                       "f32 <-> f64, bf16 -> f32)")
    (x,) = float_sources(low, [src], src_t) if is_float(src_t) else low.valu_operands([src])
    return LV("v", dst_t, kb.emit(mnemonic, None, x))


# The integer binary ops (their arith names are the keys of emit.INT_FOLD).
INT_BINARY_OPS = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.AndIOp, arith.OrIOp,
                  arith.XOrIOp, arith.ShLIOp, arith.ShRUIOp, arith.ShRSIOp, arith.MaxSIOp,
                  arith.MinSIOp, arith.MaxUIOp, arith.MinUIOp, arith.DivUIOp, arith.RemUIOp,
                  arith.DivSIOp, arith.RemSIOp, arith.FloorDivSIOp, arith.CeilDivSIOp,
                  arith.CeilDivUIOp)
FLOAT_BINARY_OPS = (arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.MaximumfOp,
                    arith.MinimumfOp, arith.MaxnumfOp, arith.MinnumfOp, arith.DivfOp)
FLOAT_CASTS = (arith.SIToFPOp, arith.UIToFPOp, arith.FPToSIOp, arith.FPToUIOp, arith.ExtFOp,
               arith.TruncFOp)

HANDLERS: HandlerTable = {
    arith.ConstantOp: _constant,
    **dict.fromkeys(INT_BINARY_OPS, _int_op),
    CmpiOp: _cmpi,
    CmpfOp: _cmpf,
    SelectOp: _select,
    arith.IndexCastOp: _identity_cast,
    arith.BitcastOp: _identity_cast,
    arith.ExtUIOp: _int_cast,
    arith.ExtSIOp: _int_cast,
    arith.TruncIOp: _int_cast,
    **dict.fromkeys(FLOAT_BINARY_OPS, _float_op),
    arith.NegfOp: _negf,
    **dict.fromkeys(FLOAT_CASTS, _float_cast),
}

__all__ = ["HANDLERS", "compare_float"]

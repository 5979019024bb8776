"""Lowering of the upstream `math` ops a kernel's arithmetic uses, to the transcendental unit
as a hand-writer would: `exp2` = `v_exp_f32` (2^x), `log2` = `v_log_f32`, `exp` = x * log2(e)
then `v_exp_f32`, `log` = `v_log_f32` then * ln(2), `rsqrt` = `v_rsq_f32`, `sqrt` =
`v_sqrt_f32`, `fma` = `v_fma_f32` (`v_pk_fma_f16` on f16 vectors), `absf` = clearing the sign
bit. f16 uses the f16 forms, vectors go element by element. The transcendental instructions are
about 1 ulp (not the correctly rounded results libm gives)."""

from __future__ import annotations

import math as pymath

from xdsl.dialects import math
from xdsl.dialects.builtin import VectorType, i32

from asterism.frontend.emit import align, elements, float_sources, pack, words_of
from asterism.frontend.lowering import HandlerTable, KernelLowering
from asterism.frontend.values import (
    LV,
    const_lv,
    elem_bits,
    fail,
    reg_count,
    signed32,
    type_name,
)

# op -> (hardware unit op, multiplier before, multiplier after)
_UNARY = {
    "math.exp2": ("v_exp", None, None),
    "math.exp": ("v_exp", 1.0 / pymath.log(2.0), None),
    "math.log2": ("v_log", None, None),
    "math.log": ("v_log", None, pymath.log(2.0)),
    "math.rsqrt": ("v_rsq", None, None),
    "math.sqrt": ("v_sqrt", None, None),
}


def _scalar_unary(low: KernelLowering, op, x: LV, t) -> LV:
    tn = type_name(t)
    if tn not in ("f32", "f16"):
        raise fail(op, f"{t} is not supported (f16, f32 and vectors of them)")
    kb = low.kb
    if op.name == "math.absf":
        mask = 0x7FFFFFFF if tn == "f32" else 0x7FFF
        a, b = low.valu_operands([const_lv(signed32(mask), i32), x])
        return LV("v", t, kb.v_and_b32(None, a, b if x.kind == "v" else low.vgpr(x)))
    unit, before, after = _UNARY[op.name]
    (src,) = float_sources(low, [x], t)
    if before is not None:
        src = kb.emit(f"v_mul_{tn}", None, low.sgpr(const_lv(before, t)) if tn == "f32"
                      else low.vgpr(const_lv(before, t)), low.vgpr(x))
    res = kb.emit(f"{unit}_{tn}", None, src)
    if after is not None:
        res = kb.emit(f"v_mul_{tn}", None, low.sgpr(const_lv(after, t)) if tn == "f32"
                      else low.vgpr(const_lv(after, t)), res)
    return LV("v", t, res)


def _unary(low: KernelLowering, op) -> None:
    t = op.result.type
    src = low.get(op.operand)
    if isinstance(t, VectorType):
        et = t.element_type
        parts = [_scalar_unary(low, op, e, et) for e in elements(low, src, t)]
        low.set(op.result, pack(low, parts, elem_bits(et), t))
        return
    low.set(op.result, _scalar_unary(low, op, src, t))


def _fma(low: KernelLowering, op: math.FmaOp) -> None:
    t = op.result.type
    a, b, c = low.get(op.a), low.get(op.b), low.get(op.c)
    kb = low.kb
    et = t.element_type if isinstance(t, VectorType) else t
    tn = type_name(et)
    if tn not in ("f16", "f32", "f64"):
        raise fail(op, f"{t} is not supported (f16, f32, f64 and vectors of them)")
    if isinstance(t, VectorType) and tn == "f16":  # two elements per instruction
        n = reg_count(t)
        out = [kb.v_pk_fma_f16(None, low.vgpr(x), low.vgpr(y), low.vgpr(z)) for x, y, z in
               zip(words_of(low, a, n), words_of(low, b, n), words_of(low, c, n))]
        low.set(op.result, LV("v", t, out[0] if n == 1 else kb.join(*out, align=align(n))))
        return
    if isinstance(t, VectorType):
        parts = [LV("v", et, kb.emit(f"v_fma_{tn}", None, *float_sources(low, [x, y, z], et)))
                 for x, y, z in zip(elements(low, a, t), elements(low, b, t),
                                    elements(low, c, t))]
        low.set(op.result, pack(low, parts, elem_bits(et), t))
        return
    low.set(op.result, LV("v", t, kb.emit(f"v_fma_{tn}", None,
                                          *float_sources(low, [a, b, c], t))))


UNARY_OPS = (math.Exp2Op, math.ExpOp, math.Log2Op, math.LogOp, math.RsqrtOp, math.SqrtOp,
             math.AbsFOp)

HANDLERS: HandlerTable = {
    **dict.fromkeys(UNARY_OPS, _unary),
    math.FmaOp: _fma,
}

__all__ = ["HANDLERS"]

"""Op lowerings of the upstream `gpu`, `arith`, `scf`, `memref`, `vector` and `func` dialects
(the driver: asterism.passes.lower_upstream; the value model: asterism.frontend.values)."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    VectorType,
    i32,
)
from xdsl.ir import Operation

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
from asterism.passes.lower_upstream import DEFAULT_BLOCK, KernelLowering, handles

# ----------------------------------------------------------------------------- uniformity

_UNIFORM_OPS = {
    "arith.constant", "arith.addi", "arith.subi", "arith.muli", "arith.andi", "arith.ori",
    "arith.xori", "arith.shli", "arith.shrui", "arith.shrsi", "arith.maxsi", "arith.minsi",
    "arith.maxui", "arith.minui", "arith.divui", "arith.remui", "arith.divsi", "arith.remsi",
    "arith.floordivsi", "arith.ceildivsi", "arith.ceildivui", "arith.cmpi", "arith.select",
    "arith.index_cast", "arith.index_castui", "arith.extui", "arith.extsi", "arith.trunci",
    "gpu.block_id", "gpu.block_dim", "gpu.grid_dim",
}


def _scalar_int(t) -> bool:
    return isinstance(t, IndexType | IntegerType) and type_bits(t) <= 32


def divergent_values(func_op) -> set:
    """Values that may differ between lanes or need VGPRs (floats, vectors), by a fixpoint
    over the function: the rest can live in SGPRs."""
    div: set = set()
    changed = True
    while changed:
        changed = False

        def mark(v) -> None:
            nonlocal changed
            if v not in div:
                div.add(v)
                changed = True

        for op in func_op.walk():
            if op.name == "scf.for":
                body = op.body.blocks[0]
                if any(v in div for v in (op.lb, op.ub, op.step)):
                    mark(body.args[0])
                yld = body.last_op
                for k, (init, arg, res) in enumerate(zip(op.iter_args, body.args[1:],
                                                         op.results)):
                    if (init in div or yld.operands[k] in div
                            or not _scalar_int(arg.type)):
                        mark(arg)
                        mark(res)
            elif op.name == "scf.if":
                yields = [r.blocks[0].last_op for r in op.regions if r.blocks]
                for k, res in enumerate(op.results):
                    if op.cond in div or not _scalar_int(res.type) or any(
                            y.operands[k] in div for y in yields):
                        mark(res)
            else:
                for res in op.results:
                    if (op.name not in _UNIFORM_OPS or not _scalar_int(res.type)
                            or any(o in div for o in op.operands)):
                        mark(res)
    return div


def _divergent(low: KernelLowering, value) -> bool:
    if not hasattr(low, "_div"):
        low._div = divergent_values(low.func)
    return value in low._div


# ----------------------------------------------------------------------------- gpu


@handles("gpu.thread_id", "gpu.lane_id")
def _thread_id(low: KernelLowering, op) -> None:
    kb = low.kb
    if op.name == "gpu.lane_id":
        tid = kb.v_mbcnt_hi_u32_b32(None, -1, kb.v_mbcnt_lo_u32_b32(None, -1, 0))
        low.set(op.result, LV("v", op.result.type, tid))
        return
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


@handles("gpu.block_id")
def _block_id(low: KernelLowering, op) -> None:
    low.set(op.result, LV("s", op.result.type, low.kb.workgroup_id(op.dimension.data.value)))


def _dispatch_u16(low: KernelLowering, byte_offset: int) -> LV:
    """A 16-bit field of the dispatch packet (workgroup sizes)."""
    kb = low.kb
    word = kb.s_load_dword(None, kb.dispatch_ptr(), byte_offset & ~3)
    if byte_offset & 2:
        return LV("s", IndexType(), kb.s_lshr_b32(None, word, 16))
    return LV("s", IndexType(), kb.s_and_b32(None, word, 0xFFFF))


@handles("gpu.block_dim")
def _block_dim(low: KernelLowering, op) -> None:
    axis = "xyz".index(op.dimension.data.value)
    if low.block_known:
        low.set(op.result, const_lv(low.block_size[axis], op.result.type))
        return
    low.set(op.result, _dispatch_u16(low, 4 + 2 * axis))


@handles("gpu.grid_dim")
def _grid_dim(low: KernelLowering, op) -> None:
    axis = "xyz".index(op.dimension.data.value)
    size = low.block_size[axis]
    if not low.block_known or size & (size - 1):
        raise fail(op, "needs a known_block_size that is a power of two in this dimension "
                       "(the grid size in work-items is divided by it)")
    kb = low.kb
    items = kb.s_load_dword(None, kb.dispatch_ptr(), 12 + 4 * axis)
    low.set(op.result, LV("s", op.result.type,
                          kb.s_lshr_b32(None, items, size.bit_length() - 1)))


def _wait_all(low: KernelLowering, vm: bool) -> None:
    if vm:
        low.kb.s_waitcnt(vmcnt=0, lgkmcnt=0)
    else:
        low.kb.s_waitcnt(lgkmcnt=0)


@handles("gpu.barrier")
def _barrier(low: KernelLowering, op) -> None:
    _wait_all(low, vm=True)
    low.kb.s_barrier()


@handles("gpu.return", "func.return")
def _return(low: KernelLowering, op) -> None:
    if low.inline_frames:
        frame = low.inline_frames[-1]
        frame.extend(low.get(v) for v in op.operands)
        return
    if op.operands:
        raise fail(op, "a kernel returns nothing")
    low.kb.s_endpgm()


@handles("func.call")
def _call(low: KernelLowering, op) -> None:
    callee = low.functions.get(op.callee.string_value())
    if callee is None or not callee.body.blocks:
        raise fail(op, f"@{op.callee.string_value()} is not a function of this gpu.module "
                       "(calls are inlined; amdgcn functions cannot be called yet)")
    if len(low.inline_frames) > 16:
        raise fail(op, "calls nest more than 16 deep (recursion is not supported)")
    block = callee.body.blocks[0]
    if len(block.ops) and any(b is not block for b in callee.body.blocks):
        raise fail(op, "the callee has several blocks (only structured control flow)")
    for arg, value in zip(block.args, op.operands):
        low.set(arg, low.get(value))
    low.inline_frames.append([])
    low.lower_block(block)
    results = low.inline_frames.pop()
    for res, lv in zip(op.results, results):
        low.set(res, lv)


# ----------------------------------------------------------------------------- arith


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


@handles("arith.constant")
def _constant(low: KernelLowering, op) -> None:
    t = op.result.type
    vals = _const_values(op.value, t)
    if isinstance(t, VectorType):
        low.set(op.result, LV("c", t, const_words(vals, t.element_type), scalar=vals))
    else:
        low.set(op.result, const_lv(vals[0], t))


_MASK32 = 0xFFFFFFFF


def _s32(x: int) -> int:
    return signed32(x)


_INT_FOLD = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b, "arith.andi": lambda a, b: a & b,
    "arith.ori": lambda a, b: a | b, "arith.xori": lambda a, b: a ^ b,
    "arith.shli": lambda a, b: a << (b & 31), "arith.shrui": lambda a, b: (a & _MASK32) >> (b & 31),
    "arith.shrsi": lambda a, b: _s32(a) >> (b & 31),
    "arith.maxsi": lambda a, b: max(_s32(a), _s32(b)),
    "arith.minsi": lambda a, b: min(_s32(a), _s32(b)),
    "arith.maxui": lambda a, b: max(a & _MASK32, b & _MASK32),
    "arith.minui": lambda a, b: min(a & _MASK32, b & _MASK32),
    "arith.divui": lambda a, b: (a & _MASK32) // (b & _MASK32),
    "arith.remui": lambda a, b: (a & _MASK32) % (b & _MASK32),
    "arith.divsi": lambda a, b: int(_s32(a) / _s32(b)),
    "arith.remsi": lambda a, b: _s32(a) - int(_s32(a) / _s32(b)) * _s32(b),
    "arith.floordivsi": lambda a, b: _s32(a) // _s32(b),
    "arith.ceildivsi": lambda a, b: -((-_s32(a)) // _s32(b)),
    "arith.ceildivui": lambda a, b: -((-(a & _MASK32)) // (b & _MASK32)),
}

# upstream op -> (SALU mnemonic, VALU mnemonic, VALU takes the operands reversed)
_INT_OPS = {
    "arith.addi": ("s_add_u32", "v_add_u32", False),
    "arith.subi": ("s_sub_u32", "v_sub_u32", False),
    "arith.muli": ("s_mul_i32", "v_mul_lo_u32", False),
    "arith.andi": ("s_and_b32", "v_and_b32", False),
    "arith.ori": ("s_or_b32", "v_or_b32", False),
    "arith.xori": ("s_xor_b32", "v_xor_b32", False),
    "arith.shli": ("s_lshl_b32", "v_lshlrev_b32", True),
    "arith.shrui": ("s_lshr_b32", "v_lshrrev_b32", True),
    "arith.shrsi": ("s_ashr_i32", "v_ashrrev_i32", True),
    "arith.maxsi": ("s_max_i32", "v_max_i32", False),
    "arith.minsi": ("s_min_i32", "v_min_i32", False),
    "arith.maxui": ("s_max_u32", "v_max_u32", False),
    "arith.minui": ("s_min_u32", "v_min_u32", False),
}


def int_binary(low: KernelLowering, name: str, a: LV, b: LV, t, dest=None) -> LV:
    """A 32-bit integer binary op on lowered values (SALU when both are uniform)."""
    if a.kind == "c" and b.kind == "c" and name in _INT_FOLD:
        return const_lv(_INT_FOLD[name](a.scalar, b.scalar) & _MASK32, t)
    simple = _identity(name, a, b)
    if simple is not None:
        return LV(simple.kind, t, simple.value, scalar=simple.scalar)
    name, a, b = _strength_reduce(name, a, b)
    s_name, v_name, reverse = _INT_OPS[name]
    kb = low.kb
    if a.uniform and b.uniform:
        return LV("s", t, kb.emit(s_name, dest, low.operand(a), low.operand(b)))
    x, y = low.valu_operands([b, a] if reverse else [a, b])
    if not reverse and isinstance(y, int) and not isinstance(x, int):
        if name in ("arith.addi", "arith.muli", "arith.andi", "arith.ori", "arith.xori",
                    "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui"):
            x, y = y, x  # a constant goes first (VOP2 src0)
    return LV("v", t, kb.emit(v_name, dest, x, y))


def _identity(name: str, a: LV, b: LV) -> LV | None:
    """x + 0, 0 + x, x * 1, x << 0 ...: the operand itself (no instruction)."""
    def is_const(lv: LV, value: int) -> bool:
        return lv.kind == "c" and lv.scalar is not None and int(lv.scalar) == value

    if name in ("arith.addi", "arith.ori", "arith.xori", "arith.subi", "arith.shli",
                "arith.shrui", "arith.shrsi") and is_const(b, 0):
        return a
    if name in ("arith.addi", "arith.ori", "arith.xori") and is_const(a, 0):
        return b
    if name == "arith.muli" and is_const(b, 1):
        return a
    if name == "arith.muli" and is_const(a, 1):
        return b
    return None


def _strength_reduce(name: str, a: LV, b: LV) -> tuple[str, LV, LV]:
    """x * 2^k -> x << k (one VALU cycle instead of a quarter-rate multiply)."""
    if name == "arith.muli":
        if _pow2(b) is not None:
            return "arith.shli", a, const_lv(_pow2(b), i32)
        if _pow2(a) is not None:
            return "arith.shli", b, const_lv(_pow2(a), i32)
    return name, a, b


def _pow2(lv: LV) -> int | None:
    if lv.kind == "c" and lv.scalar is not None:
        v = int(lv.scalar) & _MASK32
        if v and not v & (v - 1):
            return v.bit_length() - 1
    return None


def _div_rem(low: KernelLowering, op, a: LV, b: LV) -> LV:
    t = op.result.type
    name = op.name
    shift = _pow2(b)
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


@handles(*_INT_FOLD)
def _int_op(low: KernelLowering, op) -> None:
    t = op.result.type
    if isinstance(t, VectorType) or type_bits(t) > 32:
        raise fail(op, f"type {t} is not supported (32-bit integers and index)")
    a, b = low.get(op.lhs), low.get(op.rhs)
    if op.name in _INT_OPS:
        res = int_binary(low, op.name, a, b, t, low.dest(op.result, "v" if not (
            a.uniform and b.uniform) else "s"))
    elif a.kind == "c" and b.kind == "c":
        if b.scalar == 0:
            raise fail(op, "division by zero")
        res = const_lv(_INT_FOLD[op.name](a.scalar, b.scalar) & _MASK32, t)
    else:
        res = _div_rem(low, op, a, b)
    if isinstance(t, IntegerType) and t.width.data < 32 and res.kind != "c":
        res = int_binary(low, "arith.andi", res, const_lv((1 << t.width.data) - 1, i32), t)
    low.set(op.result, res)


_CMPI = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
_CMPI_FOLD = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "slt": lambda a, b: _s32(a) < _s32(b), "sle": lambda a, b: _s32(a) <= _s32(b),
    "sgt": lambda a, b: _s32(a) > _s32(b), "sge": lambda a, b: _s32(a) >= _s32(b),
    "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b,
    "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b,
}


def _cmp_suffix(pred: str) -> tuple[str, str]:
    base = {"eq": "eq", "ne": "lg", "slt": "lt", "sle": "le", "sgt": "gt", "sge": "ge",
            "ult": "lt", "ule": "le", "ugt": "gt", "uge": "ge"}[pred]
    return base, "u32" if pred[0] in "ue" or pred == "ne" else "i32"


def compare_int(low: KernelLowering, pred: str, a: LV, b: LV) -> LV:
    """An i1 (0/1) from comparing two 32-bit integers."""
    kb = low.kb
    t = IntegerType(1)
    if a.kind == "c" and b.kind == "c":
        return const_lv(_CMPI_FOLD[pred](a.scalar & _MASK32, b.scalar & _MASK32), t)
    base, ty = _cmp_suffix(pred)
    if a.uniform and b.uniform:
        kb.emit(f"s_cmp_{base}_{ty}", low.operand(a), low.operand(b))
        return LV("s", t, kb.s_cselect_b32(None, 1, 0))
    vbase = "ne" if base == "lg" else base
    x, y = low.valu_operands([a, b])
    if isinstance(y, int) or (b.kind != "v" and a.kind == "v"):
        # VOPC takes a VGPR second: compare the other way round
        swap = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}.get(vbase, vbase)
        kb.emit(f"v_cmp_{swap}_{ty}", kb.vcc, y, x)
    else:
        kb.emit(f"v_cmp_{vbase}_{ty}", kb.vcc, x, y)
    return LV("v", t, kb.v_cndmask_b32(None, 0, 1, kb.vcc))


@handles("arith.cmpi")
def _cmpi(low: KernelLowering, op) -> None:
    if isinstance(op.lhs.type, VectorType) or type_bits(op.lhs.type) > 32:
        raise fail(op, f"comparing {op.lhs.type} is not supported (32-bit integers, index)")
    pred = _CMPI[op.predicate.value.data]
    low.set(op.result, compare_int(low, pred, low.get(op.lhs), low.get(op.rhs)))


_CMPF = ["f", "eq", "gt", "ge", "lt", "le", "lg", "o", "nlg", "nle", "nlt", "nge", "ngt", "neq",
         "u", "tru"]


@handles("arith.cmpf")
def _cmpf(low: KernelLowering, op) -> None:
    t = op.lhs.type
    if type_name(t) not in ("f32", "f16", "f64"):
        raise fail(op, f"comparing {t} is not supported (f16, f32, f64)")
    kb = low.kb
    x, y = _float_sources(low, [low.get(op.lhs), low.get(op.rhs)], t)
    kb.emit(f"v_cmp_{_CMPF[op.predicate.value.data]}_{type_name(t)}", kb.vcc, x, y)
    low.set(op.result, LV("v", IntegerType(1), kb.v_cndmask_b32(None, 0, 1, kb.vcc)))


@handles("arith.select")
def _select(low: KernelLowering, op) -> None:
    kb = low.kb
    c, a, b = low.get(op.cond), low.get(op.lhs), low.get(op.rhs)
    t = op.result.type
    if c.kind == "c":
        low.set(op.result, a if c.scalar else b)
        return
    n = reg_count(t)
    if c.uniform and a.uniform and b.uniform and n == 1:
        kb.s_cmp_lg_u32(low.operand(c), 0)
        low.set(op.result, LV("s", t, kb.s_cselect_b32(None, low.operand(a), low.operand(b))))
        return
    if c.uniform:
        kb.s_cmp_lg_u32(low.operand(c), 0)
        kb.s_cselect_b64(kb.vcc, -1, 0)
    else:
        kb.v_cmp_ne_u32(kb.vcc, 0, c.value)
    av, bv = _words(low, a, n), _words(low, b, n)
    out = []
    for x, y in zip(av, bv):
        ops = low.valu_operands([y, x])
        if not isinstance(ops[1], int) and not isinstance(ops[1], type(None)) and \
                x.kind != "v":
            ops[1] = low.vgpr(x)
        if x.kind == "c" or x.kind == "s":
            ops[1] = low.vgpr(x)
        out.append(kb.v_cndmask_b32(None, ops[0], ops[1], kb.vcc))
    low.set(op.result, LV("v", t, out[0] if n == 1 else kb.join(*out, align=_align(n))))


def _align(n: int) -> int:
    return 4 if n >= 4 and n % 4 == 0 else 2 if n % 2 == 0 else 1


def _words(low: KernelLowering, lv: LV, n: int) -> list[LV]:
    """The 32-bit registers of a value as one-register LVs."""
    if n == 1:
        return [lv]
    if lv.kind == "c":
        return [LV("c", i32, [w], scalar=w) for w in lv.value]
    parts = low.kb.split(lv.value)
    return [LV(lv.kind, i32, p) for p in parts]


# --- casts


@handles("arith.index_cast", "arith.index_castui", "arith.bitcast")
def _identity_cast(low: KernelLowering, op) -> None:
    src = low.get(op.input)
    t = op.result.type
    if type_bits(op.input.type) == 64 and type_bits(t) <= 32 and src.kind != "c":
        low.set(op.result, LV(src.kind, t, low.kb.sub(src.value, 0)))
        return
    if type_bits(t) > 32 and type_bits(op.input.type) <= 32 and op.name != "arith.bitcast":
        raise fail(op, f"casting to {t} is not supported (64-bit index arithmetic)")
    if src.kind == "c":
        vals = src.scalar
        if op.name == "arith.bitcast":
            low.set(op.result, LV("c", t, src.value, scalar=None))
        else:
            low.set(op.result, const_lv(vals, t))
        return
    low.set(op.result, LV(src.kind, t, src.value))


@handles("arith.extui", "arith.extsi", "arith.trunci")
def _int_cast(low: KernelLowering, op) -> None:
    src = low.get(op.input)
    t = op.result.type
    src_bits, dst_bits = type_bits(op.input.type), type_bits(t)
    from_bits = elem_bits(op.input.type)
    if dst_bits > 32:
        raise fail(op, f"{t} results are not supported (at most 32 bits)")
    if op.name == "arith.trunci":
        width = elem_bits(t)
        res = int_binary(low, "arith.andi", src, const_lv((1 << width) - 1, i32), t)
    elif op.name == "arith.extui" or from_bits >= 32:
        res = LV(src.kind, t, src.value, scalar=src.scalar) if src.kind != "c" else \
            const_lv(src.scalar, t)
    else:
        shift = const_lv(32 - from_bits, i32)
        res = int_binary(low, "arith.shrsi", int_binary(low, "arith.shli", src, shift, t),
                         shift, t)
    del src_bits
    low.set(op.result, res)


_FLOAT_OPS = {
    "arith.addf": "v_add", "arith.subf": "v_sub", "arith.mulf": "v_mul",
    "arith.maximumf": "v_max", "arith.minimumf": "v_min", "arith.maxnumf": "v_max",
    "arith.minnumf": "v_min",
}


def _float_sources(low: KernelLowering, lvs: list[LV], t) -> list:
    out = []
    bus = 0
    for lv in lvs:
        if lv.kind == "c" and lv.scalar is not None and float(lv.scalar) in (
                0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0) and type_name(t) != "f64":
            out.append(float(lv.scalar))
        elif lv.kind == "v":
            out.append(lv.value)
        elif bus == 0 and lv.regs == 1:
            bus = 1
            out.append(low.sgpr(lv))
        else:
            out.append(low.vgpr(lv))
    return out


def float_binary(low: KernelLowering, name: str, a: LV, b: LV, t, dest=None) -> LV:
    """A float binary op (f16, f32, f64; elementwise on vectors of f32)."""
    tn = type_name(t)
    if isinstance(t, VectorType):
        et = t.element_type
        if type_bits(et) != 32:
            raise LoweringError(f"vectors of {et} are not supported here (f32 elements)")
        n = reg_count(t)
        parts = [float_binary(low, name, x, y, et) for x, y in
                 zip(_words(low, a, n), _words(low, b, n))]
        regs = [low.vgpr(p) for p in parts]
        return LV("v", t, regs[0] if n == 1 else low.kb.join(*regs, align=_align(n)))
    if tn not in ("f16", "f32", "f64"):
        raise LoweringError(f"{t} arithmetic is not supported (f16, f32, f64)")
    if name == "arith.divf":
        return _divf(low, a, b, t)
    mnemonic = f"{_FLOAT_OPS[name]}_{tn}"
    if tn == "f64" and mnemonic in ("v_sub_f64",):
        raise LoweringError("f64 subtraction is not supported yet")
    if tn == "f64" and mnemonic.startswith(("v_max", "v_min")):
        mnemonic = mnemonic.replace("_f64", "_f64")
    x, y = _float_sources(low, [a, b], t)
    if not isinstance(y, float) and hasattr(y, "type") and y.type.KIND != "v" and \
            not isinstance(x, float) and x.type.KIND == "v" and name != "arith.subf":
        x, y = y, x
    return LV("v", t, low.kb.emit(mnemonic, dest, x, y))


def _divf(low: KernelLowering, a: LV, b: LV, t) -> LV:
    """a / b as a * rcp(b) (v_rcp: 1 ulp), f32 and f16."""
    tn = type_name(t)
    if tn not in ("f32", "f16"):
        raise LoweringError(f"divf on {t} is not supported (f16, f32)")
    kb = low.kb
    (bv,) = _float_sources(low, [b], t)
    r = kb.emit(f"v_rcp_{tn}", None, bv)
    (av,) = _float_sources(low, [a], t)
    return LV("v", t, kb.emit(f"v_mul_{tn}", None, av, r))


@handles(*_FLOAT_OPS, "arith.divf")
def _float_op(low: KernelLowering, op) -> None:
    a, b = low.get(op.lhs), low.get(op.rhs)
    low.set(op.result, float_binary(low, op.name, a, b, op.result.type,
                                    low.dest(op.result)))


@handles("arith.negf")
def _negf(low: KernelLowering, op) -> None:
    t = op.result.type
    sign = {"f32": 0x80000000, "f16": 0x8000, "bf16": 0x8000}.get(type_name(t))
    if sign is None:
        raise fail(op, f"{t} is not supported (f16, bf16, f32)")
    src = low.get(op.operand)
    x, y = low.valu_operands([const_lv(signed32(sign), i32), src])
    if not hasattr(y, "type") or y.type.KIND != "v":
        y = low.vgpr(src)
    low.set(op.result, LV("v", t, low.kb.v_xor_b32(None, x, y)))


_CVT = {
    ("arith.sitofp", "i32", "f32"): "v_cvt_f32_i32", ("arith.uitofp", "i32", "f32"):
    "v_cvt_f32_u32", ("arith.fptosi", "f32", "i32"): "v_cvt_i32_f32",
    ("arith.fptoui", "f32", "i32"): "v_cvt_u32_f32", ("arith.extf", "f16", "f32"):
    "v_cvt_f32_f16", ("arith.truncf", "f32", "f16"): "v_cvt_f16_f32",
    ("arith.extf", "f32", "f64"): "v_cvt_f64_f32", ("arith.truncf", "f64", "f32"):
    "v_cvt_f32_f64", ("arith.sitofp", "index", "f32"): "v_cvt_f32_i32",
    ("arith.uitofp", "index", "f32"): "v_cvt_f32_u32",
}


@handles("arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.extf",
         "arith.truncf")
def _float_cast(low: KernelLowering, op) -> None:
    src_t, dst_t = op.input.type, op.result.type
    if isinstance(dst_t, VectorType):  # elementwise, packed again
        parts = [_cast_scalar(low, op, e, src_t.element_type, dst_t.element_type)
                 for e in _elements(low, low.get(op.input), src_t)]
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
    (x,) = _float_sources(low, [src], src_t) if is_float(src_t) else low.valu_operands([src])
    return LV("v", dst_t, kb.emit(mnemonic, None, x))


# ----------------------------------------------------------------------------- scf


def _new_regs(low: KernelLowering, t, file: str):
    n = reg_count(t)
    if file == "s":
        return low.kb.sregs(n, _align(n)) if n > 1 else low.kb.sreg()
    return low.kb.vregs(n, _align(n)) if n > 1 else low.kb.vreg()


def _copy_into(low: KernelLowering, regs, src: LV, t) -> None:
    """Write `src` into the registers `regs` (one mov per register)."""
    kb = low.kb
    n = reg_count(t)
    pieces = kb.split(regs) if n > 1 else [regs]
    srcs = _words(low, src, n)
    for dst, s in zip(pieces, srcs):
        if dst.type.KIND == "s":
            kb.s_mov_b32(dst, low.operand(s))
        else:
            kb.v_mov_b32(dst, low.operand(s) if s.kind != "m" else None)


@handles("scf.for")
def _for(low: KernelLowering, op) -> None:
    kb = low.kb
    lb, ub, step = low.get(op.lb), low.get(op.ub), low.get(op.step)
    if not (lb.uniform and ub.uniform and step.uniform):
        raise fail(op, "the bounds and step differ between lanes; only uniform loops (bounds "
                       "from constants, arguments, block ids and sizes) are supported")
    body = op.body.blocks[0]
    yld = body.last_op
    if step.kind == "c" and (step.scalar or 0) <= 0:
        raise fail(op, "the step must be positive")
    trips = None
    if lb.kind == ub.kind == step.kind == "c":
        trips = max(0, -(-(_s32(ub.scalar) - _s32(lb.scalar)) // _s32(step.scalar)))
    regs = []
    for init, arg in zip(op.iter_args, body.args[1:]):
        file = "v" if _divergent(low, arg) else "s"
        r = _new_regs(low, arg.type, file)
        if trips != 0:
            _copy_into(low, r, low.get(init), arg.type)
        regs.append(r)
    if trips == 0:
        for res, init in zip(op.results, op.iter_args):
            low.set(res, low.get(init))
        return
    iv = kb.s_mov_b32(None, low.operand(lb))
    done = kb.new_label("for_end")
    if trips is None:
        kb.s_cmp_lt_i32(iv, low.operand(ub))
        kb.s_cbranch_scc0(done)
    head = kb.label("for_body")
    low.set(body.args[0], LV("s", body.args[0].type, iv))
    for arg, r in zip(body.args[1:], regs):
        low.set(arg, LV(r.type.KIND, arg.type, r))
    frame = {"yield": yld, "args": list(body.args[1:]), "regs": regs, "body": body,
             "taken": [False] * len(regs)}
    low.loops.append(frame)
    for inner in body.ops:
        if inner is not yld:
            low.lower_op(inner)
    low.loops.pop()
    _yield_into(low, yld, regs, [a.type for a in body.args[1:]])
    kb.s_add_u32(iv, iv, low.operand(step))
    kb.s_cmp_lt_i32(iv, low.operand(ub))
    kb.s_cbranch_scc1(head)
    kb.place(done)
    for res, r, arg in zip(op.results, regs, body.args[1:]):
        low.set(res, LV(r.type.KIND, arg.type, r))


def _yield_into(low: KernelLowering, yld, regs, types) -> None:
    """Copy yielded values into the loop/if registers; values that are themselves one of
    those registers go through temporaries first (a parallel copy)."""
    values = [low.get(v) for v in yld.operands]
    staged = []
    reg_set = {id(r) for r in regs}
    for lv, t in zip(values, types):
        if lv.kind in ("s", "v") and id(lv.value) in reg_set:
            tmp = _new_regs(low, t, lv.kind)
            _copy_into(low, tmp, lv, t)
            lv = LV(lv.kind, t, tmp)
        staged.append(lv)
    for r, lv, t in zip(regs, staged, types):
        if lv.kind in ("s", "v") and _written_into(lv.value, r):
            continue  # computed in place (an accumulator)
        _copy_into(low, r, lv, t)


def _written_into(value, regs) -> bool:
    """Whether `value` is `regs` or the result of an instruction whose destination is."""
    from asterism.ir.ops import InstructionOp

    if value is regs:
        return True
    owner = getattr(value, "owner", None)
    return isinstance(owner, InstructionOp) and bool(owner.operands) and \
        owner.operands[0] is regs


@handles("scf.if")
def _if(low: KernelLowering, op) -> None:
    kb = low.kb
    cond = low.get(op.cond)
    then_block = op.true_region.blocks[0]
    else_block = op.false_region.blocks[0] if op.false_region.blocks else None
    if cond.kind == "c":
        chosen = then_block if cond.scalar else else_block
        if chosen is not None:
            for inner in chosen.ops:
                if inner.name != "scf.yield":
                    low.lower_op(inner)
            for res, v in zip(op.results, chosen.last_op.operands):
                low.set(res, low.get(v))
        return
    regs = [_new_regs(low, r.type, "v" if _divergent(low, r) else "s") for r in op.results]
    types = [r.type for r in op.results]

    def arm(block) -> None:
        for inner in block.ops:
            if inner.name != "scf.yield":
                low.lower_op(inner)
        if regs:
            _yield_into(low, block.last_op, regs, types)

    if cond.uniform:
        kb.s_cmp_lg_u32(low.operand(cond), 0)
        end = kb.new_label("if_end")
        other = kb.new_label("if_else") if else_block is not None else end
        kb.s_cbranch_scc0(other)
        arm(then_block)
        if else_block is not None:
            kb.s_branch(end)
            kb.place(other)
            arm(else_block)
        kb.place(end)
    else:
        kb.v_cmp_ne_u32(kb.vcc, 0, cond.value)
        saved = kb.s_and_saveexec_b64(None, kb.vcc)
        arm(then_block)
        if else_block is not None:
            kb.s_xor_b64(kb.exec, saved, kb.exec)
            arm(else_block)
        kb.s_or_b64(kb.exec, kb.exec, saved)
    for res, r in zip(op.results, regs):
        low.set(res, LV(r.type.KIND, res.type, r))


@handles("scf.yield")
def _yield(low: KernelLowering, op) -> None:
    raise fail(op, "scf.yield outside scf.for/scf.if")


# ----------------------------------------------------------------------------- memory


def byte_offset(low: KernelLowering, op, mem, indices: list[LV], extra: int = 0) -> LV:
    """sum(index * stride) * element bytes (+ extra elements) as a lowered i32."""
    info = mem.value
    if len(indices) != len(info.strides):
        raise fail(op, f"{len(indices)} indices for a rank-{len(info.strides)} memref")
    total = const_lv(extra * info.elem_bytes, i32)
    for idx, stride in zip(indices, info.strides):
        scaled = stride * info.elem_bytes
        term = idx if scaled == 1 else (
            int_binary(low, "arith.shli", idx, const_lv(scaled.bit_length() - 1, i32), i32)
            if not scaled & (scaled - 1) else
            int_binary(low, "arith.muli", idx, const_lv(scaled, i32), i32))
        total = int_binary(low, "arith.addi", total, term, i32)
    return total


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


def _address(low: KernelLowering, mem: LV, offset: LV):
    info = mem.value
    if info.space == "workgroup":
        return low.vgpr(int_binary(low, "arith.addi", offset, const_lv(info.lds_offset, i32),
                                   i32))
    return low.vgpr(offset)


def load(low: KernelLowering, op, mem: LV, offset: LV, t, soffset=0) -> LV:
    """Load a value of type `t` at byte `offset` of a memref (LDS or a buffer)."""
    info = mem.value
    kb = low.kb
    table = _DS_READ if info.space == "workgroup" else _LOAD
    sizes = _chunks(type_bits(t) // 8)
    if any(n not in table for n in sizes):
        raise fail(op, f"loads of {type_bits(t) // 8} bytes are not supported (1, 2, 4, 8, "
                       "16 or a multiple of 16)")
    addr = _address(low, mem, offset)
    parts = []
    for k, n in enumerate(sizes):
        mods = {"offset": 16 * k} if k else {}
        if info.space == "workgroup":
            parts.append(kb.emit(table[n], None, addr, **mods))
        else:
            parts.append(kb.emit(table[n], None, addr, info.rsrc, soffset, offen=True, **mods))
    if len(parts) == 1:
        return LV("v", t, parts[0])
    regs = [r for p in parts for r in kb.split(p)]
    return LV("v", t, kb.join(*regs, align=4))


def store(low: KernelLowering, op, mem: LV, offset: LV, value: LV, t, soffset=0) -> None:
    """Store `value` (type `t`) at byte `offset` of a memref (LDS or a buffer)."""
    info = mem.value
    kb = low.kb
    table = _DS_WRITE if info.space == "workgroup" else _STORE
    sizes = _chunks(type_bits(t) // 8)
    if any(n not in table for n in sizes):
        raise fail(op, f"stores of {type_bits(t) // 8} bytes are not supported (1, 2, 4, 8, "
                       "16 or a multiple of 16)")
    data = low.vgpr(value)
    addr = _address(low, mem, offset)
    for k, n in enumerate(sizes):
        piece = data if len(sizes) == 1 else kb.sub(data, 4 * k, 4 * k + n // 4)
        mods = {"offset": 16 * k} if k else {}
        if info.space == "workgroup":
            kb.emit(table[n], addr, piece, **mods)
        else:
            kb.emit(table[n], piece, addr, info.rsrc, soffset, offen=True, **mods)


def _memref(low: KernelLowering, op, value) -> LV:
    lv = low.get(value)
    if lv.kind != "m":
        raise fail(op, "expected a memref")
    return lv


@handles("memref.load")
def _memref_load(low: KernelLowering, op) -> None:
    mem = _memref(low, op, op.memref)
    off = byte_offset(low, op, mem, [low.get(i) for i in op.indices])
    low.set(op.res, load(low, op, mem, off, op.res.type))


@handles("memref.store")
def _memref_store(low: KernelLowering, op) -> None:
    mem = _memref(low, op, op.memref)
    off = byte_offset(low, op, mem, [low.get(i) for i in op.indices])
    store(low, op, mem, off, low.get(op.value), op.value.type)


@handles("vector.load")
def _vector_load(low: KernelLowering, op) -> None:
    mem = _memref(low, op, op.base)
    off = byte_offset(low, op, mem, [low.get(i) for i in op.indices])
    low.set(op.result, load(low, op, mem, off, op.result.type))


@handles("vector.store")
def _vector_store(low: KernelLowering, op) -> None:
    mem = _memref(low, op, op.base)
    off = byte_offset(low, op, mem, [low.get(i) for i in op.indices])
    store(low, op, mem, off, low.get(op.vector), op.vector.type)


@handles("memref.alloc", "memref.alloca")
def _alloc(low: KernelLowering, op) -> None:
    t = op.memref.type
    info = low.memref_info(t, op, "workgroup")
    if info.space != "workgroup":
        raise fail(op, "only workgroup (LDS) allocations are supported (memory space 3 or "
                       "#gpu.address_space<workgroup>)")
    alloc = low.kb.lds_alloc(f"lds{len(low.vals)}", info.nbytes, max(4, info.elem_bytes))
    info.lds_offset = alloc.offset
    low.set(op.memref, LV("m", t, info))


# ----------------------------------------------------------------------------- vector


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


def extract_bits(low: KernelLowering, src: LV, bit: int, width: int, t) -> LV:
    """`width` bits (8, 16, 32 or 64) at bit `bit` of a packed value."""
    kb = low.kb
    reg, sh = divmod(bit, 32)
    if src.kind == "c":
        word = src.value[reg]
        if width == 64:
            return LV("c", t, src.value[reg:reg + 2])
        val = (word >> sh) & ((1 << width) - 1)
        return LV("c", t, [val], scalar=src.scalar[bit // width] if isinstance(
            src.scalar, list) else None)
    n = src.regs
    if width == 64:
        return LV(src.kind, t, kb.sub(src.value, reg, reg + 2))
    piece = kb.sub(src.value, reg) if n > 1 else src.value
    if sh == 0:
        return LV(src.kind, t, piece)
    part = LV(src.kind, i32, piece)
    return int_binary(low, "arith.shrui", part, const_lv(sh, i32), t)


@handles("vector.extract")
def _extract(low: KernelLowering, op) -> None:
    if op.dynamic_position:
        raise fail(op, "only static positions are supported")
    vt = op.vector.type
    pos = _static_pos(op, list(op.static_position.get_values()))
    rt = op.result.type
    width = type_bits(rt)
    flat = _flat(vt, pos + [0] * (len(vt.get_shape()) - len(pos)))
    ebits = elem_bits(vt.element_type)
    low.set(op.result, extract_bits(low, low.get(op.vector), flat * ebits, width, rt))


def pack(low: KernelLowering, parts: list[LV], ebits: int, t) -> LV:
    """Registers holding `parts` (values of `ebits` bits each) packed little-endian."""
    kb = low.kb
    if all(p.kind == "c" for p in parts):
        vals = [p.value[0] if ebits <= 32 else p.value for p in parts]
        if ebits == 64:
            words = [w for p in parts for w in p.value]
        else:
            words = const_words([v for v in vals], IntegerType(ebits))
        return LV("c", t, words, scalar=[p.scalar for p in parts])
    words: list[LV] = []
    if ebits >= 32:
        for p in parts:
            words.extend(_words(low, p, ebits // 32))
    else:
        per = 32 // ebits
        mask = (1 << ebits) - 1
        for w in range(0, len(parts), per):
            acc = None
            for j, p in enumerate(parts[w:w + per]):
                piece = p
                if p.kind == "c":
                    piece = const_lv((p.value[0] & mask) << (j * ebits), i32)
                else:
                    if j + 1 < per or True:
                        piece = int_binary(low, "arith.andi", p, const_lv(mask, i32), i32)
                    if j:
                        piece = int_binary(low, "arith.shli", piece, const_lv(j * ebits, i32),
                                           i32)
                acc = piece if acc is None else int_binary(low, "arith.ori", acc, piece, i32)
            words.append(acc)
    if len(words) == 1:
        w = words[0]
        return LV(w.kind, t, w.value, scalar=w.scalar)
    uniform = all(w.uniform for w in words)
    regs = [low.sgpr(w) if uniform else low.vgpr(w) for w in words]
    # every register its own copy: a view of another range cannot be part of this one
    regs = [(kb.s_mov_b32(None, r) if uniform else kb.v_mov_b32(None, r)) for r in regs]
    return LV("s" if uniform else "v", t, kb.join(*regs, align=_align(len(regs))))


def _elements(low: KernelLowering, lv: LV, vt: VectorType) -> list[LV]:
    ebits = elem_bits(vt.element_type)
    count = type_bits(vt) // ebits
    return [extract_bits(low, lv, k * ebits, ebits, vt.element_type) for k in range(count)]


@handles("vector.insert")
def _insert(low: KernelLowering, op) -> None:
    if op.dynamic_position:
        raise fail(op, "only static positions are supported")
    vt = op.dest.type
    pos = _static_pos(op, list(op.static_position.get_values()))
    ebits = elem_bits(vt.element_type)
    elems = _elements(low, low.get(op.dest), vt)
    value = low.get(op.source)
    vbits = type_bits(op.source.type)
    first = _flat(vt, pos + [0] * (len(vt.get_shape()) - len(pos)))
    new = _elements(low, value, op.source.type) if isinstance(op.source.type, VectorType) \
        else [value]
    del vbits
    elems[first:first + len(new)] = new
    low.set(op.result, pack(low, elems, ebits, vt))


@handles("vector.broadcast", "vector.splat")
def _broadcast(low: KernelLowering, op) -> None:
    vt = op.vector.type if op.name == "vector.broadcast" else op.result.type
    src_v = op.source if op.name == "vector.broadcast" else op.input
    if isinstance(src_v.type, VectorType):
        raise fail(op, "only scalar sources are supported")
    ebits = elem_bits(vt.element_type)
    count = type_bits(vt) // ebits
    res = op.vector if op.name == "vector.broadcast" else op.result
    low.set(res, pack(low, [low.get(src_v)] * count, ebits, vt))


@handles("vector.from_elements")
def _from_elements(low: KernelLowering, op) -> None:
    vt = op.result.type
    low.set(op.result, pack(low, [low.get(v) for v in op.elements],
                            elem_bits(vt.element_type), vt))


@handles("vector.bitcast")
def _vbitcast(low: KernelLowering, op) -> None:
    src = low.get(op.source)
    t = op.result.type
    if type_bits(t) != type_bits(op.source.type):
        raise fail(op, "the source and result sizes differ")
    low.set(op.result, LV(src.kind, t, src.value, scalar=None))


@handles("vector.extract_strided_slice")
def _strided_slice(low: KernelLowering, op) -> None:
    vt = op.source.type
    if len(vt.get_shape()) != 1:
        raise fail(op, "only 1-D vectors are supported")
    if any(s.value.data != 1 for s in op.strides.data):
        raise fail(op, "only unit strides are supported")
    off = op.offsets.data[0].value.data
    size = op.sizes.data[0].value.data
    ebits = elem_bits(vt.element_type)
    elems = _elements(low, low.get(op.source), vt)[off:off + size]
    t = op.result.type
    src = low.get(op.source)
    if src.kind != "c" and (off * ebits) % 32 == 0 and (size * ebits) % 32 == 0:
        first, count = off * ebits // 32, size * ebits // 32
        value = src.value if count == src.regs else low.kb.sub(src.value, first,
                                                               first + count)
        low.set(op.result, LV(src.kind, t, value))
        return
    low.set(op.result, pack(low, elems, ebits, t))


@handles("vector.fma")
def _vfma(low: KernelLowering, op) -> None:
    t = op.res.type
    et = t.element_type if isinstance(t, VectorType) else t
    if type_name(et) != "f32":
        raise fail(op, "only f32 elements are supported")
    n = reg_count(t)
    parts = []
    for a, b, c in zip(*(_words(low, low.get(v), n) for v in (op.lhs, op.rhs, op.acc))):
        srcs = _float_sources(low, [a, b, c], et)
        parts.append(low.kb.v_fma_f32(None, *srcs))
    low.set(op.res, LV("v", t, parts[0] if n == 1 else low.kb.join(*parts, align=_align(n))))


__all__ = ["DEFAULT_BLOCK", "MemRefType", "Operation", "byte_offset", "compare_int",
           "divergent_values", "extract_bits", "float_binary", "int_binary", "load", "pack",
           "store"]

"""Instruction sequences more than one dialect's lowering emits: 32-bit integer binary ops
(folded, simplified, SALU when uniform), float sources under the constant bus, and packing
values into and out of the registers of a vector (the value model: asterism.frontend.values).

`int_binary` names its operation by the arith op name (`"arith.addi"`, ...): the memory and
vector lowerings compute offsets and masks with it too.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerType, VectorType, i32
from xdsl.ir import Operation

from asterism.frontend.lowering import KernelLowering
from asterism.frontend.values import (
    LV,
    LoweringError,
    const_lv,
    const_words,
    elem_bits,
    reg_count,
    signed32,
    type_bits,
    type_name,
)


def align(n: int) -> int:
    """The alignment of an `n`-register range (4, 2 or 1)."""
    return 4 if n >= 4 and n % 4 == 0 else 2 if n % 2 == 0 else 1


def words_of(low: KernelLowering, lv: LV, n: int) -> list[LV]:
    """The 32-bit registers of a value as one-register LVs."""
    if n == 1:
        return [lv]
    if lv.kind == "c":
        return [LV("c", i32, [w], scalar=w) for w in lv.value]
    parts = low.kb.split(lv.value)
    return [LV(lv.kind, i32, p) for p in parts]


MASK32 = 0xFFFFFFFF


INT_FOLD = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b, "arith.andi": lambda a, b: a & b,
    "arith.ori": lambda a, b: a | b, "arith.xori": lambda a, b: a ^ b,
    "arith.shli": lambda a, b: a << (b & 31), "arith.shrui": lambda a, b: (a & MASK32) >> (b & 31),
    "arith.shrsi": lambda a, b: signed32(a) >> (b & 31),
    "arith.maxsi": lambda a, b: max(signed32(a), signed32(b)),
    "arith.minsi": lambda a, b: min(signed32(a), signed32(b)),
    "arith.maxui": lambda a, b: max(a & MASK32, b & MASK32),
    "arith.minui": lambda a, b: min(a & MASK32, b & MASK32),
    "arith.divui": lambda a, b: (a & MASK32) // (b & MASK32),
    "arith.remui": lambda a, b: (a & MASK32) % (b & MASK32),
    "arith.divsi": lambda a, b: int(signed32(a) / signed32(b)),
    "arith.remsi": lambda a, b: signed32(a) - int(signed32(a) / signed32(b)) * signed32(b),
    "arith.floordivsi": lambda a, b: signed32(a) // signed32(b),
    "arith.ceildivsi": lambda a, b: -((-signed32(a)) // signed32(b)),
    "arith.ceildivui": lambda a, b: -((-(a & MASK32)) // (b & MASK32)),
}


# upstream op -> (SALU mnemonic, VALU mnemonic, VALU takes the operands reversed)
INT_OPS = {
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
    if a.kind == "c" and b.kind == "c" and name in INT_FOLD:
        return const_lv(INT_FOLD[name](a.scalar, b.scalar) & MASK32, t)
    simple = _identity(name, a, b)
    if simple is not None:
        return LV(simple.kind, t, simple.value, scalar=simple.scalar)
    name, a, b = _strength_reduce(name, a, b)
    s_name, v_name, reverse = INT_OPS[name]
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
        if pow2(b) is not None:
            return "arith.shli", a, const_lv(pow2(b), i32)
        if pow2(a) is not None:
            return "arith.shli", b, const_lv(pow2(a), i32)
    return name, a, b


def pow2(lv: LV) -> int | None:
    """k if `lv` is the constant 2^k, else None."""
    if lv.kind == "c" and lv.scalar is not None:
        v = int(lv.scalar) & MASK32
        if v and not v & (v - 1):
            return v.bit_length() - 1
    return None


def float_sources(low: KernelLowering, lvs: list[LV], t) -> list:
    """Sources of one float VALU instruction: inline constants as Python floats, at most one
    SGPR (the constant bus), the others in VGPRs."""
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
    if width == 1:  # an i1 element (bit k of a packed i1 vector) must read as 0 or 1
        return int_binary(low, "arith.andi", int_binary(low, "arith.shrui", LV(
            src.kind, i32, piece), const_lv(sh, i32), i32), const_lv(1, i32), t)
    if sh == 0:
        return LV(src.kind, t, piece)
    part = LV(src.kind, i32, piece)
    return int_binary(low, "arith.shrui", part, const_lv(sh, i32), t)


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
            words.extend(words_of(low, p, ebits // 32))
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
    return LV("s" if uniform else "v", t, kb.join(*regs, align=align(len(regs))))


def elements(low: KernelLowering, lv: LV, vt: VectorType) -> list[LV]:
    """The elements of a packed vector value, one LV each."""
    ebits = elem_bits(vt.element_type)
    count = type_bits(vt) // ebits
    return [extract_bits(low, lv, k * ebits, ebits, vt.element_type) for k in range(count)]


def new_regs(low: KernelLowering, t, file: str):
    """New relocatable registers for a value of type `t` in file "s" or "v" (a loop's,
    branch's or block argument's register that several paths write)."""
    n = reg_count(t)
    if file == "s":
        return low.kb.sregs(n, align(n)) if n > 1 else low.kb.sreg()
    return low.kb.vregs(n, align(n)) if n > 1 else low.kb.vreg()


def copy_into(low: KernelLowering, regs, src: LV, t) -> None:
    """Write `src` into the registers `regs` (one mov per register)."""
    kb = low.kb
    n = reg_count(t)
    pieces = kb.split(regs) if n > 1 else [regs]
    srcs = words_of(low, src, n)
    for dst, s in zip(pieces, srcs):
        if dst.type.KIND == "s":
            kb.s_mov_b32(dst, low.operand(s))
        else:
            kb.v_mov_b32(dst, low.operand(s) if s.kind != "m" else None)


def parallel_copy(low: KernelLowering, yielded, regs, types) -> None:
    """Copy yielded values (a yield or branch op's operands, or a list of values) into the
    registers of a loop, an if or a block's arguments; values that are themselves one of
    those registers go through temporaries first (a parallel copy)."""
    operands = yielded.operands if isinstance(yielded, Operation) else yielded
    values = [low.get(v) for v in operands]
    staged = []
    reg_set = {id(r) for r in regs}
    for lv, t in zip(values, types):
        if lv.kind in ("s", "v") and id(lv.value) in reg_set:
            tmp = new_regs(low, t, lv.kind)
            copy_into(low, tmp, lv, t)
            lv = LV(lv.kind, t, tmp)
        staged.append(lv)
    for r, lv, t in zip(regs, staged, types):
        if lv.kind in ("s", "v") and written_into(lv.value, r):
            continue  # computed in place (an accumulator)
        copy_into(low, r, lv, t)


def written_into(value, regs) -> bool:
    """Whether `value` is `regs` or the result of an instruction whose destination is."""
    from asterism.ir.ops import InstructionOp

    if value is regs:
        return True
    owner = getattr(value, "owner", None)
    return isinstance(owner, InstructionOp) and bool(owner.operands) and \
        owner.operands[0] is regs


def _constant(value) -> object:
    """The value of an arith.constant operand of an instruction (None for a register)."""
    owner = getattr(value, "owner", None)
    if getattr(owner, "name", "") != "arith.constant":
        return None
    return getattr(getattr(owner.value, "value", None), "data", None)


def flag_of(low: KernelLowering, cond: LV) -> str | None:
    """"scc" or "vcc" when the i1 `cond` was made from that flag by the instruction emitted
    last (`s_cselect_b32 c, 1, 0` after an s_cmp; `v_cndmask_b32 c, 0, 1, vcc` after a v_cmp),
    so a branch or an EXEC mask can use the flag itself instead of comparing `cond` again."""
    from asterism.ir.ops import InstructionOp

    if cond.kind not in ("s", "v"):
        return None
    last = low.kb.block.last_op
    # (over what cannot change SCC or VCC: register declarations, constants, moves to
    # VGPRs; and to SGPRs, while the flag is SCC: copies into a loop's registers)
    while last is not None and (not isinstance(last, InstructionOp) and last.name in (
            "amdgcn.alloca", "arith.constant", "amdgcn.split_register_range",
            "amdgcn.make_register_range") or isinstance(last, InstructionOp) and (
            last.mnemonic_text == "v_mov_b32" or cond.kind == "s" and
            last.mnemonic_text == "s_mov_b32")):
        last = last.prev_op
    if not isinstance(last, InstructionOp) or not last.results or \
            last.results[0] is not cond.value:
        return None
    srcs = [_constant(v) for v in last.operands[1:3]]
    if last.mnemonic_text == "s_cselect_b32" and srcs == [1, 0]:
        return "scc"
    if last.mnemonic_text == "v_cndmask_b32" and srcs == [0, 1]:
        return "vcc"
    return None


def branch_if_zero(low: KernelLowering, cond: LV, label) -> None:
    """`s_cbranch_scc0 label` when the uniform i1 `cond` is 0 (SCC from the comparison that
    made it when it is still there, else `s_cmp_lg_u32 cond, 0`)."""
    if flag_of(low, cond) != "scc":
        low.kb.s_cmp_lg_u32(low.operand(cond), 0)
    low.kb.s_cbranch_scc0(label)


def masked_arms(low: KernelLowering, cond: LV, then_arm, else_arm=None) -> None:
    """Run `then_arm()` for the lanes where the per-lane i1 `cond` is 1 and `else_arm()` for
    the others, by EXEC masking (`s_and_saveexec_b64`, then `s_xor_b64` to the other lanes,
    `s_or_b64` restores EXEC): both arms are emitted in order, no branch skips one. VCC of the
    comparison that made `cond` is the mask when it is still there."""
    kb = low.kb
    if flag_of(low, cond) != "vcc":
        kb.v_cmp_ne_u32(kb.vcc, 0, low.vgpr(cond))
    saved = kb.s_and_saveexec_b64(None, kb.vcc)
    then_arm()
    if else_arm is not None:
        kb.s_xor_b64(kb.exec, saved, kb.exec)
        else_arm()
    kb.s_or_b64(kb.exec, kb.exec, saved)


CMPI_FOLD = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "slt": lambda a, b: signed32(a) < signed32(b), "sle": lambda a, b: signed32(a) <= signed32(b),
    "sgt": lambda a, b: signed32(a) > signed32(b), "sge": lambda a, b: signed32(a) >= signed32(b),
    "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b,
    "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b,
}


def cmp_suffix(pred: str) -> tuple[str, str]:
    """(SALU/VALU comparison name, operand type) of an arith.cmpi predicate."""
    base = {"eq": "eq", "ne": "lg", "slt": "lt", "sle": "le", "sgt": "gt", "sge": "ge",
            "ult": "lt", "ule": "le", "ugt": "gt", "uge": "ge"}[pred]
    return base, "u32" if pred[0] in "ue" or pred == "ne" else "i32"


def compare_int(low: KernelLowering, pred: str, a: LV, b: LV) -> LV:
    """An i1 (0/1) from comparing two 32-bit integers."""
    kb = low.kb
    t = IntegerType(1)
    if a.kind == "c" and b.kind == "c":
        return const_lv(CMPI_FOLD[pred](a.scalar & MASK32, b.scalar & MASK32), t)
    base, ty = cmp_suffix(pred)
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


def select_value(low: KernelLowering, c: LV, a: LV, b: LV, t) -> LV:
    """`c ? a : b` for an i1 (0/1) condition: SALU `s_cselect` when everything is uniform,
    else `v_cndmask` per register (the flag of the comparison that made `c` when it is still
    there)."""
    kb = low.kb
    if c.kind == "c":
        return a if c.scalar else b
    n = reg_count(t)
    flag = flag_of(low, c)
    if c.uniform and a.uniform and b.uniform and n == 1:
        if flag != "scc":
            kb.s_cmp_lg_u32(low.operand(c), 0)
        return LV("s", t, kb.s_cselect_b32(None, low.operand(a), low.operand(b)))
    if c.uniform:
        if flag != "scc":
            kb.s_cmp_lg_u32(low.operand(c), 0)
        kb.s_cselect_b64(kb.vcc, -1, 0)
    elif flag != "vcc":
        kb.v_cmp_ne_u32(kb.vcc, 0, c.value)
    av, bv = words_of(low, a, n), words_of(low, b, n)
    out = []
    for x, y in zip(av, bv):
        # VCC takes the constant bus already (gfx9: one read): an SGPR or a literal moves to
        # a VGPR, only an inline constant stays
        src0 = low.operand(y)
        if not isinstance(src0, int):
            src0 = low.vgpr(y)
        out.append(kb.v_cndmask_b32(None, src0, low.vgpr(x), kb.vcc))
    return LV("v", t, out[0] if n == 1 else kb.join(*out, align=align(n)))


# float binary ops (here, not in .arith: the memory helpers combine values with them too)
_FLOAT_OPS = {
    "arith.addf": "v_add", "arith.subf": "v_sub", "arith.mulf": "v_mul",
    "arith.maximumf": "v_max", "arith.minimumf": "v_min", "arith.maxnumf": "v_max",
    "arith.minnumf": "v_min",
}


def float_binary(low: KernelLowering, name: str, a: LV, b: LV, t, dest=None) -> LV:
    """A float binary op (f16, f32, f64; elementwise on vectors of f32)."""
    tn = type_name(t)
    if isinstance(t, VectorType):
        et = t.element_type
        if type_name(et) == "f16" and name in _PACKED_F16:
            return _packed_f16(low, _PACKED_F16[name], a, b, t)
        if type_bits(et) != 32:
            parts = [float_binary(low, name, x, y, et) for x, y in
                     zip(elements(low, a, t), elements(low, b, t))]
            return pack(low, parts, elem_bits(et), t)
        n = reg_count(t)
        parts = [float_binary(low, name, x, y, et) for x, y in
                 zip(words_of(low, a, n), words_of(low, b, n))]
        regs = [low.vgpr(p) for p in parts]
        return LV("v", t, regs[0] if n == 1 else low.kb.join(*regs, align=align(n)))
    if tn not in ("f16", "f32", "f64"):
        raise LoweringError(f"{t} arithmetic is not supported (f16, f32, f64)")
    if name == "arith.divf":
        return _divf(low, a, b, t)
    mnemonic = f"{_FLOAT_OPS[name]}_{tn}"
    if tn == "f64" and mnemonic in ("v_sub_f64",):
        raise LoweringError("f64 subtraction is not supported yet")
    if tn == "f64" and mnemonic.startswith(("v_max", "v_min")):
        mnemonic = mnemonic.replace("_f64", "_f64")
    x, y = float_sources(low, [a, b], t)
    if not isinstance(y, float) and hasattr(y, "type") and y.type.KIND != "v" and \
            not isinstance(x, float) and x.type.KIND == "v" and name != "arith.subf":
        x, y = y, x
    return LV("v", t, low.kb.emit(mnemonic, dest, x, y))


# f16 vector ops a hand-writer does two elements at a time (VOP3P packed math).
_PACKED_F16 = {"arith.addf": "v_pk_add_f16", "arith.mulf": "v_pk_mul_f16",
               "arith.maximumf": "v_pk_max_f16", "arith.minimumf": "v_pk_min_f16",
               "arith.maxnumf": "v_pk_max_f16", "arith.minnumf": "v_pk_min_f16"}


def _packed_f16(low: KernelLowering, mnemonic: str, a: LV, b: LV, t) -> LV:
    """An f16 vector op, one packed instruction per register (two elements)."""
    n = reg_count(t)
    out = []
    for x, y in zip(words_of(low, a, n), words_of(low, b, n)):
        xs, ys = low.valu_operands([x, y])
        # (an inline constant would apply to the low half only: constants go in registers)
        xs = low.vgpr(x) if isinstance(xs, int) else xs
        ys = low.vgpr(y) if isinstance(ys, int) else ys
        out.append(low.kb.emit(mnemonic, None, xs, ys))
    return LV("v", t, out[0] if n == 1 else low.kb.join(*out, align=align(n)))


def _divf(low: KernelLowering, a: LV, b: LV, t) -> LV:
    """a / b as a * rcp(b) (v_rcp: 1 ulp), f32 and f16."""
    tn = type_name(t)
    if tn not in ("f32", "f16"):
        raise LoweringError(f"divf on {t} is not supported (f16, f32)")
    kb = low.kb
    (bv,) = float_sources(low, [b], t)
    r = kb.emit(f"v_rcp_{tn}", None, bv)
    (av,) = float_sources(low, [a], t)
    return LV("v", t, kb.emit(f"v_mul_{tn}", None, av, r))


__all__ = ["CMPI_FOLD", "INT_FOLD", "INT_OPS", "MASK32", "align", "branch_if_zero", "cmp_suffix",
           "compare_int", "copy_into", "elements", "extract_bits", "flag_of", "float_binary",
           "float_sources",
           "int_binary", "masked_arms", "new_regs", "pack", "parallel_copy", "pow2",
           "select_value", "words_of", "written_into"]

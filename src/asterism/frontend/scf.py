"""Lowering of the upstream `scf` ops: scf.for with uniform bounds (a scalar loop counter and
branches; loop-carried values in registers the body writes in place), scf.while on a uniform
condition (a loop-head branch) and scf.if (branches on a uniform condition, EXEC masking on a
per-lane one)."""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Operation

from asterism.frontend.emit import align, words_of
from asterism.frontend.lowering import HandlerTable, KernelLowering, LoopFrame
from asterism.frontend.uniformity import is_divergent
from asterism.frontend.values import LV, fail, reg_count, signed32


def _new_regs(low: KernelLowering, t, file: str):
    n = reg_count(t)
    if file == "s":
        return low.kb.sregs(n, align(n)) if n > 1 else low.kb.sreg()
    return low.kb.vregs(n, align(n)) if n > 1 else low.kb.vreg()


def _copy_into(low: KernelLowering, regs, src: LV, t) -> None:
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


def _for(low: KernelLowering, op: scf.ForOp) -> None:
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
        trips = max(0, -(-(signed32(ub.scalar) - signed32(lb.scalar)) // signed32(step.scalar)))
    regs = []
    for init, arg in zip(op.iter_args, body.args[1:]):
        file = "v" if is_divergent(low, arg) else "s"
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
    frame = LoopFrame(yld, list(body.args[1:]), regs, body, [False] * len(regs))
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


def _yield_into(low: KernelLowering, yielded, regs, types) -> None:
    """Copy yielded values (a yield op or its operands) into the loop/if registers; values
    that are themselves one of those registers go through temporaries first (a parallel
    copy)."""
    operands = yielded.operands if isinstance(yielded, Operation) else yielded
    values = [low.get(v) for v in operands]
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


def _if(low: KernelLowering, op: scf.IfOp) -> None:
    kb = low.kb
    cond = low.get(op.cond)
    then_block = op.true_region.blocks[0]
    else_block = op.false_region.blocks[0] if op.false_region.blocks else None
    if cond.kind == "c":
        chosen = then_block if cond.scalar else else_block
        if chosen is not None:
            for inner in chosen.ops:
                if not isinstance(inner, scf.YieldOp):
                    low.lower_op(inner)
            for res, v in zip(op.results, chosen.last_op.operands):
                low.set(res, low.get(v))
        return
    regs = [_new_regs(low, r.type, "v" if is_divergent(low, r) else "s") for r in op.results]
    types = [r.type for r in op.results]

    def arm(block) -> None:
        for inner in block.ops:
            if not isinstance(inner, scf.YieldOp):
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


def _while(low: KernelLowering, op: scf.WhileOp) -> None:
    """scf.while on a uniform condition: the `before` region computes the condition at the
    loop head, a scalar branch leaves, the `after` region runs and branches back; values
    carried around the loop live in registers written by parallel copies."""
    kb = low.kb
    before = op.before_region.blocks[0]
    after = op.after_region.blocks[0]
    cond_op = before.last_op
    yld = after.last_op
    regs = []
    for init, arg in zip(op.arguments, before.args):
        r = _new_regs(low, arg.type, "v" if is_divergent(low, arg) else "s")
        _copy_into(low, r, low.get(init), arg.type)
        regs.append(r)
    out = [_new_regs(low, res.type, "v" if is_divergent(low, res) else "s")
           for res in op.res]
    head = kb.label("while_head")
    for arg, r in zip(before.args, regs):
        low.set(arg, LV(r.type.KIND, arg.type, r))
    for inner in before.ops:
        if inner is not cond_op:
            low.lower_op(inner)
    cond = low.get(cond_op.condition)
    if not cond.uniform:
        raise fail(op, "the condition differs between lanes; only a uniform scf.condition "
                       "(from constants, arguments, block ids and sizes) is supported")
    _yield_into(low, cond_op.args, out, [r.type for r in op.res])
    end = kb.new_label("while_end")
    if cond.kind == "c":
        if not cond.scalar:
            kb.s_branch(end)
    else:
        kb.s_cmp_lg_u32(low.operand(cond), 0)
        kb.s_cbranch_scc0(end)
    for arg, r, res in zip(after.args, out, op.res):
        low.set(arg, LV(r.type.KIND, res.type, r))
    for inner in after.ops:
        if inner is not yld:
            low.lower_op(inner)
    _yield_into(low, yld.operands, regs, [a.type for a in before.args])
    kb.s_branch(head)
    kb.place(end)
    for res, r in zip(op.res, out):
        low.set(res, LV(r.type.KIND, res.type, r))


def _yield(low: KernelLowering, op: scf.YieldOp) -> None:
    raise fail(op, "scf.yield outside scf.for/scf.if")


HANDLERS: HandlerTable = {
    scf.ForOp: _for,
    scf.IfOp: _if,
    scf.WhileOp: _while,
    scf.YieldOp: _yield,
}

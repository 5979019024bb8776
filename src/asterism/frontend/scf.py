"""Lowering of the upstream `scf` ops: scf.for with uniform bounds (a scalar loop counter and
branches; loop-carried values in registers the body writes in place), scf.while (a loop-head
branch on a uniform condition; on a per-lane one, lanes leave EXEC as their condition turns
0 until none is left) and scf.if (branches on a uniform condition, EXEC masking on a
per-lane one)."""

from __future__ import annotations

from xdsl.dialects import scf

from asterism.frontend.emit import (
    branch_if_zero,
    copy_into,
    flag_of,
    masked_arms,
    new_regs,
    parallel_copy,
)
from asterism.frontend.lowering import HandlerTable, KernelLowering, LoopFrame
from asterism.frontend.uniformity import is_divergent
from asterism.frontend.values import LV, fail, signed32


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
        r = new_regs(low, arg.type, file)
        if trips != 0:
            copy_into(low, r, low.get(init), arg.type)
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
    parallel_copy(low, yld, regs, [a.type for a in body.args[1:]])
    kb.s_add_u32(iv, iv, low.operand(step))
    kb.s_cmp_lt_i32(iv, low.operand(ub))
    kb.s_cbranch_scc1(head)
    kb.place(done)
    for res, r, arg in zip(op.results, regs, body.args[1:]):
        low.set(res, LV(r.type.KIND, arg.type, r))


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
    regs = [new_regs(low, r.type, "v" if is_divergent(low, r) else "s") for r in op.results]
    types = [r.type for r in op.results]

    def arm(block) -> None:
        for inner in block.ops:
            if not isinstance(inner, scf.YieldOp):
                low.lower_op(inner)
        if regs:
            parallel_copy(low, block.last_op, regs, types)

    if cond.uniform:
        end = kb.new_label("if_end")
        other = kb.new_label("if_else") if else_block is not None else end
        branch_if_zero(low, cond, other)
        arm(then_block)
        if else_block is not None:
            kb.s_branch(end)
            kb.place(other)
            arm(else_block)
        kb.place(end)
    else:
        masked_arms(low, cond, lambda: arm(then_block),
                    (lambda: arm(else_block)) if else_block is not None else None)
    for res, r in zip(op.results, regs):
        low.set(res, LV(r.type.KIND, res.type, r))


def _while(low: KernelLowering, op: scf.WhileOp) -> None:
    """scf.while: the `before` region computes the condition at the loop head, a scalar
    branch leaves (uniform condition; per-lane: the lanes whose condition is 0 leave EXEC,
    remembered in an SGPR pair, and the loop ends when EXEC is empty, as LLVM's structurizer
    does), the `after` region runs and branches back; values carried around the loop live in
    registers written by parallel copies (a lane's results stay in its lanes of `out`)."""
    kb = low.kb
    before = op.before_region.blocks[0]
    after = op.after_region.blocks[0]
    cond_op = before.last_op
    yld = after.last_op
    regs = []
    for init, arg in zip(op.arguments, before.args):
        r = new_regs(low, arg.type, "v" if is_divergent(low, arg) else "s")
        copy_into(low, r, low.get(init), arg.type)
        regs.append(r)
    out = [new_regs(low, res.type, "v" if is_divergent(low, res) else "s")
           for res in op.res]
    exited = None
    if is_divergent(low, cond_op.condition):
        exited = kb.sregs(2, 2)  # the lanes that have left
        kb.s_mov_b64(exited, 0)
    head = kb.label("while_head")
    for arg, r in zip(before.args, regs):
        low.set(arg, LV(r.type.KIND, arg.type, r))
    for inner in before.ops:
        if inner is not cond_op:
            low.lower_op(inner)
    cond = low.get(cond_op.condition)
    parallel_copy(low, cond_op.args, out, [r.type for r in op.res])
    end = kb.new_label("while_end")
    if not cond.uniform and exited is None:
        raise fail(op, "the condition differs between lanes in a way the uniformity "
                       "analysis did not foresee")
    if not cond.uniform:
        # lanes leave in different iterations: out of EXEC when their condition is 0 (their
        # results stay in their VGPR lanes of `out`), the loop ends when none is left
        if flag_of(low, cond) != "vcc":
            kb.v_cmp_ne_u32(kb.vcc, 0, low.vgpr(cond))
        leave = kb.s_andn2_b64(None, kb.exec, kb.vcc)
        kb.s_or_b64(exited, exited, leave)
        kb.s_andn2_b64(kb.exec, kb.exec, leave)
        kb.s_cbranch_execz(end)
    elif cond.kind == "c":
        if not cond.scalar:
            kb.s_branch(end)
    else:
        branch_if_zero(low, cond, end)
    for arg, r, res in zip(after.args, out, op.res):
        low.set(arg, LV(r.type.KIND, res.type, r))
    for inner in after.ops:
        if inner is not yld:
            low.lower_op(inner)
    parallel_copy(low, yld.operands, regs, [a.type for a in before.args])
    kb.s_branch(head)
    kb.place(end)
    if not cond.uniform:
        kb.s_mov_b64(kb.exec, exited)  # (EXEC is 0 here: back to every lane that came in)
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

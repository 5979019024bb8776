"""Lowering of a `gpu.func` body of several blocks (`cf.br`, `cf.cond_br`, as
`mlir-opt --convert-scf-to-cf` writes loops and ifs).

Blocks are laid out in reverse post-order, each behind a label; a block's arguments are
registers (SGPRs when every value branched to them is uniform, else VGPRs) that each branch
writes by a parallel copy before it jumps. A branch to the next block of the layout falls
through.

* `cf.br` = the copies + `s_branch`.
* `cf.cond_br` on a uniform condition = `s_cbranch_scc0` (on the SCC of the comparison, or
  after `s_cmp_lg_u32`) to the false
  block (through its copies when it takes arguments), the true block's copies + `s_branch`.
* `cf.cond_br` on a per-lane condition: EXEC masking, as for a per-lane `scf.if`. Its paths
  must meet again at one block (the branch's immediate post-dominator) without a loop or a
  return on the way and without being entered from elsewhere: the blocks of the true paths run
  under the lanes whose condition is 1 (`s_and_saveexec_b64`), then those of the false paths
  under the others (`s_xor_b64`), EXEC is restored (`s_or_b64`) and the meeting block follows.
  A branch inside those paths (per-lane or not) is masked the same way, and a loop there runs
  as a per-lane loop (below).
* `cf.cond_br` at the head of a loop on a per-lane condition (or any loop inside masked
  paths): the lanes that leave get the exit block's arguments and leave EXEC, remembered in
  an SGPR pair zeroed on entry; the others run the body and branch back until none is left
  (`s_cbranch_execz`); then EXEC is every lane that came in. A break (a cf.cond_br in the
  body to the head's exit block) takes its lanes out of EXEC the same way. Other shapes are an
  error naming the branch and what is missing.
"""

from __future__ import annotations

from xdsl.dialects import cf
from xdsl.ir import Block

from asterism.frontend.blocks import BlockLayout
from asterism.frontend.cfg import blocks_between, loop_body, successors
from asterism.frontend.emit import branch_if_zero, flag_of, masked_arms, parallel_copy
from asterism.frontend.lowering import HandlerTable, KernelLowering
from asterism.frontend.values import LV, LoweringError, fail


def _layout(low: KernelLowering, op) -> BlockLayout:
    layout = low.cfg
    if layout is None:
        raise fail(op, "a branch outside a gpu.func body of several blocks")
    return layout


def _copy_args(low: KernelLowering, layout: BlockLayout, values, dest: Block) -> None:
    parallel_copy(low, list(values), layout.regs.get(dest, []), [a.type for a in dest.args])


def _jump(low: KernelLowering, layout: BlockLayout, dest: Block) -> None:
    """Continue at `dest`: nothing when it is the next block of the layout, else s_branch."""
    here = layout.order.index(layout.current)
    following = next((b for b in layout.order[here + 1:] if b not in layout.done), None)
    if dest is not following:
        low.kb.s_branch(layout.labels[dest])


def _br(low: KernelLowering, op: cf.BranchOp) -> None:
    layout = _layout(low, op)
    _copy_args(low, layout, op.arguments, op.successor)
    if layout.masked_next:
        layout.masked_next[-1] = op.successor
        return
    _jump(low, layout, op.successor)


def _cond_br(low: KernelLowering, op: cf.ConditionalBranchOp) -> None:
    layout = _layout(low, op)
    cond = low.get(op.cond)
    kb = low.kb
    if layout.masked_next:  # inside the paths of a per-lane branch: mask this one too
        if layout.loop_exits and layout.loop_exits[-1][0] in (op.then_block, op.else_block):
            layout.masked_next[-1] = _break(low, layout, op, cond)
        elif layout.current in layout.lane_loops:  # a loop there: lanes leave under EXEC
            layout.masked_next[-1] = _lane_loop(low, layout, op, cond)
        else:
            layout.masked_next[-1] = _masked_branch(low, layout, op, cond)
        return
    if cond.kind == "c":
        dest, args = ((op.then_block, op.then_arguments) if cond.scalar else
                      (op.else_block, op.else_arguments))
        _copy_args(low, layout, args, dest)
        _jump(low, layout, dest)
        return
    if cond.uniform:
        copies = bool(op.else_arguments)
        other = kb.new_label("block_else") if copies else layout.labels[op.else_block]
        branch_if_zero(low, cond, other)
        _copy_args(low, layout, op.then_arguments, op.then_block)
        if copies:
            kb.s_branch(layout.labels[op.then_block])
            kb.place(other)
            _copy_args(low, layout, op.else_arguments, op.else_block)
            _jump(low, layout, op.else_block)
        else:
            _jump(low, layout, op.then_block)
        return
    if layout.current in layout.lane_loops:
        _jump(low, layout, _lane_loop(low, layout, op, cond))
        return
    merge = _masked_branch(low, layout, op, cond)
    _jump(low, layout, merge)


def _walk(low: KernelLowering, layout: BlockLayout, op, block: Block, stop: Block,
          what: str) -> None:
    """Lower the blocks from `block` on, each followed by where its branch goes on (set in
    `masked_next` by the branch handlers), until `stop`: the paths of a masked branch or the
    body of a per-lane loop. A loop head met on the way (a loop inside them) gets its
    per-lane loop entry: the SGPR pair of the lanes that left, zeroed, and the label its back
    edge jumps to."""
    kb = low.kb
    while block is not stop:
        if block in layout.done:
            raise fail(op, f"{what} and block {_name(layout, block)} is reached on two of its "
                           "paths (unstructured branches are not supported under EXEC "
                           "masking)")
        layout.done.add(block)
        if any(loop_body(block, s, layout.order) is not None for s in successors(block)):
            exited = kb.sregs(2, 2)
            kb.s_mov_b64(exited, 0)
            layout.lane_loops[block] = (kb.label("lane_loop"), exited)
        outer, layout.current = layout.current, block
        layout.masked_next.append(None)
        low.lower_block(block)
        block = layout.masked_next.pop()
        layout.current = outer


def _lane_loop(low: KernelLowering, layout: BlockLayout, op: cf.ConditionalBranchOp,
               cond: LV) -> Block:
    """The per-lane cf.cond_br at the head of a loop (one successor leads back here, the
    other leaves): the lanes that leave get the exit block's arguments and are taken out of
    EXEC (`s_andn2_b64`), remembered in an SGPR pair; the others run the body's blocks and
    branch back; once no lane is left (`s_cbranch_execz`) EXEC is the lanes that left and the
    exit block follows. Returns the exit block."""
    kb = low.kb
    here = layout.current
    inner, exited = layout.lane_loops[here]
    then_loop = loop_body(here, op.then_block, layout.order)
    else_loop = loop_body(here, op.else_block, layout.order)
    if then_loop is not None and else_loop is not None:
        raise fail(op, "the condition differs between lanes and both of its successors lead "
                       "back to it; a per-lane loop needs one successor that leaves")
    stay_on_true = then_loop is not None
    body, exits = then_loop if stay_on_true else else_loop  # type: ignore[misc]
    entry, entry_args = ((op.then_block, op.then_arguments) if stay_on_true else
                         (op.else_block, op.else_arguments))
    out, out_args = ((op.else_block, op.else_arguments) if stay_on_true else
                     (op.then_block, op.then_arguments))
    for b in body:  # other exits: a cf.cond_br to the head's exit block (a break)
        for s in successors(b):
            if s in exits and (s is not out or not isinstance(b.last_op,
                                                               cf.ConditionalBranchOp)):
                raise fail(op, f"the condition differs between lanes and the loop it heads "
                               f"is also left from block {_name(layout, b)} (to "
                               f"{_name(layout, s)}); a per-lane loop may be left only at its "
                               "head or by a cf.cond_br to the head's exit block")
    for b in body:
        outside = [p for p in layout.preds.get(b, []) if p is not here and p not in body]
        if outside:
            raise fail(op, f"the condition differs between lanes and block {_name(layout, b)} "
                           "of the loop it heads is also entered from outside the loop")
    if flag_of(low, cond) != "vcc":
        kb.v_cmp_ne_u32(kb.vcc, 0, low.vgpr(cond))
    ones = kb.s_mov_b64(None, kb.vcc)  # (the copies below may use VCC)
    leave = (kb.s_andn2_b64 if stay_on_true else kb.s_and_b64)(None, kb.exec, ones)
    saved = kb.s_and_saveexec_b64(None, leave)
    _copy_args(low, layout, out_args, out)  # the leaving lanes' exit values
    kb.s_mov_b64(kb.exec, saved)
    kb.s_or_b64(exited, exited, leave)
    kb.s_andn2_b64(kb.exec, kb.exec, leave)
    end = kb.new_label("lane_loop_end")
    kb.s_cbranch_execz(end)
    _copy_args(low, layout, entry_args, entry)
    layout.loop_exits.append((out, exited))
    _walk(low, layout, op, entry, here, "the loop it heads is run lane by lane")
    layout.loop_exits.pop()
    kb.s_branch(inner)
    kb.place(end)
    kb.s_mov_b64(kb.exec, exited)  # (EXEC is 0 here: back to every lane that came in)
    return out


def _break(low: KernelLowering, layout: BlockLayout, op: cf.ConditionalBranchOp,
           cond: LV) -> Block:
    """A cf.cond_br in a per-lane loop's body to the loop's exit block (a break): the lanes
    that take it get the exit block's arguments and leave EXEC, as at the head; the others go
    on to the other successor, which is returned."""
    kb = low.kb
    out, exited = layout.loop_exits[-1]
    leave_on_true = op.then_block is out
    if flag_of(low, cond) != "vcc":
        kb.v_cmp_ne_u32(kb.vcc, 0, low.vgpr(cond))
    ones = kb.s_mov_b64(None, kb.vcc)
    leave = (kb.s_and_b64 if leave_on_true else kb.s_andn2_b64)(None, kb.exec, ones)
    saved = kb.s_and_saveexec_b64(None, leave)
    _copy_args(low, layout, op.then_arguments if leave_on_true else op.else_arguments, out)
    kb.s_mov_b64(kb.exec, saved)
    kb.s_or_b64(exited, exited, leave)
    kb.s_andn2_b64(kb.exec, kb.exec, leave)
    stay, stay_args = ((op.else_block, op.else_arguments) if leave_on_true else
                       (op.then_block, op.then_arguments))
    _copy_args(low, layout, stay_args, stay)
    return stay


def _masked_branch(low: KernelLowering, layout: BlockLayout, op: cf.ConditionalBranchOp,
                   cond: LV) -> Block:
    """A cf.cond_br lowered by EXEC masking: both sides' paths up to the block where they
    meet, which is returned (its arguments written by both sides)."""
    here = layout.current
    merge = layout.ipdom.get(here)
    what = ("the condition differs between lanes" if not cond.uniform else
            "it is inside the paths of a per-lane branch")
    if merge is None:
        raise fail(op, f"{what} and its paths do not meet again before a return; EXEC "
                       "masking needs the true and false paths to join at one block (an "
                       "early return of some lanes is not supported)")
    region = blocks_between(here, merge)
    for b in region:
        outside = [p for p in layout.preds.get(b, []) if p is not here and p not in region]
        if outside:
            raise fail(op, f"{what} and a block on its paths is also entered from outside "
                           "them; EXEC masking needs paths entered only by this branch")
        if any(s is here for s in successors(b)):
            raise fail(op, f"{what} and its paths lead back to it before they meet; EXEC "
                           "masking needs the true and false paths to join at one block")
        if not isinstance(b.last_op, cf.BranchOp | cf.ConditionalBranchOp):
            raise fail(b.last_op, f"ends a path of the per-lane cf.cond_br at {_where(op)} "
                                  "before the paths meet; a return under a per-lane branch "
                                  "is not supported")

    def side(block: Block, args) -> None:
        _copy_args(low, layout, args, block)
        _walk(low, layout, op, block, merge, what)

    then_side = (lambda: side(op.then_block, op.then_arguments))
    else_side = None
    if op.else_block is not merge or op.else_arguments:
        else_side = (lambda: side(op.else_block, op.else_arguments))
    masked_arms(low, cond, then_side, else_side)
    return merge


def _name(layout: BlockLayout, block: Block) -> str:
    """The block as the user's text names it (^name, or ^bbN by its place, as MLIR prints)."""
    if block.name_hint:
        return f"^{block.name_hint}"
    return f"^bb{list(block.parent.blocks).index(block)}" if block.parent else "^?"


def _where(op) -> str:
    loc = op.location
    line = getattr(getattr(loc, "line", None), "data", None)
    return f"line {line}" if line is not None else "its location"


def _unsupported(low: KernelLowering, op) -> None:
    raise LoweringError(f"{op.name} is not supported (cf.br and cf.cond_br are)")


HANDLERS: HandlerTable = {
    cf.BranchOp: _br,
    cf.ConditionalBranchOp: _cond_br,
    cf.SwitchOp: _unsupported,
    cf.AssertOp: _unsupported,
}

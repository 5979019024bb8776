"""The layout of a `gpu.func` body of several blocks: blocks in reverse post-order behind
labels, their arguments in registers (SGPRs when uniform), each block lowered in turn; the
branches themselves are the `cf` handlers' (asterism.frontend.cf), which read the layout
through `KernelLowering.cfg`."""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import cf
from xdsl.ir import Block, Region

from asterism.frontend.cfg import loop_body, post_dominators, reverse_post_order, successors
from asterism.frontend.emit import new_regs
from asterism.frontend.lowering import KernelLowering
from asterism.frontend.uniformity import is_divergent
from asterism.frontend.values import LV


@dataclass
class BlockLayout:
    """The several-block body being lowered: block order, labels, argument registers."""

    order: list[Block]
    labels: dict = field(default_factory=dict)  # Block -> builder Label
    regs: dict = field(default_factory=dict)  # Block -> registers of its arguments
    ipdom: dict = field(default_factory=dict)  # Block -> immediate post-dominator
    preds: dict = field(default_factory=dict)  # Block -> predecessor blocks
    done: set = field(default_factory=set)  # blocks lowered (laid out or masked)
    taken: dict = field(default_factory=dict)  # id(cf.br) -> its argument registers computed
    # in place (KernelLowering.dest)
    current: Block | None = None  # the block whose ops are being lowered
    masked_next: list = field(default_factory=list)  # inside masked paths: where they go on
    # per-lane loop heads: Block -> (the label the back edge jumps to, the SGPR pair of the
    # lanes that have left the loop); asterism.frontend.cf lowers them
    lane_loops: dict = field(default_factory=dict)
    # the per-lane loops whose body is being lowered: (exit block, SGPR pair of the lanes
    # that left), innermost last (asterism.frontend.cf: a break leaves to the exit block)
    loop_exits: list = field(default_factory=list)


def lower_blocks(low: KernelLowering, region: Region) -> None:
    """Lower a kernel body of several blocks (the entry's arguments are already set)."""
    kb = low.kb
    entry = region.blocks[0]
    order = reverse_post_order(entry)
    layout = BlockLayout(order, ipdom=post_dominators(region))
    for b in order:
        layout.preds.setdefault(b, [])
        for s in successors(b):
            layout.preds.setdefault(s, []).append(b)
    for k, b in enumerate(order[1:], 1):
        layout.labels[b] = kb.new_label(f"block{k}")  # (^bbN: xDSL's names of unnamed blocks)
        regs = []
        for arg in b.args:
            r = new_regs(low, arg.type, "v" if is_divergent(low, arg) else "s")
            low.set(arg, LV(r.type.KIND, arg.type, r))
            regs.append(r)
        layout.regs[b] = regs
    low.cfg = layout
    for b in order:
        if b in layout.done:
            continue  # lowered inside the masked paths of a per-lane branch
        if b is not entry:
            kb.place(layout.labels[b])
        if is_lane_loop_head(low, b, order):
            # entered from outside: no lane has left yet; the back edge comes in after this
            exited = kb.sregs(2, 2)
            kb.s_mov_b64(exited, 0)
            inner = kb.label("lane_loop")
            layout.lane_loops[b] = (inner, exited)
        layout.done.add(b)
        layout.current = b
        low.lower_block(b)
    low.cfg = None




def is_lane_loop_head(low: KernelLowering, block: Block, order: list[Block]) -> bool:
    """Whether `block` ends in a per-lane cf.cond_br one of whose successors leads back to
    it (the head of a loop the lanes leave in different iterations)."""
    last = block.last_op
    if not isinstance(last, cf.ConditionalBranchOp) or not is_divergent(low, last.cond):
        return False
    return any(loop_body(block, s, order) is not None for s in successors(block))


__all__ = ["BlockLayout", "is_lane_loop_head", "lower_blocks"]

"""Which values of a kernel are the same in every lane (and so live in SGPRs): those derived
only from constants, kernel arguments, block ids and sizes and uniform loop counters through
32-bit integer ops; everything else (per-lane values, floats, vectors) is divergent. A block
argument (`cf.br` / `cf.cond_br`) is uniform when every value branched to it is, unless the
block is on or at the end of the paths of a per-lane branch (lanes arrive by different
paths)."""

from __future__ import annotations

from xdsl.dialects import arith, cf, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.ir import SSAValue

from asterism.frontend.cfg import (
    blocks_between,
    loop_body,
    post_dominators,
    reverse_post_order,
    successors,
)
from asterism.frontend.dialects.arith import CmpiOp, SelectOp
from asterism.frontend.dialects.gpu import BlockDimOp, BlockIdOp, GridDimOp
from asterism.frontend.lowering import KernelLowering
from asterism.frontend.values import type_bits

# Ops whose 32-bit integer results are uniform when their operands are.
UNIFORM_OPS = frozenset({
    arith.ConstantOp, arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.AndIOp, arith.OrIOp,
    arith.XOrIOp, arith.ShLIOp, arith.ShRUIOp, arith.ShRSIOp, arith.MaxSIOp, arith.MinSIOp,
    arith.MaxUIOp, arith.MinUIOp, arith.DivUIOp, arith.RemUIOp, arith.DivSIOp, arith.RemSIOp,
    arith.FloorDivSIOp, arith.CeilDivSIOp, arith.CeilDivUIOp, CmpiOp, SelectOp,
    arith.IndexCastOp, arith.ExtUIOp, arith.ExtSIOp, arith.TruncIOp,
    BlockIdOp, BlockDimOp, GridDimOp, memref.DimOp,
})


def _scalar_int(t) -> bool:
    return isinstance(t, IndexType | IntegerType) and type_bits(t) <= 32


def divergent_values(func_op) -> set:
    """Values that may differ between lanes or need VGPRs (floats, vectors), by a fixpoint
    over the function: the rest can live in SGPRs."""
    div: set = set()
    body = func_op.body
    ipdom = post_dominators(body) if len(body.blocks) > 1 else {}
    order = reverse_post_order(body.blocks[0]) if len(body.blocks) > 1 else []
    changed = True
    while changed:
        changed = False

        def mark(v) -> None:
            nonlocal changed
            if v not in div:
                div.add(v)
                changed = True

        for op in func_op.walk():
            if isinstance(op, scf.ForOp):
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
            elif isinstance(op, scf.WhileOp):
                before = op.before_region.blocks[0]
                after = op.after_region.blocks[0]
                cond = before.last_op
                yielded = after.last_op.operands
                for k, (init, arg) in enumerate(zip(op.arguments, before.args)):
                    if init in div or yielded[k] in div or not _scalar_int(arg.type):
                        mark(arg)
                for k, (arg, res) in enumerate(zip(after.args, op.res)):
                    if cond.args[k] in div or cond.condition in div or \
                            not _scalar_int(arg.type):
                        mark(arg)
                        mark(res)
            elif isinstance(op, scf.IfOp):
                yields = [r.blocks[0].last_op for r in op.regions if r.blocks]
                for k, res in enumerate(op.results):
                    if op.cond in div or not _scalar_int(res.type) or any(
                            y.operands[k] in div for y in yields):
                        mark(res)
            elif isinstance(op, cf.BranchOp | cf.ConditionalBranchOp):
                edges = [(op.arguments, op.successor)] if isinstance(op, cf.BranchOp) else [
                    (op.then_arguments, op.then_block), (op.else_arguments, op.else_block)]
                for values, dest in edges:
                    for v, arg in zip(values, dest.args):
                        if v in div or not _scalar_int(arg.type):
                            mark(arg)
                if isinstance(op, cf.ConditionalBranchOp) and op.cond in div:
                    here = op.parent_block()
                    if any(loop_body(here, s, order) is not None for s in successors(here)):
                        # a per-lane loop's head: lanes leave it in different iterations, so
                        # what it defines differs between lanes after the loop (and each
                        # lane's last value must stay in its own VGPR lane)
                        for v in [*here.args, *(r for o in here.ops for r in o.results)]:
                            mark(v)
                    merge = ipdom.get(here)
                    for b in [*blocks_between(here, merge), *([merge] if merge else [])]:
                        for arg in b.args:
                            mark(arg)
            else:
                for res in op.results:
                    if (type(op) not in UNIFORM_OPS or not _scalar_int(res.type)
                            or any(o in div for o in op.operands)):
                        mark(res)
    return div


def is_divergent(low: KernelLowering, value: SSAValue) -> bool:
    """Whether `value` of the kernel being lowered needs VGPRs (computed once per kernel)."""
    if low.divergent is None:
        low.divergent = divergent_values(low.func)
    return value in low.divergent


__all__ = ["UNIFORM_OPS", "divergent_values", "is_divergent"]

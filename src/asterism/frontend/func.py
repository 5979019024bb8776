"""Lowering of the upstream `func` ops inside a gpu.module: func.call is inlined (the callee's
body lowered in place, its func.return values becoming the call's results), func.return ends
the inlined body."""

from __future__ import annotations

from xdsl.dialects.func import CallOp, ReturnOp

from asterism.frontend.lowering import HandlerTable, KernelLowering
from asterism.frontend.values import fail


def _call(low: KernelLowering, op: CallOp) -> None:
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


def _return(low: KernelLowering, op: ReturnOp) -> None:
    low.lower_return(op)


HANDLERS: HandlerTable = {
    CallOp: _call,
    ReturnOp: _return,
}

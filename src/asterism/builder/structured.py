"""Structured control flow in the builder: `kb.loop` (scf.for) and `kb.if_` (scf.if).

    with kb.loop(0, n, 1, iter_args=[acc, tok]) as (i, (a, t)):
        ...                                  # the body; `i` is the SGPR counter
        loop.yield_(new_acc, new_tok)        # (loop = the object `with` gave)
    acc_out, tok_out = loop.results

    with kb.loop(0, n) as loop:              # the same, by attribute
        kb.s_add_u32(x, x, loop.iv)

    br = kb.if_(flag)                        # flag: an SGPR or kb.vcc, taken when not zero
    with br.then():
        ...; br.yield_(x1)
    with br.otherwise():
        ...; br.yield_(x2)
    x = br.results[0]

Bounds may be Python ints (materialized with `s_mov_b32`) or SGPR values. The body is
one block: labels and branches inside it are an error. See ir.loops for what the ops mean
and how they are lowered.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

from xdsl.dialects import scf
from xdsl.ir import Block, Operation, Region, SSAValue

from asterism.builder.location import caller_location, source_location
from asterism.errors import VerifyError
from asterism.ir.loops import KernelForOp, KernelIfOp, is_vcc
from asterism.ir.types import SGPRType, TokenType, type_text


class StructuredHost(Protocol):
    """What Loop and If need of a KernelBuilder."""

    block: Block

    def _insert(self, op: Operation, loc=None) -> Operation: ...
    def _enter_region(self, block: Block) -> object: ...
    def _leave_region(self, saved: object) -> None: ...
    def _counter(self, value, what: str, loc) -> SSAValue: ...


def _check_carried(values: Sequence[SSAValue], what: str, loc) -> None:
    for k, v in enumerate(values):
        if not isinstance(v, SSAValue):
            raise VerifyError(f"{what} #{k} is {v!r}: loops carry register values and tokens",
                              source_location(loc))


class Loop:
    """An `scf.for` being built: `iv`, `args` (the carried values in the body), `results`
    (after the `with`), `yield_(...)` (the next iteration's values)."""

    def __init__(self, host: StructuredHost, op: KernelForOp, loc):
        self._host = host
        self.op = op
        self._loc = loc
        self._yielded = False

    @property
    def iv(self) -> SSAValue:
        """The induction variable (an SGPR)."""
        return self.op.body.block.args[0]

    @property
    def args(self) -> list[SSAValue]:
        """The loop-carried values as the body sees them."""
        return list(self.op.body.block.args[1:])

    @property
    def results(self) -> list[SSAValue]:
        """The carried values after the loop."""
        return list(self.op.res)

    def __iter__(self) -> Iterator:
        return iter((self.iv, self.args))

    def yield_(self, *values: SSAValue) -> None:
        """End the body: these values are the carried values of the next iteration."""
        loc = caller_location()
        block = self.op.body.block
        if self._yielded or self._host.block is not block:
            raise VerifyError("loop.yield_ ends the body of its own loop, once",
                              source_location(loc))
        if len(values) != len(self.op.iter_args):
            raise VerifyError(f"loop.yield_ gives {len(values)} values for "
                              f"{len(self.op.iter_args)} iter_args", source_location(loc))
        _check_carried(values, "loop.yield_ value", loc)
        for k, (v, init) in enumerate(zip(values, self.op.iter_args)):
            same = (isinstance(v.type, TokenType) == isinstance(init.type, TokenType)) and (
                isinstance(v.type, TokenType) or (type(v.type) is type(init.type)
                                                  and v.type.width == init.type.width))
            if not same:
                raise VerifyError(f"loop.yield_ value #{k} is {type_text(v.type)}, the "
                                  f"iter_arg {type_text(init.type)}", source_location(loc))
        self._host._insert(scf.YieldOp(*values), loc)
        self._yielded = True


class If:
    """An `scf.if` being built: `then()`, `otherwise()`, `yield_(...)`, `results`."""

    def __init__(self, host: StructuredHost, op: KernelIfOp):
        self._host = host
        self.op = op
        self._yielded: set[int] = set()

    @property
    def results(self) -> list[SSAValue]:
        """The values the taken branch yielded."""
        return list(self.op.output)

    @contextmanager
    def then(self):
        """Build the branch taken when the condition is not zero."""
        yield from self._branch(self.op.true_region)

    @contextmanager
    def otherwise(self):
        """Build the branch taken when the condition is zero."""
        if not self.op.false_region.blocks:
            self.op.false_region.add_block(Block())
        yield from self._branch(self.op.false_region)

    def _branch(self, region: Region):
        block = region.blocks.first
        assert block is not None
        saved = self._host._enter_region(block)
        try:
            yield self
            if id(block) not in self._yielded:
                if self.op.output:
                    raise VerifyError("an scf.if with results ends each branch with "
                                      "br.yield_(...)", source_location(caller_location()))
                self._host._insert(scf.YieldOp(), None)
        finally:
            self._host._leave_region(saved)

    def yield_(self, *values: SSAValue) -> None:
        """End the current branch with these result values."""
        loc = caller_location()
        block = self._host.block
        if len(values) != len(self.op.output):
            raise VerifyError(f"br.yield_ gives {len(values)} values for "
                              f"{len(self.op.output)} results", source_location(loc))
        _check_carried(values, "br.yield_ value", loc)
        self._host._insert(scf.YieldOp(*values), loc)
        self._yielded.add(id(block))


@contextmanager
def build_loop(host: StructuredHost, lo, hi, step, iter_args: Sequence[SSAValue], loc):
    """The body of `kb.loop` (see the module docstring)."""
    bounds = [host._counter(v, what, loc) for v, what in
              ((lo, "lower bound"), (hi, "upper bound"), (step, "step"))]
    iter_args = list(iter_args)
    _check_carried(iter_args, "kb.loop iter_arg", loc)
    block = Block(arg_types=[SGPRType.relocatable(), *(v.type for v in iter_args)])
    op = KernelForOp(*bounds, iter_args, Region(block))
    host._insert(op, loc)
    loop = Loop(host, op, loc)
    saved = host._enter_region(block)
    try:
        yield loop
        if not loop._yielded:
            if iter_args:
                raise VerifyError("a kb.loop with iter_args ends its body with "
                                  "loop.yield_(...)", source_location(loc))
            host._insert(scf.YieldOp(), loc)
    finally:
        host._leave_region(saved)


def build_if(host: StructuredHost, cond: SSAValue, result_types: Sequence, loc) -> If:
    """`kb.if_` (see the module docstring)."""
    if not isinstance(cond, SSAValue) or not (is_vcc(cond.type) or (
            type(cond.type) is SGPRType and cond.type.width == 1)):  # type: ignore[attr-defined]
        raise VerifyError("kb.if_ branches on one SGPR value or kb.vcc (taken when not zero)",
                          source_location(loc))
    op = KernelIfOp(cond, list(result_types), Region(Block()), Region())
    host._insert(op, loc)
    return If(host, op)


__all__ = ["If", "Loop", "StructuredHost", "build_if", "build_loop"]

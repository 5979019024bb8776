"""Software pipelining of scf.for loops by stage (`scf-pipeline`, in `auto`).

The ops of a loop body annotated `sched.stage = N` (N >= 0; an op without one is stage 0)
run N iterations late. For S the largest stage, the loop becomes:

* a **prologue** of S sections: section p runs stage q of iteration p - q, for q <= p;
* the **kernel** loop from iteration S on: each trip runs every stage q for iteration
  k - q, in the body's order; a value made in stage t and used in stage s > t (or carried
  to the next iteration) reaches it through the kernel's iter_args, one per distance
  (a value used 2 stages later passes through 2 of them);
* an **epilogue** of S sections: section e runs the stages q >= e of the last iterations.

Each stage sees the induction variable of its own iteration (`%i - q * step`), in the
epilogue too (counted back from the counter's final value). When the trip count is not
known when the kernel is built, a guard (`scf.if` on "at least S iterations") runs the
pipelined loop, else the loop as written; constant bounds decide at compile time.

**Modulo variable expansion** (`rotate`, on by default): a value in flight for d trips
needs d (or d + 1) registers. The kernel loop's body is the kernel trip copied U times
(U the most any register value needs), so each trip's copy writes its own registers and
every iter_arg is yielded by an instruction of the body: the loop lowering writes it in
place (no copy on the back edge, and so no wait there for a load in flight). The trips
left over (trip count - S not a multiple of U) run after the loop: straight on with
constant bounds, else one `scf.if` per possible extra trip (each with its epilogue).

A value used in an earlier stage than the one that makes it (or a carried value made in a
stage after the one that reads it) is an error naming the op. A destination written as a
new value (an `amdgcn.alloca`) gets a fresh register per copy of the op, so iterations in
flight do not share registers; pinned (fixed) registers stay.
The loops and their lowering: asterism.ir.loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from asterism.ir.abi import compute_layout
from asterism.ir.loop_lowering import constant_of, erase_unused_constant
from asterism.ir.loops import STAGE_ATTR, KernelForOp, KernelIfOp
from asterism.ir.ops import (
    AllocaOp,
    InstructionOp,
    KernargOffsetOp,
    KernelOp,
    LiteralOp,
    OffOp,
    SOP1Op,
    SOP2Op,
    SOPCOp,
    ops_with_regions,
)
from asterism.ir.types import RegisterType, SGPRType
from asterism.ir.verify import error_at, match_instruction
from asterism.isa import get_isa
from asterism.passes.base import Pass, option
from asterism.passes.machine import kernels_of, module_target

# Ops that emit nothing and only name things: copied where each section needs them.
_FREE = (AllocaOp, arith.ConstantOp, OffOp, LiteralOp, KernargOffsetOp)


def stage_of(op: Operation) -> int:
    """The `sched.stage` of an op (0 when it has none)."""
    attr = op.attributes.get(STAGE_ATTR)
    if attr is None:
        return 0
    value = getattr(attr, "value", None)
    data = getattr(value, "data", None)
    if not isinstance(data, int) or data < 0:
        raise error_at(op, f"{STAGE_ATTR} is a non-negative integer (e.g. {{{STAGE_ATTR} = 1 : "
                           "i32}})")
    return data


@dataclass(frozen=True)
class ScfPipelinePass(Pass):
    """`scf-pipeline` (see the module docstring)."""

    name = "scf-pipeline"
    summary = "software-pipeline scf.for loops whose ops carry sched.stage (prologue, " \
              "kernel loop, epilogue; a guard for short loops)"
    structured = True

    rotate: bool = option(True, "unroll the kernel loop so values in flight rotate through "
                                "registers (modulo variable expansion: no copies, no waits on "
                                "the back edge)")

    def apply(self, module: Operation) -> None:
        """Pipeline every staged loop of every kernel, innermost loops first."""
        for kernel in kernels_of(module):
            isa = get_isa(module_target(kernel))
            layout = compute_layout(kernel)
            loops = [op for op in ops_with_regions(kernel) if isinstance(op, KernelForOp)]
            for loop in reversed(loops):
                if any(STAGE_ATTR in o.attributes for o in loop.body.block.ops):
                    _Pipeliner(kernel, loop, isa, layout, self.rotate).run()


class _Pipeliner:
    def __init__(self, kernel: KernelOp, loop: KernelForOp, isa, layout, rotate: bool = True):
        self.kernel = kernel
        self.rotate = rotate
        # The counters of the kernel trip being emitted and after the last iteration, as
        # (base, n): base + n * step, made only where an op reads it.
        self.trip_iv: tuple[SSAValue, int] | None = None
        self.final_iv: tuple[SSAValue, int] | None = None
        self.loop = loop
        self.isa = isa
        self.layout = layout
        block = loop.body.block
        self.iv, *self.args = block.args
        self.ops = [o for o in block.ops if not isinstance(o, scf.YieldOp)]
        self.yields = list(block.last_op.operands)  # type: ignore[union-attr]
        self.stage = {o: (stage_of(o) if not isinstance(o, _FREE) else -1) for o in self.ops}
        self.S = max(self.stage.values(), default=0)
        self.body_values = {r for o in self.ops for r in o.results}

    # -- checks

    def def_stage(self, v: SSAValue) -> int:
        """The stage that makes body value `v` (-1: a free op's)."""
        return self.stage[v.owner]  # type: ignore[index]

    def check(self) -> dict[SSAValue, int]:
        """Stage rules; returns the largest distance (in kernel trips) each body value must
        be kept for."""
        dist: dict[SSAValue, int] = {}
        self.readers: dict[SSAValue, list[tuple[int, Operation]]] = {}
        for o in self.ops:
            s = self.stage[o]
            if s < 0:
                continue
            for k, w in enumerate(_deep_operands(o)):
                if w in self.body_values and self.def_stage(w) >= 0:
                    t = self.def_stage(w)
                    if t > s:
                        raise error_at(o, f"operand #{k} is made in stage {t} (by "
                                          f"{w.owner.name}) but used here in stage {s}, "
                                          "earlier: a value is used in the stage that makes "
                                          "it or a later one")
                    if s > t:
                        dist[w] = max(dist.get(w, 0), s - t)
                        self.readers.setdefault(w, []).append((s - t, o))
                elif isinstance(w, BlockArgument) and w in self.args:
                    y = self.yields[self.args.index(w)]
                    t = self.def_stage(y) if y in self.body_values else -1
                    if t > s:
                        raise error_at(o, f"operand #{k} is the value carried from the previous "
                                          f"iteration, made in stage {t}, after stage {s} "
                                          "that reads it")
                    if t >= 0:
                        dist[y] = max(dist.get(y, 0), s + 1 - t)
                        self.readers.setdefault(y, []).append((s + 1 - t, o))
        for j, y in enumerate(self.yields):
            if y not in self.body_values and not self.loop.is_ancestor(_defining_op(y)):
                continue  # a value from outside the loop: the same in every iteration after
            if y not in self.body_values or self.def_stage(y) < 0:
                raise error_at(self.loop, f"scf-pipeline: iter_arg #{j} yields "
                                          f"{_what(y)}: carry a value made by an instruction "
                                          "of the loop body or outside the loop")
            dist[y] = max(dist.get(y, 0), 1)  # (the results: iteration N-1's, from the kernel)
        return dist

    def unroll_factor(self, dist: dict[SSAValue, int]) -> int:
        """U of the module docstring: the kernel trips per kernel-loop trip so that each
        instance of a register value in flight has its own registers. The instance made
        U trips after one still read by an op at or after its maker (in body order) must
        not share its registers: that value needs one more."""
        if not self.rotate:
            return 1
        position = {o: k for k, o in enumerate(self.ops)}
        need = 1
        for v, m in dist.items():
            t = v.type
            if not isinstance(t, RegisterType) or t.is_fixed:
                continue  # tokens rotate for free; pinned registers cannot
            late = any(e == m and position[o] > position[v.owner]  # type: ignore[index]
                       for e, o in self.readers.get(v, ()))
            need = max(need, m + 1 if late else m)
        return need

    # -- emission

    def run(self) -> None:
        if self.S == 0:
            return
        dist = self.check()
        static = _trip_count(self.loop)
        if static is not None and static < self.S:
            _strip_stages(self.loop)  # too short to pipeline: the loop as written
            return
        self.slots = [(v, d) for v, m in dist.items() if v in self.body_values
                      for d in range(1, m + 1)]
        self.unroll = self.unroll_factor(dist)
        parent = self.loop.parent_block()
        assert parent is not None
        if static is not None:
            results = self.emit_pipelined(parent, self.loop, static)
        else:
            results = self.emit_guarded(parent)
        for old, new in zip(self.loop.res, results):
            old.replace_all_uses_with(new)
        bounds = (self.loop.lb, self.loop.ub, self.loop.step)
        parent.erase_op(self.loop)
        for v in bounds:
            erase_unused_constant(v)

    def emit_guarded(self, parent: Block) -> list[SSAValue]:
        """scf.if (lb + (S-1)*step < ub) { pipelined } else { the loop as written }."""
        at = Cursor(parent, self.loop)
        first_last = self.iv_at(at, self.loop.lb, self.S - 1)
        guard = self.branch(at, first_last, self.loop.ub)
        then_at = Cursor(guard.true_region.block, None)
        then_at.block.add_op(scf.YieldOp(*self.emit_pipelined(then_at.block, None, None)))
        plain = self.loop.clone()
        _strip_stages(plain)
        else_block = guard.false_region.block
        else_block.add_op(plain)
        else_block.add_op(scf.YieldOp(*plain.res))
        return list(guard.output)

    def branch(self, at: Cursor, lhs: SSAValue, rhs: SSAValue) -> KernelIfOp:
        """An scf.if (with the loop's result types, empty regions) taken when lhs < rhs."""
        at.add(_inst(SOPCOp, "s_cmp_lt_i32", [lhs, rhs], results=False))
        flag = at.alloca(SGPRType.relocatable())
        one, zero = at.const(1), at.const(0)
        cond = at.add(_inst(SOP2Op, "s_cselect_b32", [flag, one, zero])).results[0]
        guard = KernelIfOp(cond, [r.type for r in self.loop.res], Region(Block()),
                           Region(Block()))
        guard.location = self.loop.location
        at.add(guard)
        return guard

    def emit_pipelined(self, block: Block, before: Operation | None,
                       static: int | None) -> list[SSAValue]:
        """Prologue, kernel loop, left-over trips and epilogue before `before` (None: at
        the end); `static` the trip count when the bounds are constants. Returns the
        loop's results."""
        S, U = self.S, self.unroll
        at = Cursor(block, before)
        env: dict[tuple, SSAValue] = {}
        # prologue: section p runs stage q of iteration p - q
        for p in range(S):
            self.section(at, env, {q: ("abs", p - q) for q in range(p + 1)}, {})
        # kernel: iteration k - q for stage q; slot (v, d) holds v of iteration k - d - t
        state = {(v, d): self.lookup(at, env, v, ("abs", S - d - self.def_stage(v)), {})
                 for v, d in self.slots}
        if static is None:
            start = self.iv_at(at, self.loop.lb, S)
            last_start = self.iv_at(at, self.loop.ub, -(U - 1))  # U iterations left
            state, counter = self.kernel_loop(at, state, start, last_start, counter=True)
            assert counter is not None
            return self.left_over(at, state, (counter, 0), U - 1)
        lb, step = constant_of(self.loop.lb), constant_of(self.loop.step)
        assert lb is not None and step is not None
        trips, rest = divmod(static - S, U)
        first = S + trips * U  # the first kernel iteration after the loop
        if trips:
            state, _ = self.kernel_loop(at, state, at.sgpr(lb + S * step),
                                        at.sgpr(lb + first * step), counter=False)
        for j in range(rest):
            state = self.trip(at, state, (self.loop.lb, first + j))
        return self.epilogue(at, state, (self.loop.lb, static))

    def kernel_loop(self, at: Cursor, state: dict, start: SSAValue, end: SSAValue,
                    counter: bool) -> tuple[dict, SSAValue | None]:
        """The kernel loop: U kernel trips per trip, from `start` while the counter is below
        `end`. Returns the slots after it and, with `counter`, the counter's final value
        (an iter_arg that the loop lowering turns into the loop's own counter)."""
        U = self.unroll
        step = self.loop.step
        if U > 1:
            k = constant_of(step)
            step = at.sgpr(k * U) if k is not None else at.add(_inst(
                SOP2Op, "s_mul_i32", [at.alloca(SGPRType.relocatable()), step,
                                      at.const(U)])).results[0]
        inits = [state[slot] for slot in self.slots] + ([start] if counter else [])
        kblock = Block(arg_types=[SGPRType.relocatable(), *(v.type for v in inits)])
        loop = KernelForOp(start, end, step, inits, Region(kblock))
        loop.location = self.loop.location
        at.add(loop)
        iv, *args = kblock.args
        inner = Cursor(kblock, None)
        now = dict(zip(self.slots, args))
        for j in range(U):
            now = self.trip(inner, now, (iv, j))
        nxt = [now[slot] for slot in self.slots]
        if counter:
            nxt.append(inner.add(_inst(SOP2Op, "s_add_u32", [
                inner.alloca(SGPRType.relocatable()), args[-1], step])).results[0])
        kblock.add_op(scf.YieldOp(*nxt))
        results = list(loop.res)
        return dict(zip(self.slots, results)), (results[-1] if counter else None)

    def trip(self, at: Cursor, state: dict, counter: tuple[SSAValue, int]) -> dict:
        """One kernel trip (stage q for iteration counter - q * step, the counter as in
        `trip_iv`) with the slots `state`; returns the slots for the next trip."""
        self.trip_iv = counter
        env: dict[tuple, SSAValue] = {}
        self.section(at, env, {q: ("k", q) for q in range(self.S + 1)}, state)
        return {(v, d): env[(v, ("k", self.def_stage(v)))] if d == 1 else state[(v, d - 1)]
                for v, d in self.slots}

    def left_over(self, at: Cursor, state: dict, counter: tuple[SSAValue, int],
                  more: int) -> list[SSAValue]:
        """After the kernel loop (trip count unknown): up to `more` kernel trips, each in
        an scf.if on its iteration being below the bound, then the epilogue."""
        if more == 0:
            return self.epilogue(at, state, counter)
        guard = self.branch(at, self.iv_at(at, *counter), self.loop.ub)
        then_at = Cursor(guard.true_region.block, None)
        after = self.trip(then_at, state, counter)
        then_results = self.left_over(then_at, after, (counter[0], counter[1] + 1), more - 1)
        then_at.add(scf.YieldOp(*then_results))
        else_at = Cursor(guard.false_region.block, None)
        else_at.add(scf.YieldOp(*self.epilogue(else_at, state, counter)))
        return list(guard.output)

    def epilogue(self, at: Cursor, state: dict,
                 final: tuple[SSAValue, int]) -> list[SSAValue]:
        """The epilogue after the last kernel trip (`final` the counter after the last
        iteration): section e runs stage q >= e of iteration N - 1 - (q - e)."""
        self.final_iv = final
        env: dict[tuple, SSAValue] = {}
        for e in range(1, self.S + 1):
            self.section(at, env, {q: ("N", 1 + q - e) for q in range(e, self.S + 1)}, state)
        return [self.lookup(at, env, y, ("N", 1), state) for y in self.yields]

    def section(self, at: Cursor, env, stages: dict[int, tuple], slots) -> None:
        """Emit the ops of the given stages, each for its iteration, in the body's order."""
        for o in self.ops:
            s = self.stage[o]
            if s < 0 or s not in stages:
                continue
            it = stages[s]
            mapping = {}
            for w in _deep_operands(o):
                if w not in mapping:
                    mapping[w] = self.lookup(at, env, w, it, slots)
            new = o.clone(value_mapper=dict(mapping))
            new.attributes.pop(STAGE_ATTR, None)
            self.fresh_destinations(at, new)
            at.add(new)
            for r_old, r_new in zip(o.results, new.results):
                env[(r_old, it)] = r_new

    def fresh_destinations(self, at: Cursor, op: Operation) -> None:
        """A destination written as a new value (an alloca) gets its own register."""
        if not isinstance(op, InstructionOp):
            return
        match = match_instruction(op, self.isa, self.layout)
        operands = list(op.operands)
        changed = False
        for pos in match.def_positions:
            v = operands[pos]
            t = v.type
            if isinstance(v.owner, AllocaOp) and isinstance(t, RegisterType) and not t.is_fixed:
                operands[pos] = at.alloca(t)
                changed = True
        if changed:
            op.operands = operands  # (same types: the results keep theirs)

    def lookup(self, at: Cursor, env, v: SSAValue, it: tuple, slots) -> SSAValue:
        """The value of `v` for iteration `it`: ("abs", i) the i-th, ("k", m) the kernel
        trip's k - m, ("N", m) the N - m-th (N the trip count)."""
        kind, n = it
        if v is self.iv:
            return self.iv_value(at, it)
        if isinstance(v, BlockArgument) and v in self.args:
            j = self.args.index(v)
            if kind == "abs" and n == 0:
                return self.loop.iter_args[j]
            # the previous iteration's yield
            return self.lookup(at, env, self.yields[j], (kind, n - 1 if kind == "abs"
                                                         else n + 1), slots)
        if v not in self.body_values:
            return v  # defined outside the loop
        owner = v.owner
        if isinstance(owner, _FREE):
            key = (v, it, id(at.block))
            if key not in env:
                copy = owner.clone()
                at.add(copy)
                env[key] = copy.results[v.index]  # type: ignore[attr-defined]
            return env[key]
        if (v, it) in env:
            return env[(v, it)]
        if kind == "abs" and n < 0 and v in self.yields:
            return self.loop.iter_args[self.yields.index(v)]  # before the first iteration
        t = self.def_stage(v)
        if kind != "abs" and (v, n - t) in slots:
            return slots[(v, n - t)]
        raise error_at(self.loop, f"scf-pipeline: no value of {owner.name} for iteration "
                                  f"{kind} {n} (an internal error)")

    # -- the induction variable

    def iv_value(self, at: Cursor, it: tuple) -> SSAValue:
        """The counter of iteration `it` (see `lookup`)."""
        kind, n = it
        if kind == "abs":
            return self.iv_at(at, self.loop.lb, n)
        counter = self.trip_iv if kind == "k" else self.final_iv
        assert counter is not None
        return self.iv_at(at, counter[0], counter[1] - n)

    def iv_at(self, at: Cursor, base: SSAValue, n: int) -> SSAValue:
        """base + n * step (an SGPR)."""
        if n == 0:
            return base
        step = self.loop.step
        k = constant_of(step)
        if k is not None:
            amount: SSAValue = at.const(k * n)
        else:
            amount = at.add(_inst(SOP2Op, "s_mul_i32",
                                  [at.alloca(SGPRType.relocatable()), step,
                                   at.const(n)])).results[0]
        return at.add(_inst(SOP2Op, "s_add_u32",
                            [at.alloca(SGPRType.relocatable()), base, amount])).results[0]


class Cursor:
    """Where new ops go: before `before` in `block` (None: at the end)."""

    def __init__(self, block: Block, before: Operation | None):
        self.block = block
        self.before = before

    def add(self, op: Operation) -> Operation:
        """Insert `op` here."""
        if self.before is None:
            self.block.add_op(op)
        else:
            self.block.insert_op_before(op, self.before)
        return op

    def alloca(self, t) -> SSAValue:
        """A new register value of type `t`."""
        return self.add(AllocaOp(t)).results[0]

    def const(self, value: int) -> SSAValue:
        """An i32 constant."""
        return self.add(arith.ConstantOp(IntegerAttr(value, 32))).results[0]

    def sgpr(self, value: int) -> SSAValue:
        """An SGPR set to `value` (s_mov_b32: a constant bound, as `constant_of` reads it)."""
        return self.add(SOP1Op("s_mov_b32", [self.alloca(SGPRType.relocatable()),
                                             self.const(value)],
                               [SGPRType.relocatable()])).results[0]


def _inst(family, mnemonic: str, operands: list[SSAValue], results: bool = True):
    return family(mnemonic, operands, [operands[0].type] if results else [])


def _deep_operands(op: Operation):
    seen = []
    for v in op.operands:
        seen.append(v)
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                for v in _deep_operands(inner):
                    if v.owner is not None and not op.is_ancestor(v.owner if isinstance(
                            v.owner, Operation) else v.owner.parent_op() or op):
                        seen.append(v)
    return seen


def _defining_op(value: SSAValue) -> Operation:
    """The op that makes `value`, or for a block argument the op whose region holds it."""
    if isinstance(value, BlockArgument):
        return value.block.parent_op()  # type: ignore[return-value]
    return value.owner  # type: ignore[return-value]


def _what(value: SSAValue) -> str:
    if isinstance(value, BlockArgument):
        return ("the induction variable" if value.index == 0 else
                f"the loop-carried argument #{value.index - 1} (a value rotating through "
                "iter_args is not pipelined)")
    return f"the result of {value.owner.name}"


def _strip_stages(loop: KernelForOp) -> None:
    for o in loop.body.block.ops:
        o.attributes.pop(STAGE_ATTR, None)


def _trip_count(loop: KernelForOp) -> int | None:
    lo, hi, st = (constant_of(v) for v in (loop.lb, loop.ub, loop.step))
    if lo is None or hi is None or st is None or st <= 0:
        return None
    return max(0, -(-(hi - lo) // st))


__all__ = ["ScfPipelinePass", "stage_of"]

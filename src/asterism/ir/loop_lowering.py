"""Lowering scf.for / scf.if in amdgcn kernels to blocks and branches (see ir.loops for the
ops and what the lowered form looks like); `drop_coalesced_copies` runs after register
allocation."""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue

from asterism.errors import VerifyError
from asterism.ir.abi import compute_layout
from asterism.ir.loops import (
    COPY_ATTR,
    STRUCTURED_OPS,
    KernelForOp,
    KernelIfOp,
    TokenSetOp,
    TokenVarOp,
    has_structured,
    is_vcc,
)
from asterism.ir.ops import (
    AllocaOp,
    BranchOp,
    FallthroughOp,
    InstructionOp,
    KernelOp,
    SOP1Op,
    SOP2Op,
    SOPCOp,
    SOPKOp,
    SplitRegisterRangeOp,
    VOP1Op,
    close_blocks,
    op_location,
    ops_with_regions,
    walk_ops,
)
from asterism.ir.types import REGISTER_TYPES, RegisterType, SGPRType, TokenType
from asterism.ir.verify import match_instruction
from asterism.isa import get_isa

_MOVES = {"v": "v_mov_b32", "s": "s_mov_b32", "a": "v_accvgpr_mov_b32"}
_WIDE_MOVES = {("v", 2): "v_mov_b64", ("s", 2): "s_mov_b64"}


class _Lowering:
    """Lowers the scf ops of one kernel, outermost first."""

    def __init__(self, kernel: KernelOp):
        self.kernel = kernel
        self.copies = 0
        module = kernel.parent_op()
        self.isa = get_isa(getattr(module, "target_name", "gfx942"))
        self.layout = compute_layout(kernel)
        self._roots: dict[SSAValue, SSAValue] = {}

    def root(self, value: SSAValue) -> SSAValue:
        """The first value of the destination-passing chain of `value`."""
        chain = []
        while True:
            found = self._roots.get(value)
            if found is not None:
                value = found
                break
            owner = value.owner
            if not isinstance(owner, InstructionOp) or value is owner.token:
                break
            m = match_instruction(owner, self.isa, self.layout)
            index = list(owner.outs).index(value)
            if index >= len(m.def_positions):
                break
            chain.append(value)
            value = owner.args[m.def_positions[index]]
        for v in chain:
            self._roots[v] = value
        return value

    def run(self) -> int:
        while True:
            op = self._next()
            if op is None:
                break
            if isinstance(op, KernelForOp):
                self.lower_for(op)
            else:
                self.lower_if(op)  # type: ignore[arg-type]
        try:
            close_blocks(self.kernel.body, f"kernel @{self.kernel.kernel_name}")
        except ValueError as err:
            raise VerifyError(str(err), op_location(self.kernel)) from None
        return self.copies

    def _next(self) -> Operation | None:
        for block in self.kernel.body.blocks:
            for op in block.ops:
                if isinstance(op, STRUCTURED_OPS):
                    return op
                if op.regions and not isinstance(op, STRUCTURED_OPS):
                    raise VerifyError(f"'{op.name}' is not lowered in amdgcn kernels "
                                      "(structured control flow is scf.for and scf.if)",
                                      op_location(op))
        return None

    # -- pieces

    def _split_after(self, op: Operation) -> Block:
        """Move the ops after `op` into a new block right after op's block; returns it."""
        block = op.parent_block()
        assert block is not None
        rest = Block()
        self.kernel.body.insert_block_after(rest, block)
        nxt = op.next_op
        while nxt is not None:
            after = nxt.next_op
            nxt.detach()
            rest.add_op(nxt)
            nxt = after
        return rest

    def _take_region_block(self, region: Region, after: Block) -> Block:
        block = region.blocks.first
        assert block is not None
        region.detach_block(block)
        self.kernel.body.insert_block_after(block, after)
        return block

    def copy_into(self, dest: SSAValue, src: SSAValue, block: Block,
                  before: Operation | None, kind: str, loc) -> SSAValue:
        """Copy register value `src` into the register(s) of `dest` (an alloca: a new
        value); returns the value the copy makes."""
        t: RegisterType = dest.type  # type: ignore[assignment]
        ops: list[Operation] = []
        wide = _WIDE_MOVES.get((t.KIND, t.width))
        if t.width == 1 or wide:
            mnemonic = wide or _MOVES[t.KIND]
            family = VOP1Op if t.KIND in "va" else SOP1Op
            mov = family(mnemonic, [dest, src], [dest.type])
            mov.attributes[COPY_ATTR] = StringAttr(kind)
            ops.append(mov)
            result = mov.results[0]
        else:
            dsplit, ssplit = SplitRegisterRangeOp(dest), SplitRegisterRangeOp(src)
            ops += [dsplit, ssplit]
            family = VOP1Op if t.KIND in "va" else SOP1Op
            for d, s in zip(dsplit.results, ssplit.results):
                mov = family(_MOVES[t.KIND], [d, s], [d.type])
                mov.attributes[COPY_ATTR] = StringAttr(kind)
                ops.append(mov)
            result = dest
        for o in ops:
            o.location = loc
            if before is None:
                block.add_op(o)
            else:
                block.insert_op_before(o, before)
        self.copies += 1
        return result

    def fresh(self, t: RegisterType, block: Block, before: Operation, loc) -> SSAValue:
        """A new relocatable (or the same fixed) register value of type `t`."""
        alloca = AllocaOp(t)
        alloca.location = loc
        block.insert_op_before(alloca, before)
        return alloca.results[0]

    # -- scf.for

    def lower_for(self, op: KernelForOp) -> None:
        loc = op.location
        pre = op.parent_block()
        assert pre is not None
        exit_ = self._split_after(op)
        body = op.body.block
        ind, *args = body.args
        yield_op = body.last_op
        assert isinstance(yield_op, scf.YieldOp)
        counters = _counter_args(op, yield_op)
        if _counts_down(op, counters):
            iv0 = op.ub  # its register counts the trips left (nothing reads it after)
        else:
            iv_reg = self.fresh(SGPRType.relocatable(), pre, op, loc)
            iv = _make(SOP1Op, "s_mov_b32", [iv_reg, op.lb], loc)
            iv.attributes[COPY_ATTR] = StringAttr("iv")
            pre.insert_op_before(iv, op)
            iv0 = iv.results[0]
        carried: list[SSAValue] = []
        for j, (arg, init) in enumerate(zip(args, op.iter_args)):
            if j in counters:  # the loop's own counter: its register, after the loop too
                arg.replace_all_uses_with(iv0)
                carried.append(iv0)
                continue
            if isinstance(init.type, TokenType):
                var = TokenVarOp(init)
                var.location = loc
                pre.insert_op_before(var, op)
                value = var.result
            elif init.uses.get_length() == 1 and not _used_in(init, op):
                value = init  # its register carries the loop's value
            else:
                dest = self.fresh(REGISTER_TYPES[init.type.KIND].relocatable(
                    init.type.width, init.type.alignment), pre, op, loc)
                value = self.copy_into(dest, init, pre, op, "entry", loc)
            arg.replace_all_uses_with(value)
            carried.append(value)
        ind.replace_all_uses_with(iv0)
        guard = not _runs_once(op.lb, op.ub)
        block = self._take_region_block(op.body, pre)
        for a in list(block.args):
            block.erase_arg(a)
        values = list(yield_op.arguments)
        block.erase_op(yield_op)
        for j in sorted(counters, reverse=True):
            add = values[j].owner
            assert isinstance(add, Operation)
            block.erase_op(add)
        self.carry_all([c for j, c in enumerate(carried) if j not in counters],
                       [v for j, v in enumerate(values) if j not in counters], block, loc)
        if iv0 is op.ub:  # trips left - 1, again while not zero
            step = _make(SOP2Op, "s_sub_u32", [iv0, iv0, _constant(1, block, loc)], loc)
            cmp = _make(SOPCOp, "s_cmp_lg_u32", [step.results[0], _constant(0, block, loc)],
                        loc, results=False)
        else:
            by, bound = _immediate(op.step, block, loc), _immediate(op.ub, block, loc)
            step = _make(SOP2Op, "s_add_u32", [iv0, iv0, by], loc)
            cmp = _make(SOPCOp, "s_cmp_lt_i32", [step.results[0], bound], loc, results=False)
        back = BranchOp("s_cbranch_scc1", block, exit_)
        back.location = loc
        for o in (step, cmp, back):
            block.add_op(o)
        for res, value in zip(op.res, carried):
            res.replace_all_uses_with(value)
        if guard:
            if iv0 is op.ub:  # skipped when the trip count is below 1
                one = _constant_before(1, pre, op, loc)
                check = _make(SOPCOp, "s_cmp_lt_i32", [iv0, one], loc, results=False)
                skip = BranchOp("s_cbranch_scc1", exit_, block)
            else:
                check = _make(SOPCOp, "s_cmp_lt_i32", [iv0, op.ub], loc, results=False)
                skip = BranchOp("s_cbranch_scc0", exit_, block)
            skip.location = loc
            pre.insert_op_before(check, op)
            pre.insert_op_before(skip, op)
        else:
            jump = FallthroughOp(block)
            pre.insert_op_before(jump, op)
        bounds = (op.lb, op.ub, op.step)
        pre.erase_op(op)
        for v in bounds:
            erase_unused_constant(v)

    def _identity(self, v: SSAValue) -> SSAValue:
        """What a carried value is stored in: its register chain's root, or the token
        variable itself."""
        return v if isinstance(v.type, TokenType) else self.root(v)

    def carry_all(self, carried: list[SSAValue], values: list[SSAValue], block: Block,
                  loc) -> None:
        """Make the end of `block` leave each yielded value where its carried value lives.
        The moves happen at once (a yield may name another carried value, which must be read
        before it is overwritten): they are ordered so, through a temporary on a cycle."""
        moves = [(c, y) for c, y in zip(carried, values)
                 if isinstance(c.type, TokenType) or (
                     y is not c and self.root(y) is not self.root(c))]
        latch_reads = {self._identity(y) for _c, y in moves if y in carried}
        moves = [(c, y) for c, y in moves if isinstance(c.type, TokenType) or
                 self._identity(c) in latch_reads or not self._reroot(c, y, block)]
        while moves:
            reads = {self._identity(y) for _c, y in moves}
            ready = next((m for m in moves if self._identity(m[0]) not in reads
                          or self._identity(m[0]) is self._identity(m[1])), None)
            if ready is None:  # a cycle: park one source in a temporary
                c, y = moves[0]
                moves[0] = (c, self._park(y, block, loc))
                continue
            moves.remove(ready)
            self.move(ready[0], ready[1], block, loc)

    def _park(self, y: SSAValue, block: Block, loc) -> SSAValue:
        if isinstance(y.type, TokenType):
            var = TokenVarOp(y)
            var.location = loc
            block.add_op(var)
            return var.result
        t: RegisterType = y.type  # type: ignore[assignment]
        alloca = AllocaOp(REGISTER_TYPES[t.KIND].relocatable(t.width, t.alignment))
        alloca.location = loc
        block.add_op(alloca)
        return self.copy_into(alloca.results[0], y, block, None, "latch", loc)

    def move(self, value: SSAValue, y: SSAValue, block: Block, loc) -> None:
        """At the end of `block`: the carried `value`'s place receives `y`."""
        if isinstance(value.type, TokenType):
            setter = TokenSetOp(value, y)
            setter.location = loc
            block.add_op(setter)
            return
        dest = self.root(value)
        if not isinstance(dest.owner, AllocaOp) or dest.type != value.type:
            dest = value
        self.copy_into(dest, y, block, None, "latch", loc)

    def _reroot(self, value: SSAValue, y: SSAValue, block: Block) -> bool:
        """Write `y`'s chain into `value`'s register when that is safe: the chain starts at
        an alloca of the same type used only there, and nothing in the body reads or
        writes `value`'s register after the op that starts the chain."""
        start = self.root(y)
        alloca = start.owner
        if not isinstance(alloca, AllocaOp) or start.type != value.type or \
                start.uses.get_length() != 1:
            return False
        first = next(iter(start.uses)).operation
        if first.parent_block() is not block:
            return False
        ops = list(block.ops)
        at = ops.index(first)
        root = self.root(value)
        for k, o in enumerate(ops):
            for operand in _operands_deep(o):
                if self.root(operand) is root and k > at:
                    return False
            if k > at:
                continue
            for r in o.results:
                if r is not value and self.root(r) is root and k < at:
                    return False  # the body writes the register before: not one value
        index = next(iter(start.uses)).index
        first.operands = [value if i == index else v for i, v in enumerate(first.operands)]
        if not alloca.results[0].uses:
            alloca.detach()
            alloca.erase()
        return True

    # -- scf.if

    def lower_if(self, op: KernelIfOp) -> None:
        loc = op.location
        pre = op.parent_block()
        assert pre is not None
        merge = self._split_after(op)
        outs: list[SSAValue] = []
        for r in op.output:
            if isinstance(r.type, TokenType):
                var = TokenVarOp()
                var.location = loc
                pre.insert_op_before(var, op)
                outs.append(var.result)
            else:
                outs.append(self.fresh(r.type, pre, op, loc))  # type: ignore[arg-type]
        # An SGPR is compared with 0 (SCC); vcc is tested by the branch itself.
        skip_if = "s_cbranch_vccz" if is_vcc(op.cond.type) else "s_cbranch_scc0"
        if not is_vcc(op.cond.type):
            zero = _constant_before(0, pre, op, loc)
            test = _make(SOPCOp, "s_cmp_lg_u32", [op.cond, zero], loc, results=False)
            pre.insert_op_before(test, op)
        then_block = self._take_region_block(op.true_region, pre)
        self._finish_branch(then_block, outs, loc)
        else_block = None
        if op.false_region.blocks:
            else_block = self._take_region_block(op.false_region, then_block)
            self._finish_branch(else_block, outs, loc)
            jump = BranchOp("s_branch", merge)
            jump.location = loc
            then_block.add_op(jump)
        skip = BranchOp(skip_if, else_block or merge, then_block)
        skip.location = loc
        pre.insert_op_before(skip, op)
        for r, v in zip(op.output, outs):
            r.replace_all_uses_with(v)
        pre.erase_op(op)

    def _finish_branch(self, block: Block, outs: list[SSAValue], loc) -> None:
        yield_op = block.last_op
        assert isinstance(yield_op, scf.YieldOp)
        values = list(yield_op.arguments)
        block.erase_op(yield_op)
        for out, y in zip(outs, values):
            if isinstance(out.type, TokenType):
                setter = TokenSetOp(out, y)
                setter.location = loc
                block.add_op(setter)
            elif self.root(y) is not out:
                self.copy_into(out, y, block, None, "branch", loc)


def _counter_args(op: KernelForOp, yield_op: scf.YieldOp) -> set[int]:
    """The iter_args that count as the loop does: initial value the lower bound, next value
    `s_add_u32` of the argument and the step, made for the yield only. The lowering gives
    them the counter's register (no add of their own); after the loop they hold the
    counter's final value (the lower bound when the loop does not run)."""
    found: set[int] = set()
    args = op.body.block.args[1:]
    for j, (arg, init, y) in enumerate(zip(args, op.iter_args, yield_op.arguments)):
        add = y.owner
        if init is not op.lb or not isinstance(add, SOP2Op) or \
                add.mnemonic_text != "s_add_u32" or y.uses.get_length() != 1 or \
                add.parent_block() is not op.body.block:
            continue
        srcs = list(add.args[1:])
        if srcs in ([arg, op.step], [op.step, arg]):
            found.add(j)
    return found


def _make(family: type[InstructionOp], mnemonic: str, operands: list[SSAValue], loc,
          results: bool = True) -> InstructionOp:
    op = family(mnemonic, operands, [operands[0].type] if results else [])
    op.location = loc
    return op


def _counts_down(op: KernelForOp, counters: set[int]) -> bool:
    """Whether the loop may count its upper bound's register down to zero instead of an
    induction variable up to it (one instruction less: no counter to set): from 0 by 1 to
    a bound known at launch only (a relocatable SGPR), no op reading the induction
    variable (nor a counter iter_arg), and nothing reading the bound after the loop."""
    if constant_of(op.lb) != 0 or constant_of(op.step) != 1 or \
            constant_of(op.ub) is not None or counters or op.body.block.args[0].uses:
        return False
    if op.ub.type != SGPRType.relocatable():
        return False
    block = op.parent_block()
    for use in op.ub.uses:
        other = use.operation
        if other is op:
            continue
        if other.parent_block() is not block or not other.is_before_in_block(op):
            return False
    return True


def _constant(value: int, block: Block, loc) -> SSAValue:
    """An i32 constant at the end of `block`."""
    const = arith.ConstantOp(IntegerAttr(value, 32))
    const.location = loc
    block.add_op(const)
    return const.result


def _constant_before(value: int, block: Block, before: Operation, loc) -> SSAValue:
    """An i32 constant in `block` before `before`."""
    const = arith.ConstantOp(IntegerAttr(value, 32))
    const.location = loc
    block.insert_op_before(const, before)
    return const.result


def _used_in(value: SSAValue, op: Operation) -> bool:
    """Whether `value` is used inside `op`'s regions."""
    return any(use.operation is not op and op.is_ancestor(use.operation)
               for use in value.uses)


def _operands_deep(op: Operation):
    yield from op.operands
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                yield from _operands_deep(inner)


def constant_of(value: SSAValue) -> int | None:
    """The integer an SGPR holds when it was set by s_mov_b32/s_movk_i32 of a constant."""
    owner = value.owner
    if isinstance(owner, SOP1Op | SOPKOp) and owner.mnemonic_text in ("s_mov_b32",
                                                                       "s_movk_i32"):
        src = owner.args[1] if len(owner.args) > 1 else None
        if src is not None and isinstance(src.owner, arith.ConstantOp) and \
                isinstance(src.owner.value, IntegerAttr):
            v = src.owner.value.value.data
            return v - (1 << 32) if v >= 1 << 31 else v
    return None


def _immediate(value: SSAValue, block: Block, loc) -> SSAValue:
    """A constant bound or step as the instruction's constant operand (no SGPR to hold it),
    else `value`."""
    k = constant_of(value)
    if k is None:
        return value
    const = arith.ConstantOp(IntegerAttr(k, 32))
    const.location = loc
    block.add_op(const)
    return const.result


def erase_unused_constant(value: SSAValue) -> None:
    """Erase the s_mov_b32 of a constant (and its alloca) that set a loop bound no op reads
    any more."""
    owner = value.owner
    if value.uses or constant_of(value) is None or not isinstance(owner, Operation):
        return
    dest = owner.operands[0]
    owner.detach()
    owner.erase()
    if isinstance(dest.owner, AllocaOp) and not dest.uses:
        dest.owner.detach()
        dest.owner.erase()


def _runs_once(lb: SSAValue, ub: SSAValue) -> bool:
    lo, hi = constant_of(lb), constant_of(ub)
    return lo is not None and hi is not None and lo < hi


def lower_structured(kernel: KernelOp) -> int:
    """Lower the scf ops of a kernel to blocks and branches in place (see the module
    docstring); returns the number of copies added."""
    return _Lowering(kernel).run()


def lower_structured_module(module: Operation) -> int:
    """`lower_structured` on every kernel of a module that holds scf ops."""
    total = 0
    for op in [k for k in ops_with_regions(module) if isinstance(k, KernelOp)]:
        if has_structured(op):
            total += lower_structured(op)
    return total


def drop_coalesced_copies(kernel: KernelOp) -> list[str]:
    """After register allocation: erase the loop copies (`loops.copy`) that move a register
    onto itself; returns one line per copy that stays (where, what)."""
    kept: list[str] = []
    for op in list(walk_ops(kernel)):
        # (the attributes first: most ops have none, and isinstance on ops is slow)
        if not op.attributes or COPY_ATTR not in op.attributes or \
                not isinstance(op, InstructionOp):
            continue
        dst, src = op.args[0].type, op.args[1].type
        if isinstance(dst, RegisterType) and dst == src and dst.is_fixed:
            op.results[0].replace_all_uses_with(op.args[0])
            op.detach()
            op.erase()
            continue
        what = op.attributes.pop(COPY_ATTR)
        where = op_location(op)
        kind = {"iv": "the induction variable's start", "entry": "a loop's initial value",
                "latch": "a value carried around a loop",
                "branch": "an scf.if result"}.get(getattr(what, "data", ""), "a copy")
        kept.append(f"{where or kernel.kernel_name}: {op.mnemonic_text} {dst.asm()}, "
                    f"{src.asm() if isinstance(src, RegisterType) else '?'} ({kind})")
    return kept




__all__ = ["constant_of", "drop_coalesced_copies", "erase_unused_constant", "lower_structured",
           "lower_structured_module"]

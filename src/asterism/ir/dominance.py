"""Dominance of SSA values in amdgcn IR: every use is preceded by its definition.

How the IR models control flow: a kernel (or func.func fragment) body is a region of blocks;
a block ends with `amdgcn.branch` (its targets), `amdgcn.fallthrough` (the next block) or
`amdgcn.end_kernel` (none), and those successors are the CFG that the passes use
(`block_successors`; passes.liveness solves over it). Kernel blocks take no arguments: a
value that crosses blocks is named by a value that dominates the use (its register carries
it), e.g. the `amdgcn.alloca` of its register class in the entry block.

The rule (MLIR's SSA dominance, checked region by region):
* in one block, an operand must be defined by an earlier op of that block (or be one of the
  block's arguments);
* across blocks of one region, the defining block must dominate the using block: every path
  from the region's entry to the use passes through it. A block that no path from the entry
  reaches (code after an unconditional branch) is treated as if the entry branched to it
  (the first such block in layout order first), so its values obey the same rule and a def-use
  cycle is impossible there too (MLIR skips unreachable blocks; the passes here do not);
* a value defined in an enclosing region (a kernel's entry block around a future `scf.for`
  body, a func.func argument) may be used inside nested regions: the op holding the region
  counts as the use;
* a value defined inside a region is not visible outside it.

So the use-def graph has no cycle, which the passes rely on (liveness follows destination
operands back to their register's first value). `check_dominance` raises a located
VerifyError naming the operand and where the value is defined.
"""

from __future__ import annotations

from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.parser.core import ForwardDeclaredValue

from asterism.errors import VerifyError
from asterism.ir.ops import forward_definition_line, op_location, value_name


def block_successors(block: Block) -> tuple[Block, ...]:
    """The blocks control may go to after `block` (its terminator's successors, in order)."""
    last = block._last_op  # (block.last_op goes through a property and a view)
    return tuple(last.successors) if last is not None and last._successors else ()


class RegionDominance:
    """The dominator tree of one region's blocks (blocks no path from the entry reaches are
    rooted under the entry in layout order, see the module docstring)."""

    def __init__(self, region: Region):
        blocks = list(region.blocks)
        # (keyed by id: Block.__hash__ is a Python-level call; the blocks outlive the tree)
        self.index: dict[int, int] = {id(b): k for k, b in enumerate(blocks)}
        n = len(blocks)
        succs = [[self.index[id(s)] for s in block_successors(b) if id(s) in self.index]
                 for b in blocks]
        self.reachable = _reached(succs, 0, [False] * n) if n else []
        # (unreached blocks become extra successors of the entry, the first in layout first)
        seen = list(self.reachable)
        for k in range(n):
            if not seen[k]:
                succs[0].append(k)
                _reached(succs, k, seen)
        order = _reverse_postorder(succs)
        self.idom = _immediate_dominators(succs, order)
        self._enter, self._leave = _tree_intervals(self.idom)

    def dominates(self, a: Block, b: Block) -> bool:
        """True if every path from the entry to `b` passes through `a` (a block dominates
        itself)."""
        i, j = self.index[id(a)], self.index[id(b)]
        return self._enter[i] <= self._enter[j] and self._leave[j] <= self._leave[i]


def _reached(succs: list[list[int]], start: int, seen: list[bool]) -> list[bool]:
    """Mark the blocks reachable from `start` in `seen` (returned)."""
    seen[start] = True
    stack = [start]
    while stack:
        for s in succs[stack.pop()]:
            if not seen[s]:
                seen[s] = True
                stack.append(s)
    return seen


def _reverse_postorder(succs: list[list[int]]) -> list[int]:
    """Blocks in reverse postorder of a depth-first walk from block 0 (iterative: a raised
    kernel may have thousands of blocks)."""
    n = len(succs)
    if not n:
        return []
    seen = [False] * n
    post: list[int] = []
    seen[0] = True
    stack = [(0, 0)]
    while stack:
        b, k = stack[-1]
        if k < len(succs[b]):
            stack[-1] = (b, k + 1)
            s = succs[b][k]
            if not seen[s]:
                seen[s] = True
                stack.append((s, 0))
        else:
            stack.pop()
            post.append(b)
    post.reverse()
    return post


def _immediate_dominators(succs: list[list[int]], order: list[int]) -> list[int]:
    """Immediate dominator of each block (the entry's is itself), by Cooper, Harvey and
    Kennedy's iteration over the reverse postorder ("A Simple, Fast Dominance Algorithm")."""
    n = len(succs)
    rpo = [0] * n
    for k, b in enumerate(order):
        rpo[b] = k
    preds: list[list[int]] = [[] for _ in range(n)]
    for b, out in enumerate(succs):
        for s in out:
            preds[s].append(b)
    idom = [-1] * n
    if not n:
        return idom
    idom[0] = 0
    changed = True
    while changed:
        changed = False
        for b in order[1:]:
            new = -1
            for p in preds[b]:
                if idom[p] < 0:
                    continue
                if new < 0:
                    new = p
                    continue
                x, y = p, new
                while x != y:
                    while rpo[x] > rpo[y]:
                        x = idom[x]
                    while rpo[y] > rpo[x]:
                        y = idom[y]
                new = x
            if idom[b] != new:
                idom[b] = new
                changed = True
    return idom


def _tree_intervals(idom: list[int]) -> tuple[list[int], list[int]]:
    """Entry and exit times of a depth-first walk of the dominator tree: `a` dominates `b`
    exactly when a's interval holds b's."""
    n = len(idom)
    children: list[list[int]] = [[] for _ in range(n)]
    for b in range(1, n):
        children[idom[b]].append(b)
    enter, leave = [0] * n, [0] * n
    if not n:
        return enter, leave
    clock = 0
    stack = [(0, 0)]
    enter[0] = clock
    while stack:
        b, k = stack[-1]
        if k < len(children[b]):
            stack[-1] = (b, k + 1)
            c = children[b][k]
            clock += 1
            enter[c] = clock
            stack.append((c, 0))
        else:
            stack.pop()
            clock += 1
            leave[b] = clock
    return enter, leave


# --- the check -------------------------------------------------------------------------------


def check_dominance(op: Operation) -> None:
    """Check that every operand of every op nested in `op`'s regions is defined before its use
    (see the module docstring); raises VerifyError at the first use that is not."""
    _Checker().check_regions(op)


class _Checker:
    def __init__(self) -> None:
        # (keyed by id: xDSL's IR nodes hash in Python; the IR outlives the check)
        self.trees: dict[int, RegionDominance] = {}
        self.positions: dict[int, dict[int, int]] = {}
        # (defining block, using block) pairs found to dominate: a kernel's loop body reads
        # many entry-block values
        self.dominating: set[tuple[int, int]] = set()

    def check_regions(self, op: Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                self.check_block(block)

    def check_block(self, block: Block) -> None:
        # ids of the results defined so far in this block: the common case (an operand
        # defined a few ops earlier in the same block) costs one set lookup.
        # (and of the values of other blocks found to dominate this one: each is checked
        # once per block, not at every use)
        defined: set[int] = set()
        add = defined.add
        op = block._first_op  # (block.ops iterates through a view)
        while op is not None:
            for v in op._operands:
                if id(v) not in defined:
                    self.check_operand(op, op._operands.index(v), v, block)
                    add(id(v))
            if op.regions:
                self.check_regions(op)
            for r in op.results:
                add(id(r))
            op = op._next_op

    def check_operand(self, use: Operation, k: int, v: SSAValue, block: Block) -> None:
        """An operand not defined earlier in the use's block: fine if a dominating block or an
        enclosing region defines it."""
        cls = type(v)
        if cls is BlockArgument or isinstance(v, BlockArgument):
            def_block, def_op = v.block, None
        elif cls is OpResult or isinstance(v, OpResult):
            def_op = v.op
            def_block = def_op.parent
        elif isinstance(v, ForwardDeclaredValue):
            # (xDSL's parser leaves its placeholder where the definition it found is inside
            # the using op's own region, e.g. an scf.for bound defined in the loop body)
            line = forward_definition_line(v)
            raise _error(use, k, v, "is used before it is defined" + (
                f" (defined at line {line}, inside the region of the op that uses it)"
                if line is not None else " (inside the region of the op that uses it)"))
        else:  # an erased value (a pass bug) has no definition
            raise _error(use, k, v, "is not defined (an erased value)")
        if def_block is block:
            if def_op is None:
                return
            raise _error(use, k, v, "is used before it is defined", def_op)
        if def_block is None:
            raise _error(use, k, v, "is not defined in this region (its op is not in a block)")
        # The ancestor of the use in the defining block's region stands for the use there.
        region = def_block.parent
        at, at_block = use, block
        while at_block.parent is not region:
            at = at_block.parent.parent if at_block.parent is not None else None
            at_block = at.parent if at is not None else None
            if at_block is None:
                raise _error(use, k, v, "is defined inside a region that does not enclose "
                                        "this use", def_op or def_block.parent_op())
        if at_block is def_block:
            # (a use nested in an op of the defining block: the def must come before that op)
            if def_op is None or self._position(def_block, def_op) < \
                    self._position(def_block, at):
                return
            raise _error(use, k, v, "is used before it is defined", def_op)
        pair = (id(def_block), id(at_block))
        if pair in self.dominating:
            return
        tree = self.trees.get(id(region))
        if tree is None:
            tree = self.trees[id(region)] = RegionDominance(region)
        if tree.dominates(def_block, at_block):
            self.dominating.add(pair)
        else:
            where = op_location(def_op) if def_op is not None else None
            line = f" at line {where.line}" if where is not None else ""
            raise _error(use, k, v, f"is defined{line} in block {_block_name(def_block, tree)}"
                         ", which does not dominate this use: a path from the entry reaches "
                         f"block {_block_name(at_block, tree)} without passing through it "
                         "(a value used in other blocks must be defined in a block every path "
                         "to them passes through, e.g. the entry block)")

    def _position(self, block: Block, op: Operation) -> int:
        positions = self.positions.get(id(block))
        if positions is None:
            positions = self.positions[id(block)] = {id(o): i for i, o in enumerate(block.ops)}
        return positions[id(op)]


def _block_name(block: Block, tree: RegionDominance) -> str:
    return f"^{block.name_hint}" if block.name_hint else f"^bb{tree.index[id(block)]}"


def _error(use: Operation, k: int, v: SSAValue, what: str,
           def_op: Operation | None = None) -> VerifyError:
    """`operand #k of 'op' (%name) <what> (defined at line L)` at the use."""
    where = op_location(def_op) if def_op is not None else None
    defined = f" (defined at line {where.line})" if where is not None else ""
    return VerifyError(f"operand #{k} of '{use.name}' ({value_name(v)}) {what}{defined}",
                       op_location(use))


__all__ = ["RegionDominance", "block_successors", "check_dominance"]

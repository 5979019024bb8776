"""The control-flow graph of a several-block `gpu.func` body (`cf.br` / `cf.cond_br`):
successors, a reverse post-order, immediate post-dominators (where the paths of a branch meet
again) and the blocks between a branch and that meeting point. Used by the uniformity
analysis and the `cf` lowering (asterism.frontend.cf)."""

from __future__ import annotations

from xdsl.ir import Block, Region


def successors(block: Block) -> list[Block]:
    """The blocks `block`'s terminator may branch to (none for a return)."""
    last = block.last_op
    return list(last.successors) if last is not None else []


def reverse_post_order(entry: Block) -> list[Block]:
    """The blocks reachable from `entry`, each after all its predecessors but those reached
    by a back edge (so a definition's block comes before its uses' blocks); a branch's true
    block before its false one (a loop's body follows its head, as a hand-writer lays it)."""
    seen: set[Block] = set()
    order: list[Block] = []
    stack: list[tuple[Block, int]] = [(entry, 0)]
    seen.add(entry)
    while stack:  # (iterative: a long chain of blocks must not exhaust Python's stack)
        block, k = stack.pop()
        succ = successors(block)[::-1]  # (the last visited comes first in the order)
        if k < len(succ):
            stack.append((block, k + 1))
            nxt = succ[k]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, 0))
        else:
            order.append(block)
    order.reverse()
    return order


def post_dominators(region: Region) -> dict[Block, Block | None]:
    """Each reachable block's immediate post-dominator (None when its paths meet only at the
    function's exit): the first block every path from it goes through."""
    blocks = reverse_post_order(region.blocks[0])
    exit_ = None  # a virtual exit after every returning block
    pdom: dict[Block, set] = {b: set(blocks) | {exit_} for b in blocks}
    changed = True
    while changed:
        changed = False
        for b in reversed(blocks):
            succ = successors(b)
            meet = set.intersection(*(pdom[s] for s in succ)) if succ else {exit_}
            new = meet | {b}
            if new != pdom[b]:
                pdom[b] = new
                changed = True
    ipdom: dict[Block, Block | None] = {}
    for b in blocks:
        strict = pdom[b] - {b}
        # the immediate one: post-dominated by every other strict post-dominator
        ipdom[b] = next((c for c in strict if c is not exit_ and all(
            d in pdom[c] for d in strict)), None)
    return ipdom


def blocks_between(start: Block, merge: Block | None) -> list[Block]:
    """The blocks reachable from `start`'s successors without passing `merge` (or `start`
    again)."""
    seen: list[Block] = [start]
    todo = [s for s in successors(start) if s is not merge]
    while todo:
        b = todo.pop()
        if b in seen:
            continue
        seen.append(b)
        todo.extend(s for s in successors(b) if s is not merge and s not in seen)
    return seen[1:]


def loop_body(head: Block, entry: Block, order: list[Block]
              ) -> tuple[list[Block], list[Block]] | None:
    """The blocks of the loop `head` heads when its successor `entry` leads back to it: (the
    blocks reachable from `entry` without passing `head` that lead back to it, those that do
    not: the loop's other exits); None when `entry` does not come back, or does so only
    through a block laid out before `head` in `order` (the reverse post-order: an enclosing
    loop's head, so `entry` leaves this loop)."""
    reach: list[Block] = []
    todo = [entry]
    back = False
    while todo:
        b = todo.pop()
        if b is head:
            back = True
            continue
        if b in reach:
            continue
        reach.append(b)
        todo.extend(successors(b))
    if not back:
        return None
    inside = {head}  # blocks that reach the head (a fixpoint backwards)
    changed = True
    while changed:
        changed = False
        for b in reach:
            if b not in inside and any(s in inside for s in successors(b)):
                inside.add(b)
                changed = True
    first = order.index(head)
    if any(b is not head and b in order and order.index(b) < first for b in inside):
        return None
    return [b for b in reach if b in inside], [b for b in reach if b not in inside]


__all__ = ["blocks_between", "loop_body", "post_dominators", "reverse_post_order", "successors"]

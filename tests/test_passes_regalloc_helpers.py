"""An independent check of a register allocation: symbolic execution of the allocated kernel.

Every register unit holds the set of register classes (of the kernel before allocation)
whose current value it holds; a write of class c sets its units to {c} (a plain copy into
the register its source already occupies adds c to what is there); a read of class c needs c
in every unit of its register. Blocks merge by intersection, starting from "anything"
(registers nothing wrote hold any value, so uninitialized reads pass), to a fixpoint. The
read/write rules are the documented semantics (sources, tied destinations, vector writes that
continue a chain), written here again from the ISA database, not taken from the liveness
module.
"""

from __future__ import annotations

from asterism.ir.ops import AllocaOp, BranchOp, FallthroughOp, InstructionOp, KernelOp
from asterism.ir.types import RegisterType
from asterism.ir.verify import match_instruction
from asterism.isa import get_isa

COPIES = {"v_mov_b32", "s_mov_b32", "s_mov_b64", "v_mov_b64", "v_accvgpr_mov_b32"}


class AllocationMismatch(AssertionError):
    """A read that would not see the value the program means."""


def _units(t: RegisterType) -> list[tuple[str, int]]:
    return [(t.KIND, t.first + k) for k in range(t.width)]


def check_allocation(kernel: KernelOp, class_of: dict, target: str = "gfx942") -> int:
    """Raise AllocationMismatch if some read of the allocated `kernel` sees another class's
    value; `class_of` maps every register value to its class id (from before allocation).
    Returns the number of reads checked."""
    isa = get_isa(target)
    blocks = list(kernel.body.blocks)
    index = {b: k for k, b in enumerate(blocks)}
    succs: list[list[int]] = []
    for b in blocks:
        last = b.last_op
        if isinstance(last, BranchOp):
            succs.append([index[t] for t in last.targets])
        elif isinstance(last, FallthroughOp):
            succs.append([index[last.dest]])
        else:
            succs.append([])
    # State: unit -> frozenset of class ids, missing = anything.
    entry_state: list[dict | None] = [None] * len(blocks)
    entry_state[0] = {}
    checked = 0

    def merge(a: dict, b: dict) -> dict:
        out = {}
        for u in set(a) | set(b):
            if u in a and u in b:
                out[u] = a[u] & b[u]
            else:
                out[u] = a.get(u, b.get(u))  # one side: anything there
        return out

    def step(b: int, state: dict, check: bool) -> dict:
        nonlocal checked
        state = dict(state)
        for op in blocks[b].ops:
            if not isinstance(op, InstructionOp):
                continue
            match = match_instruction(op, isa)
            defs = match.def_positions
            args = list(op.operands)
            reads = []
            for pos, arg in enumerate(args):
                if not isinstance(arg.type, RegisterType):
                    continue
                if pos not in defs:
                    reads.append(arg)
                elif match.specs[pos].tied or (arg.type.KIND != "s" and
                                               not isinstance(arg.owner, AllocaOp)):
                    reads.append(arg)
            for arg in reads:
                c = class_of[arg]
                for u in _units(arg.type):
                    if check and u in state and c not in state[u]:
                        raise AllocationMismatch(
                            f"{op.mnemonic_text} at {op.location}: reads {arg.name_hint} "
                            f"(class {c}) from {u[0]}{u[1]}, which holds classes "
                            f"{sorted(state[u])}")
                checked += check
            copy_src = None
            if match.instruction.mnemonic in COPIES and not op.mods and len(args) > 1 and \
                    isinstance(args[1].type, RegisterType):
                copy_src = args[1]
            for pos in defs:
                arg = args[pos]
                if not isinstance(arg.type, RegisterType):
                    continue
                c = class_of[arg]
                same = copy_src is not None and copy_src.type == arg.type
                for u in _units(arg.type):
                    if same and u in state:
                        state[u] = state[u] | {c}
                    elif same:
                        continue  # anything there, c included
                    else:
                        state[u] = frozenset({c})
        return state

    work = [0]
    while work:
        b = work.pop()
        out = step(b, entry_state[b], check=False)
        for s in succs[b]:
            new = out if entry_state[s] is None else merge(entry_state[s], out)
            if new != entry_state[s]:
                entry_state[s] = new
                work.append(s)
    for b in range(len(blocks)):
        if entry_state[b] is not None:
            step(b, entry_state[b], check=True)
    return checked


def classes_before(kernel: KernelOp) -> dict:
    """value -> class id, from the liveness analysis of the kernel before allocation."""
    from asterism.passes.liveness import analyze_kernel

    live = analyze_kernel(kernel)
    return {v: c.id for v, c in live.class_of.items()}


def all_fixed(kernel: KernelOp) -> bool:
    """True if every register value of the kernel has a fixed register."""
    return all(r.type.is_fixed for op in kernel.walk() for r in op.results
               if isinstance(r.type, RegisterType))

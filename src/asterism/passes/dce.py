"""Dead-code elimination (`dce`, opt-in, never in a default pipeline).

Removes an instruction only when all of these hold:
* it is pure: a VALU/SALU/transcendental/MFMA instruction (ISA database unit) with none of the
  database flags that mean a side effect (memory access, atomic, barrier, branch, call,
  return, end of program, LDS DMA), not a program-control (SOPP) instruction such as
  `s_waitcnt` or `s_nop`, no write to a named register other than SCC (exec, vcc, m0, mode
  and the like are never removed), not an indexed-register or hardware-register access
  (`s_movrel*`, `v_movrel*`, `s_set_gpr_idx*`, `s_setreg*`, `s_setpc`/`s_swappc`);
* nothing reads what it writes: its register classes are not live after it (by the liveness
  of `passes.liveness`, where a later vector write that continues a destination-passing chain
  counts as a read of the older lanes), for a pinned register no overlapping pinned register
  is live either, and SCC, if it writes it, is written again or the kernel ends before any
  read of it in its block.

Kernels that index registers (`s_movrel*`, `v_movrel*`, `s_set_gpr_idx_on`) keep all their
instructions. A removed op's results are replaced by its destination operands (the same
register). Declarations nothing uses any more (`amdgcn.alloca`, `arith.constant`,
`amdgcn.literal`, `amdgcn.kernarg_offset`, `amdgcn.off`, and the register views
`amdgcn.split_register_range` / `amdgcn.make_register_range`) are removed too; ABI inputs
and LDS allocations stay, since they shape the kernel's descriptor.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import Operation

from asterism.ir.ops import (
    AllocaOp,
    BranchOp,
    EndKernelOp,
    InstructionOp,
    KernargOffsetOp,
    KernelOp,
    LiteralOp,
    MakeRegisterRangeOp,
    OffOp,
    SplitRegisterRangeOp,
)
from asterism.ir.types import SpecialRegType
from asterism.ir.verify import amdgcn_modules
from asterism.isa import get_isa
from asterism.passes.base import Pass
from asterism.passes.instfacts import InstFacts, facts_cache
from asterism.passes.liveness import KernelLiveness
from asterism.support.gcpause import gc_paused

PURE_UNITS = frozenset({"valu", "salu", "trans", "mfma"})
SIDE_EFFECT_FLAGS = frozenset({
    "may_load", "may_store", "atomic", "atomic_return", "workgroup_barrier", "terminator",
    "branch", "cond_branch", "call", "return", "ends_program", "lds_dma", "unconditional"})
SIDE_EFFECT_PREFIXES = ("s_movrel", "v_movrel", "s_set_gpr_idx", "s_setreg", "s_setpc",
                        "s_swappc", "s_rfe", "s_call", "s_sethalt", "s_setprio",
                        "s_denorm_mode", "s_round_mode")
INDEXING_PREFIXES = ("s_movrel", "v_movrel", "s_set_gpr_idx")
DECLARATIONS = (AllocaOp, arith.ConstantOp, LiteralOp, KernargOffsetOp, OffOp,
                SplitRegisterRangeOp, MakeRegisterRangeOp)


def is_pure(op: InstructionOp, facts: InstFacts) -> bool:
    """True if the instruction has no effect besides writing its register destinations (and
    possibly SCC)."""
    if facts.unit not in PURE_UNITS or facts.enc == "SOPP" or facts.has_token:
        return False
    if facts.flags & SIDE_EFFECT_FLAGS or facts.mnemonic.startswith(SIDE_EFFECT_PREFIXES):
        return False
    if any(d != "scc" for d in facts.implicit_defs):
        return False
    args = op.operands
    return not any(isinstance(args[p].type, SpecialRegType) for p in facts.def_positions)


def _reads_scc(op: Operation, facts: InstFacts | None) -> bool:
    if isinstance(op, BranchOp):
        return "scc" in op.mnemonic_text
    if facts is None:
        return False
    if "scc" in facts.implicit_uses:
        return True
    args = op.operands
    return any(isinstance(a.type, SpecialRegType) and a.type.reg_name in ("scc", "src_scc")
               and k not in facts.def_positions for k, a in enumerate(args))


def _writes_scc(facts: InstFacts | None) -> bool:
    return facts is not None and "scc" in facts.implicit_defs


class _KernelDce:
    def __init__(self, kernel: KernelOp, isa):
        self.kernel = kernel
        self.isa = isa
        self.facts = facts_cache(isa)

    def _facts(self, op: Operation) -> InstFacts | None:
        return self.facts.facts(op) if isinstance(op, InstructionOp) else None

    def scc_dead_after(self, live: KernelLiveness, index: int) -> bool:
        """SCC written by op `index` is overwritten (or the kernel ends) before any read."""
        _start, end = live.block_range[live.block_of_op[index]]
        for j in range(index + 1, end):
            op = live.ops[j]
            facts = self._facts(op)
            if _reads_scc(op, facts):
                return False
            if _writes_scc(facts):
                return True
            if isinstance(op, EndKernelOp) or (facts is not None and
                                               facts.mnemonic == "s_endpgm"):
                return True
        return False  # it may be read in a following block

    def round(self) -> int:
        """Remove the dead instructions the current liveness shows; returns how many."""
        live = KernelLiveness(self.kernel, self.isa)
        classes = live.classes
        # A pinned register is read through any pinned class overlapping it.
        overlap = [1 << c.id for c in classes]
        by_unit: dict[tuple[str, int], int] = {}
        for c in classes:
            for u in c.units:
                by_unit[(c.kind, u)] = by_unit.get((c.kind, u), 0) | (1 << c.id)
        for c in classes:
            for u in c.units:
                overlap[c.id] |= by_unit[(c.kind, u)]
        # Removing an op only shrinks the live sets above it, so removals found with the
        # round's liveness stay valid; what they make dead is found by the next round (or,
        # in the same block, right away: the scan goes on without the removed op).
        removed: list[Operation] = []
        for b in range(len(live.blocks)):
            start, end = live.block_range[b]
            bits = live.live_out_bits[b]
            for i in range(end - 1, start - 1, -1):
                op = live.ops[i]
                writes, reads = live.writes[i], live.reads[i]
                facts = self._facts(op)
                if (facts is not None and writes and is_pure(op, facts)
                        and not any(bits & overlap[w] for w in writes)
                        and (not _writes_scc(facts) or self.scc_dead_after(live, i))):
                    removed.append(op)
                    continue  # gone: the live set passes through unchanged
                for w in writes:
                    bits &= ~(1 << w)
                for r in reads:
                    bits |= 1 << r
        for op in removed:
            facts = self.facts.facts(op)
            args = op.operands
            for k, pos in enumerate(facts.def_positions):
                op.results[k].replace_all_uses_with(args[pos])
            op.parent_block().erase_op(op)
        return len(removed)

    def run(self) -> int:
        """Remove dead instructions until none is left, then unused declarations."""
        indexing = any(isinstance(op, InstructionOp) and
                       op.properties["mnemonic"].data.startswith(INDEXING_PREFIXES)
                       for op in self.kernel.walk())
        total = 0
        if not indexing:
            while n := self.round():
                total += n
        return total + remove_unused_declarations(self.kernel)


def remove_unused_declarations(kernel: KernelOp) -> int:
    """Erase declarations (allocas, constants, ...) nothing uses; returns how many."""
    total = 0
    while True:
        dead = [op for op in kernel.walk() if isinstance(op, DECLARATIONS)
                and all(not r.uses for r in op.results)]
        if not dead:
            return total
        for op in dead:
            op.parent_block().erase_op(op)
        total += len(dead)


def dce_module(module: Operation) -> int:
    """Dead-code elimination on every kernel; returns the number of ops removed."""
    total = 0
    with gc_paused():
        for amod in amdgcn_modules(module):
            isa = get_isa(amod.target_name)
            for op in list(amod.body.ops):
                if isinstance(op, KernelOp):
                    total += _KernelDce(op, isa).run()
    return total


@dataclass(frozen=True)
class DcePass(Pass):
    """`dce` (no options)."""

    name = "dce"
    summary = "remove pure instructions whose results nothing reads (opt-in)"

    def apply(self, module: Operation) -> None:
        """Remove the dead instructions of `module` in place."""
        dce_module(module)


__all__ = ["DcePass", "dce_module", "is_pure", "remove_unused_declarations"]
